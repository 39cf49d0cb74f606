//! libm's `atan` and `atan2` (FreeBSD's s_atan.c and e_atan2.c) without branches, for f64.
//! `atan_select` reduces |x| by one of five ranges (id = -1..=3: t = x, (2|x|-1)/(2+|x|),
//! (|x|-1)/(|x|+1), (|x|-1.5)/(1+1.5|x|) or -1/|x|, told apart by the high word as libm does),
//! sums libm's odd and even polynomials in t² (6 and 5 terms) and adds atan_hi[id] back in two
//! parts; `atan2_select` takes atan(|y/x|) (atan(y) where x is 1) and moves it to the quadrant
//! with pi in two parts. Every branch is computed and one chosen by a select, so a loop of it
//! vectorises while each lane runs the scalar call's IEEE operations in the same order; every
//! input, special values included, takes the select path, so `atan2_zip` needs no scalar
//! fix-up.

// libm's constants, by their bits.
const ATAN_HI0: f64 = f64::from_bits(0x3fdd_ac67_0561_bb4f); // atan(0.5) hi
const ATAN_HI1: f64 = f64::from_bits(0x3fe9_21fb_5444_2d18); // atan(1.0) hi
const ATAN_HI2: f64 = f64::from_bits(0x3fef_730b_d281_f69b); // atan(1.5) hi
const ATAN_HI3: f64 = f64::from_bits(0x3ff9_21fb_5444_2d18); // atan(inf) hi
const ATAN_LO0: f64 = f64::from_bits(0x3c7a_2b7f_222f_65e2); // atan(0.5) lo
const ATAN_LO1: f64 = f64::from_bits(0x3c81_a626_3314_5c07); // atan(1.0) lo
const ATAN_LO2: f64 = f64::from_bits(0x3c70_0788_7af0_cbbd); // atan(1.5) lo
const ATAN_LO3: f64 = f64::from_bits(0x3c91_a626_3314_5c07); // atan(inf) lo
const AT0: f64 = f64::from_bits(0x3fd5_5555_5555_550d); // 3.33333333333329318027e-01
const AT1: f64 = f64::from_bits(0xbfc9_9999_9998_ebc4); // -1.99999999998764832476e-01
const AT2: f64 = f64::from_bits(0x3fc2_4924_9200_83ff); // 1.42857142725034663711e-01
const AT3: f64 = f64::from_bits(0xbfbc_71c6_fe23_1671); // -1.11111104054623557880e-01
const AT4: f64 = f64::from_bits(0x3fb7_45cd_c54c_206e); // 9.09088713343650656196e-02
const AT5: f64 = f64::from_bits(0xbfb3_b0f2_af74_9a6d); // -7.69187620504482999495e-02
const AT6: f64 = f64::from_bits(0x3fb1_0d66_a0d0_3d51); // 6.66107313738753120669e-02
const AT7: f64 = f64::from_bits(0xbfad_de2d_52de_fd9a); // -5.83357013379057348645e-02
const AT8: f64 = f64::from_bits(0x3fa9_7b4b_2476_0deb); // 4.97687799461593236017e-02
const AT9: f64 = f64::from_bits(0xbfa2_b444_2c6a_6c2f); // -3.65315727442169155270e-02
const AT10: f64 = f64::from_bits(0x3f90_ad3a_e322_da11); // 1.62858201153657823623e-02
const PI: f64 = f64::from_bits(0x4009_21fb_5444_2d18); // 3.1415926535897931160E+00
const PI_LO: f64 = f64::from_bits(0x3ca1_a626_3314_5c07); // 1.2246467991473531772E-16

// libm's |x| >= 2^66 answer (its "0x1p-120f" is the f64 of bits 0x03800000, a subnormal) and
// its PI / 2.0, PI / 4.0 and 3.0 * PI / 4.0, evaluated as it does.
const FAR: f64 = ATAN_HI3 + f64::from_bits(0x0380_0000);
const PI_2: f64 = PI / 2.0;
const PI_4: f64 = PI / 4.0;
const PI3_4: f64 = 3.0 * PI / 4.0;

const ABS: u64 = 0x7fff_ffff_ffff_ffff;
const INF: u64 = 0x7ff0_0000_0000_0000;

