//! The f32 table ops whose forward pass keeps an intermediate for the gradient
//! (`UnaryOp::keeps_intermediate`): GELU keeps t = 1 + erf(x / sqrt 2), SiLU d = 1 + exp(-x),
//! GELU's tanh form t = tanh(beta (x + kappa x^3)), each the table formula's own rounded value.
//! The gradient from them runs the table's gradient formula with that value in place of
//! computing it again (erf, exp or tanh), so its bits are the table's.

use super::erf_sorted;
use super::exp_lanes::{ExpRow, Pre};
use super::gelu_f32::{erf_arg, gelu_from_t, gelu_grad_from_t_exp, pdf_arg};
use super::parallel::for_chunks2;
#[cfg(target_arch = "x86_64")]
use super::simd::has_avx512;
use super::simd::wide_fn;
use super::storage::CpuStorage;
use super::uninit::{assume_init, filled, written};
use crate::dtype::Float;
use crate::lane_math::erff::erff_select;
use crate::op_table::{UnaryOp, GELU_TANH_BETA};
use crate::Result;
use std::mem::MaybeUninit;

const CHUNK: usize = 1 << 13;

/// GELU's tanh form's constants, rounded to f32 as the table rounds them.
const BETA: f32 = GELU_TANH_BETA as f32;
const KAPPA: f32 = 0.044_715_f64 as f32;

/// The ops that keep an intermediate here.
#[derive(Clone, Copy)]
enum Kind {
    Gelu,
    Silu,
    GeluTanh,
}

impl Kind {
    fn of(op: UnaryOp) -> Option<Kind> {
        match op {
            UnaryOp::Gelu => Some(Kind::Gelu),
            UnaryOp::Silu => Some(Kind::Silu),
            UnaryOp::GeluTanh => Some(Kind::GeluTanh),
            _ => None,
        }
    }
}

/// `forward` on a storage: f32 only (f64 computes the intermediate again).
pub fn forward_storage(op: UnaryOp, x: &CpuStorage) -> Option<(CpuStorage, CpuStorage)> {
    let CpuStorage::F32(x) = x else {
        return None;
    };
    let (y, k) = forward(op, x, super::parallel::fast_kernels())?;
    Some((CpuStorage::F32(y.into()), CpuStorage::F32(k.into())))
}

/// `grad` on storages: f32 ones, as `forward_storage` keeps.
pub fn grad_storage(
    op: UnaryOp,
    x: &CpuStorage,
    kept: &CpuStorage,
    g: &CpuStorage,
) -> Result<CpuStorage> {
    if let (CpuStorage::F32(x), CpuStorage::F32(k), CpuStorage::F32(g)) = (x, kept, g) {
        if let Some(d) = grad(op, x, k, g) {
            return Ok(CpuStorage::F32(d.into()));
        }
    }
    Err(crate::Error::arg(
        op.name(),
        "expected the f32 intermediate of its forward pass",
    ))
}

/// (y, the intermediate) of `op` for every element, or None where `op` keeps none here (GELU
/// keeps none under fast kernels, whose erf is cheap to compute again).
pub fn forward(op: UnaryOp, x: &[f32], fast: bool) -> Option<(Vec<f32>, Vec<f32>)> {
    if fast && op == UnaryOp::Gelu {
        return None;
    }
    let kind = Kind::of(op)?;
    let n = x.len();
    let mut kept = Vec::new();
    let y = written(n, |y| {
        kept = written(n, |k| {
            for_chunks2(y, CHUNK, k, CHUNK, n, |ci, y, k| {
                let x = &x[ci * CHUNK..][..y.len()];
                match kind {
                    Kind::Gelu => gelu_block(x, y, k),
                    Kind::Silu => silu_block(x, y, k),
                    Kind::GeluTanh => gelu_tanh_block(x, y, k),
                }
            })
        });
    });
    Some((y, kept))
}

