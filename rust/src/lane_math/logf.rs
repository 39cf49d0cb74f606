//! The natural logarithm of f32 values at vector speed with the `libm` crate's bits.
//! `logf_select` is libm's `logf` (FreeBSD's e_logf.c: subnormals scaled by 2^25, reduction of
//! the significand into [sqrt(2)/2, sqrt(2)], then log(1+f) = f - hfsq + s·(hfsq + R(s²)) with
//! k·ln2 added in two parts) with every branch computed and chosen by a select, so a loop of it
//! vectorises: each lane runs the scalar call's IEEE operations in the same order (no FMA
//! contraction). The special cases' divisions share the main one (operands picked per lane),
//! division being the costly step. Every input, special values included, takes the select
//! path: `logf_slice` needs no scalar fix-up.

const LN2_HI: f32 = f32::from_bits(0x3f31_7180); // 6.9313812256e-01
const LN2_LO: f32 = f32::from_bits(0x3717_f7d1); // 9.0580006145e-06
const LG1: f32 = f32::from_bits(0x3f2a_aaaa); // 0xaaaaaa.0p-24
const LG2: f32 = f32::from_bits(0x3ecc_ce13); // 0xccce13.0p-25
const LG3: f32 = f32::from_bits(0x3e91_e9ee); // 0x91e9ee.0p-25
const LG4: f32 = f32::from_bits(0x3e78_9e26); // 0xf89e26.0p-26

/// `libm::logf(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn logf_select(x: f32) -> f32 {
    let ix0 = x.to_bits();
    // Positive subnormals (and +0, whose result is chosen below) are scaled up by 2^25.
    let sub = ix0 < 0x0080_0000;
    let xs = if sub {
        x * f32::from_bits(0x4c00_0000)
    } else {
        x
    };
    let k0 = if sub { -25 } else { 0 };
    // Reduce into [sqrt(2)/2, sqrt(2)]; wrapping, as negative lanes (discarded) overflow.
    let ix = xs.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = k0 + ((ix >> 23) as i32) - 0x7f;
    let xr = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    let f = xr - 1.;
    // One division for every lane: s = f/(2+f), or the specials' -1/(x·x) and (x-x)/0, its
    // operands picked by eager selects (with `if`, LLVM may thread the tests and copy the
    // division).
    let pick = std::hint::select_unpredictable::<f32>;
    let zero = ix0 << 1 == 0;
    let negative = ix0 >> 31 != 0;
    #[allow(clippy::eq_op)] // libm's x - x: a NaN, a NaN argument's payload kept
    let nan = x - x;
    let num = pick(zero, -1., pick(negative, nan, f));
    let den = pick(zero, x * x, pick(negative, 0., 2. + f));
    let s = num / den;
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * LG4);
    let t2 = z * (LG1 + w * LG3);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    let general = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
    // libm's special cases, in its order.
    if zero || negative {
        s // log(±0) = -inf; log(negative) = NaN, a negative NaN's payload kept
    } else if ix0 >= 0x7f80_0000 {
        x // +inf, or a positive NaN as it is
    } else if ix0 == 0x3f80_0000 {
        0.
    } else {
        general
    }
}

super::lane_slice!(
    /// `out[i] = libm::logf(x[i])` for every i, bit for bit, on 16 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    logf_slice = logf_select, f32
);

#[cfg(test)]
mod tests {
    use super::super::test_support::{shuffled_mix, sweep, windows};
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f32]) -> usize {
        let mut fast = vec![0.0; xs.len()];
        logf_slice(xs, &mut fast);
        let mut plain = vec![0.0; xs.len()];
        run(xs, &mut plain);
        for (i, &x) in xs.iter().enumerate() {
            let want = libm::logf(x).to_bits();
            let at = format!("at {x:e} ({:#010x})", x.to_bits());
            assert_eq!(logf_select(x).to_bits(), want, "select {at}");
            assert_eq!(fast[i].to_bits(), want, "slice {at}");
            assert_eq!(plain[i].to_bits(), want, "plain loop {at}");
        }
        xs.len()
    }

    /// Every f32 within `w` bit steps of each boundary, both signs.
    // Zero and the subnormal bound, the reduction's crossing at sqrt(2)/2 (in a scaled
    // subnormal, below and above 1), 1 itself, and infinity.
    const BOUNDS: [u32; 7] = [
        0,
        0x0080_0000,
        0x0035_04f3,
        0x3f35_04f3,
        0x3f80_0000,
        0x3fb5_04f3,
        0x7f80_0000,
    ];

    #[test]
    fn every_f32_near_each_branch_boundary_matches_libm() {
        assert!(check(&windows(&BOUNDS, 1 << 16)) > 1_500_000);
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
