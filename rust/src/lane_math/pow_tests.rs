//! `pow_main`, `pow_slice` and `pow_zip` against `libm::pow`, bit for bit.

use super::super::test_support::{rng, unit, with_exponent, SPECIAL64};
use super::*;

/// Every pair through `pow_zip` and its plain loop against libm, and `pow_main` where it says it
/// answers; returns (pairs, pairs the main path answered).
fn check_pairs(xs: &[f64], ys: &[f64]) -> (usize, usize) {
    let (mut zip, mut plain) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
    pow_zip(xs, ys, &mut zip);
    run_zip(xs, ys, &mut plain);
    let mut main = 0;
    for (i, (&x, &y)) in xs.iter().zip(ys).enumerate() {
        let want = libm::pow(x, y).to_bits();
        let (p, ok) = pow_main(x, y);
        let got = [zip[i].to_bits(), plain[i].to_bits()];
        assert!(
            got == [want; 2] && (!ok || p.to_bits() == want),
            "pow({x:e}, {y:e}) ({:#018x}, {:#018x}): libm {want:#018x}, zip / plain {got:#018x?}, \
             main path {:#018x} (answers: {ok})",
            x.to_bits(),
            y.to_bits(),
            p.to_bits()
        );
        main += ok as usize;
    }
    (xs.len(), main)
}

/// `pow_slice` with one exponent against libm; returns the lanes the main path answered.
fn check_slice(xs: &[f64], y: f64) -> usize {
    let mut out = vec![0.0; xs.len()];
    pow_slice(xs, y, &mut out);
    for (&x, &o) in xs.iter().zip(&out) {
        let want = libm::pow(x, y);
        assert_eq!(o.to_bits(), want.to_bits(), "pow({x:e}, {y:e})");
    }
    xs.iter().filter(|&&x| pow_main(x, y).1).count()
}

#[test]
fn constants_are_libms() {
    for (c, s) in [
        (DP_H1, "5.84962487220764160156e-01"),
        (DP_L1, "1.35003920212974897128e-08"),
        (L1, "5.99999999999994648725e-01"),
        (L2, "4.28571428578550184252e-01"),
        (L3, "3.33333329818377432918e-01"),
        (L4, "2.72728123808534006489e-01"),
        (L5, "2.30660745775561754067e-01"),
        (L6, "2.06975017800338417784e-01"),
        (P1, "1.66666666666666019037e-01"),
        (P2, "-2.77777777770155933842e-03"),
        (P3, "6.61375632143793436117e-05"),
        (P4, "-1.65339022054652515390e-06"),
        (P5, "4.13813679705723846039e-08"),
        (LG2, "6.93147180559945286227e-01"),
        (LG2_H, "6.93147182464599609375e-01"),
        (LG2_L, "-1.90465429995776804525e-09"),
        (CP, "9.61796693925975554329e-01"),
        (CP_H, "9.61796700954437255859e-01"),
        (CP_L, "-7.02846165095275826516e-09"),
    ] {
        assert_eq!(c.to_bits(), s.parse::<f64>().unwrap().to_bits(), "{s}");
    }
}

#[test]
fn special_values_crossed_match_libm() {
    let mut v: Vec<f64> = SPECIAL64.iter().map(|&b| f64::from_bits(b)).collect();
    v.extend([
        1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 1.5, 2.5, 1e-310, -1e-310, 1e300, -1e300,
    ]);
    v.extend([
        1023.0,
        1024.0,
        1025.0,
        -1074.0,
        -1075.0,
        -1076.0,
        2147483647.0,
        2147483648.0,
    ]);
    v.extend([
        4294967297.0,
        9007199254740993.0,
        1e19,
        -1e19,
        1.0 + f64::EPSILON,
        1.0 - 1e-16,
    ]);
    // Odd and even integers just past 2^31 that libm's main path still takes (high word
    // 0x41e00000), against bases near -1 whose powers stay in range.
    v.extend([2147483649.0, 2147483650.0, 2147485695.0, -2147483649.0]);
    v.extend([
        -(1.0 + f64::EPSILON),
        -(1.0 - 1e-16),
        -(1.0 + 1e-12),
        -(1.0 - 1e-12),
    ]);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for &x in &v {
        for &y in &v {
            xs.push(x);
            ys.push(y);
        }
    }
    check_pairs(&xs, &ys);
}

