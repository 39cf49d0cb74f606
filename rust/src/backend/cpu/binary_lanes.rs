//! The binary ops on libm's vector lanes, threaded over chunks: tensor_pow and its two slopes
//! (`lane_math/powf.rs`, `lane_math/pow.rs`) and atan2 (`lane_math/atan2f.rs`,
//! `lane_math/atan2.rs`), libm's bits; floor division in both, its remainder from
//! `lane_math/fmod.rs`; each operand whole or a single value repeated (`2.0 ** x`).
//! The slopes are the op table's formulas with the same IEEE operations in the same order
//! (`op_table/binary.rs`): `b * a ** (b - 1)` (0 where b = 0) and, from the forward's output
//! p = a ** b, `p * ln(a)` (0 where a = 0 and |p| <= 1).

use super::f32_view::{as_f32, as_f64, from_f32, from_f64};
use super::simd::wide_fn;
use super::uninit::{fill_with, filled};
use crate::dtype::Float;
use crate::lane_math::atan2::atan2_zip;
use crate::lane_math::atan2f::atan2f_zip;
use crate::lane_math::fmod::{fmod_zip, fmodf_zip};
use crate::lane_math::pow::{pow_slice, pow_zip};
use crate::lane_math::powf::{powf_base, powf_slice, powf_zip};
use crate::op_table::BinaryOp;

const CHUNK: usize = 1 << 13;

/// `op` (Pow, PowSlopeBase, PowSlopeExponent or Atan2) over `n` elements, `a` and
/// `b` each of length `n` or 1; None for another op or dtype, or other lengths.
pub fn lane_binary<T: Float>(op: BinaryOp, a: &[T], b: &[T], n: usize) -> Option<Vec<T>> {
    let fits = |len: usize| len == n || len == 1;
    if op == BinaryOp::FloorDivide && fits(a.len()) && fits(b.len()) && n > 0 {
        if let (Some(a), Some(b)) = (as_f32(a), as_f32(b)) {
            return Some(from_f32(floor_divide(a, b, n, fmodf_zip)));
        }
        if let (Some(a), Some(b)) = (as_f64(a), as_f64(b)) {
            return Some(from_f64(floor_divide(a, b, n, fmod_zip)));
        }
    }
    let kind = match op {
        BinaryOp::Pow | BinaryOp::PowSlopeBase | BinaryOp::PowSlopeExponent | BinaryOp::Atan2 => op,
        _ => return None,
    };
    if !fits(a.len()) || !fits(b.len()) || n == 0 {
        return None;
    }
    if let (Some(a), Some(b)) = (as_f64(a), as_f64(b)) {
        return Some(from_f64(match kind {
            BinaryOp::Atan2 => atan2_f64(a, b, n),
            _ => pow_f64(kind, a, b, n),
        }));
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
        // One exponent for all: `powf_slice`, whose loop leaves out the branches of special
        // exponents where the exponent has none.
        let one_y = (b.len() == 1).then(|| b[0]);
        // One base for all (a number ** a tensor): `powf_base`, its log2 once.
        let one_x = (a.len() == 1).then(|| a[0]);
        let pow = |y_less: f32, o: &mut [f32]| match one_y {
            Some(y) if y_less == 0.0 => powf_slice(ac, y, o),
            Some(y) => powf_slice(ac, y - y_less, o),
            None => {
                let less: Vec<f32>;
                let ys = if y_less == 0.0 {
                    bc
                } else {
                    less = bc.iter().map(|&v| v - 1.0).collect();
                    &less
                };
                match one_x {
                    Some(x) => powf_base(x, ys, o),
                    None => powf_zip(ac, ys, o),
                }
            }
        };
        match kind {
            BinaryOp::Atan2 => atan2f_zip(ac, bc, o),
            BinaryOp::Pow => pow(0.0, o),
            BinaryOp::PowSlopeBase => {
                pow(1.0, o);
                slope_base_finish(bc, o);
            }
            // b is the forward's output p = a ** b here (the op's second operand).
            _ => match one_x {
                // ln of the one base once: the same value on every lane.
                Some(x) => slope_exponent_one(x, Float::ln(x), bc, o),
                None => slope_exponent(ac, bc, o),
            },
        }
    });
    Some(from_f32(out))
}

