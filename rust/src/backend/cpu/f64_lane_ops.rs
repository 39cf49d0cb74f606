//! The f64 unary ops whose kernels are not the op table's formula run lane by lane: sin and cos
//! (`lane_math/sincos.rs`: the vector reduction, then scalar libm for the few arguments beyond
//! it), erf and GELU (`lane_math/erf.rs`'s `erf_slice`: the lanes beyond 1.25 packed and
//! taken apart), and softplus and GELU's tanh form, whose formulas nest two select forms or
//! wrap one in enough arithmetic that LLVM's loop over the formula stayed scalar: here each
//! function runs over a block in a loop of its own, forward and gradient. Each computes exactly
//! the table formula's operations, so the bits are the formula's. (exp, log, tanh, ... alone
//! need nothing here: their select forms are f64's `Float` methods, so the table's formulas
//! vectorise as they are.)

use super::f32_lane_ops::chunked;
use crate::lane_math::erf::erf_slice;
use crate::lane_math::exp::exp_slice;
use crate::lane_math::log1p::log1p_slice;
use crate::lane_math::sincos::{cos_slice, sin_slice};
use crate::lane_math::tanh::tanh_slice;
use crate::op_table::{UnaryOp, GELU_TANH_BETA};
use std::f64::consts::FRAC_1_SQRT_2;

/// `op` of every element of `x` (threaded over chunks), or None where the table's formula runs.
pub fn forward(op: UnaryOp, x: &[f64]) -> Option<Vec<f64>> {
    let f = match op {
        UnaryOp::Sin => sin_slice,
        UnaryOp::Cos => cos_slice,
        UnaryOp::Erf => erf_slice,
        UnaryOp::Gelu => gelu,
        UnaryOp::GeluTanh => gelu_tanh,
        UnaryOp::Softplus { beta, threshold } => {
            return Some(chunked(x.len(), |at, out| {
                softplus(&x[at..][..out.len()], out, beta, threshold)
            }))
        }
        _ => return None,
    };
    Some(chunked(x.len(), |at, out| f(&x[at..][..out.len()], out)))
}

/// Values the block-wise kernels below take at a time: their buffers on the stack, in L1.
const BLOCK: usize = 256;

/// For each block of BLOCK values of `x` (starting at `at`): the arguments `arg(x)` on the
/// stack, `f(arguments, out)` over them (a slice function in a loop of its own, where it
/// vectorises; it may use the arguments as scratch), then `finish(at, x, out)`.
#[inline(always)]
fn by_blocks(
    x: &[f64],
    out: &mut [f64],
    arg: impl Fn(f64) -> f64,
    f: impl Fn(&mut [f64], &mut [f64]),
    finish: impl Fn(usize, &[f64], &mut [f64]),
) {
    let mut a = [0.0; BLOCK];
    for (b, (xb, ob)) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)).enumerate() {
        let a = &mut a[..xb.len()];
        for (a, &v) in a.iter_mut().zip(xb) {
            *a = arg(v);
        }
        f(a, ob);
        finish(b * BLOCK, xb, ob);
    }
}

/// The table's `x * beta > threshold ? x : log1p(exp(x * beta)) / beta`.
fn softplus(x: &[f64], out: &mut [f64], beta: f64, threshold: f64) {
    let f = |a: &mut [f64], o: &mut [f64]| {
        exp_slice(a, o);
        a.copy_from_slice(o);
        log1p_slice(a, o);
    };
    by_blocks(
        x,
        out,
        |v| v * beta,
        f,
        |_, xb, ob| {
            for (o, &v) in ob.iter_mut().zip(xb) {
                *o = if v * beta > threshold { v } else { *o / beta };
            }
        },
    );
}

/// The table's `x * beta > threshold ? g : g * (1 / (1 + exp(-(x * beta))))`.
fn softplus_grad(x: &[f64], g: &[f64], out: &mut [f64], beta: f64, threshold: f64) {
    // The product, then its negation in a loop of its own: in one, LLVM may fold -(v * beta)
    // into v * -beta, which keeps a NaN's sign where the formula flips it.
    let f = |a: &mut [f64], o: &mut [f64]| {
        a.iter_mut().for_each(|a| *a = -*a);
        exp_slice(a, o);
    };
    by_blocks(
        x,
        out,
        |v| v * beta,
        f,
        |at, xb, ob| {
            let gb = &g[at..][..ob.len()];
            for (i, o) in ob.iter_mut().enumerate() {
                let g = gb[i];
                *o = if xb[i] * beta > threshold {
                    g
                } else {
                    g * (1.0 / (1.0 + *o))
                };
            }
        },
    );
}

/// Both GELU forms' last step, `o = 0.5 x (1 + o)` (o holding erf's or tanh's value).
#[inline(always)]
fn half_x_one_plus(x: &[f64], o: &mut [f64]) {
    for (o, &v) in o.iter_mut().zip(x) {
        *o = 0.5 * v * (1.0 + *o);
    }
}

