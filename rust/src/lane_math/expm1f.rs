//! e^x - 1 for f32 values at vector speed with the `libm` crate's bits. `expm1f_select` is
//! libm's `expm1f` (FreeBSD's s_expm1f.c: reduction by k·ln2 in two parts with a correction c,
//! a rational approximation on the reduced argument, then one of six reconstructions chosen
//! by k) with every branch computed and chosen by a select, so a loop of it vectorises: each
//! lane runs the scalar call's IEEE operations in the same order (no FMA contraction). Every
//! input, special values included, takes the select path: `expm1f_slice` needs no scalar
//! fix-up. Where AVX-512 exists, vectors whose lanes are all ordinary run the general path
//! written in intrinsics instead (`expm1f/lanes.rs`).

const LN2_HI: f32 = f32::from_bits(0x3f31_7180); // 6.9313812256e-01
const LN2_LO: f32 = f32::from_bits(0x3717_f7d1); // 9.0580006145e-06
const INV_LN2: f32 = f32::from_bits(0x3fb8_aa3b); // 1.4426950216e+00
const Q1: f32 = f32::from_bits(0xbd08_8868); // -0x888868.0p-28
const Q2: f32 = f32::from_bits(0x3acf_3010); // 0xcf3010.0p-33
const X1P127: f32 = f32::from_bits(0x7f00_0000); // 2^127

/// `libm::expm1f(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn expm1f_select(x: f32) -> f32 {
    expm1f_for::<false>(x)
}

/// `expm1f_select` for -0.6 <= x <= 21 (and any lane whose result is discarded, NaN
/// included): there k is in -1..=30, so libm's reconstructions for k < -1 and k > 56, its
/// k = 128 scaling and its special cases but |x| < 2^-25 are never taken, and left out. The
/// range tanhf's argument 2|x| or -2|x| keeps to.
#[inline(always)]
pub fn expm1f_bounded(x: f32) -> f32 {
    expm1f_for::<true>(x)
}

/// libm's expm1f; where `BOUNDED`, only the branches `expm1f_bounded` keeps.
#[inline(always)]
fn expm1f_for<const BOUNDED: bool>(x: f32) -> f32 {
    let bits = x.to_bits();
    let sign = bits >> 31 != 0;
    let hx = bits & 0x7fff_ffff;
    // Argument reduction: k = round(x / ln2) from 1.5 ln2, ±1 beyond 0.5 ln2, else 0. With
    // t = ±1, t·ln2_hi and t·ln2_lo are libm's ±ln2_hi and ±ln2_lo exactly; with t = 0 the
    // formulas give hi = x, lo = 0, c = 0 exactly, libm's unreduced x.
    let half = if sign { -0.5 } else { 0.5 };
    // libm's `as i32` saturates, which LLVM lowers lane by lane; below 128 in magnitude (every
    // lane the general path keeps) the value is in range, where plain truncation is the same.
    let kf = if hx < 0x4300_0000 {
        INV_LN2 * x + half
    } else {
        0.
    };
    // SAFETY: |kf| < 2^8: finite and in i32's range.
    let k_far = unsafe { kf.to_int_unchecked::<i32>() };
    let k_near = if sign { -1 } else { 1 };
    let k = if hx >= 0x3f85_1592 {
        k_far
    } else if hx > 0x3eb1_7218 {
        k_near
    } else {
        0
    };
    let t = k as f32;
    let hi = x - t * LN2_HI;
    let lo = t * LN2_LO;
    let xr = hi - lo; // libm's x from here on, in the primary range
    let c = (hi - xr) - lo;
    let hfx = 0.5 * xr;
    let hxs = xr * hfx;
    let r1 = 1. + hxs * (Q1 + hxs * Q2);
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
    // 2^k and 2^-k by their bits; wrapping, as discarded lanes may overflow.
    let twopk = f32::from_bits((0x7f_i32.wrapping_add(k) << 23) as u32);
    let uf = f32::from_bits((0x7f_i32.wrapping_sub(k) << 23) as u32);
    let y = xr - e + 1.;
    let y = if !BOUNDED && k == 128 {
        y * 2. * X1P127
    } else {
        y * twopk
    };
    let y_far = y - 1.;
    let y_mid = if k < 23 {
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
    } else if !BOUNDED && !(0..=56).contains(&k) {
        y_far
    } else {
        y_mid
    };
    if BOUNDED {
        return if hx < 0x3300_0000 { x } else { general };
    }
    // libm's special cases, in its order.
    if hx > 0x7f80_0000 {
        x // NaN, as it is
    } else if sign && hx >= 0x4195_b844 {
        -1. // x <= -27 ln2, -inf included
    } else if hx > 0x42b1_7217 {
        x * X1P127 // x > log(FLT_MAX): overflow to inf
    } else if hx < 0x3300_0000 {
        x // |x| < 2^-25
    } else {
        general
    }
}

super::lane_slice!(
    /// `out[i] = libm::expm1f(x[i])` for every i, bit for bit, on 16 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    expm1f_slice = expm1f_select, f32, avx512 = lanes::run
);

#[cfg(target_arch = "x86_64")]
mod lanes;

#[cfg(test)]
mod tests {
    use super::super::test_support::{shuffled_mix, sweep, windows};
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f32]) -> usize {
        let mut fast = vec![0.0; xs.len()];
        expm1f_slice(xs, &mut fast);
        let mut plain = vec![0.0; xs.len()];
        run(xs, &mut plain);
        for (i, &x) in xs.iter().enumerate() {
            let want = libm::expm1f(x).to_bits();
            let at = format!("at {x:e} ({:#010x})", x.to_bits());
            assert_eq!(expm1f_select(x).to_bits(), want, "select {at}");
            assert_eq!(fast[i].to_bits(), want, "slice {at}");
            assert_eq!(plain[i].to_bits(), want, "plain loop {at}");
        }
        xs.len()
    }

    /// Every f32 within `w` bit steps of each boundary, both signs.
    // 2^-25, 0.5 ln2 and 1.5 ln2 (k = 0 / ±1 / rounded), ln2 - 1/4 (the k = 1 formulas), the
    // k = 23, k = 57 and k = 128 reconstructions, 27 ln2 (-1 below it), log(FLT_MAX), the
    // subnormal bound and infinity.
    const BOUNDS: [u32; 11] = [
        0x0080_0000,
        0x3300_0000,
        0x3eb1_7218,
        0x3ee2_e430,
        0x3f85_1592,
        0x4179_8872,
        0x4195_b844,
        0x421c_a6b9,
        0x42b0_c0a6,
        0x42b1_7217,
        0x7f80_0000,
    ];

    #[test]
    fn every_f32_near_each_branch_boundary_matches_libm() {
        assert!(check(&windows(&BOUNDS, 1 << 16)) > 2_000_000);
    }

    #[test]
    fn a_sweep_of_all_f32_and_the_special_values_match_libm() {
        let xs = sweep();
        assert!(check(&xs) > 4_000_000);
    }

    #[test]
    fn a_shuffled_mix_of_branches_matches_libm() {
        let xs = shuffled_mix(&BOUNDS, |next| {
            let mut xs = Vec::new();
            // Values in [-32, 32): every range of the main path, both signs.
            xs.extend((0..20_000).map(|_| (next() >> 40) as f32 / (1u64 << 18) as f32 - 32.0));
            xs
        });
        check(&xs);
    }
}
