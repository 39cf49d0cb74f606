//! The f32 binary ops on libm's vector lanes, threaded over chunks: tensor_pow and its two slopes
//! (`lane_math/powf.rs`) and atan2 (`lane_math/atan2f.rs`), libm's bits; each operand whole or a
//! single value repeated (`2.0 ** x`).
//! The slopes are the op table's formulas with the same IEEE operations in the same order
//! (`op_table/binary.rs`): `b * a ** (b - 1)` (0 where b = 0) and `a ** b * ln(a)` (0 where
//! a = 0 and b >= 0). f64 keeps the table's scalar formulas.

use super::f32_view::{as_f32, from_f32};
use super::simd::wide_fn;
use super::uninit::{fill_with, filled};
use crate::dtype::Float;
use crate::lane_math::atan2f::atan2f_zip;
use crate::lane_math::powf::powf_zip;
use crate::op_table::BinaryOp;

const CHUNK: usize = 1 << 13;

/// `op` (Pow, PowSlopeBase, PowSlopeExponent or Atan2) over `n` elements, `a` and `b` each of
/// length `n` or 1; None for another op, f64, or other lengths.
pub fn lane_binary<T: Float>(op: BinaryOp, a: &[T], b: &[T], n: usize) -> Option<Vec<T>> {
    let kind = match op {
        BinaryOp::Pow | BinaryOp::PowSlopeBase | BinaryOp::PowSlopeExponent | BinaryOp::Atan2 => op,
        _ => return None,
    };
    let fits = |len: usize| len == n || len == 1;
    if T::DTYPE != crate::DType::F32 || !fits(a.len()) || !fits(b.len()) || n == 0 {
        return None;
    }
    let (Some(a), Some(b)) = (as_f32(a), as_f32(b)) else {
        return None;
    };
    // A single value becomes a chunk-long run, so every chunk reads two slices.
    let run = |v: &[f32]| (v.len() == 1 && n > 1).then(|| vec![v[0]; CHUNK.min(n)]);
    let (ra, rb) = (run(a), run(b));
    let out: Vec<f32> = filled(n, CHUNK, n, |ci, o| {
        let len = o.len();
        let (ac, bc) = (part(a, &ra, ci, len), part(b, &rb, ci, len));
        let o = fill_with(o, 0.0);
        match kind {
            BinaryOp::Pow => powf_zip(ac, bc, o),
            BinaryOp::Atan2 => atan2f_zip(ac, bc, o),
            BinaryOp::PowSlopeBase => {
                let less: Vec<f32> = bc.iter().map(|&v| v - 1.0).collect();
                powf_zip(ac, &less, o);
                slope_base_finish(bc, o);
            }
            _ => {
                powf_zip(ac, bc, o);
                slope_exponent_finish(ac, bc, o);
            }
        }
    });
    Some(from_f32(out))
}

/// Chunk `ci` (of `len` values) of an operand: its own stretch, or its single value's run.
fn part<'a>(v: &'a [f32], run: &'a Option<Vec<f32>>, ci: usize, len: usize) -> &'a [f32] {
    match run {
        Some(r) => &r[..len],
        None => &v[ci * CHUNK..][..len],
    }
}

/// `o = b == 0 ? 0 : b * o` (o holding a ** (b - 1)).
#[inline(always)]
fn slope_base_body<T: Float>(b: &[T], o: &mut [T]) {
    for (o, &b) in o.iter_mut().zip(b) {
        *o = if b == T::ZERO { T::ZERO } else { b * *o };
    }
}

/// `o = a == 0 && b >= 0 ? 0 : o * ln(a)` (o holding a ** b).
#[inline(always)]
fn slope_exponent_body<T: Float>(a: &[T], b: &[T], o: &mut [T]) {
    for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
        *o = if a == T::ZERO && b >= T::ZERO {
            T::ZERO
        } else {
            *o * a.ln()
        };
    }
}

wide_fn!(fn slope_base_finish<T: Float>(b: &[T], o: &mut [T]) = slope_base_body);
wide_fn!(fn slope_exponent_finish<T: Float>(a: &[T], b: &[T], o: &mut [T]) = slope_exponent_body);

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's scalar formula for `op`, the oracle (libm's powf and logf).
    fn scalar(op: BinaryOp, a: f32, b: f32) -> f32 {
        match op {
            BinaryOp::Pow => libm::powf(a, b),
            BinaryOp::Atan2 => libm::atan2f(a, b),
            BinaryOp::PowSlopeBase if b == 0.0 => 0.0,
            BinaryOp::PowSlopeBase => b * libm::powf(a, b - 1.0),
            _ if a == 0.0 && b >= 0.0 => 0.0,
            _ => libm::powf(a, b) * libm::logf(a),
        }
    }

    #[test]
    fn the_lane_binary_keeps_the_scalar_formulas_bits() {
        // Whole operands over three chunks and a partial one, and single values either side.
        let n = 3 * CHUNK + 5;
        let a: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 4001) as f32 / 1000.0 - 1.0)
            .collect();
        let mut b: Vec<f32> = (0..n)
            .map(|i| ((i * 104_729) % 6007) as f32 / 300.0 - 10.0)
            .collect();
        b[..8].copy_from_slice(&[0.0, -0.0, 1.0, 2.0, 0.5, f32::NAN, f32::INFINITY, -1.0]);
        for op in [
            BinaryOp::Pow,
            BinaryOp::PowSlopeBase,
            BinaryOp::PowSlopeExponent,
            BinaryOp::Atan2,
        ] {
            let cases: [(&[f32], &[f32]); 4] = [(&a, &b), (&[2.0], &b), (&a, &[3.0]), (&[0.0], &b)];
            for (x, y) in cases {
                let got = lane_binary(op, x, y, n).expect("f32 operands");
                for i in 0..n {
                    let (u, v) = (x[i % x.len()], y[i % y.len()]);
                    let want = scalar(op, u, v);
                    assert_eq!(got[i].to_bits(), want.to_bits(), "{op:?}({u:?}, {v:?})");
                }
            }
        }
        assert!(lane_binary(BinaryOp::Add, &a, &b, n).is_none());
        assert!(lane_binary(BinaryOp::Pow, &[2.0f64], &[1.0], 1).is_none());
    }
}
