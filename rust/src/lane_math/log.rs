//! The natural logarithm of f64 values at vector speed with the `libm` crate's bits.
//! `log_select` is libm's `log` (FreeBSD's e_log.c: subnormals scaled by 2^54, reduction of the
//! significand into [sqrt(2)/2, sqrt(2)] on the high word, then log(1+f) = f - hfsq +
//! s·(hfsq + R(s²)) with k·ln2 added in two parts) with every branch computed and chosen by a
//! select, so a loop of it vectorises: each lane runs the scalar call's IEEE operations in the
//! same order (no FMA contraction). The special cases' divisions share the main one (operands
//! picked per lane), division being the costly step. Every input, special values included,
//! takes the select path: `log_slice` needs no scalar fix-up.

pub(super) const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // 6.93147180369123816490e-01
pub(super) const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76); // 1.90821492927058770002e-10
const LG1: f64 = f64::from_bits(0x3fe5_5555_5555_5593); // 6.666666666666735130e-01
const LG2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04); // 3.999999999940941908e-01
const LG3: f64 = f64::from_bits(0x3fd2_4924_9422_9359); // 2.857142874366239149e-01
const LG4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af); // 2.222219843214978396e-01
const LG5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de); // 1.818357216161805012e-01
const LG6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f); // 1.531383769920937332e-01
const LG7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244); // 1.479819860511658591e-01

/// `libm::log(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn log_select(x: f64) -> f64 {
    let ix0 = x.to_bits();
    // Positive subnormals (and +0, whose result is chosen below) are scaled up by 2^54.
    let sub = ix0 < 0x0010_0000_0000_0000;
    let xs = if sub {
        x * f64::from_bits(0x4350_0000_0000_0000)
    } else {
        x
    };
    let k0: i64 = if sub { -54 } else { 0 };
    // Reduce into [sqrt(2)/2, sqrt(2)] on the high word (the low word rides along); wrapping,
    // as negative lanes (discarded) overflow, as libm's u32 high word does.
    let ix = xs.to_bits().wrapping_add((0x3ff0_0000 - 0x3fe6_a09e) << 32);
    let k = k0 + (ix >> 52) as i64 - 0x3ff;
    let xr = f64::from_bits((ix & 0x000f_ffff_ffff_ffff) + (0x3fe6_a09e << 32));
    let f = xr - 1.;
    let hfsq = 0.5 * f * f;
    // One division for every lane: s = f/(2+f), or the specials' -1/(x·x) and (x-x)/0, its
    // operands picked by eager selects (with `if`, LLVM may thread the tests and copy the
    // division).
    let pick = std::hint::select_unpredictable::<f64>;
    let zero = ix0 << 1 == 0;
    let negative = ix0 >> 63 != 0;
    #[allow(clippy::eq_op)] // libm's x - x: 0 (then 0/0), or a NaN argument's payload kept
    let nan = x - x;
    let num = pick(zero, -1., pick(negative, nan, f));
    let den = pick(zero, x * x, pick(negative, 0., 2. + f));
    let s = num / den;
    let r = log_poly(s);
    let dk = k as f64;
    let general = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
    // libm's special cases, in its order.
    if zero || negative {
        s // log(±0) = -inf; log(negative) = NaN, a negative NaN's payload kept
    } else if ix0 >= 0x7ff0_0000_0000_0000 {
        x // +inf, or a positive NaN as it is
    } else if ix0 == 0x3ff0_0000_0000_0000 {
        0.
    } else {
        general
    }
}

/// libm's R(s) of log and log1p (FreeBSD's e_log.c and s_log1p.c): the polynomial in s² of
/// log(1 + f) = 2s + s·R, split into even and odd terms as libm sums them.
#[inline(always)]
pub(super) fn log_poly(s: f64) -> f64 {
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    t2 + t1
}

super::lane_slice!(
    /// `out[i] = libm::log(x[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    log_slice = log_select, f64
);

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        check_unary, near64_bit40, shuffled_mix64, stream, subslices_match_select, unit, windows64,
        SPECIAL64_LOG as SPECIAL,
    };
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f64]) -> usize {
        check_unary(xs, libm::log, log_select, log_slice, run)
    }

    /// `chunks` blocks of 2^20 values that `draw` makes from a fixed random stream, each checked.
    fn check_drawn(chunks: usize, draw: impl Fn(u64) -> f64) -> usize {
        stream(chunks << 20, 0, draw, check)
    }

    /// Zero and the subnormal bound; the reduction's crossing at sqrt(2)/2 in scaled subnormals
    /// (two binades), in the smallest normals, below 1, above 1 and in the largest binade; 1
    /// itself; 2; and infinity (the largest finite values below it).
    const BOUNDS: [u64; 10] = [
        0,
        0x0010_0000_0000_0000,
        0x000b_504f_0000_0000,
        0x0000_016a_09e0_0000,
        0x0016_a09e_0000_0000,
        0x3fe6_a09e_0000_0000,
        0x3ff0_0000_0000_0000,
        0x3ff6_a09e_0000_0000,
        0x7fe6_a09e_0000_0000,
        0x7ff0_0000_0000_0000,
    ];

    #[test]
    fn every_f64_near_each_branch_boundary_and_the_special_values_match_libm() {
        let mut xs = windows64(&BOUNDS, 4096);
        xs.extend(SPECIAL.map(f64::from_bits));
        assert!(check(&xs) > 150_000);
    }

    #[test]
    fn random_bit_patterns_of_all_positive_finite_f64_match_libm() {
        let n = check_drawn(32, |r| f64::from_bits((r >> 1) % 0x7ff0_0000_0000_0000));
        assert!(n > 33_000_000);
    }

    #[test]
    fn random_values_near_1_match_libm() {
        // Uniform in [0.5, 2), then within 2^-20 of 1.
        let mut n = check_drawn(8, |r| 0.5 + 1.5 * unit(r));
        n += check_drawn(8, |r| {
            1. + (unit(r) - 0.5) * f64::from_bits(0x3eb0_0000_0000_0000)
        });
        assert!(n > 16_000_000);
    }

    #[test]
    fn a_shuffled_mix_of_branches_and_its_every_subslice_length_match_libm() {
        let xs = shuffled_mix64(&SPECIAL, &BOUNDS, near64_bit40, |next| {
            (0..20_000).map(|_| 64. * unit(next()) - 32.).collect()
        });
        check(&xs);
        subslices_match_select(&xs, log_select, log_slice);
    }
}
