//! libm's `atanf` and `atan2f` (FreeBSD's s_atanf.c and e_atan2f.c) without branches.
//! `atanf_select` reduces |x| by one of five ranges (id = -1..=3: t = x, (2|x|-1)/(2+|x|),
//! (|x|-1)/(|x|+1), (|x|-1.5)/(1+1.5|x|) or -1/|x|), sums libm's odd and even polynomials in
//! t² and adds atan_hi[id] back in two parts; `atan2f_select` takes atanf(|y/x|) (atanf(y)
//! where x is 1) and moves it to the quadrant with pi in two parts. Every branch is computed
//! and one chosen by a select, so a loop of it vectorises while each lane runs the scalar
//! call's IEEE operations in the same order; every input, special values included, takes the
//! select path, so `atan2f_zip` needs no scalar fix-up.

// libm's constants, by their bits.
const ATAN_HI0: f32 = f32::from_bits(0x3eed_6338); // atan(0.5) hi
const ATAN_HI1: f32 = f32::from_bits(0x3f49_0fda); // atan(1.0) hi
const ATAN_HI2: f32 = f32::from_bits(0x3f7b_985e); // atan(1.5) hi
const ATAN_HI3: f32 = f32::from_bits(0x3fc9_0fda); // atan(inf) hi
const ATAN_LO0: f32 = f32::from_bits(0x31ac_3769); // atan(0.5) lo
const ATAN_LO1: f32 = f32::from_bits(0x3322_2168); // atan(1.0) lo
const ATAN_LO2: f32 = f32::from_bits(0x3314_0fb4); // atan(1.5) lo
const ATAN_LO3: f32 = f32::from_bits(0x33a2_2168); // atan(inf) lo
const AT0: f32 = f32::from_bits(0x3eaa_aaa9); // 3.3333328366e-01
const AT1: f32 = f32::from_bits(0xbe4c_ca98); // -1.9999158382e-01
const AT2: f32 = f32::from_bits(0x3e11_f50d); // 1.4253635705e-01
const AT3: f32 = f32::from_bits(0xbdda_1247); // -1.0648017377e-01
const AT4: f32 = f32::from_bits(0x3d7c_ac25); // 6.1687607318e-02
const X1P_120: f32 = f32::from_bits(0x0380_0000); // 2^-120
const PI: f32 = f32::from_bits(0x4049_0fdb); // 3.1415927410e+00
const PI_LO: f32 = f32::from_bits(0xb3bb_bd2e); // -8.7422776573e-08

// libm's PI / 2., PI / 4. and 3. * PI / 4., evaluated as it does (in f32).
const PI_2: f32 = PI / 2.;
const PI_4: f32 = PI / 4.;
const PI3_4: f32 = 3. * PI / 4.;

/// `libm::atanf(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn atanf_select(x: f32) -> f32 {
    let bits = x.to_bits();
    let sign = bits >> 31 != 0;
    let ix = bits & 0x7fff_ffff;
    let ax = f32::from_bits(ix);
    // The reduction of ids 0..=3 as one quotient (a·|x| - b)/(a + b·|x|), a and b picked per
    // lane: 2|x| - 1 over 2 + |x|; |x| - 1 over 1 + |x|; |x| - 1.5 over 1 + 1.5|x|; and
    // 0·|x| - 1 = -1 over 0 + |x| = |x| (|x| is finite and positive there). Multiplying by 1
    // and adding 0 are exact and additions commute, so each lane's operations are libm's.
    // Eager selects: with `if`, LLVM may thread the tests and copy the division.
    let pick = std::hint::select_unpredictable::<f32>;
    let lt19 = ix < 0x3f98_0000; // |x| < 19/16: ids 0 and 1 (-1 lanes discard it)
    let lt11 = ix < 0x3f30_0000; // |x| < 11/16: id 0
    let lt39 = ix < 0x401c_0000; // |x| < 39/16: id 2, beyond it id 3
    let a = pick(lt19, pick(lt11, 2., 1.), pick(lt39, 1., 0.));
    let b = pick(lt19 | !lt39, 1., 1.5);
    let hi = pick(lt19, pick(lt11, ATAN_HI0, ATAN_HI1), ATAN_HI2);
    let hi = pick(lt39, hi, ATAN_HI3);
    let lo = pick(lt19, pick(lt11, ATAN_LO0, ATAN_LO1), ATAN_LO2);
    let lo = pick(lt39, lo, ATAN_LO3);
    // Lanes that discard the quotient (ids -1, |x| < 2^-12, >= 2^26 or NaN) divide 1's, and
    // those that answer x itself run the polynomial on 0: libm does neither, and subnormals
    // there would cost every lane of the vector a slow microcode assist.
    let near = ix < 0x3ee0_0000; // |x| < 7/16: id -1, x itself
    let ar = pick(!near & (ix < 0x4c80_0000), ax, 1.);
    let reduced = (a * ar - b) / (a + b * ar);
    let t = if ix < 0x3980_0000 {
        0.
    } else if near {
        x
    } else {
        reduced
    };
    let z = t * t;
    let w = z * z;
    let s1 = z * (AT0 + w * (AT2 + w * AT4));
    let s2 = w * (AT1 + w * AT3);
    let small = t - t * (s1 + s2);
    let r = hi - ((t * (s1 + s2) - lo) - t);
    let r = if sign { -r } else { r };
    let far = ATAN_HI3 + X1P_120;
    let far = if sign { -far } else { far };
    // libm's special cases, in its order.
    if ix > 0x7f80_0000 {
        x // NaN
    } else if ix >= 0x4c80_0000 {
        far // |x| >= 2^26
    } else if ix < 0x3980_0000 {
        x // |x| < 2^-12
    } else if near {
        small
    } else {
        r
    }
}

