//! expm1f's ordinary lanes written in AVX-512 intrinsics: the operations of `expm1f_for`'s
//! general path (the same IEEE operations in the same order, no FMA) on the ordinary lanes:
//! x > -27 ln2 and x < 88 (no saturation to -1, no overflow, k below 128), those with
//! |x| < 2^-25 (libm's x) a blend. libm's call computes the other lanes. LLVM's vectorised
//! select form ran about 1.25x slower (its six reconstructions and special cases as chains
//! of blends).

use super::{INV_LN2, LN2_HI, LN2_LO, Q1, Q2};
use crate::lane_math::{by_call_where_not, each};
use std::arch::x86_64::*;

/// Vectors of 16 taken side by side (one vector's operations are a chain of dependent
/// steps; side by side the core overlaps them).
const SIDE: usize = 4;

/// `out[i] = libm::expm1f(x[i])`: whole groups of `SIDE` vectors in intrinsics, the lanes
/// that are not ordinary by libm's call, the last values in the select form.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
pub(super) unsafe fn run(x: &[f32], out: &mut [f32]) {
    const GROUP: usize = 16 * SIDE;
    let whole = x.len() / GROUP * GROUP;
    for (o, v) in out[..whole]
        .chunks_exact_mut(GROUP)
        .zip(x.chunks_exact(GROUP))
    {
        let mut xs = [_mm512_setzero_ps(); SIDE];
        for (k, x) in xs.iter_mut().enumerate() {
            *x = _mm512_loadu_ps(v[16 * k..16 * k + 16].as_ptr());
        }
        // SAFETY: this function's features.
        let (y, ok) = unsafe { expm1f16::<SIDE>(xs) };
        for k in 0..SIDE {
            let (o, v) = (&mut o[16 * k..16 * k + 16], &v[16 * k..16 * k + 16]);
            // SAFETY: 16 values.
            unsafe { _mm512_storeu_ps(o.as_mut_ptr(), y[k]) };
            // The other lanes: saturation, overflow, NaN.
            by_call_where_not(ok[k], o, |l| libm::expm1f(v[l]));
        }
    }
    super::run(&x[whole..], &mut out[whole..])
}

