//! e^x - 1 for f64 values at vector speed with the `libm` crate's bits. `expm1_select` is
//! libm's `expm1` (FreeBSD's s_expm1.c: reduction by k·ln2 in two parts with a correction c,
//! a rational approximation on the reduced argument, then one of six reconstructions chosen
//! by k) with every branch computed and chosen by a select, so a loop of it vectorises: each
//! lane runs the scalar call's IEEE operations in the same order (no FMA contraction). Every
//! input, special values included, takes the select path: `expm1_slice` needs no scalar
//! fix-up.

const O_THRESHOLD: f64 = f64::from_bits(0x4086_2e42_fefa_39ef); // 7.09782712893383973096e+02
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // 6.93147180369123816490e-01
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76); // 1.90821492927058770002e-10
const INV_LN2: f64 = f64::from_bits(0x3ff7_1547_652b_82fe); // 1.44269504088896338700e+00
const Q1: f64 = f64::from_bits(0xbfa1_1111_1111_10f4); // -3.33333333333331316428e-02
const Q2: f64 = f64::from_bits(0x3f5a_01a0_19fe_5585); // 1.58730158725481460165e-03
const Q3: f64 = f64::from_bits(0xbf14_ce19_9eaa_dbb7); // -7.93650757867487942473e-05
const Q4: f64 = f64::from_bits(0x3ed0_cfca_86e6_5239); // 4.00821782732936239552e-06
const Q5: f64 = f64::from_bits(0xbe8a_fdb7_6e09_c32d); // -2.01099218183624371326e-07
const X1P1023: f64 = f64::from_bits(0x7fe0_0000_0000_0000); // 2^1023

/// `libm::expm1(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn expm1_select(x: f64) -> f64 {
    let bits = x.to_bits();
    let sign = bits >> 63 != 0;
    let hx = ((bits >> 32) & 0x7fff_ffff) as u32;
    // Argument reduction: k = round(x / ln2) from 1.5 ln2, ±1 beyond 0.5 ln2, else 0. With
    // t = ±1, t·ln2_hi and t·ln2_lo are libm's ±ln2_hi and ±ln2_lo exactly; with t = 0 the
    // formulas give hi = x, lo = 0, c = 0 exactly, libm's unreduced x.
    let half = if sign { -0.5 } else { 0.5 };
    // libm's `as i32` saturates, which LLVM lowers lane by lane; below 1024 in magnitude (every
    // lane the general path keeps) the value is in range, where plain truncation is the same.
    let kf = if hx < 0x4090_0000 {
        INV_LN2 * x + half
    } else {
        0.
    };
    // SAFETY: |kf| < 2^11: finite and in i32's range.
    let k_far = unsafe { kf.to_int_unchecked::<i32>() };
    let k_near = if sign { -1 } else { 1 };
    let k = if hx >= 0x3ff0_a2b2 {
        k_far
    } else if hx > 0x3fd6_2e42 {
        k_near
    } else {
        0
    };
    let t = k as f64;
    let hi = x - t * LN2_HI;
    let lo = t * LN2_LO;
    let xr = hi - lo; // libm's x from here on, in the primary range
    let c = (hi - xr) - lo;
    let hfx = 0.5 * xr;
    let hxs = xr * hfx;
    let r1 = 1. + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
    let t = 3. - r1 * hfx;
    let e = hxs * ((r1 - t) / (6. - xr * t));
    let y_k0 = xr - (xr * e - hxs);
    let e = xr * (e - c) - c;
    let e = e - hxs;
    let y_km1 = 0.5 * (xr - e) - 0.5;
    let y_k1 = if xr < -0.25 {
        -2. * (e - (xr + 0.5))
    } else {
        1. + 2. * (xr - e)
    };
    // 2^k and 2^-k by their bits; wrapping, as discarded lanes may overflow. k = 1024 gives
    // infinity for 2^k, which libm avoids by scaling with 2·2^1023 instead.
    let twopk = f64::from_bits((0x3ff_i64.wrapping_add(k as i64) as u64) << 52);
    let uf = f64::from_bits((0x3ff_i64.wrapping_sub(k as i64) as u64) << 52);
    let y = xr - e + 1.;
    let y = if k == 1024 {
        y * 2. * X1P1023
    } else {
        y * twopk
    };
    let y_far = y - 1.;
    let y_mid = if k < 20 {
        (xr - e + (1. - uf)) * twopk
    } else {
        (xr - (e + uf) + 1.) * twopk
    };
    let general = if k == 0 {
        y_k0
    } else if k == -1 {
        y_km1
    } else if k == 1 {
        y_k1
    } else if !(0..=56).contains(&k) {
        y_far
    } else {
        y_mid
    };
    // libm's special cases, in its order.
    if bits & 0x7fff_ffff_ffff_ffff > 0x7ff0_0000_0000_0000 {
        x // NaN, as it is
    } else if sign && hx >= 0x4043_687a {
        -1. // x <= -56 ln2, -inf included
    } else if x > O_THRESHOLD {
        x * X1P1023 // x > log(DBL_MAX): overflow to inf
    } else if hx < 0x3c90_0000 {
        x // |x| < 2^-54
    } else {
        general
    }
}