/// f64 atan2 over `n` elements on atan2's lanes (`lane_math/atan2.rs`), each operand whole or a
/// single value repeated.
fn atan2_f64(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let run = |v: &[f64]| (v.len() == 1 && n > 1).then(|| vec![v[0]; CHUNK.min(n)]);
    let (ra, rb) = (run(a), run(b));
    filled(n, CHUNK, n, |ci, o| {
        let len = o.len();
        let (ac, bc) = (part(a, &ra, ci, len), part(b, &rb, ci, len));
        atan2_zip(ac, bc, fill_with(o, 0.0));
    })
}

/// f64 tensor_pow and its two slopes over `n` elements on pow's lanes (`lane_math/pow.rs`),
/// each operand whole or a single value repeated.
fn pow_f64(kind: BinaryOp, a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let run = |v: &[f64]| (v.len() == 1 && n > 1).then(|| vec![v[0]; CHUNK.min(n)]);
    let (ra, rb) = (run(a), run(b));
    filled(n, CHUNK, n, |ci, o| {
        let len = o.len();
        let (ac, bc) = (part(a, &ra, ci, len), part(b, &rb, ci, len));
        let o = fill_with(o, 0.0);
        let one_y = (b.len() == 1).then(|| b[0]);
        match (kind, one_y) {
            (BinaryOp::Pow, Some(y)) => pow_slice(ac, y, o),
            (BinaryOp::Pow, None) => pow_zip(ac, bc, o),
            (BinaryOp::PowSlopeBase, Some(y)) => {
                pow_slice(ac, y - 1.0, o);
                slope_base_finish(bc, o);
            }
            (BinaryOp::PowSlopeBase, None) => {
                let less: Vec<f64> = bc.iter().map(|&v| v - 1.0).collect();
                pow_zip(ac, &less, o);
                slope_base_finish(bc, o);
            }
            // b is the forward's output p = a ** b here (the op's second operand).
            _ => slope_exponent(ac, bc, o),
        }
    })
}

/// PyTorch's floor division over `n` elements (each operand whole or a single value
/// repeated): the remainder on fmod's lanes, then the table's formula (`div_floor_from`).
fn floor_divide<T: Float>(a: &[T], b: &[T], n: usize, fmod: fn(&[T], &[T], &mut [T])) -> Vec<T> {
    let run = |v: &[T]| (v.len() == 1 && n > 1).then(|| vec![v[0]; CHUNK.min(n)]);
    let (ra, rb) = (run(a), run(b));
    filled(n, CHUNK, n, |ci, o| {
        let len = o.len();
        let (ac, bc) = (part(a, &ra, ci, len), part(b, &rb, ci, len));
        let o = fill_with(o, T::ZERO);
        fmod(ac, bc, o);
        div_floor_finish(ac, bc, o);
    })
}

/// `o = div_floor(a, b)`, o holding fmod(a, b).
#[inline(always)]
fn div_floor_body<T: Float>(a: &[T], b: &[T], o: &mut [T]) {
    for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
        *o = crate::op_table::div_floor_from(a, b, *o);
    }
}

wide_fn!(fn div_floor_finish<T: Float>(a: &[T], b: &[T], o: &mut [T]) = div_floor_body);