/// tanh's argument in GELU's tanh form: beta (x + kappa x³), x³ as (x x) x.
#[inline(always)]
fn gelu_tanh_arg(x: f64) -> f64 {
    GELU_TANH_BETA * (x + 0.044715 * (x * x * x))
}

/// The table's GELU tanh form, 0.5 x (1 + tanh(beta (x + kappa x³))).
fn gelu_tanh(x: &[f64], out: &mut [f64]) {
    by_blocks(
        x,
        out,
        gelu_tanh_arg,
        |a, o| tanh_slice(a, o),
        |_, xb, ob| half_x_one_plus(xb, ob),
    );
}

/// `g` times the GELU tanh form's derivative, the table's formula.
fn gelu_tanh_grad(x: &[f64], g: &[f64], out: &mut [f64]) {
    by_blocks(
        x,
        out,
        gelu_tanh_arg,
        |a, o| tanh_slice(a, o),
        |at, xb, ob| {
            let gb = &g[at..][..ob.len()];
            for (i, o) in ob.iter_mut().enumerate() {
                let (x, t) = (xb[i], *o);
                let x_sq = x * x;
                let left = 0.5 * (1.0 + t);
                let inner = GELU_TANH_BETA * (1.0 + 3.0 * 0.044715 * x_sq);
                let right = 0.5 * x * (1.0 - t * t) * inner;
                *o = gb[i] * (left + right);
            }
        },
    );
}

/// GELU's table formula, (0.5 x)(1 + erf(x / sqrt 2)).
fn gelu(x: &[f64], out: &mut [f64]) {
    by_blocks(
        x,
        out,
        |v| v * FRAC_1_SQRT_2,
        |a, o| erf_slice(a, o),
        |_, xb, ob| half_x_one_plus(xb, ob),
    );
}

/// `g` times GELU's derivative, the table's formula: g (0.5 (1 + erf(x / sqrt 2)) + x pdf),
/// pdf = 0.3989... exp(-(0.5 x x)), the exponentials over the block too.
fn gelu_grad(x: &[f64], g: &[f64], out: &mut [f64]) {
    by_blocks(
        x,
        out,
        |v| v * FRAC_1_SQRT_2,
        |a, o| erf_slice(a, o),
        |at, xb, ob| {
            let (mut a, mut ex) = ([0.0; BLOCK], [0.0; BLOCK]);
            let (a, ex) = (&mut a[..xb.len()], &mut ex[..xb.len()]);
            for (a, &v) in a.iter_mut().zip(xb) {
                *a = -(0.5 * v * v);
            }
            exp_slice(a, ex);
            let gb = &g[at..][..ob.len()];
            for (i, o) in ob.iter_mut().enumerate() {
                let cdf = 0.5 * (1.0 + *o);
                let pdf = 0.398_942_280_401_432_7 * ex[i];
                *o = gb[i] * (cdf + xb[i] * pdf);
            }
        },
    );
}