super::lane_slice!(
    /// `out[i] = libm::expm1(x[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    expm1_slice = expm1_select, f64
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
        check_unary(xs, libm::expm1, expm1_select, expm1_slice, run)
    }

    // The subnormal bound, 2^-54, 0.5 ln2 and 1.5 ln2 (k = 0 / ±1 / rounded) as libm tests
    // them on the high word and as values, ln2 - 1/4 (the k = 1 formulas), where k becomes
    // ±2, 20, 21, ±56 and 57, 56 ln2 on the high word (-1 below it) and as a value, the
    // k = 1024 reconstruction, log(DBL_MAX), the bound of the k guard, the largest finite
    // value and infinity.
    const BOUNDS: [u64; 18] = [
        0x0010_0000_0000_0000,
        0x3c90_0000_0000_0000,
        0x3fd6_2e42_fefa_39ef,
        0x3fd6_2e43_0000_0000,
        0x3fdc_5c85_fdf4_73de,
        0x3ff0_a2b2_0000_0000,
        0x3ff0_a2b2_3f3b_ab73,
        0x402b_0861_a6c0_f69b,
        0x402c_6b45_d6b0_9a3a,
        0x4043_3c1e_191c_fe3d,
        0x4043_687a_0000_0000,
        0x4043_687a_9f1a_f2b1,
        0x4043_94d7_2518_e725,
        0x4086_2b7d_369a_5aa8,
        0x4086_2e42_fefa_39ef,
        0x4090_0000_0000_0000,
        0x7fef_ffff_ffff_ffff,
        0x7ff0_0000_0000_0000,
    ];

    #[test]
    fn every_f64_near_each_branch_boundary_and_the_special_values_match_libm() {
        assert!(check(&windows64(&BOUNDS, 1 << 14)) > 1_100_000);
        check(&SPECIAL.map(f64::from_bits));
    }

    #[test]
    fn random_bit_patterns_match_libm() {
        // Exponents from 2^-60 to 2^10 (every range but the saturated ones), then any.
        let n = stream(
            12_000_000,
            0,
            |r| with_exponent(r, 0x3ff - 60, 0x3ff + 10),
            check,
        );
        assert!(n + stream(1_000_000, 1, f64::from_bits, check) > 12_000_000);
    }

    #[test]
    fn random_values_in_the_main_ranges_match_libm() {
        let n = stream(8_000_000, 2, |r| uniform(r, 60.), check);
        let n = n + stream(8_000_000, 3, |r| uniform(r, 1.), check);
        assert!(n + stream(2_000_000, 4, |r| uniform(r, 750.), check) > 17_000_000);
    }

    #[test]
    fn the_slice_function_matches_scalar_calls_on_a_shuffled_mix() {
        let xs = shuffled_mix64(&SPECIAL, &BOUNDS, near64, |next| {
            (0..20_000).map(|_| uniform(next(), 60.)).collect()
        });
        slice_matches_select(&xs, expm1_select, expm1_slice);
        check(&xs);
    }
}
