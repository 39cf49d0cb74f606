//! C's `fmod` (the exact remainder of a / b with the sign of a) at vector speed, for f32 and
//! f64. The remainder is exact, so any method that finds it gives libm's bits; libm's shifts
//! and subtractions per exponent step are a loop no vector can run. Here, where the quotient
//! is below 2^(p-1) (p the significand's bits) and both operands are finite: q = trunc(a / b),
//! then r = a - q·b in one fused multiply-add, exact because the true value is representable
//! (below). Rounding is monotone, so q is the true truncated quotient or one more in magnitude;
//! in that case r has the wrong sign and |b| taken back gives the remainder, exactly. A zero
//! takes a's sign. Other lanes (NaN, infinities, b = 0, huge quotients) take libm's call in a
//! second pass.
//!
//! Why r is exact: if |a| < |b| then q = 0 and r = a. Otherwise a's last bit is no finer than
//! b's, so r is a multiple of b's last bit with |r| <= |b|: it fits in p bits.

macro_rules! fmod_lanes {
    ($t:ty, $bits:expr, $libm:path, $zip:ident, $one:ident) => {
        /// `a` mod `b` where the fast form applies, and whether it did (else the value is
        /// meaningless and the caller takes libm's).
        #[inline(always)]
        fn $one(a: $t, b: $t) -> ($t, bool) {
            const LIMIT: $t = (1u64 << ($bits - 1)) as $t;
            let t = a / b;
            let ok = a.is_finite() & b.is_finite() & (b != 0.0) & (t.abs() < LIMIT);
            let q = t.trunc();
            let r = (-q).mul_add(b, a);
            let wrong_sign = (r != 0.0) & ((r < 0.0) != (a < 0.0));
            let r = if wrong_sign {
                r + b.abs().copysign(a)
            } else {
                r
            };
            let r = if r == 0.0 { (0.0 as $t).copysign(a) } else { r };
            (r, ok)
        }

        /// `out[i] = fmod(a[i], b[i])` with libm's bits (panics if the lengths differ).
        pub fn $zip(a: &[$t], b: &[$t], out: &mut [$t]) {
            assert!(
                a.len() == out.len() && b.len() == out.len(),
                "fmod: lengths differ"
            );
            #[inline(always)]
            fn lanes(a: &[$t], b: &[$t], out: &mut [$t], ok: &mut [bool]) {
                for i in 0..out.len() {
                    (out[i], ok[i]) = $one(a[i], b[i]);
                }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,fma")]
            unsafe fn lanes_avx512(a: &[$t], b: &[$t], out: &mut [$t], ok: &mut [bool]) {
                lanes(a, b, out, ok)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,avx,fma")]
            unsafe fn lanes_avx2(a: &[$t], b: &[$t], out: &mut [$t], ok: &mut [bool]) {
                lanes(a, b, out, ok)
            }
            const STEP: usize = 1024;
            let mut ok = [false; STEP];
            for ((a, b), out) in a.chunks(STEP).zip(b.chunks(STEP)).zip(out.chunks_mut(STEP)) {
                let ok = &mut ok[..out.len()];
                #[cfg(target_arch = "x86_64")]
                {
                    if super::has_avx512() {
                        // SAFETY: the features it is compiled for were just detected.
                        unsafe { lanes_avx512(a, b, out, ok) }
                    } else if super::has_avx2_fma() {
                        // SAFETY: as above.
                        unsafe { lanes_avx2(a, b, out, ok) }
                    } else {
                        lanes(a, b, out, ok)
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                lanes(a, b, out, ok);
                for i in 0..out.len() {
                    if !ok[i] {
                        out[i] = $libm(a[i], b[i]);
                    }
                }
            }
        }
    };
}

fmod_lanes!(f32, 24, libm::fmodf, fmodf_zip, fmodf_one);
fmod_lanes!(f64, 53, libm::fmod, fmod_zip, fmod_one);

#[cfg(test)]
mod tests {
    use super::super::test_support::rng;
    use super::*;

    fn specials32() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            3.0,
            -7.5,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x8000_0001),
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::from_bits(0xffc0_1234),
            16_777_216.0,
            16_777_215.0,
            8_388_607.5,
            0.1,
            -0.3,
        ];
        // Quotients just below, at and above integers (the q + 1 correction).
        for k in [1.0f32, 3.0, 10.0, 4_194_303.0, 8_388_607.0] {
            for b in [0.1f32, 0.7, 1.3, -2.9] {
                let a = k * b;
                v.extend([
                    a,
                    f32::from_bits(a.to_bits() - 1),
                    f32::from_bits(a.to_bits() + 1),
                ]);
            }
        }
        v
    }

    fn check32(a: &[f32], b: &[f32]) {
        let mut out = vec![0.0; a.len()];
        fmodf_zip(a, b, &mut out);
        for i in 0..a.len() {
            let want = libm::fmodf(a[i], b[i]);
            assert_eq!(
                out[i].to_bits(),
                want.to_bits(),
                "fmodf({:?}, {:?}) = {:?}, libm {:?}",
                a[i],
                b[i],
                out[i],
                want
            );
        }
    }

    #[test]
    fn f32_matches_libm_on_specials_and_random_pairs() {
        let s = specials32();
        let (a, b): (Vec<f32>, Vec<f32>) = s
            .iter()
            .flat_map(|&x| s.iter().map(move |&y| (x, y)))
            .unzip();
        check32(&a, &b);
        let mut next = rng();
        for _ in 0..40 {
            // Random bits (every exponent), and quotients of a few thousand.
            let a: Vec<f32> = (0..50_000).map(|_| f32::from_bits(next() as u32)).collect();
            let b: Vec<f32> = (0..50_000).map(|_| f32::from_bits(next() as u32)).collect();
            check32(&a, &b);
            let b: Vec<f32> = a
                .iter()
                .map(|&x| {
                    x / ((next() % 5000) as f32 + 0.37)
                        * if next().is_multiple_of(2) { 1.0 } else { -1.0 }
                })
                .collect();
            check32(&a, &b);
        }
    }

    #[test]
    fn f64_matches_libm_on_specials_and_random_pairs() {
        let s: Vec<f64> = specials32()
            .iter()
            .map(|&v| v as f64)
            .chain([
                f64::MAX,
                f64::from_bits(1),
                9_007_199_254_740_991.0,
                4_503_599_627_370_495.5,
            ])
            .collect();
        let (a, b): (Vec<f64>, Vec<f64>) = s
            .iter()
            .flat_map(|&x| s.iter().map(move |&y| (x, y)))
            .unzip();
        let mut next = rng();
        next();
        let mut pairs = vec![(a, b)];
        for _ in 0..40 {
            let a: Vec<f64> = (0..50_000).map(|_| f64::from_bits(next())).collect();
            let b: Vec<f64> = (0..50_000).map(|_| f64::from_bits(next())).collect();
            let c: Vec<f64> = a
                .iter()
                .map(|&x| {
                    x / ((next() % 5000) as f64 + 0.37)
                        * if next().is_multiple_of(2) { 1.0 } else { -1.0 }
                })
                .collect();
            pairs.push((a.clone(), b));
            pairs.push((a, c));
        }
        for (a, b) in pairs {
            let mut out = vec![0.0; a.len()];
            fmod_zip(&a, &b, &mut out);
            for i in 0..a.len() {
                let want = libm::fmod(a[i], b[i]);
                assert_eq!(
                    out[i].to_bits(),
                    want.to_bits(),
                    "fmod({:?}, {:?})",
                    a[i],
                    b[i]
                );
            }
        }
    }
}
