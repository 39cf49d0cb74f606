//! The natural logarithm of 1+x for f32 values at vector speed with the `libm` crate's bits.
//! `log1pf_select` is libm's `log1pf` (FreeBSD's s_log1pf.c: near 0 log(1+f) on f = x itself,
//! elsewhere on u = 1+x reduced into [sqrt(2)/2, sqrt(2)] with a correction c for the rounding
//! of 1+x, then k·ln2 added in two parts) with every branch computed and chosen by a select, so
//! a loop of it vectorises: each lane runs the scalar call's IEEE operations in the same order
//! (no FMA contraction). The special cases' divisions share the main one (operands picked per
//! lane), division being the costly step. Every input, special values included, takes the
//! select path: `log1pf_slice` needs no scalar fix-up.

const LN2_HI: f32 = f32::from_bits(0x3f31_7180); // 6.9313812256e-01
const LN2_LO: f32 = f32::from_bits(0x3717_f7d1); // 9.0580006145e-06
const LG1: f32 = f32::from_bits(0x3f2a_aaaa); // 0xaaaaaa.0p-24
const LG2: f32 = f32::from_bits(0x3ecc_ce13); // 0xccce13.0p-25
const LG3: f32 = f32::from_bits(0x3e91_e9ee); // 0x91e9ee.0p-25
const LG4: f32 = f32::from_bits(0x3e78_9e26); // 0xf89e26.0p-26

/// `libm::log1pf(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn log1pf_select(x: f32) -> f32 {
    let ix = x.to_bits();
    let negative = ix >> 31 != 0;
    // libm's k > 0 path: u = 1+x reduced, c ~ log(1+x) - log(u) (0 where k >= 25, as c/u
    // would underflow). Wrapping, as lanes that never take this path may overflow.
    let u = 1. + x;
    let iu = u.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let ku = (iu >> 23) as i32 - 0x7f;
    let cn = if ku >= 2 { 1. - (u - x) } else { x - (u - 1.) };
    let cu = if ku < 25 { cn / u } else { 0. };
    let fu = f32::from_bits((iu & 0x007f_ffff) + 0x3f35_04f3) - 1.;
    // sqrt(2)/2 <= 1+x < sqrt(2): libm takes f = x, k = 0, c = 0.
    let near = ix < 0x3ed4_13d0 || (negative && ix <= 0xbe95_f619);
    let (k, c, f) = if near { (0, 0., x) } else { (ku, cu, fu) };
    // One division for every lane: s = f/(2+f), or the specials' x/0 and (x-x)/0, its operands
    // picked by eager selects (with `if`, LLVM may thread the tests and copy the division).
    let pick = std::hint::select_unpredictable::<f32>;
    let below = ix >= 0xbf80_0000; // x <= -1 or a negative NaN
    #[allow(clippy::eq_op)] // libm's x - x: a NaN, a NaN argument's payload kept
    let nan = x - x;
    let num = pick(below, pick(x == -1., x, nan), f);
    let den = pick(below, 0., 2.0 + f);
    let s = num / den;
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * LG4);
    let t2 = z * (LG1 + w * LG3);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    let general = s * (hfsq + r) + (dk * LN2_LO + c) - hfsq + f + dk * LN2_HI;
    // libm's special cases, in its order.
    if below {
        s // log1p(-1) = -inf, else NaN (a negative NaN's payload kept)
    } else if ix << 1 < 0x3380_0000 << 1 || (!negative && ix >= 0x7f80_0000) {
        x // |x| < 2^-24, +inf, or a positive NaN as it is
    } else {
        general
    }
}

super::lane_slice!(
    /// `out[i] = libm::log1pf(x[i])` for every i, bit for bit, on 16 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    log1pf_slice = log1pf_select, f32
);

#[cfg(test)]
mod tests {
    use super::super::test_support::{shuffled_mix, sweep, windows};
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f32]) -> usize {
        let mut fast = vec![0.0; xs.len()];
        log1pf_slice(xs, &mut fast);
        let mut plain = vec![0.0; xs.len()];
        run(xs, &mut plain);
        for (i, &x) in xs.iter().enumerate() {
            let want = libm::log1pf(x).to_bits();
            let at = format!("at {x:e} ({:#010x})", x.to_bits());
            assert_eq!(log1pf_select(x).to_bits(), want, "select {at}");
            assert_eq!(fast[i].to_bits(), want, "slice {at}");
            assert_eq!(plain[i].to_bits(), want, "plain loop {at}");
        }
        xs.len()
    }

    /// Every f32 within `w` bit steps of each boundary, both signs.
    // Zero, the subnormal and 2^-24 bounds, sqrt(2)-1 and 1-sqrt(2)/2 (f = x or u = 1+x),
    // -1, k = 2 and k = 25 in the correction c (2·sqrt(2)-1, 2^24·sqrt(2)), and infinity.
    const BOUNDS: [u32; 10] = [
        0,
        0x0080_0000,
        0x3380_0000,
        0x3ed4_13d0,
        0x3e95_f619,
        0x3f80_0000,
        0x3fea_09e6,
        0x4bb5_04f3,
        0x7f80_0000,
        0x3f35_04f3,
    ];

    #[test]
    fn every_f32_near_each_branch_boundary_matches_libm() {
        assert!(check(&windows(&BOUNDS, 1 << 16)) > 1_800_000);
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
