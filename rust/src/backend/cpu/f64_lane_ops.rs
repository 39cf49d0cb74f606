//! The f64 unary ops whose kernels are not the op table's formula run lane by lane: sin and cos
//! (`lane_math/sincos.rs`: the vector reduction, then scalar libm for the few arguments beyond
//! it), forward and gradient. Each computes exactly the table formula's operations, so the bits
//! are the formula's. (exp, log, tanh, erf, ... need nothing here: their select forms are f64's
//! `Float` methods, so the table's formulas vectorise as they are.)

use super::f32_lane_ops::chunked;
use crate::lane_math::sincos::{cos_slice, sin_slice};
use crate::op_table::UnaryOp;

/// `op` of every element of `x` (threaded over chunks), or None where the table's formula runs.
pub fn forward(op: UnaryOp, x: &[f64]) -> Option<Vec<f64>> {
    let f = match op {
        UnaryOp::Sin => sin_slice,
        UnaryOp::Cos => cos_slice,
        _ => return None,
    };
    Some(chunked(x.len(), |at, out| f(&x[at..][..out.len()], out)))
}

/// `g` times d(op)/dx (threaded over chunks), or None where the table's formula runs.
// `g * f(x)` in the table's operand order (`*o *= g` would put a NaN's payload first).
#[allow(clippy::assign_op_pattern)]
pub fn grad(op: UnaryOp, x: &[f64], g: &[f64]) -> Option<Vec<f64>> {
    if !matches!(op, UnaryOp::Sin | UnaryOp::Cos) {
        return None;
    }
    Some(chunked(x.len(), |at, out| {
        let (x, g) = (&x[at..][..out.len()], &g[at..][..out.len()]);
        // The table's `g * x.cos()` and `g * -x.sin()`, the function taken over the block first.
        if op == UnaryOp::Sin {
            cos_slice(x, out);
            out.iter_mut().zip(g).for_each(|(o, &g)| *o = g * *o);
        } else {
            sin_slice(x, out);
            out.iter_mut().zip(g).for_each(|(o, &g)| *o = g * -*o);
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
}
