//! The hyperbolic tangent of f32 values at vector speed with the `libm` crate's bits.
//! `tanhf_select` is libm's `tanhf` (from musl: on |x|, 1 - 2/(expm1(2|x|) + 2) above log(3)/2,
//! t/(t + 2) with t = expm1(2|x|) above log(5/3)/2, -t/(t + 2) with t = expm1(-2|x|) on normal
//! |x| below, the sign put back last) with every branch computed and chosen by a select, so a
//! loop of it vectorises: each lane runs the scalar call's IEEE operations in the same order
//! (no FMA contraction), expm1f through `expm1f_bounded` (its argument's range). The three ranges share one expm1f and
//! one division, on operands chosen per lane, since each lane uses only its own range's.
//! Every input, special values included, takes the select path: `tanhf_slice` needs no scalar
//! fix-up.

use super::expm1f::expm1f_bounded;

/// `libm::tanhf(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn tanhf_select(x: f32) -> f32 {
    let bits = x.to_bits();
    let sign = bits >> 31 != 0;
    let w = bits & 0x7fff_ffff;
    let x = f32::from_bits(w);
    let huge = w > 0x4120_0000; // |x| > 10, or NaN: 1 + 0/|x|
    let high = w > 0x3f0c_9f54; // |x| > log(3)/2
    let mid = w > 0x3e82_c578; // |x| > log(5/3)/2
    let normal = w >= 0x0080_0000;
    // libm's 2x or -2x: the second is the first with its sign flipped (exact for all but a NaN,
    // which takes `huge`), flipped by bits, as a branch here would have LLVM duplicate expm1f.
    let two_x = (2. * x).to_bits() ^ ((!mid as u32) << 31);
    // |2x| <= 20 on every lane whose result is kept (beyond, `huge` answers), and -2|x| is
    // used below log(5/3)/2 only: expm1f's bounded form.
    let t = expm1f_bounded(f32::from_bits(two_x));
    // The one division of each range: 0/x, 2/(t+2), t/(t+2) or -t/(t+2), its operands picked
    // by eager selects (with `if`, LLVM threads the range tests and copies the division).
    let pick = std::hint::select_unpredictable::<f32>;
    let num = pick(huge, 0., pick(high, 2., pick(mid, t, -t)));
    let den = pick(huge, x, t + 2.);
    let q = num / den;
    let tt = if huge {
        1. + q
    } else if high {
        1. - q
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
    /// `out[i] = libm::tanhf(x[i])` for every i, bit for bit, on 16 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    tanhf_slice = tanhf_select, f32
);

#[cfg(test)]
mod tests {
    use super::super::test_support::{shuffled_mix, sweep, windows};
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f32]) -> usize {
        let mut fast = vec![0.0; xs.len()];
        tanhf_slice(xs, &mut fast);
        let mut plain = vec![0.0; xs.len()];
        run(xs, &mut plain);
        for (i, &x) in xs.iter().enumerate() {
            let want = libm::tanhf(x).to_bits();
            let at = format!("at {x:e} ({:#010x})", x.to_bits());
            assert_eq!(tanhf_select(x).to_bits(), want, "select {at}");
            assert_eq!(fast[i].to_bits(), want, "slice {at}");
            assert_eq!(plain[i].to_bits(), want, "plain loop {at}");
        }
        xs.len()
    }

    /// Every f32 within `w` bit steps of each boundary, both signs.
    // The subnormal bound, log(5/3)/2, log(3)/2 and 10 (tanhf's ranges), infinity, and where
    // expm1f's argument ±2|x| crosses its own bounds: 2^-25, 0.5 ln2, 1.5 ln2, k = 23.
    const BOUNDS: [u32; 9] = [
        0x0080_0000,
        0x3280_0000,
        0x3e31_7218,
        0x3e82_c578,
        0x3f05_1592,
        0x3f0c_9f54,
        0x40f9_8872,
        0x4120_0000,
        0x7f80_0000,
    ];

    #[test]
    fn every_f32_near_each_branch_boundary_matches_libm() {
        assert!(check(&windows(&BOUNDS, 1 << 16)) > 1_600_000);
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