/// `g` times d(op)/dx (threaded over chunks), or None where the table's formula runs.
// `g * f(x)` in the table's operand order (`*o *= g` would put a NaN's payload first).
#[allow(clippy::assign_op_pattern)]
pub fn grad(op: UnaryOp, x: &[f64], g: &[f64]) -> Option<Vec<f64>> {
    if !matches!(
        op,
        UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Gelu | UnaryOp::GeluTanh | UnaryOp::Softplus { .. }
    ) {
        return None;
    }
    Some(chunked(x.len(), |at, out| {
        let (x, g) = (&x[at..][..out.len()], &g[at..][..out.len()]);
        // The table's `g * x.cos()` and `g * -x.sin()`, the function taken over the block first.
        match op {
            UnaryOp::Sin => {
                cos_slice(x, out);
                out.iter_mut().zip(g).for_each(|(o, &g)| *o = g * *o);
            }
            UnaryOp::Cos => {
                sin_slice(x, out);
                out.iter_mut().zip(g).for_each(|(o, &g)| *o = g * -*o);
            }
            UnaryOp::GeluTanh => gelu_tanh_grad(x, g, out),
            UnaryOp::Softplus { beta, threshold } => softplus_grad(x, g, out, beta, threshold),
            _ => gelu_grad(x, g, out),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sin_and_cos_and_their_gradients_keep_the_formulas_bits() {
        // Ordinary arguments, the special values and a few beyond the vector reduction.
        let mut x: Vec<f64> = (0..3 * (1 << 13) + 5)
            .map(|i| (i as f64 - 12000.0) * 0.37)
            .collect();
        x[..7].copy_from_slice(&[0.0, -0.0, f64::NAN, f64::INFINITY, 1e7, -3e12, 1e300]);
        let g: Vec<f64> = (0..x.len()).map(|i| 1.0 + (i % 7) as f64 * 0.25).collect();
        let (s, c) = (
            forward(UnaryOp::Sin, &x).unwrap(),
            forward(UnaryOp::Cos, &x).unwrap(),
        );
        let (ds, dc) = (
            grad(UnaryOp::Sin, &x, &g).unwrap(),
            grad(UnaryOp::Cos, &x, &g).unwrap(),
        );
        for i in 0..x.len() {
            let v = x[i];
            assert_eq!(s[i].to_bits(), libm::sin(v).to_bits(), "sin({v:e})");
            assert_eq!(c[i].to_bits(), libm::cos(v).to_bits(), "cos({v:e})");
            assert_eq!(
                ds[i].to_bits(),
                (g[i] * libm::cos(v)).to_bits(),
                "sin'({v:e})"
            );
            assert_eq!(
                dc[i].to_bits(),
                (g[i] * -libm::sin(v)).to_bits(),
                "cos'({v:e})"
            );
        }
        assert!(forward(UnaryOp::Exp, &x).is_none() && grad(UnaryOp::Exp, &x, &g).is_none());
    }

    /// Over three chunks and a bit: x spread over [-shift, shift) in steps of 1 / step, led by
    /// the zeros, NaN, the infinities, a tiny value and `extra`; g varied.
    fn inputs(step: f64, shift: f64, extra: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut x: Vec<f64> = (0..3 * (1 << 13) + 5)
            .map(|i| ((i * 7919) % 10_007) as f64 / step - shift)
            .collect();
        let lead = [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-300,
        ];
        x[..lead.len()].copy_from_slice(&lead);
        x[lead.len()..][..extra.len()].copy_from_slice(extra);
        let g = (0..x.len()).map(|i| 1.0 + (i % 7) as f64 * 0.25).collect();
        (x, g)
    }

    /// softplus (two parameter pairs) and GELU's tanh form, forward and gradient, against the
    /// table's formulas on libm's scalar exp, log1p and tanh, bit for bit (NaN included), over
    /// more than one chunk.
    #[test]
    fn softplus_and_gelu_tanh_keep_the_formulas_bits() {
        let (x, g) = inputs(
            250.0,
            20.0,
            &[20.0, 10.0, -745.5, 710.0, 1e300, -1e300, 5.0, 2.5],
        );
        // NaN included: x is the only NaN, so its sign and payload are defined.
        let same = |got: f64, want: f64, what: &str, v: f64| {
            assert!(
                got.to_bits() == want.to_bits(),
                "{what}({v:e}): {got:e} ({:#x}) against {want:e} ({:#x})",
                got.to_bits(),
                want.to_bits()
            );
        };
        for (beta, threshold) in [(1.0, 20.0), (3.0, 5.0)] {
            let op = UnaryOp::Softplus { beta, threshold };
            let (y, d) = (forward(op, &x).unwrap(), grad(op, &x, &g).unwrap());
            for i in 0..x.len() {
                let v = x[i];
                let want = if v * beta > threshold {
                    v
                } else {
                    libm::log1p(libm::exp(v * beta)) / beta
                };
                same(y[i], want, "softplus", v);
                let want = if v * beta > threshold {
                    g[i]
                } else {
                    g[i] * (1.0 / (1.0 + libm::exp(-(v * beta))))
                };
                same(d[i], want, "softplus'", v);
            }
        }
        let (y, d) = (
            forward(UnaryOp::GeluTanh, &x).unwrap(),
            grad(UnaryOp::GeluTanh, &x, &g).unwrap(),
        );
        for i in 0..x.len() {
            let v = x[i];
            let t = libm::tanh(GELU_TANH_BETA * (v + 0.044715 * (v * v * v)));
            same(y[i], 0.5 * v * (1.0 + t), "gelu_tanh", v);
            let inner = GELU_TANH_BETA * (1.0 + 3.0 * 0.044715 * (v * v));
            let want = g[i] * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * inner);
            same(d[i], want, "gelu_tanh'", v);
        }
    }

    /// erf, GELU and GELU's gradient against the table's formulas on libm's scalar erf and
    /// exp, bit for bit: normal data (most lanes below erf's 1.25, the rest packed), every
    /// range's bounds, and the special values, over more than one chunk.
    #[test]
    fn erf_and_gelu_keep_the_formulas_bits() {
        let (x, g) = inputs(
            1000.0,
            5.0,
            &[-3e-9, 1.1932, 1.7678, -8.49, 6.0, 1e300, -1.25, 0.84375],
        );
        let (e, y) = (
            forward(UnaryOp::Erf, &x).unwrap(),
            forward(UnaryOp::Gelu, &x).unwrap(),
        );
        let d = grad(UnaryOp::Gelu, &x, &g).unwrap();
        let c = std::f64::consts::FRAC_1_SQRT_2;
        for i in 0..x.len() {
            let v = x[i];
            let erf = libm::erf(v * c);
            let pdf = 0.398_942_280_401_432_7 * libm::exp(-(0.5 * v * v));
            let want = [
                libm::erf(v),
                0.5 * v * (1.0 + erf),
                g[i] * (0.5 * (1.0 + erf) + v * pdf),
            ];
            for (got, want, what) in [
                (e[i], want[0], "erf"),
                (y[i], want[1], "gelu"),
                (d[i], want[2], "gelu'"),
            ] {
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{what}({v:e}): {got:e} against {want:e}"
                );
            }
        }
    }
}