/// Chunk `ci` (of `len` values) of an operand: its own stretch, or its single value's run.
fn part<'a, E>(v: &'a [E], run: &'a Option<Vec<E>>, ci: usize, len: usize) -> &'a [E] {
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

/// `o = a == 0 && |p| <= 1 ? 0 : p * ln(a)` (p = a ** b, the forward's output).
#[inline(always)]
fn slope_exponent_body<T: Float>(a: &[T], p: &[T], o: &mut [T]) {
    for ((o, &a), &p) in o.iter_mut().zip(a).zip(p) {
        *o = if a == T::ZERO && p.abs() <= T::ONE {
            T::ZERO
        } else {
            p * a.ln()
        };
    }
}

/// `slope_exponent_body` where every a is `a`, whose logarithm is `ln_a`.
#[inline(always)]
fn slope_exponent_one_body(a: f32, ln_a: f32, p: &[f32], o: &mut [f32]) {
    for (o, &p) in o.iter_mut().zip(p) {
        *o = if a == 0.0 && p.abs() <= 1.0 {
            0.0
        } else {
            p * ln_a
        };
    }
}

wide_fn!(fn slope_base_finish<T: Float>(b: &[T], o: &mut [T]) = slope_base_body);
wide_fn!(fn slope_exponent<T: Float>(a: &[T], p: &[T], o: &mut [T]) = slope_exponent_body);
wide_fn!(fn slope_exponent_one(a: f32, ln_a: f32, p: &[f32], o: &mut [f32]) = slope_exponent_one_body);

/// The table's scalar formula for `op` on f32 (Pow, its slopes, Atan2), the oracle of the
/// lane tests here and in `table_kernels.rs` (libm's powf, atan2f and logf).
#[cfg(test)]
pub(super) fn scalar_formula(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Pow => libm::powf(a, b),
        BinaryOp::Atan2 => libm::atan2f(a, b),
        BinaryOp::PowSlopeBase if b == 0.0 => 0.0,
        BinaryOp::PowSlopeBase => b * libm::powf(a, b - 1.0),
        // b is the forward's output p = a ** b.
        _ if a == 0.0 && b.abs() <= 1.0 => 0.0,
        _ => b * libm::logf(a),
    }
}

