//! Max pooling over 2 x 2 windows at stride 2 without padding (the usual pooling) in f32 with
//! AVX-512: 16 outputs per step from two vector loads of each of the window's two input rows,
//! split into even and odd columns by one permute each. The window's four cells are compared as
//! `pool::max_window` compares them in row-major order, as a tournament: the winner of the top
//! pair, then of the bottom pair, then the bottom's replaces the top's only if it beats it.
//! `beats` picks the first maximum under an order (NaN first, then +0 over -0, then value), so
//! the pairs give the row-major result: ties keep the earlier cell, the first NaN stays.
//! (The generic path gathered the candidates of 7-wide rows one at a time: 8 images of 16
//! channels at 14 x 14 took 0.19 ms forward on one thread.)

use crate::geometry::PoolDims;
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// Whether this kernel covers `d` (window, stride and padding; any plane size).
pub fn applies(d: &PoolDims) -> bool {
    // A window's offset from its row's first output (at most w + 31) is computed in 32-bit lanes.
    (d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw) == (2, 2, 2, 2, 0, 0, 1, 1)
        // Every window whole (ceil_mode may add a last one that runs past the image).
        && 2 * d.oh <= d.h
        && 2 * d.ow <= d.w
        && d.w <= i32::MAX as usize / 4
        && super::simd::has_avx512()
}

/// `pool::beats` on 16 lanes: where `v` replaces `best`.
#[target_feature(enable = "avx512f,avx512dq")]
pub(super) unsafe fn beats(v: __m512, best: __m512) -> __mmask16 {
    let zero = _mm512_setzero_ps();
    let greater = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, best);
    let v_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    let both_zero =
        _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(v, zero) & _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(best, zero);
    // +0 over -0: the sign bits of best set and of v clear.
    let signs = |x: __m512| _mm512_movepi32_mask(_mm512_castps_si512(x));
    let plus_over_minus = both_zero & signs(best) & !signs(v);
    (greater | v_nan | plus_over_minus) & _mm512_cmp_ps_mask::<_CMP_ORD_Q>(best, best)
}

/// One plane `xp` [h, w] into `y` [oh, ow] and the winners' flat indices `arg` (`applies(d)`),
/// writing every element of both.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512DQ.
#[target_feature(enable = "avx512f,avx512dq")]
pub unsafe fn plane(
    xp: &[f32],
    d: &PoolDims,
    y: &mut [MaybeUninit<f32>],
    arg: &mut [MaybeUninit<usize>],
) {
    let (w, ow, oh) = (d.w, d.ow, d.oh);
    assert!(xp.len() >= d.h * w && 2 * ow <= w && 2 * oh <= d.h);
    assert!(y.len() >= oh * ow && arg.len() >= oh * ow);
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for oy in 0..oh {
        let r0 = 2 * oy * w;
        for o0 in (0..ow).step_by(16) {
            let n = 16.min(ow - o0);
            // 2n input columns from 2·o0, in two masked loads of 16.
            let cols = 2 * n;
            let m_lo = (((1u32 << cols.min(16)) - 1) & 0xFFFF) as __mmask16;
            let m_hi = (((1u64 << cols.saturating_sub(16)) - 1) & 0xFFFF) as __mmask16;
            let pair = |row: usize| {
                // Masked-off lanes are not read; the second load's address may lie past the
                // plane when it reads nothing, so it is formed by wrapping arithmetic.
                let p = xp.as_ptr().add(row + 2 * o0);
                let (a, b) = (
                    _mm512_maskz_loadu_ps(m_lo, p),
                    _mm512_maskz_loadu_ps(m_hi, p.wrapping_add(16)),
                );
                (
                    _mm512_permutex2var_ps(a, even, b),
                    _mm512_permutex2var_ps(a, odd, b),
                )
            };
            let (c0, c1) = pair(r0);
            let (c2, c3) = pair(r0 + w);
            // Offsets from the window's first cell: 0, 1 (top pair), w, w + 1 (bottom pair).
            let t = beats(c1, c0);
            let (top, top_off) = (
                _mm512_mask_blend_ps(t, c0, c1),
                _mm512_maskz_set1_epi32(t, 1),
            );
            let b = beats(c3, c2);
            let (bottom, bottom_off) = (
                _mm512_mask_blend_ps(b, c2, c3),
                _mm512_add_epi32(_mm512_set1_epi32(w as i32), _mm512_maskz_set1_epi32(b, 1)),
            );
            let f = beats(bottom, top);
            let best = _mm512_mask_blend_ps(f, top, bottom);
            let off = _mm512_mask_blend_epi32(f, top_off, bottom_off);
            let out = (1u32 << n) - 1;
            let yo = y.as_mut_ptr().add(oy * ow + o0) as *mut f32;
            _mm512_mask_storeu_ps(yo, out as __mmask16, best);
            // Winner index = r0 + 2·(o0 + lane) + offset, widened to 64 bits, 8 lanes a store.
            let rel = _mm512_add_epi32(_mm512_slli_epi32::<1>(lane), off);
            let base = _mm512_set1_epi64((r0 + 2 * o0) as i64);
            let dst = arg.as_mut_ptr().add(oy * ow + o0) as *mut i64;
            let lo = _mm512_add_epi64(base, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(rel)));
            let hi = _mm512_add_epi64(
                base,
                _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(rel)),
            );
            _mm512_mask_storeu_epi64(dst, (out & 0xFF) as __mmask8, lo);
            _mm512_mask_storeu_epi64(dst.wrapping_add(8), (out >> 8) as __mmask8, hi);
        }
    }
}
