//! libm's f64 `exp` (FreeBSD's e_exp.c: argument reduction by k*ln2 in two parts, a degree-5
//! rational correction, then scalbn) without branches: each branch is computed and one chosen
//! by a select, so a loop of it vectorises, every lane running the scalar call's IEEE operations
//! in the same order. Tested bit for bit against `libm::exp` below.

// libm's constants, by their bits.
pub const HALF: f64 = 0.5;
pub const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // 6.93147180369123816490e-01
pub const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76); // 1.90821492927058770002e-10
pub const INV_LN2: f64 = f64::from_bits(0x3ff7_1547_652b_82fe); // 1.44269504088896338700e+00
pub const P1: f64 = f64::from_bits(0x3fc5_5555_5555_553e); // 1.66666666666666019037e-01
pub const P2: f64 = f64::from_bits(0xbf66_c16c_16be_bd93); // -2.77777777770155933842e-03
pub const P3: f64 = f64::from_bits(0x3f11_566a_af25_de2c); // 6.61375632143793436117e-05
pub const P4: f64 = f64::from_bits(0xbebb_bd41_c5d2_6bf1); // -1.65339022054652515390e-06
pub const P5: f64 = f64::from_bits(0x3e66_3769_72be_a4d0); // 4.13813679705723846039e-08
/// Above this exp overflows (709.782712893383973096).
pub const OVERFLOW: f64 = f64::from_bits(0x4086_2e42_fefa_39ef);
/// Below this exp is 0 (-745.13321910194110842).
pub const UNDERFLOW: f64 = f64::from_bits(0xc087_4910_d52d_3051);
const X1P1023: f64 = f64::from_bits(0x7fe0_0000_0000_0000); // 2^1023
const X1P_969: f64 = f64::from_bits(0x0360_0000_0000_0000); // 2^-1022 * 2^53

/// `libm::exp(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn exp_select(x: f64) -> f64 {
    let bits = x.to_bits();
    let negative = bits >> 63 != 0;
    // The high word of |x|, which libm's branch bounds compare.
    let hx = (bits >> 32) as u32 & 0x7fff_ffff;
    // Argument reduction: k = round(x / ln2) from 1.5 ln2 on, +-1 beyond 0.5 ln2, else 0 (for
    // which the general formulas give hi = x, lo = 0, r = x exactly, as libm's second branch).
    let half = if negative { -HALF } else { HALF };
    // Beyond |x| ~ 745 (and for NaN) k is unused (a special case below answers), so any in-range
    // value does; clamping there keeps k in -1075..=1024 and lets the conversion be one
    // truncating instruction per vector (`as i32` saturates, which LLVM does lane by lane).
    let t = INV_LN2 * x + half;
    let t = if t.abs() < 1076.0 { t } else { 0.0 };
    // SAFETY: t is finite and |t| < 1076, so its truncation fits in i32.
    let k_far: i32 = unsafe { t.to_int_unchecked() };
    let k_near = if negative { -1 } else { 1 };
    let k = if hx >= 0x3ff0_a2b2 {
        k_far
    } else if hx > 0x3fd6_2e42 {
        k_near
    } else {
        0
    };
    let kf = k as f64;
    let hi = x - kf * LN2_HI; // k*ln2hi is exact here
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let xx = r * r;
    let c = r - xx * (P1 + xx * (P2 + xx * (P3 + xx * (P4 + xx * P5))));
    let y = 1.0 + (r * c / (2.0 - c) - lo + hi);
    // scalbn(y, k) for the k this range gives (-1075..=1024): one pre-scaling step at most (the
    // second of libm's scalbn needs |k| > 1990), and a scale of 2^0 = 1 where k = 0 leaves y as
    // it is, as libm's `if k == 0 { y }`.
    // The pre-scale is selected as a factor (1 where k needs none: y * 1 is y exactly), not as
    // the product: computing both products and selecting one ran 3x slower (5.2 -> 1.7 ms per
    // million on one core), as the scalar fallback did.
    let (pre, n) = if k > 1023 {
        (X1P1023, k - 1023)
    } else if k < -1022 {
        (X1P_969, k + 969)
    } else {
        (1.0, k)
    };
    let y = y * pre;
    let general = y * f64::from_bits(((0x3ff + n) as u32 as u64) << 52);
    // libm's special cases, in its order.
    if x.is_nan() {
        x // payload kept
    } else if x > OVERFLOW {
        x * X1P1023 // overflow to inf
    } else if x < UNDERFLOW {
        0.0
    } else if hx <= 0x3e30_0000 {
        1.0 + x // |x| <= 2^-28 (by the high word)
    } else {
        general
    }
}