/// `libm::atan(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn atan_select(x: f64) -> f64 {
    let bits = x.to_bits();
    let sign = bits >> 63 != 0;
    let ix = (bits & ABS) >> 32; // the high word of |x|, which libm's bounds compare
    let ax = f64::from_bits(bits & ABS);
    // The reduction of ids 0..=3 as one quotient (a·|x| - b)/(a + b·|x|), a and b picked per
    // lane: 2|x| - 1 over 2 + |x|; |x| - 1 over 1 + |x|; |x| - 1.5 over 1 + 1.5|x|; and
    // 0·|x| - 1 = -1 over 0 + |x| = |x| (|x| is finite and positive there). Multiplying by 1
    // and adding 0 are exact and additions commute, so each lane's operations are libm's.
    // Eager selects: with `if`, LLVM may thread the tests and copy the division.
    let pick = std::hint::select_unpredictable::<f64>;
    let lt19 = ix < 0x3ff3_0000; // |x| < 19/16: ids 0 and 1 (-1 lanes discard it)
    let lt11 = ix < 0x3fe6_0000; // |x| < 11/16: id 0
    let lt39 = ix < 0x4003_8000; // |x| < 39/16: id 2, beyond it id 3
    let a = pick(lt19, pick(lt11, 2., 1.), pick(lt39, 1., 0.));
    let b = pick(lt19 | !lt39, 1., 1.5);
    let hi = pick(lt19, pick(lt11, ATAN_HI0, ATAN_HI1), ATAN_HI2);
    let hi = pick(lt39, hi, ATAN_HI3);
    let lo = pick(lt19, pick(lt11, ATAN_LO0, ATAN_LO1), ATAN_LO2);
    let lo = pick(lt39, lo, ATAN_LO3);
    // Lanes that discard the quotient (ids -1, |x| < 2^-27, >= 2^66 or NaN) divide 1's, and
    // those that answer x itself run the polynomial on 0: libm does neither, and subnormals
    // there would cost every lane of the vector a slow microcode assist.
    let tiny = ix < 0x3e40_0000; // |x| < 2^-27: x itself
    let near = ix < 0x3fdc_0000; // |x| < 7/16: id -1
    let far = ix >= 0x4410_0000; // |x| >= 2^66, inf and NaN
    let ar = pick(near | far, 1., ax);
    let reduced = (a * ar - b) / (a + b * ar);
    let t = if tiny {
        0.
    } else if near {
        x
    } else {
        reduced
    };
    let z = t * t;
    let w = z * z;
    let s1 = z * (AT0 + w * (AT2 + w * (AT4 + w * (AT6 + w * (AT8 + w * AT10)))));
    let s2 = w * (AT1 + w * (AT3 + w * (AT5 + w * (AT7 + w * AT9))));
    let small = t - t * (s1 + s2);
    let r = hi - ((t * (s1 + s2) - lo) - t);
    let r = if sign { -r } else { r };
    let far_r = if sign { -FAR } else { FAR };
    // libm's special cases, in its order.
    if far {
        if x.is_nan() {
            x
        } else {
            far_r
        }
    } else if tiny {
        x
    } else if near {
        small
    } else {
        r
    }
}

/// `libm::atan2(y, x)`, bit for bit, written without branches.
#[inline(always)]
pub fn atan2_select(y: f64, x: f64) -> f64 {
    let hx = x.to_bits();
    let hy = y.to_bits();
    let ax = hx & ABS;
    let ay = hy & ABS;
    // The high words of |x| and |y|, which libm's |y/x| tests compare (no overflow below:
    // they are at most 0x7ff00000 where the tests decide).
    let ix = ax >> 32;
    let iy = ay >> 32;
    let x_neg = hx >> 63 != 0; // m & 2
    let y_neg = hy >> 63 != 0; // m & 1
    let x_one = hx == 0x3ff0_0000_0000_0000;

    // One atan for every lane: of y where x is 1, else of |y/x| (the quotient of the special
    // cases' lanes, inf or NaN among them, is discarded).
    let a = atan_select(if x_one { y } else { (y / x).abs() });
    // |y/x| < 2^-64 with x < 0: z = 0.
    let z = if x_neg & (iy + (64 << 20) < ix) {
        0.
    } else {
        a
    };
    let u = z - PI_LO;
    let general = if x_neg {
        if y_neg {
            u - PI
        } else {
            PI - u
        }
    } else if y_neg {
        -z
    } else {
        z
    };

    let half_pi = if y_neg { -PI_2 } else { PI_2 };
    let pi = if y_neg { -PI } else { PI };
    let x_inf = if ay == INF {
        let q = if x_neg { PI3_4 } else { PI_4 };
        if y_neg {
            -q
        } else {
            q
        }
    } else if x_neg {
        pi
    } else if y_neg {
        -0.
    } else {
        0.
    };
    // libm's x + y of NaNs, by bits (an add's operands may be swapped): as its build answers
    // (the tests check it), y's payload if y is a NaN, else x's, quieted.
    let y_nan = ay > INF;
    let nan = f64::from_bits(if y_nan { hy } else { hx } | 0x0008_0000_0000_0000);
    // libm's special cases, in its order.
    if y_nan | (ax > INF) {
        nan
    } else if x_one {
        a
    } else if ay == 0 {
        if x_neg {
            pi
        } else {
            y
        }
    } else if ax == 0 {
        half_pi
    } else if ax == INF {
        x_inf
    } else if (ix + (64 << 20) < iy) | (ay == INF) {
        half_pi // |y/x| > 2^64
    } else {
        general
    }
}