/// `scalar_formula` on f64 (libm's pow, atan2 and log).
#[cfg(test)]
pub(super) fn scalar_formula64(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Pow => libm::pow(a, b),
        BinaryOp::Atan2 => libm::atan2(a, b),
        BinaryOp::PowSlopeBase if b == 0.0 => 0.0,
        BinaryOp::PowSlopeBase => b * libm::pow(a, b - 1.0),
        _ if a == 0.0 && b.abs() <= 1.0 => 0.0,
        _ => b * libm::log(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lane_binary_keeps_the_scalar_formulas_bits() {
        // Whole operands over three chunks and a partial one, and single values either side.
        fn check<T: Float>(formula: fn(BinaryOp, T, T) -> T) {
            let n = 3 * CHUNK + 5;
            let a: Vec<T> = (0..n)
                .map(|i| T::from_f64(((i * 7919) % 4001) as f64 / 1000.0 - 1.0))
                .collect();
            let mut b: Vec<T> = (0..n)
                .map(|i| T::from_f64(((i * 104_729) % 6007) as f64 / 300.0 - 10.0))
                .collect();
            let special = [0.0, -0.0, 1.0, 2.0, 0.5, f64::NAN, f64::INFINITY, -1.0];
            for (b, s) in b.iter_mut().zip(special) {
                *b = T::from_f64(s);
            }
            for op in [
                BinaryOp::Pow,
                BinaryOp::PowSlopeBase,
                BinaryOp::PowSlopeExponent,
                BinaryOp::Atan2,
            ] {
                let (two, three, zero) = (T::from_f64(2.0), T::from_f64(3.0), T::ZERO);
                let cases: [(&[T], &[T]); 4] =
                    [(&a, &b), (&[two], &b), (&a, &[three]), (&[zero], &b)];
                for (x, y) in cases {
                    let got = lane_binary(op, x, y, n).expect("float operands");
                    for i in 0..n {
                        let (u, v) = (x[i % x.len()], y[i % y.len()]);
                        let want = formula(op, u, v).to_f64().to_bits();
                        assert_eq!(got[i].to_f64().to_bits(), want, "{op:?}({u:?}, {v:?})");
                    }
                }
            }
            assert!(lane_binary(BinaryOp::Add, &a, &b, n).is_none());
        }
        check::<f32>(scalar_formula);
        check::<f64>(scalar_formula64);
    }

    /// The exponent's slope from the forward's output equals PyTorch's rule on (a, b),
    /// `a == 0 && b >= 0 ? 0 : a ** b * ln(a)`, on every pair of special values (zeros,
    /// infinities, NaN, +-1, tiny and fractional exponents), as a whole base and as one base.
    #[test]
    fn the_exponent_slope_from_the_output_keeps_the_rule_on_a_and_b() {
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.0,
            0.5,
            -0.5,
            3.0,
            -3.0,
            1e-30,
            -1e-30,
            1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            1.5,
        ];
        let rule = |a: f32, b: f32| {
            if a == 0.0 && b >= 0.0 {
                0.0
            } else {
                libm::powf(a, b) * libm::logf(a)
            }
        };
        for &a in &specials {
            let bs: Vec<f32> = specials.iter().copied().cycle().take(40).collect();
            let p: Vec<f32> = bs.iter().map(|&b| libm::powf(a, b)).collect();
            let whole = vec![a; bs.len()];
            for x in [&whole[..], &[a]] {
                let got = lane_binary(BinaryOp::PowSlopeExponent, x, &p, bs.len()).unwrap();
                for (g, &b) in got.iter().zip(&bs) {
                    let want = rule(a, b);
                    // Where two NaNs meet in the product (a ** b and ln a), IEEE leaves open
                    // whose sign and payload come out: a NaN is a NaN there.
                    let both_nan = libm::powf(a, b).is_nan() && libm::logf(a).is_nan();
                    assert!(
                        g.to_bits() == want.to_bits() || (both_nan && g.is_nan()),
                        "a = {a:?}, b = {b:?}: {g:?} against {want:?}"
                    );
                }
            }
        }
    }

    /// Floor division on fmod's lanes against the table's scalar formula (libm's fmod): whole
    /// operands and single values, zeros, infinities, NaN and quotients near integers.
    #[test]
    fn floor_divide_keeps_the_scalar_formulas_bits() {
        fn check<T: Float>(from: impl Fn(f64) -> T) {
            let n = 2 * CHUNK + 9;
            let a: Vec<T> = (0..n)
                .map(|i| from(((i * 7919) % 4001) as f64 / 37.0 - 50.0))
                .collect();
            let mut b: Vec<T> = (0..n)
                .map(|i| from(((i * 104_729) % 6007) as f64 / 600.0 - 5.0))
                .collect();
            let special = [
                0.0,
                -0.0,
                f64::NAN,
                f64::INFINITY,
                -f64::INFINITY,
                0.1,
                -0.7,
                1e-30,
            ];
            for (i, &v) in special.iter().enumerate() {
                b[i] = from(v);
            }
            let cases: [(&[T], &[T]); 4] =
                [(&a, &b), (&[from(7.5)], &b), (&a, &[from(-0.3)]), (&b, &a)];
            for (x, y) in cases {
                let got = lane_binary(BinaryOp::FloorDivide, x, y, n).expect("floor divide lanes");
                for i in 0..n {
                    let (u, v) = (x[i % x.len()], y[i % y.len()]);
                    let want = crate::op_table::div_floor(u, v);
                    assert!(
                        got[i].to_f64().to_bits() == want.to_f64().to_bits(),
                        "{u:?} // {v:?}: {:?} vs {want:?}",
                        got[i]
                    );
                }
            }
        }
        check::<f32>(|v| v as f32);
        check::<f64>(|v| v);
    }

    #[test]
    fn f64_atan2_keeps_libms_bits() {
        let n = 2 * CHUNK + 3;
        let a: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 4001) as f64 / 400.0 - 5.0)
            .collect();
        let mut b: Vec<f64> = (0..n)
            .map(|i| ((i * 104_729) % 6007) as f64 / 600.0 - 5.0)
            .collect();
        b[..6].copy_from_slice(&[0.0, -0.0, f64::NAN, f64::INFINITY, -f64::INFINITY, 1.0]);
        let cases: [(&[f64], &[f64]); 3] = [(&a, &b), (&[2.0], &b), (&a, &[-3.0])];
        for (y, x) in cases {
            let got = lane_binary(BinaryOp::Atan2, y, x, n).expect("f64 atan2 runs on lanes");
            for i in 0..n {
                let (u, v) = (y[i % y.len()], x[i % x.len()]);
                assert_eq!(
                    got[i].to_bits(),
                    libm::atan2(u, v).to_bits(),
                    "atan2({u:?}, {v:?})"
                );
            }
        }
    }
}