/// expm1f of N vectors of 16 lanes side by side, and the lanes where each holds libm's bits
/// (the ordinary ones; the others hold anything).
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
pub(super) unsafe fn expm1f16<const N: usize>(x: [__m512; N]) -> ([__m512; N], [u16; N]) {
    let f = _mm512_set1_ps;
    let i = _mm512_set1_epi32;
    let bits = each!(N, k => _mm512_castps_si512(x[k]));
    let hx = each!(N, k => _mm512_and_si512(bits[k], i(0x7fff_ffff)));
    let sign = each!(N, k => _mm512_cmplt_epi32_mask(bits[k], i(0)));
    // |x| < 2^-25 (zeros included): libm returns x; a blend below.
    let tiny = each!(N, k => _mm512_cmplt_epi32_mask(hx[k], i(0x3300_0000)));
    let ordinary = each!(N, k => (sign[k] & _mm512_cmplt_epi32_mask(hx[k], i(0x4195_b844)))
        | (!sign[k] & _mm512_cmplt_epi32_mask(hx[k], i(0x42b0_0000))));

    // Argument reduction: k = round(x / ln2) from 1.5 ln2, ±1 beyond 0.5 ln2, else 0.
    let half = each!(N, k => _mm512_mask_blend_ps(sign[k], f(0.5), f(-0.5)));
    let k_far =
        each!(N, k => _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(f(INV_LN2), x[k]), half[k])));
    let k_near = each!(N, k => _mm512_mask_blend_epi32(sign[k], i(1), i(-1)));
    let near = each!(N, k => _mm512_cmpgt_epi32_mask(hx[k], i(0x3eb1_7218)));
    let far = each!(N, k => _mm512_cmpge_epi32_mask(hx[k], i(0x3f85_1592)));
    let kk = each!(N, k => _mm512_maskz_mov_epi32(near[k], k_near[k]));
    let kk = each!(N, k => _mm512_mask_blend_epi32(far[k], kk[k], k_far[k]));
    let t = each!(N, k => _mm512_cvtepi32_ps(kk[k]));
    let hi = each!(N, k => _mm512_sub_ps(x[k], _mm512_mul_ps(t[k], f(LN2_HI))));
    let lo = each!(N, k => _mm512_mul_ps(t[k], f(LN2_LO)));
    let xr = each!(N, k => _mm512_sub_ps(hi[k], lo[k]));
    let c = each!(N, k => _mm512_sub_ps(_mm512_sub_ps(hi[k], xr[k]), lo[k]));
    let hfx = each!(N, k => _mm512_mul_ps(f(0.5), xr[k]));
    let hxs = each!(N, k => _mm512_mul_ps(xr[k], hfx[k]));
    let r1 = each!(N, k => _mm512_add_ps(
        f(1.0),
        _mm512_mul_ps(hxs[k], _mm512_add_ps(f(Q1), _mm512_mul_ps(hxs[k], f(Q2)))),
    ));
    let t = each!(N, k => _mm512_sub_ps(f(3.0), _mm512_mul_ps(r1[k], hfx[k])));
    let e = each!(N, k => _mm512_mul_ps(
        hxs[k],
        _mm512_div_ps(
            _mm512_sub_ps(r1[k], t[k]),
            _mm512_sub_ps(f(6.0), _mm512_mul_ps(xr[k], t[k])),
        ),
    ));
    let y_k0 =
        each!(N, k => _mm512_sub_ps(xr[k], _mm512_sub_ps(_mm512_mul_ps(xr[k], e[k]), hxs[k])));
    let e = each!(N, k => _mm512_sub_ps(_mm512_mul_ps(xr[k], _mm512_sub_ps(e[k], c[k])), c[k]));
    let e = each!(N, k => _mm512_sub_ps(e[k], hxs[k]));
    let xe = each!(N, k => _mm512_sub_ps(xr[k], e[k]));
    let y_km1 = each!(N, k => _mm512_sub_ps(_mm512_mul_ps(f(0.5), xe[k]), f(0.5)));
    let low = each!(N, k => _mm512_cmp_ps_mask::<_CMP_LT_OQ>(xr[k], f(-0.25)));
    let y_k1 = each!(N, k => _mm512_mask_blend_ps(
        low[k],
        _mm512_add_ps(f(1.0), _mm512_mul_ps(f(2.0), xe[k])),
        _mm512_mul_ps(f(-2.0), _mm512_sub_ps(e[k], _mm512_add_ps(xr[k], f(0.5)))),
    ));
    // 2^k and 2^-k by their bits (k in -27..=127 on ordinary lanes).
    let twopk = each!(N, k => _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(i(0x7f), kk[k]))));
    let uf = each!(N, k => _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_sub_epi32(i(0x7f), kk[k]))));
    let y_far = each!(N, k => _mm512_sub_ps(
        _mm512_mul_ps(_mm512_add_ps(xe[k], f(1.0)), twopk[k]),
        f(1.0),
    ));
    let below_23 = each!(N, k => _mm512_cmplt_epi32_mask(kk[k], i(23)));
    let y_mid = each!(N, k => _mm512_mul_ps(
        _mm512_mask_blend_ps(
            below_23[k],
            _mm512_add_ps(_mm512_sub_ps(xr[k], _mm512_add_ps(e[k], uf[k])), f(1.0)),
            _mm512_add_ps(xe[k], _mm512_sub_ps(f(1.0), uf[k])),
        ),
        twopk[k],
    ));
    // The reconstruction by k: 0, -1, 1, outside 0..=56, else the middle one.
    let outside =
        each!(N, k => _mm512_cmplt_epi32_mask(kk[k], i(0)) | _mm512_cmpgt_epi32_mask(kk[k], i(56)));
    let y = each!(N, k => _mm512_mask_blend_ps(outside[k], y_mid[k], y_far[k]));
    let y =
        each!(N, k => _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(kk[k], i(1)), y[k], y_k1[k]));
    let y =
        each!(N, k => _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(kk[k], i(-1)), y[k], y_km1[k]));
    let y =
        each!(N, k => _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(kk[k], i(0)), y[k], y_k0[k]));
    let y = each!(N, k => _mm512_mask_blend_ps(tiny[k], y[k], x[k]));
    (y, ordinary)
}
