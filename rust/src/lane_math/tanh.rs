//! The hyperbolic tangent of f64 values at vector speed with the `libm` crate's bits.
//! `tanh_select` is libm's `tanh` (from musl: on |x|, 1 - 0/|x| above 20, 1 - 2/(expm1(2|x|) + 2)
//! above log(3)/2, t/(t + 2) with t = expm1(2|x|) above log(5/3)/2, -t/(t + 2) with
//! t = expm1(-2|x|) on normal |x| below, the sign put back last) with every branch computed and
//! chosen by a select, so a loop of it vectorises: each lane runs the scalar call's IEEE
//! operations in the same order (no FMA contraction), expm1 through `expm1_select`. The ranges
//! share one expm1 and one division, on operands chosen per lane, since each lane uses only
//! its own range's. Every input, special values included, takes the select path:
//! `tanh_slice` needs no scalar fix-up.

use super::expm1::expm1_select;

/// `libm::tanh(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn tanh_select(x: f64) -> f64 {
    let bits = x.to_bits();
    let sign = bits >> 63 != 0;
    let x = f64::from_bits(bits & 0x7fff_ffff_ffff_ffff);
    let w = (x.to_bits() >> 32) as u32;
    let huge = w > 0x4034_0000; // |x| > 20, or NaN: 1 - 0/|x|
    let high = w > 0x3fe1_93ea; // |x| > log(3)/2, or NaN
    let mid = w > 0x3fd0_58ae; // |x| > log(5/3)/2
    let normal = w >= 0x0010_0000;
    // libm's 2x or -2x: the second is the first with its sign flipped (exact for all but a NaN,
    // which takes `huge`), flipped by bits, as a branch here would have LLVM duplicate expm1.
    let two_x = (2. * x).to_bits() ^ ((!mid as u64) << 63);
    let t = expm1_select(f64::from_bits(two_x));
    // The one division of each range: 0/x, 2/(t+2), t/(t+2) or -t/(t+2), its operands picked
    // by eager selects (with `if`, LLVM threads the range tests and copies the division).
    let pick = std::hint::select_unpredictable::<f64>;
    let num = pick(huge, 0., pick(high, 2., pick(mid, t, -t)));
    let den = pick(huge, x, t + 2.);
    let q = num / den;
    let tt = if high {
        1. - q // above 20 as below
    } else if normal {
        q
    } else {
        x // subnormal |x|
    };
    if sign {
        -tt
    } else {
        tt
    }
}

super::lane_slice!(
    /// `out[i] = libm::tanh(x[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    tanh_slice = tanh_select, f64
);

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        check_unary, near64, shuffled_mix64, slice_matches_select, stream, uniform, windows64,
        with_exponent, SPECIAL64 as SPECIAL,
    };
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f64]) -> usize {
        check_unary(xs, libm::tanh, tanh_select, tanh_slice, run)
    }

    // The subnormal bound, log(5/3)/2, log(3)/2 and 20 (tanh's ranges, on the high word and as
    // values; 20 holds up to the high word's last value), infinity, and where expm1's argument
    // ±2|x| crosses its own bounds: 2^-54, 0.5 ln2, 1.5 ln2 (k = 2), k = 20, 56 ln2 and k = 57.
    const BOUNDS: [u64; 16] = [
        0x0010_0000_0000_0000,
        0x3c80_0000_0000_0000,
        0x3fc6_2e42_fefa_39ef,
        0x3fc6_2e43_0000_0000,
        0x3fd0_58ae_fa81_1452,
        0x3fd0_58af_0000_0000,
        0x3fe0_a2b2_0000_0000,
        0x3fe0_a2b2_3f3b_ab73,
        0x3fe1_93ea_7aad_030b,
        0x3fe1_93eb_0000_0000,
        0x401b_0861_a6c0_f69b,
        0x4033_687a_0000_0000,
        0x4033_94d7_2518_e725,
        0x4034_0000_0000_0000,
        0x4034_0001_0000_0000,
        0x7ff0_0000_0000_0000,
    ];

    #[test]
    fn every_f64_near_each_branch_boundary_and_the_special_values_match_libm() {
        assert!(check(&windows64(&BOUNDS, 1 << 14)) > 900_000);
        check(&SPECIAL.map(f64::from_bits));
    }

    #[test]
    fn random_bit_patterns_match_libm() {
        // Exponents from 2^-60 to 2^6 (every range but the saturated one), then any.
        let n = stream(
            12_000_000,
            0,
            |r| with_exponent(r, 0x3ff - 60, 0x3ff + 6),
            check,
        );
        assert!(n + stream(1_000_000, 1, f64::from_bits, check) > 12_000_000);
    }

    #[test]
    fn random_values_in_the_main_ranges_match_libm() {
        let n = stream(8_000_000, 2, |r| uniform(r, 60.), check);
        assert!(n + stream(8_000_000, 3, |r| uniform(r, 1.), check) > 15_000_000);
    }

    #[test]
    fn the_slice_function_matches_scalar_calls_on_a_shuffled_mix() {
        let xs = shuffled_mix64(&SPECIAL, &BOUNDS, near64, |next| {
            (0..20_000).map(|_| uniform(next(), 30.)).collect()
        });
        slice_matches_select(&xs, tanh_select, tanh_slice);
        check(&xs);
    }
}