/// GELU of a block: t = 1 + erf(x / sqrt 2) into `t`, (0.5 x) t into `y` (the table's
/// `0.5 * x * (1 + erf(x / sqrt 2))`).
#[inline(always)]
fn gelu_block(x: &[f32], y: &mut [MaybeUninit<f32>], t: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() && std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the features erf_sorted needs were just detected; equal lengths.
        return unsafe { erf_sorted::gelu_keeping(x, y, t) };
    }
    for ((y, t), &x) in y.iter_mut().zip(t.iter_mut()).zip(x) {
        let kept = 1.0 + erff_select(erf_arg(x));
        t.write(kept);
        y.write(gelu_from_t(x, kept));
    }
}

/// SiLU of a block: d = 1 + exp(-x) into `d`, x / d into `y` (the table's `x / (1 + exp(-x))`).
#[inline(always)]
fn silu_block(x: &[f32], y: &mut [MaybeUninit<f32>], d: &mut [MaybeUninit<f32>]) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: AVX-512 was just detected. The division next to each vector's exponential.
        done = unsafe { super::exp_lanes::avx512::silu_keeping(x, y, d) };
    }
    let (x, y, d) = (&x[done..], &mut y[done..], &mut d[done..]);
    let d = <f32 as ExpRow>::exp_from(x, d, Pre::Neg);
    finish_silu(x, d, y);
}

/// d = 1 + exp(-x) into `d` (which held exp(-x)), x / d into `y`.
#[inline(always)]
#[allow(clippy::assign_op_pattern)] // the table's operand order, `1 + exp(-x)`
fn silu_body(x: &[f32], d: &mut [f32], y: &mut [MaybeUninit<f32>]) {
    for ((d, y), &x) in d.iter_mut().zip(y.iter_mut()).zip(x) {
        *d = 1.0 + *d;
        y.write(x / *d);
    }
}

/// `g` times d(op)/dx from x and the intermediate `kept` that `forward` returned with y.
pub fn grad(op: UnaryOp, x: &[f32], kept: &[f32], g: &[f32]) -> Option<Vec<f32>> {
    let kind = Kind::of(op)?;
    Some(filled(x.len(), CHUNK, x.len(), |ci, out| {
        let at = ci * CHUNK;
        let n = out.len();
        let (x, kept, g) = (&x[at..][..n], &kept[at..][..n], &g[at..][..n]);
        match kind {
            Kind::Gelu => gelu_grad_block(x, kept, g, out),
            Kind::Silu => silu_grad_block(x, kept, g, out),
            Kind::GeluTanh => gelu_tanh_grad_block(x, kept, g, out),
        }
    }))
}

/// GELU's gradient for a block: the normal density's exponentials over the block first, then
/// the table's `g * (0.5 (1 + erf) + x * (c * exp(-(0.5 x x))))` with the kept 1 + erf.
#[inline(always)]
fn gelu_grad_block(x: &[f32], t: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    for (o, &v) in out.iter_mut().zip(x) {
        o.write(pdf_arg(v));
    }
    // SAFETY: every element of out was just written.
    let ex = unsafe { assume_init(out) };
    f32::exp_row(ex);
    finish_gelu_grad(x, t, g, ex);
}

#[inline(always)]
fn gelu_grad_body(x: &[f32], t: &[f32], g: &[f32], ex: &mut [f32]) {
    for (((e, &x), &t), &g) in ex.iter_mut().zip(x).zip(t).zip(g) {
        *e = gelu_grad_from_t_exp(g, x, t, *e);
    }
}

/// The table's `s = 1 / (1 + exp(-x))`, `g * (s * (1 + x * (1 - s)))` with the kept d.
#[inline(always)]
fn silu_grad_body(x: &[f32], d: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    for (((o, &x), &d), &g) in out.iter_mut().zip(x).zip(d).zip(g) {
        let s = 1.0 / d;
        o.write(g * (s * (1.0 + x * (1.0 - s))));
    }
}

