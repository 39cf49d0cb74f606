//! GELU's f32 formulas (the op table's, `op_table/unary.rs`) split around erf, so that a kernel
//! may compute erf its own way (`erf_lanes.rs` by selects, `erf_sorted.rs` by sorted lanes) and
//! still round every other operation as the table does.

use crate::lane_math::expf::expf_select;

/// GELU's argument to erf: x / sqrt 2, as the table rounds it.
#[inline(always)]
pub fn erf_arg(x: f32) -> f32 {
    x * std::f64::consts::FRAC_1_SQRT_2 as f32
}

/// GELU from x and erf(x / sqrt 2).
#[inline(always)]
pub fn gelu_from_erf(x: f32, e: f32) -> f32 {
    gelu_from_t(x, 1.0 + e)
}

/// GELU from x and t = 1 + erf(x / sqrt 2) as the table rounds it.
#[inline(always)]
pub fn gelu_from_t(x: f32, t: f32) -> f32 {
    0.5 * x * t
}

/// `g` times GELU's derivative, from x and erf(x / sqrt 2).
#[inline(always)]
pub fn gelu_grad_from_erf(g: f32, x: f32, e: f32) -> f32 {
    gelu_grad_from_erf_exp(g, x, e, expf_select(pdf_arg(x)))
}

/// The argument of the exponential in GELU's derivative (the normal density's), -(x² / 2).
#[inline(always)]
pub fn pdf_arg(x: f32) -> f32 {
    -(0.5 * x * x)
}

/// `gelu_grad_from_erf` given also `ex`, the exponential of `pdf_arg(x)` (for a kernel that
/// takes the exponentials of a block in a loop of their own).
#[inline(always)]
pub fn gelu_grad_from_erf_exp(g: f32, x: f32, e: f32, ex: f32) -> f32 {
    gelu_grad_from_t_exp(g, x, 1.0 + e, ex)
}

/// `gelu_grad_from_erf_exp` given t = 1 + erf(x / sqrt 2) as the table rounds it (the forward
/// pass's own, kept for the gradient).
#[inline(always)]
pub fn gelu_grad_from_t_exp(g: f32, x: f32, t: f32, ex: f32) -> f32 {
    let cdf = 0.5 * t;
    let pdf = 0.398_942_280_401_432_7_f64 as f32 * ex;
    g * (cdf + x * pdf)
}