super::lane_slice!(
    /// `out[i] = libm::exp(x[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
    /// Panics if the lengths differ.
    exp_slice = exp_select, f64
);

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        check_unary, chunked, near64_bit40, rng, special64, unit, windows64,
    };
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f64]) -> usize {
        check_unary(xs, libm::exp, exp_select, exp_slice, run)
    }

    /// `n` values drawn by `draw`, checked a million at a time.
    fn check_drawn(n: usize, draw: impl FnMut() -> f64) -> usize {
        chunked(n, draw, check)
    }

    /// `SPECIAL64` with the NaN payloads of these tests.
    const SPECIAL: [u64; 22] = special64([
        0x7ff8_1234_5678_9abc,
        0xfffc_4321_0000_0001,
        0x7ff4_0000_dead_beef,
        0xfff7_ffff_ffff_ffff,
    ]);

    // |x| bounds of libm's branches: the tiny bound (high word 0x3e300000, both ends of it),
    // 0.5 ln2 and 1.5 ln2 (k = 0 / +-1 / rounded), the special-case high word 0x4086232b,
    // 708.39 (subnormal results begin), the overflow bound 709.78, the underflow bound 745.13,
    // k's bounds for scalbn's pre-scaling steps, 0, the smallest normal and infinity.
    const BOUNDS: [u64; 15] = [
        0x3e30_0000_0000_0000,
        0x3e30_0001_0000_0000,
        0x3fd6_2e43_0000_0000,
        0x3ff0_a2b2_0000_0000,
        0x4086_232b_0000_0000,
        0x4086_232b_dd7a_bcd2,
        0x4086_2e42_fefa_39ef,
        0x4087_4910_d52d_3051,
        0x4086_2b7d_369a_5aa8, // 1023.5 ln2 = 709.44 (k = 1023 / 1024)
        0x4086_25f1_a5da_9c19, // 1022.5 ln2 = 708.74 (k = -1022 / -1023)
        0x4087_464b_0ccd_510a, // 1074.5 ln2 = 744.79 (k = -1074 / -1075)
        0,
        0x0010_0000_0000_0000,
        0x7ff0_0000_0000_0000,
        0x3ff0_0000_0000_0000,
    ];

    #[test]
    fn constants_are_libms() {
        for (c, s) in [
            (LN2_HI, "6.93147180369123816490e-01"),
            (LN2_LO, "1.90821492927058770002e-10"),
            (INV_LN2, "1.44269504088896338700e+00"),
            (P1, "1.66666666666666019037e-01"),
            (P2, "-2.77777777770155933842e-03"),
            (P3, "6.61375632143793436117e-05"),
            (P4, "-1.65339022054652515390e-06"),
            (P5, "4.13813679705723846039e-08"),
            (OVERFLOW, "709.782712893383973096"),
            (UNDERFLOW, "-745.13321910194110842"),
        ] {
            assert_eq!(c.to_bits(), s.parse::<f64>().unwrap().to_bits(), "{s}");
        }
    }

    #[test]
    fn special_values_and_every_f64_near_each_branch_boundary_match_libm() {
        let special: Vec<f64> = SPECIAL.iter().map(|&b| f64::from_bits(b)).collect();
        check(&special);
        assert!(check(&windows64(&BOUNDS, 1 << 17)) > 7_000_000);
    }

    #[test]
    fn every_f64_near_each_rounding_boundary_of_k_matches_libm() {
        // k changes where x / ln2 crosses j + 1/2: 2048 steps either side of each, for every j
        // from -1076 to 1024 (the whole range of k the general path sees).
        let bounds: Vec<u64> = (-1076..=1024)
            .map(|j| ((j as f64 + 0.5) * core::f64::consts::LN_2).to_bits())
            .collect();
        let mut xs = Vec::new();
        for &b in &bounds {
            xs.extend((b - 2048..=b + 2048).map(f64::from_bits));
        }
        assert!(check(&xs) > 8_600_000);
    }

    #[test]
    fn random_f64_uniform_in_the_range_that_matters_match_libm() {
        let mut next = rng();
        let mut u = move || unit(next());
        // Uniform in [-750, 750], then densely at both ends (k = 1024, subnormal results).
        let mut n = check_drawn(30_000_000, || u() * 1500.0 - 750.0);
        n += check_drawn(4_000_000, || 708.0 + u() * 2.0);
        n += check_drawn(4_000_000, || -746.0 + u() * 38.0);
        assert_eq!(n, 38_000_000);
    }

    #[test]
    fn random_bit_patterns_match_libm() {
        let mut next = rng();
        // Random sign and mantissa with every biased exponent up to 2^11 (|x| < 2048), so
        // subnormals, tiny values and each branch get their share; then any bits at all.
        let mut n = check_drawn(20_000_000, || {
            let r = next();
            let e = (r >> 52) % 0x40a;
            f64::from_bits((r & 0x800f_ffff_ffff_ffff) | e << 52)
        });
        n += check_drawn(4_000_000, || f64::from_bits(next()));
        assert_eq!(n, 24_000_000);
    }

    #[test]
    fn exp_slice_matches_scalar_calls_on_a_mixed_slice() {
        // Special values, boundary neighbours and random values shuffled together, in an odd
        // length so the vector loop's remainder runs too.
        let mut next = rng();
        let mut xs: Vec<f64> = SPECIAL.iter().map(|&b| f64::from_bits(b)).collect();
        for &b in &BOUNDS {
            xs.extend((0..500).map(|_| near64_bit40(b, next())));
        }
        xs.extend((0..20_000).map(|_| unit(next()) * 1500.0 - 750.0));
        xs.extend((0..5_001).map(|_| f64::from_bits(next())));
        for i in (1..xs.len()).rev() {
            xs.swap(i, next() as usize % (i + 1));
        }
        let mut out = vec![0.0; xs.len()];
        exp_slice(&xs, &mut out);
        for (&x, &y) in xs.iter().zip(&out) {
            let want = exp_select(x).to_bits();
            assert_eq!(y.to_bits(), want, "at {x:e} ({:#018x})", x.to_bits());
            assert_eq!(
                want,
                libm::exp(x).to_bits(),
                "at {x:e} ({:#018x})",
                x.to_bits()
            );
        }
        assert!(!xs.len().is_multiple_of(8));
    }
}