/// `libm::atan2f(y, x)`, bit for bit, written without branches.
#[inline(always)]
pub fn atan2f_select(y: f32, x: f32) -> f32 {
    let hx = x.to_bits();
    let hy = y.to_bits();
    let ix = hx & 0x7fff_ffff;
    let iy = hy & 0x7fff_ffff;
    let x_neg = hx >> 31 != 0; // m & 2
    let y_neg = hy >> 31 != 0; // m & 1
    let x_one = hx == 0x3f80_0000;

    // One atanf for every lane: of y where x is 1, else of |y/x| (the quotient of the special
    // cases' lanes, inf or NaN among them, is discarded).
    let a = atanf_select(if x_one { y } else { (y / x).abs() });
    // |y/x| < 2^-26 with x < 0: z = 0.
    let z = if x_neg & (iy + (26 << 23) < ix) {
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
    let x_inf = if iy == 0x7f80_0000 {
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
    let y_nan = iy > 0x7f80_0000;
    let nan = f32::from_bits(if y_nan { hy } else { hx } | 0x0040_0000);
    // libm's special cases, in its order.
    if y_nan | (ix > 0x7f80_0000) {
        nan
    } else if x_one {
        a
    } else if iy == 0 {
        if x_neg {
            pi
        } else {
            y
        }
    } else if ix == 0 {
        half_pi
    } else if ix == 0x7f80_0000 {
        x_inf
    } else if (ix + (26 << 23) < iy) | (iy == 0x7f80_0000) {
        half_pi // |y/x| > 2^26
    } else {
        general
    }
}

/// The loop the entry point compiles: named calls inline, so it vectorises.
#[inline(always)]
fn run_zip(y: &[f32], x: &[f32], out: &mut [f32]) {
    for ((o, &b), &a) in out.iter_mut().zip(y).zip(x) {
        *o = atan2f_select(b, a);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn run_zip_avx512(y: &[f32], x: &[f32], out: &mut [f32]) {
    run_zip(y, x, out)
}

/// `out[i] = libm::atan2f(y[i], x[i])` for every i, bit for bit, on 16 lanes where AVX-512
/// exists. Panics if the lengths differ.
pub fn atan2f_zip(y: &[f32], x: &[f32], out: &mut [f32]) {
    assert_eq!(y.len(), out.len(), "atan2f_zip: lengths differ");
    assert_eq!(x.len(), out.len(), "atan2f_zip: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { run_zip_avx512(y, x, out) };
    }
    run_zip(y, x, out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{rng, windows, SPECIAL};
    use super::*;

    /// Same bits (NaNs included: libm's payloads are compared too).
    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits()
    }

    /// atanf's plain loop, for the sweeps: it vectorises at the build's baseline width.
    fn atanf_plain(xs: &[f32], out: &mut [f32]) {
        for (o, &a) in out.iter_mut().zip(xs) {
            *o = atanf_select(a);
        }
    }

    /// atanf by the select form and its plain loop against `libm::atanf`, and `atan2f_zip`
    /// with x = 1 (atanf's path in libm's atan2f, which quiets NaNs) against
    /// `libm::atan2f(x, 1)`, bit for bit. Returns how many.
    fn check_atanf(xs: &[f32]) -> usize {
        let ones = vec![1.0; xs.len()];
        let (mut zip, mut plain) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
        atan2f_zip(xs, &ones, &mut zip);
        atanf_plain(xs, &mut plain);
        for (i, &x) in xs.iter().enumerate() {
            let w = libm::atanf(x);
            let want = [w, w, if x.is_nan() { libm::atan2f(x, 1.0) } else { w }];
            let got = [atanf_select(x), plain[i], zip[i]];
            assert!(
                (0..3).all(|k| same(got[k], want[k])),
                "atanf({:#010x}): libm {:08x?}; select, plain, zip {:08x?}",
                x.to_bits(),
                want.map(f32::to_bits),
                got.map(f32::to_bits)
            );
        }
        xs.len()
    }

    /// atan2f by the select form, `atan2f_zip` and the plain loop against `libm::atan2f`.
    fn check(ys: &[f32], xs: &[f32]) -> usize {
        let (mut zip, mut plain) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
        atan2f_zip(ys, xs, &mut zip);
        run_zip(ys, xs, &mut plain);
        for (i, (&y, &x)) in ys.iter().zip(xs).enumerate() {
            let want = libm::atan2f(y, x);
            let got = [atan2f_select(y, x), zip[i], plain[i]];
            assert!(
                got.iter().all(|&g| same(g, want)),
                "atan2f({:#010x}, {:#010x}): libm {:#010x}; select, zip, plain {:08x?}",
                y.to_bits(),
                x.to_bits(),
                want.to_bits(),
                got.map(f32::to_bits)
            );
        }
        xs.len()
    }

    /// atanf's range bounds: the subnormals, 2^-12, 7/16, 11/16, 19/16, 39/16, 2^26 and inf.
    const BOUNDS: [u32; 8] = [
        0x0080_0000,
        0x3980_0000,
        0x3ee0_0000,
        0x3f30_0000,
        0x3f98_0000,
        0x401c_0000,
        0x4c80_0000,
        0x7f80_0000,
    ];

    #[test]
    fn atanf_on_every_seventh_f32_matches_libm() {
        // Two threads, each on every 14th pattern from its own start, in chunks.
        let counts: Vec<usize> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..2u32)
                .map(|k| {
                    s.spawn(move || {
                        let all = (7 * k..=u32::MAX).step_by(14).map(f32::from_bits);
                        let mut chunk = Vec::with_capacity(1 << 16);
                        let mut n = 0;
                        for x in all {
                            chunk.push(x);
                            if chunk.len() == 1 << 16 {
                                n += check_atanf(&chunk);
                                chunk.clear();
                            }
                        }
                        n + check_atanf(&chunk)
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(counts.iter().sum::<usize>(), (u32::MAX / 7 + 1) as usize);
    }

    #[test]
    fn atanf_near_each_range_bound_and_on_special_values_matches_libm() {
        let mut xs = windows(&BOUNDS, 1 << 12);
        xs.extend(SPECIAL.map(f32::from_bits));
        assert!(check_atanf(&xs) > 130_000);
    }

    /// Magnitudes for atan2f's grid, each with both signs: zero, subnormals, the smallest
    /// normal, 1 and its neighbours, the largest finite, infinity, NaNs with payloads (quiet
    /// and signalling), 2^±26 and 2^±27 with neighbours (the |y/x| thresholds against 1),
    /// atanf's range bounds and a few ordinary values.
    const MAGS: [u32; 40] = [
        0, 1, 0x7fffff, 0x800000, 0x3f800000, 0x3f7fffff, 0x3f800001, 0x7f7fffff, 0x7f800000,
        0x7fc00000, 0x7fc12345, 0x7f800001, 0x7fa54321, 0x4c800000, 0x4c7fffff, 0x4c800001,
        0x4d000000, 0x32800000, 0x327fffff, 0x32800001, 0x32000000, 0x39800000, 0x3ee00000,
        0x3f300000, 0x3f980000, 0x401c0000, 0x40000000, 0x40400000, 0x3f000000, 0x3fc00000,
        0x42c80000, 0x3c23d70a, 0x40490fdb, 0x0d000000, 0x72800000, 0x0c800000, 0x73000000,
        0x00000100, 0x7e800000, 0x01000000,
    ];

    fn specials() -> Vec<f32> {
        let both = MAGS.iter().flat_map(|&m| [m, m | 0x8000_0000]);
        both.map(f32::from_bits).collect()
    }

    #[test]
    fn atan2f_on_the_special_values_crossed_matches_libm() {
        let sp = specials();
        let ys: Vec<f32> = sp.iter().flat_map(|&y| sp.iter().map(move |_| y)).collect();
        let xs: Vec<f32> = sp.iter().flat_map(|_| sp.iter().copied()).collect();
        assert_eq!(check(&ys, &xs), 80 * 80);
    }

    /// A random f32 of ordinary magnitude, 2^-20 <= |v| < 2^20, either sign.
    fn ordinary(r: u64) -> f32 {
        let e = 107 + (r >> 32) as u32 % 40;
        f32::from_bits((e << 23) | (r as u32 & 0x807f_ffff))
    }

    #[test]
    fn atan2f_on_random_pairs_matches_libm() {
        let mut next = rng();
        let sp = specials();
        let n = 2_000_000;
        let mut ys = Vec::with_capacity(2 * n);
        let mut xs = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let r = next();
            ys.push(f32::from_bits(r as u32));
            xs.push(f32::from_bits((r >> 32) as u32));
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
    fn atan2f_with_y_over_x_near_atanf_bounds_matches_libm() {
        // y = x·q for q within 64 steps of each of atanf's bounds and of the 2^±26 thresholds,
        // and for y = q·2^26 and q·2^-26 exactly at and next to the bit thresholds.
        let mut next = rng();
        let mut qs: Vec<f32> = windows(&BOUNDS[1..7], 64);
        qs.extend(windows(&[0x3280_0000, 0x3f80_0000], 64));
        let (mut ys, mut xs) = (Vec::new(), Vec::new());
        for &q in &qs {
            for _ in 0..24 {
                let r = next();
                let x = ordinary(r);
                let y = x * q;
                let step = (r >> 60) as u32 % 5;
                ys.push(f32::from_bits((y.to_bits() + step).wrapping_sub(2)));
                xs.push(x);
                let xb = (x.to_bits() & 0x7fff_ffff) as i64;
                let yb = xb + (26 << 23) - 2 + step as i64;
                let sign = (r as u32) & 0x8000_0000;
                ys.push(f32::from_bits(yb as u32 | sign));
                xs.push(x);
                ys.push(x);
                xs.push(f32::from_bits(yb as u32 | (r >> 32) as u32 & 0x8000_0000));
            }
        }
        assert!(check(&ys, &xs) > 100_000);
    }

    #[test]
    fn atan2f_zip_on_a_shuffled_mix_matches_the_scalar_calls() {
        let mut next = rng();
        let sp = specials();
        let mut pairs: Vec<(f32, f32)> = Vec::new();
        for &y in &sp {
            pairs.extend(sp.iter().map(|&x| (y, x)));
        }
        for _ in 0..20_000 {
            let (r, s) = (next(), next());
            pairs.push((ordinary(r), ordinary(s)));
            pairs.push((f32::from_bits(r as u32), f32::from_bits(s as u32)));
        }
        for i in (1..pairs.len()).rev() {
            pairs.swap(i, next() as usize % (i + 1));
        }
        let (ys, xs): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
        // Every length up to 40 (the tails of 16 lanes), then the whole slice.
        for len in 0..=40 {
            let mut out = vec![0.0; len];
            atan2f_zip(&ys[..len], &xs[..len], &mut out);
            for i in 0..len {
                assert!(
                    same(out[i], atan2f_select(ys[i], xs[i])),
                    "len {len}, at {i}"
                );
            }
        }
        let mut out = vec![0.0; xs.len()];
        atan2f_zip(&ys, &xs, &mut out);
        for (i, &o) in out.iter().enumerate() {
            assert!(same(o, atan2f_select(ys[i], xs[i])), "at {i}");
            assert!(same(o, libm::atan2f(ys[i], xs[i])), "libm at {i}");
        }
    }
}