#[test]
fn random_pairs_match_libm_and_take_the_main_path() {
    let mut next = rng();
    // Ordinary pairs: |x| from 2^-60 to 2^60, either sign; y uniform in [-40, 40], an integer
    // there (so negative bases count), or a half-integer.
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..3_000_000 {
        xs.push(with_exponent(next(), 0x3ff - 60, 0x3ff + 60));
        let u = unit(next()) * 80.0 - 40.0;
        ys.push(match i % 3 {
            0 => u,
            1 => u.round(),
            _ => u.round() + 0.5,
        });
    }
    let (n, main) = check_pairs(&xs, &ys);
    // Negative bases with fractional exponents (NaN) and results out of range take libm's call.
    assert!(main > n / 2, "the main path answered {main} of {n}");
    // Any bit patterns: every exponent, subnormals, infinities and NaNs among them.
    let xs: Vec<f64> = (0..1_000_000).map(|_| f64::from_bits(next())).collect();
    let ys: Vec<f64> = (0..1_000_000)
        .map(|_| with_exponent(next(), 0x3ff - 30, 0x3ff + 12))
        .collect();
    check_pairs(&xs, &ys);
}

#[test]
fn results_near_overflow_underflow_and_the_rounding_of_n_match_libm() {
    // y * log2|x| near each n + 1/2 (where n = [z + 0.5] changes), near 1024 (overflow), near
    // -1022 .. -1075 (subnormal results) and near ±1/2 (where n starts to round).
    let mut next = rng();
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for n in -1080..1030 {
        for _ in 0..400 {
            let y = 1.0 + unit(next()) * 60.0;
            let z = n as f64 + 0.5 + (unit(next()) - 0.5) * 1e-9;
            let x = (z / y).exp2();
            let x = f64::from_bits(x.to_bits().wrapping_add(next() % 5).wrapping_sub(2));
            xs.push(x);
            ys.push(y);
            xs.push(1.0 / x);
            ys.push(-y);
        }
    }
    for _ in 0..200_000 {
        let z = (unit(next()) - 0.5) * 1.5;
        let y = 0.5 + unit(next()) * 8.0;
        xs.push((z / y).exp2());
        ys.push(y);
    }
    let (n, main) = check_pairs(&xs, &ys);
    assert!(main > n / 2, "the main path answered {main} of {n}");
}

#[test]
fn every_interval_bound_of_the_reduction_matches_libm() {
    // |x|'s high word mantissa at libm's bounds 0x3988e (sqrt(3/2)) and 0xbb67a (sqrt(3)) and at
    // the binade's ends, 64 values either side, over a spread of exponents and both signs.
    let mut next = rng();
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for m in [0x3_988eu64, 0x3_988f, 0xb_b679, 0xb_b67a, 0, 0xf_ffff] {
        for e in (0x3ff - 40..0x3ff + 40).step_by(3) {
            let b = (e << 52) | (m << 32);
            for d in 0..128u64 {
                let x =
                    f64::from_bits(b.wrapping_add(d << 26).wrapping_sub(64 << 26) | next() & 0xfff);
                for y in [3.0, -2.0, -0.5, 1.5, 0.1, 7.0] {
                    xs.push(x);
                    ys.push(y);
                    xs.push(-x);
                    ys.push(y);
                }
            }
        }
    }
    let (n, main) = check_pairs(&xs, &ys);
    // Negative bases with fractional exponents take libm's call; the rest the main path.
    assert!(main > n / 2, "the main path answered {main} of {n}");
}

#[test]
fn pow_slice_matches_libm_for_the_exponents_models_use() {
    // Normal data (negative bases too), positive data and tiny and huge magnitudes, in an odd
    // length past a few blocks, for exponents a model's pow sees (integers, -1/2, 3/2, ...).
    let mut next = rng();
    let mut xs: Vec<f64> = (0..4_001).map(|_| (unit(next()) - 0.5) * 8.0).collect();
    xs.extend((0..2_000).map(|_| unit(next()) * 3.0 + 0.01));
    xs.extend((0..1_000).map(|_| with_exponent(next(), 1, 0x7fe)));
    xs.extend(SPECIAL64.iter().map(|&b| f64::from_bits(b)));
    for y in [
        3.0, -2.0, -0.5, 1.5, 4.0, -3.0, 0.25, 2.0, 0.5, -1.0, 1.0, 0.0, 1e10, -1e10,
    ] {
        let main = check_slice(&xs, y);
        let ordinary = ![2.0, 0.5, -1.0, 1.0, 0.0, 1e10, -1e10].contains(&y);
        assert!(
            !ordinary || main > xs.len() / 2,
            "y = {y}: main path {main}"
        );
    }
    // Every length below 40 at several offsets (the vector body and its remainder).
    for start in 0..5 {
        for len in 0..40 {
            check_slice(&xs[start * 101..][..len], -0.5);
        }
    }
}
