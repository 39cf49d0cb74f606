//! The natural logarithm of 1+x for f64 values at vector speed with the `libm` crate's bits.
//! `log1p_select` is libm's `log1p` (FreeBSD's s_log1p.c: x itself where |x| < 2^-53, near 0
//! log(1+f) on f = x, elsewhere on u = 1+x reduced into [sqrt(2)/2, sqrt(2)] on the high word
//! with a correction c for the rounding of 1+x (0 where k >= 54), then k·ln2 added in two parts)
//! with every branch computed and chosen by a select, so a loop of it vectorises: each lane runs
//! the scalar call's IEEE operations in the same order (no FMA contraction). The special cases'
//! divisions share the main one (operands picked per lane), division being the costly step.
//! Every input, special values included, takes the select path: `log1p_slice` needs no scalar
//! fix-up.

use super::log::{log_poly, LN2_HI, LN2_LO};

/// `libm::log1p(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn log1p_select(x: f64) -> f64 {
    let ix = x.to_bits();
    let hx = ix >> 32; // libm's high word
    let negative = ix >> 63 != 0;
    // libm's k != 0 path: u = 1+x reduced, c ~ log(1+x) - log(u) (0 where k >= 54, as c/u
    // would underflow). Wrapping, as lanes that never take this path may overflow.
    let u = 1. + x;
    let iu = u.to_bits().wrapping_add((0x3ff0_0000 - 0x3fe6_a09e) << 32);
    let ku = (iu >> 52) as i64 - 0x3ff;
    let cn = if ku >= 2 { 1. - (u - x) } else { x - (u - 1.) };
    let cu = if ku < 54 { cn / u } else { 0. };
    let fu = f64::from_bits((iu & 0x000f_ffff_ffff_ffff) + (0x3fe6_a09e << 32)) - 1.;
    // sqrt(2)/2 <= 1+x < sqrt(2) (on the high word): libm takes f = x, k = 0, c = 0.
    let near = hx < 0x3fda_827a || (negative && hx <= 0xbfd2_bec4);
    let (k, c, f) = if near { (0, 0., x) } else { (ku, cu, fu) };
    let hfsq = 0.5 * f * f;
    // One division for every lane: s = f/(2+f), or the specials' x/0 and (x-x)/0, its operands
    // picked by eager selects (with `if`, LLVM may thread the tests and copy the division).
    let pick = std::hint::select_unpredictable::<f64>;
    let below = hx >= 0xbff0_0000; // x <= -1 or a negative NaN
    #[allow(clippy::eq_op)] // libm's x - x: 0 (then 0/0), or a NaN argument's payload kept
    let nan = x - x;
    let num = pick(below, pick(x == -1., x, nan), f);
    let den = pick(below, 0., 2.0 + f);
    let s = num / den;
    let r = log_poly(s);
    let dk = k as f64;
    let general = s * (hfsq + r) + (dk * LN2_LO + c) - hfsq + f + dk * LN2_HI;
    // libm's special cases, in its order.
    if below {
        s // log1p(-1) = -inf, else NaN (a negative NaN's payload kept)
    } else if ix << 1 < 0x3ca0_0000_0000_0000 << 1 || (!negative && hx >= 0x7ff0_0000) {
        x // |x| < 2^-53, +inf, or a positive NaN as it is
    } else {
        general
    }
}

super::lane_slice!(
    /// `out[i] = libm::log1p(x[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    log1p_slice = log1p_select, f64
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
        check_unary(xs, libm::log1p, log1p_select, log1p_slice, run)
    }

    /// `chunks` blocks of 2^20 values that `draw` makes from a fixed random stream, each checked.
    fn check_drawn(chunks: usize, draw: impl Fn(u64) -> f64) -> usize {
        stream(chunks << 20, 0, draw, check)
    }

    /// Zero, the subnormal bound, 2^-54, 2^-53 (x itself below), 2^-29; sqrt(2)-1 and
    /// 1-sqrt(2)/2 on the high word (k = 0 with f = x, or u = 1+x), and sqrt(2)-1 itself; ±1
    /// (-1: -inf, NaN below); 2·sqrt(2)-1 on u's high word and itself (k = 2 in the correction
    /// c); 2^53; 2^53·sqrt(2) on u's high word (k = 54: c = 0); infinity.
    const BOUNDS: [u64; 14] = [
        0,
        0x0010_0000_0000_0000,
        0x3c90_0000_0000_0000,
        0x3ca0_0000_0000_0000,
        0x3e20_0000_0000_0000,
        0x3fda_827a_0000_0000,
        0x3fda_8279_99fc_ef34,
        0x3fd2_bec5_0000_0000,
        0x3ff0_0000_0000_0000,
        0x3ffd_413c_0000_0000,
        0x3ffd_413c_ccfe_779a,
        0x4340_0000_0000_0000,
        0x4346_a09e_0000_0000,
        0x7ff0_0000_0000_0000,
    ];

    #[test]
    fn every_f64_near_each_branch_boundary_and_the_special_values_match_libm() {
        let mut xs = windows64(&BOUNDS, 4096);
        xs.extend(SPECIAL.map(f64::from_bits));
        assert!(check(&xs) > 200_000);
    }

    #[test]
    fn random_bit_patterns_of_all_positive_finite_f64_match_libm() {
        let n = check_drawn(24, |r| f64::from_bits((r >> 1) % 0x7ff0_0000_0000_0000));
        assert!(n > 25_000_000);
    }

    #[test]
    fn random_values_near_0_and_in_minus_1_to_10_match_libm() {
        // |x| in [2^-60, 1) by bit pattern, either sign, and -1 + that (k < 0 down to -60).
        let mut n = check_drawn(12, |r| {
            let t = f64::from_bits(((0x3c3 + (r >> 52) % 60) << 52) | (r & 0x000f_ffff_ffff_ffff));
            [t, -t, t - 1.][(r >> 50 & 3) as usize % 3]
        });
        n += check_drawn(12, |r| 11. * unit(r) - 1.);
        assert!(n > 25_000_000);
    }

    #[test]
    fn a_shuffled_mix_of_branches_and_its_every_subslice_length_match_libm() {
        let xs = shuffled_mix64(&SPECIAL, &BOUNDS, near64_bit40, |next| {
            (0..20_000).map(|_| 12. * unit(next()) - 2.).collect()
        });
        check(&xs);
        subslices_match_select(&xs, log1p_select, log1p_slice);
    }
}