/// GELU's tanh form: t = tanh(beta (x + kappa x x x)) into `t`, 0.5 x (1 + t) into `y` (the
/// table's formula).
#[inline(always)]
fn gelu_tanh_body(x: &[f32], y: &mut [MaybeUninit<f32>], t: &mut [MaybeUninit<f32>]) {
    for ((y, t), &x) in y.iter_mut().zip(t.iter_mut()).zip(x) {
        // The table's tanh (libm's bits), not std's.
        let th = Float::tanh(BETA * (x + KAPPA * (x * x * x)));
        t.write(th);
        y.write(0.5 * x * (1.0 + th));
    }
}

/// The table's gradient of GELU's tanh form with the kept t.
#[inline(always)]
fn gelu_tanh_grad_body(x: &[f32], t: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    for (((o, &x), &t), &g) in out.iter_mut().zip(x).zip(t).zip(g) {
        let x_sq = x * x;
        let left_derivative = 0.5 * (1.0 + t);
        let inner_derivative = BETA * (1.0 + 3.0 * KAPPA * x_sq);
        let right_derivative = 0.5 * x * (1.0 - t * t) * inner_derivative;
        o.write(g * (left_derivative + right_derivative));
    }
}

// The loops compiled for the widest vectors: a closure's body inlined into `widest` is not
// guaranteed, and compiled without the wide features these loops ran at half speed.
wide_fn!(fn finish_silu(x: &[f32], d: &mut [f32], y: &mut [MaybeUninit<f32>]) = silu_body);
wide_fn!(fn finish_gelu_grad(x: &[f32], t: &[f32], g: &[f32], ex: &mut [f32]) = gelu_grad_body);
wide_fn!(fn gelu_tanh_block(x: &[f32], y: &mut [MaybeUninit<f32>], t: &mut [MaybeUninit<f32>]) = gelu_tanh_body);
wide_fn!(fn gelu_tanh_grad_block(x: &[f32], t: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) = gelu_tanh_grad_body);
wide_fn!(fn silu_grad_block(x: &[f32], d: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) = silu_grad_body);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::table_kernels as tk;

    /// y and the gradient from the kept intermediate against the table's forward and its
    /// gradient computed from x alone, bit for bit (NaN against NaN), past one chunk, over
    /// every range of erf and exp and the special values.
    #[test]
    fn kept_intermediates_give_the_table_gradients_bits() {
        let mut x: Vec<f32> = (0..40_000)
            .map(|i| (i as f32 - 20_000.0) * 0.00117)
            .collect();
        x.extend((0..4_000).map(|i| (i as f32 - 2_000.0) * 0.07));
        x.extend([
            0.0,
            -0.0,
            1e-30,
            -1e-30,
            f32::from_bits(1),
            88.7,
            -88.7,
            -104.0,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::from_bits(0xffc1_2345),
        ]);
        let g: Vec<f32> = (0..x.len()).map(|i| 1.25 - i as f32 * 3e-5).collect();
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        for op in [UnaryOp::Gelu, UnaryOp::Silu, UnaryOp::GeluTanh] {
            let (y, kept) = forward(op, &x, false).expect("an op that keeps an intermediate");
            let want_y = tk::unary(op, &x);
            let d = grad(op, &x, &kept, &g).expect("its gradient");
            let want_d = tk::unary_grad(op, &x, &want_y, &g);
            for (i, &v) in x.iter().enumerate() {
                assert!(
                    same(y[i], want_y[i]),
                    "{op:?} at {v:?}: {} vs {}",
                    y[i],
                    want_y[i]
                );
                assert!(
                    same(d[i], want_d[i]),
                    "{op:?}' at {v:?}: {} vs {}",
                    d[i],
                    want_d[i]
                );
            }
        }
        // Fast kernels' GELU keeps nothing (its erf is cheap to compute again); other ops never.
        assert!(forward(UnaryOp::Gelu, &x, true).is_none());
        assert!(forward(UnaryOp::Sigmoid, &x, false).is_none());
    }
}
