//! The exponential of a whole row at vector speed with the `libm` crate's bits: 16 lanes of
//! `lane_math::expf::expf_select` written with AVX-512 intrinsics (each select a mask blend),
//! the scalar form elsewhere. f64 rows keep the scalar `libm::exp`.

use crate::dtype::Float;
pub use crate::lane_math::expf::expf_select;
use std::mem::MaybeUninit;

/// What `exp_from` applies to each value before the exponential: nothing, a negation, or a
/// negation of the absolute value (sign-bit operations, exact for every value, NaN included).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pre {
    Same,
    Neg,
    NegAbs,
}

impl Pre {
    /// The sign-bit operation on `v`: Rust's `-v` and `-v.abs()`.
    #[inline(always)]
    pub fn apply<T: Float>(self, v: T) -> T {
        match self {
            Pre::Same => v,
            Pre::Neg => -v,
            Pre::NegAbs => -v.abs(),
        }
    }
}

/// Rows whose exponential has a vector form with the scalar bits.
pub trait ExpRow: Float {
    /// `v[i] = v[i].exp()` for every i, with `Float::exp`'s bits.
    fn exp_row(v: &mut [Self]);

    /// `dst[i] = pre(src[i]).exp()` (equal lengths): `exp_row` of the transformed copy, in one
    /// pass where the vector form reads `src` itself. Returns `dst`, every element written.
    fn exp_from<'a>(src: &[Self], dst: &'a mut [MaybeUninit<Self>], pre: Pre) -> &'a mut [Self] {
        for (d, &v) in dst.iter_mut().zip(src) {
            d.write(pre.apply(v));
        }
        // SAFETY: every element of dst was just written (equal lengths).
        let dst = unsafe { super::uninit::assume_init(dst) };
        Self::exp_row(dst);
        dst
    }
}

impl ExpRow for f32 {
    fn exp_row(v: &mut [Self]) {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_avx512() {
            // SAFETY: AVX-512F was just detected.
            unsafe { avx512::exp_all(v) };
            return;
        }
        super::simd::widest(|| {
            for x in v.iter_mut() {
                *x = expf_select(*x);
            }
        })
    }

    fn exp_from<'a>(src: &[Self], dst: &'a mut [MaybeUninit<Self>], pre: Pre) -> &'a mut [Self] {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_avx512() {
            // The sign bit flipped (Neg) or set (NegAbs).
            let (flip, set) = match pre {
                Pre::Same => (0, 0),
                Pre::Neg => (0x8000_0000, 0),
                Pre::NegAbs => (0, 0x8000_0000),
            };
            // SAFETY: AVX-512F was just detected.
            unsafe { avx512::exp_all_from(&src[..dst.len()], dst, flip, set) };
            // SAFETY: exp_all_from writes every element of dst.
            return unsafe { super::uninit::assume_init(dst) };
        }
        for (d, &v) in dst.iter_mut().zip(src) {
            d.write(pre.apply(v));
        }
        // SAFETY: every element of dst was just written (equal lengths).
        let dst = unsafe { super::uninit::assume_init(dst) };
        Self::exp_row(dst);
        dst
    }
}