/// The loop the entry point compiles: named calls inline, so it vectorises.
#[inline(always)]
fn run_zip(y: &[f64], x: &[f64], out: &mut [f64]) {
    for ((o, &b), &a) in out.iter_mut().zip(y).zip(x) {
        *o = atan2_select(b, a);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn run_zip_avx512(y: &[f64], x: &[f64], out: &mut [f64]) {
    run_zip(y, x, out)
}

/// `out[i] = libm::atan2(y[i], x[i])` for every i, bit for bit, on 8 lanes where AVX-512
/// exists. Panics if the lengths differ.
pub fn atan2_zip(y: &[f64], x: &[f64], out: &mut [f64]) {
    assert_eq!(y.len(), out.len(), "atan2_zip: lengths differ");
    assert_eq!(x.len(), out.len(), "atan2_zip: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { run_zip_avx512(y, x, out) };
    }
    run_zip(y, x, out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        rng, stream, uniform, windows64, with_exponent, SPECIAL64 as SPECIAL,
    };
    use super::*;

    /// atan's plain loop, for the sweeps: it vectorises at the build's baseline width.
    fn atan_plain(xs: &[f64], out: &mut [f64]) {
        for (o, &a) in out.iter_mut().zip(xs) {
            *o = atan_select(a);
        }
    }

    /// atan by the select form and its plain loop against `libm::atan`, and `atan2_zip` with
    /// x = 1 (atan's path in libm's atan2, which quiets NaNs) against `libm::atan2(x, 1)`, bit
    /// for bit. Returns how many.
    fn check_atan(xs: &[f64]) -> usize {
        let ones = vec![1.0; xs.len()];
        let (mut zip, mut plain) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
        atan2_zip(xs, &ones, &mut zip);
        atan_plain(xs, &mut plain);
        for (i, &x) in xs.iter().enumerate() {
            let w = libm::atan(x);
            let want = [w, w, if x.is_nan() { libm::atan2(x, 1.0) } else { w }];
            let got = [atan_select(x), plain[i], zip[i]];
            assert!(
                (0..3).all(|k| got[k].to_bits() == want[k].to_bits()),
                "atan({:#018x}): libm {:016x?}; select, plain, zip {:016x?}",
                x.to_bits(),
                want.map(f64::to_bits),
                got.map(f64::to_bits)
            );
        }
        xs.len()
    }

    /// atan2 by the select form, `atan2_zip` and the plain loop against `libm::atan2`.
    fn check(ys: &[f64], xs: &[f64]) -> usize {
        let (mut zip, mut plain) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
        atan2_zip(ys, xs, &mut zip);
        run_zip(ys, xs, &mut plain);
        for (i, (&y, &x)) in ys.iter().zip(xs).enumerate() {
            let want = libm::atan2(y, x).to_bits();
            let got = [atan2_select(y, x), zip[i], plain[i]].map(f64::to_bits);
            assert!(
                got == [want; 3],
                "atan2({:#018x}, {:#018x}): libm {want:#018x}; select, zip, plain {got:016x?}",
                y.to_bits(),
                x.to_bits(),
            );
        }
        xs.len()
    }

    /// atan's range bounds: the subnormals, 2^-27, 7/16, 1/2, 11/16, 1, 19/16, 3/2, 39/16,
    /// 2^66 and inf (the ones libm tests by the high word, and the centres of its reductions).
    const BOUNDS: [u64; 11] = [
        0x0010_0000_0000_0000,
        0x3e40_0000_0000_0000,
        0x3fdc_0000_0000_0000,
        0x3fe0_0000_0000_0000,
        0x3fe6_0000_0000_0000,
        0x3ff0_0000_0000_0000,
        0x3ff3_0000_0000_0000,
        0x3ff8_0000_0000_0000,
        0x4003_8000_0000_0000,
        0x4410_0000_0000_0000,
        0x7ff0_0000_0000_0000,
    ];

    #[test]
    fn atan_near_each_range_bound_and_on_special_values_matches_libm() {
        let mut xs = windows64(&BOUNDS, 1 << 13);
        xs.extend(SPECIAL.map(f64::from_bits));
        assert!(check_atan(&xs) > 360_000);
    }

    #[test]
    fn atan_on_random_values_matches_libm() {
        // Any bit pattern; exponents from 2^-40 to 2^80 (every range); uniform in the reduced
        // ranges and beyond.
        let n = stream(6_000_000, 0, f64::from_bits, check_atan);
        let n = n + stream(
            10_000_000,
            1,
            |r| with_exponent(r, 0x3ff - 40, 0x3ff + 80),
            check_atan,
        );
        let n = n + stream(8_000_000, 2, |r| uniform(r, 3.), check_atan);
        assert_eq!(
            n + stream(4_000_000, 3, |r| uniform(r, 100.), check_atan),
            28_000_000
        );
    }

    /// Magnitudes for atan2's grid, each with both signs: zero, subnormals, the smallest
    /// normal, 1 and its neighbours, the largest finite, infinity, NaNs with payloads (quiet
    /// and signalling), 2^±64 and 2^±65 with neighbours in the high word (the |y/x| tests
    /// against 1), atan's range bounds and a few ordinary values.
    const MAGS: [u64; 40] = [
        0,
        1,
        0x000f_ffff_ffff_ffff,
        0x0010_0000_0000_0000,
        0x3ff0_0000_0000_0000,
        0x3fef_ffff_ffff_ffff,
        0x3ff0_0000_0000_0001,
        0x7fef_ffff_ffff_ffff,
        0x7ff0_0000_0000_0000,
        0x7ff8_0000_0000_0000,
        0x7ff8_1234_5678_9abc,
        0x7ff0_0000_0000_0001,
        0x7ff4_dead_beef_0000,
        0x43f0_0000_0000_0000,
        0x43f0_0000_ffff_ffff,
        0x43f0_0001_0000_0000,
        0x43ef_ffff_ffff_ffff,
        0x4400_0000_0000_0000,
        0x3bf0_0000_0000_0000,
        0x3bef_ffff_ffff_ffff,
        0x3bf0_0001_0000_0000,
        0x3be0_0000_0000_0000,
        0x3e40_0000_0000_0000,
        0x3fdc_0000_0000_0000,
        0x3fe6_0000_0000_0000,
        0x3ff3_0000_0000_0000,
        0x4003_8000_0000_0000,
        0x4410_0000_0000_0000,
        0x4000_0000_0000_0000,
        0x4008_0000_0000_0000,
        0x3fe0_0000_0000_0000,
        0x3ff8_0000_0000_0000,
        0x4059_0000_0000_0000,
        0x3f84_7ae1_47ae_147b,
        0x4009_21fb_5444_2d18,
        0x0400_0000_0000_0000,
        0x7bf0_0000_0000_0000,
        0x03f0_0000_0000_0000,
        0x0000_0000_0000_0100,
        0x7fd0_0000_0000_0000,
    ];

    fn specials() -> Vec<f64> {
        let both = MAGS.iter().flat_map(|&m| [m, m | 1 << 63]);
        both.map(f64::from_bits).collect()
    }

    #[test]
    fn atan2_on_the_special_values_crossed_matches_libm() {
        let sp = specials();
        let ys: Vec<f64> = sp.iter().flat_map(|&y| sp.iter().map(move |_| y)).collect();
        let xs: Vec<f64> = sp.iter().flat_map(|_| sp.iter().copied()).collect();
        assert_eq!(check(&ys, &xs), 80 * 80);
    }

    /// A random f64 of ordinary magnitude, 2^-40 <= |v| < 2^40, either sign.
    fn ordinary(r: u64) -> f64 {
        with_exponent(r, 0x3ff - 40, 0x3ff + 39)
    }

    #[test]
    fn atan2_on_random_pairs_matches_libm() {
        let mut next = rng();
        let sp = specials();
        let n = 2_000_000;
        let (mut ys, mut xs) = (Vec::with_capacity(2 * n), Vec::with_capacity(2 * n));
        for _ in 0..n {
            ys.push(f64::from_bits(next()));
            xs.push(f64::from_bits(next()));
        }
        for i in 0..n {
            let (r, s) = (next(), next());
            // Ordinary pairs, every 16th with a special value on one side.
            let (mut y, mut x) = (ordinary(r), ordinary(s));
            match i % 32 {
                0 => y = sp[(r >> 40) as usize % sp.len()],
                1 => x = sp[(s >> 40) as usize % sp.len()],
                _ => {}
            }
            ys.push(y);
            xs.push(x);
        }
        assert_eq!(check(&ys, &xs), 2 * n);
    }

    #[test]
    fn atan2_with_y_over_x_near_atan_bounds_matches_libm() {
        // y = x·q for q within 64 steps of each of atan's bounds and of 2^±64, and y with the
        // high word of x ± 64 << 20 (the |y/x| tests), at and next to it, either way round.
        let mut next = rng();
        let mut qs: Vec<f64> = windows64(&BOUNDS[1..10], 64);
        qs.extend(windows64(
            &[0x3bf0_0000_0000_0000, 0x43f0_0000_0000_0000],
            64,
        ));
        let (mut ys, mut xs) = (Vec::new(), Vec::new());
        for &q in &qs {
            for _ in 0..12 {
                let (r, s) = (next(), next());
                let x = ordinary(r);
                let y = x * q;
                let step = s % 5;
                ys.push(f64::from_bits((y.to_bits() + step).wrapping_sub(2)));
                xs.push(x);
                let xb = x.to_bits() & ABS;
                // The high word 2 below to 2 above, with the low word random or x's.
                let low = if s & 8 != 0 {
                    s >> 32
                } else {
                    xb & 0xffff_ffff
                };
                let yb = ((xb >> 32) + (64 << 20) - 2 + step) << 32 | low;
                ys.push(f64::from_bits(yb | s << 4 & 1 << 63));
                xs.push(x);
                ys.push(x);
                xs.push(f64::from_bits(yb | s << 5 & 1 << 63));
            }
        }
        assert!(check(&ys, &xs) > 100_000);
    }

    #[test]
    fn atan2_zip_on_a_shuffled_mix_matches_the_scalar_calls() {
        let mut next = rng();
        let sp = specials();
        let mut pairs: Vec<(f64, f64)> = Vec::new();
        for &y in &sp {
            pairs.extend(sp.iter().map(|&x| (y, x)));
        }
        for _ in 0..20_000 {
            let (r, s) = (next(), next());
            pairs.push((ordinary(r), ordinary(s)));
            pairs.push((f64::from_bits(r), f64::from_bits(s)));
        }
        pairs.push((1.0, 2.0)); // an odd length
        for i in (1..pairs.len()).rev() {
            pairs.swap(i, next() as usize % (i + 1));
        }
        let (ys, xs): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        assert_eq!(xs.len() % 2, 1);
        // Every length up to 40 (the tails of 8 lanes), then the whole slice.
        for len in 0..=40 {
            let mut out = vec![0.0; len];
            atan2_zip(&ys[..len], &xs[..len], &mut out);
            for i in 0..len {
                let want = atan2_select(ys[i], xs[i]).to_bits();
                assert_eq!(out[i].to_bits(), want, "len {len}, at {i}");
            }
        }
        let mut out = vec![0.0; xs.len()];
        atan2_zip(&ys, &xs, &mut out);
        for (i, &o) in out.iter().enumerate() {
            let want = libm::atan2(ys[i], xs[i]).to_bits();
            assert_eq!(o.to_bits(), atan2_select(ys[i], xs[i]).to_bits(), "at {i}");
            assert_eq!(o.to_bits(), want, "libm at {i}");
        }
    }
}