/// `expf_select` on 16 lanes: the same operations in the same order, each select a mask blend.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use crate::lane_math::expf::{HALF, INV_LN2, LN2_HI, LN2_LO, P1, P2};
    use std::arch::x86_64::*;

    /// `exp16` over every whole 16 of `v`, the rest by `expf_select`: one function compiled
    /// for AVX-512, so `exp16` inlines into the loop (its constants set up once, no call per
    /// vector).
    #[target_feature(enable = "avx512f")]
    pub unsafe fn exp_all(v: &mut [f32]) {
        let mut chunks = v.chunks_exact_mut(16);
        for c in &mut chunks {
            // SAFETY: this function's features are exp16's; `c` holds exactly 16 f32.
            unsafe { exp16(c) };
        }
        for x in chunks.into_remainder() {
            *x = super::expf_select(*x);
        }
    }

    /// `exp16_of` of `src` with each value's sign bit XORed with `flip`, then ORed with `set`,
    /// into `dst` (equal lengths, every element written); the rest by `expf_select`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn exp_all_from(
        src: &[f32],
        dst: &mut [std::mem::MaybeUninit<f32>],
        flip: u32,
        set: u32,
    ) {
        let n = dst.len().min(src.len());
        let whole = n / 16 * 16;
        let (f, s) = (
            _mm512_set1_epi32(flip as i32),
            _mm512_set1_epi32(set as i32),
        );
        for at in (0..whole).step_by(16) {
            // SAFETY: at + 16 <= n <= both lengths; MaybeUninit<f32> has f32's layout.
            unsafe {
                let bits = _mm512_castps_si512(_mm512_loadu_ps(src.as_ptr().add(at)));
                let x = _mm512_castsi512_ps(_mm512_or_si512(_mm512_xor_si512(bits, f), s));
                _mm512_storeu_ps(dst.as_mut_ptr().add(at).cast(), exp16_of(x));
            }
        }
        for (d, &v) in dst[whole..n].iter_mut().zip(&src[whole..n]) {
            d.write(super::expf_select(f32::from_bits(
                (v.to_bits() ^ flip) | set,
            )));
        }
    }

    /// For each whole vector of `x[..whole]` at `at`: `put(at, y, d)` with d = 1 + exp(-x) and
    /// y = 1 / d (sigmoid), or x / d (SiLU) where `silu`, the table's formulas: the division
    /// right after each vector's exponential, so the divider works beside the exponential's
    /// other steps instead of in a pass of its own.
    #[inline(always)]
    unsafe fn logistic_each(
        x: &[f32],
        whole: usize,
        silu: bool,
        mut put: impl FnMut(usize, __m512, __m512),
    ) {
        let (sign, one) = (_mm512_set1_epi32(i32::MIN), _mm512_set1_ps(1.0));
        for at in (0..whole).step_by(16) {
            // SAFETY: at + 16 <= whole <= x.len(); the callers' features.
            unsafe {
                let v = _mm512_loadu_ps(x.as_ptr().add(at));
                let neg = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign));
                let d = _mm512_add_ps(one, exp16_of(neg));
                put(at, _mm512_div_ps(if silu { v } else { one }, d), d);
            }
        }
    }

    /// `out[i] = 1 / (1 + exp(-x[i]))` (sigmoid), or `x[i] / (1 + exp(-x[i]))` (SiLU) where
    /// `silu` (`logistic_each`). `out` holds the block's length; a partial last vector is left
    /// to the caller. Returns how many values it wrote (the whole vectors').
    #[target_feature(enable = "avx512f")]
    pub unsafe fn logistic(x: &[f32], out: &mut [std::mem::MaybeUninit<f32>], silu: bool) -> usize {
        let whole = out.len().min(x.len()) / 16 * 16;
        // SAFETY: this function's features; at + 16 <= whole <= out.len(); MaybeUninit<f32>
        // has f32's layout.
        unsafe {
            logistic_each(x, whole, silu, |at, y, _| {
                _mm512_storeu_ps(out.as_mut_ptr().add(at).cast(), y)
            })
        };
        whole
    }

    /// `logistic`'s SiLU that also keeps each denominator 1 + exp(-x) in `d` (for the
    /// gradient). Returns how many values it wrote to each (the whole vectors').
    #[target_feature(enable = "avx512f")]
    pub unsafe fn silu_keeping(
        x: &[f32],
        y: &mut [std::mem::MaybeUninit<f32>],
        d: &mut [std::mem::MaybeUninit<f32>],
    ) -> usize {
        let whole = y.len().min(d.len()).min(x.len()) / 16 * 16;
        // SAFETY: this function's features; at + 16 <= whole <= every length; MaybeUninit<f32>
        // has f32's layout.
        unsafe {
            logistic_each(x, whole, true, |at, yv, dv| {
                _mm512_storeu_ps(d.as_mut_ptr().add(at).cast(), dv);
                _mm512_storeu_ps(y.as_mut_ptr().add(at).cast(), yv);
            })
        };
        whole
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    pub unsafe fn exp16(v: &mut [f32]) {
        debug_assert_eq!(v.len(), 16);
        let y = exp16_of(_mm512_loadu_ps(v.as_ptr()));
        _mm512_storeu_ps(v.as_mut_ptr(), y);
    }

    /// `expf_select` of each of the 16 lanes of `x`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub unsafe fn exp16_of(x: __m512) -> __m512 {
        let i = _mm512_set1_epi32;
        let hx = _mm512_and_si512(_mm512_castps_si512(x), i(0x7fff_ffff));
        // Every lane with 2^-14 < |x| <= 87 (no special case of libm's, k in [-126, 126]) or
        // x = ±0 (libm's 1 + x = 1, which the general formula gives exactly too: softmax's
        // shifted maxima): the general formula alone, without the scaling steps and special
        // cases' blends that pass its value through unchanged there.
        let ordinary = _mm512_cmpgt_epi32_mask(hx, i(0x3900_0000))
            & _mm512_cmple_epi32_mask(hx, i(0x42ae_0000))
            | _mm512_cmpeq_epi32_mask(hx, i(0));
        if ordinary == 0xffff {
            // SAFETY: this function's features.
            return unsafe { exp16_ordinary(x, hx) };
        }
        // SAFETY: this function's features.
        unsafe { exp16_any(x, hx) }
    }

    /// The range reduction and libm's formula of `exp16_any` up to y, and k.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn reduced(x: __m512, hx: __m512i) -> (__m512, __m512i) {
        let f = _mm512_set1_ps;
        let i = _mm512_set1_epi32;
        let neg = _mm512_cmplt_epi32_mask(_mm512_castps_si512(x), i(0));
        let half = _mm512_mask_blend_ps(neg, f(HALF), f(-HALF));
        let k_far = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(f(INV_LN2), x), half));
        let k_near = _mm512_mask_blend_epi32(neg, i(1), i(-1));
        let far = _mm512_cmpgt_epi32_mask(hx, i(0x3f85_1592));
        let near = _mm512_cmpgt_epi32_mask(hx, i(0x3eb1_7218));
        let k = _mm512_mask_blend_epi32(near, i(0), k_near);
        let k = _mm512_mask_blend_epi32(far, k, k_far);
        let kf = _mm512_cvtepi32_ps(k);
        let hi = _mm512_sub_ps(x, _mm512_mul_ps(kf, f(LN2_HI)));
        let lo = _mm512_mul_ps(kf, f(LN2_LO));
        let r = _mm512_sub_ps(hi, lo);
        let rr = _mm512_mul_ps(r, r);
        let p = _mm512_add_ps(f(P1), _mm512_mul_ps(rr, f(P2)));
        let c = _mm512_sub_ps(r, _mm512_mul_ps(rr, p));
        let q = _mm512_div_ps(_mm512_mul_ps(r, c), _mm512_sub_ps(f(2.0), c));
        let y = _mm512_add_ps(f(1.0), _mm512_add_ps(_mm512_sub_ps(q, lo), hi));
        (y, k)
    }

    /// `exp16_any` where every lane is ordinary (see `exp16_of`): y * 2^k, 2^k normal.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn exp16_ordinary(x: __m512, hx: __m512i) -> __m512 {
        // SAFETY: this function's features.
        let (y, k) = unsafe { reduced(x, hx) };
        let scale = _mm512_slli_epi32::<23>(_mm512_add_epi32(k, _mm512_set1_epi32(0x7f)));
        _mm512_mul_ps(y, _mm512_castsi512_ps(scale))
    }

    /// `expf_select` of each of the 16 lanes of `x`, whose magnitudes' bits are `hx`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn exp16_any(x: __m512, hx: __m512i) -> __m512 {
        let f = _mm512_set1_ps;
        let i = _mm512_set1_epi32;
        let bits = _mm512_castps_si512(x);
        let neg = _mm512_cmplt_epi32_mask(bits, i(0));
        // SAFETY: this function's features.
        let (y, k) = unsafe { reduced(x, hx) };
        let up = _mm512_cmpgt_epi32_mask(k, i(127));
        let down = _mm512_cmplt_epi32_mask(k, i(-126));
        let y = _mm512_mask_mul_ps(y, up, y, f(f32::from_bits(0x7f00_0000)));
        let y = _mm512_mask_mul_ps(y, down, y, f(f32::from_bits(0x0c80_0000)));
        let n = _mm512_mask_sub_epi32(k, up, k, i(127));
        let n = _mm512_mask_add_epi32(n, down, n, i(102));
        let scale = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(n, i(0x7f))));
        let mut out = _mm512_mul_ps(y, scale);
        // The special cases, the first of libm's order blended last.
        let tiny = _mm512_cmple_epi32_mask(hx, i(0x3900_0000));
        let under = neg & _mm512_cmpge_epi32_mask(hx, i(0x42cf_f1b5));
        let over = !neg & _mm512_cmpge_epi32_mask(hx, i(0x42b1_7218));
        let nan = _mm512_cmpgt_epi32_mask(hx, i(0x7f80_0000));
        out = _mm512_mask_blend_ps(tiny, out, _mm512_add_ps(f(1.0), x));
        out = _mm512_mask_blend_ps(under, out, f(0.0));
        out = _mm512_mask_blend_ps(over, out, _mm512_mul_ps(x, f(f32::from_bits(0x7f00_0000))));
        _mm512_mask_blend_ps(nan, out, x)
    }
}

impl ExpRow for f64 {
    fn exp_row(v: &mut [Self]) {
        // libm's exp in select form across the vector lanes (`lane_math/exp.rs`), a block at a
        // time through a copy (the slice function reads and writes different slices).
        let mut block = [0f64; 256];
        for run in v.chunks_mut(256) {
            let x = &mut block[..run.len()];
            x.copy_from_slice(run);
            crate::lane_math::exp::exp_slice(x, run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(values: impl Iterator<Item = u32>) -> usize {
        let xs: Vec<f32> = values.map(f32::from_bits).collect();
        let mut row = xs.clone();
        f32::exp_row(&mut row); // the vector form, as softmax runs it
        for (&x, &v) in xs.iter().zip(&row) {
            let want = libm::expf(x).to_bits();
            assert_eq!(
                expf_select(x).to_bits(),
                want,
                "scalar form at {x:e} ({:#x})",
                x.to_bits()
            );
            assert_eq!(
                v.to_bits(),
                want,
                "vector form at {x:e} ({:#x})",
                x.to_bits()
            );
        }
        xs.len()
    }

    #[test]
    fn exp_from_is_libm_of_the_sign_operation() {
        // Every sign-bit operation on a sweep of all f32 (NaN payloads and signed zeros
        // included), lengths with and without a partial vector.
        let xs: Vec<f32> = (0..=u32::MAX)
            .step_by(40_009)
            .map(f32::from_bits)
            .chain([0.0, -0.0, f32::NAN, -f32::NAN, f32::from_bits(0x7fc1_2345)])
            .collect();
        for pre in [Pre::Same, Pre::Neg, Pre::NegAbs] {
            for n in [xs.len(), 17, 16, 3] {
                let mut out = vec![MaybeUninit::uninit(); n];
                let got = f32::exp_from(&xs[..n], &mut out, pre);
                for (&x, &v) in xs.iter().zip(got.iter()) {
                    let arg = match pre {
                        Pre::Same => x,
                        Pre::Neg => f32::from_bits(x.to_bits() ^ 0x8000_0000),
                        Pre::NegAbs => f32::from_bits(x.to_bits() | 0x8000_0000),
                    };
                    let want = libm::expf(arg).to_bits();
                    assert_eq!(v.to_bits(), want, "{pre:?} at {x:e} ({:#x})", x.to_bits());
                    assert_eq!(pre.apply(x).to_bits(), arg.to_bits(), "{pre:?} on {x:e}");
                }
            }
        }
    }

    #[test]
    fn every_f32_near_each_branch_boundary_matches_libm() {
        // Both signs of: the tiny bound 2^-14, 0.5 ln2 and 1.5 ln2 (k = 0 / +-1 / rounded),
        // the overflow bound 88.72, the underflow bounds 87.33 and 103.97 (subnormal results,
        // the pre-scaled scalbnf), and the zone where k reaches 128.
        let mut n = 0;
        for (lo, hi) in [
            (0x38f0_0000u32, 0x3910_0000u32),
            (0x3ea0_0000, 0x3ec0_0000),
            (0x3f78_0000, 0x3f90_0000),
            (0x42a8_0000, 0x42d8_0000),
        ] {
            for sign in [0, 0x8000_0000u32] {
                n += check((lo..hi).map(|b| b | sign));
            }
        }
        assert!(n > 5_000_000);
    }

    #[test]
    fn ordinary_vectors_with_zeros_match_libm() {
        // Vectors of ordinary values (2^-14 < |x| <= 87) holding +0 or -0 on some lanes, as
        // softmax's shifted rows do, and the edges of the ordinary range beside them.
        let mut xs = Vec::new();
        for z in 0..16 {
            for (j, sign) in [(0, 0.0f32), (1, -0.0)] {
                let mut v: Vec<f32> = (0..16)
                    .map(|i| (i as f32 - 7.5) * 0.37 + j as f32)
                    .collect();
                v[z] = sign;
                xs.extend(v);
            }
        }
        let edges = [0x3900_0001u32, 0x42ae_0000, 0xb900_0001, 0xc2ae_0000];
        xs.extend(
            edges
                .iter()
                .flat_map(|&b| [f32::from_bits(b), 0.0, -0.0, 1.5])
                .cycle()
                .take(64),
        );
        assert_eq!(check(xs.into_iter().map(f32::to_bits)), 32 * 16 + 64);
    }

    #[test]
    fn a_sweep_of_all_f32_and_the_special_values_match_libm() {
        let sweep = (0..=u32::MAX).step_by(997);
        let special = [
            0u32,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x807f_ffff,
            0x0080_0000,
            0x3f80_0000,
            0xbf80_0000,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0001,
            0x7fc1_2345,
            0xffa0_0001,
        ];
        assert!(check(sweep.chain(special)) > 4_000_000);
    }
}
