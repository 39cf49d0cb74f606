//! powf's ordinary lanes written in AVX-512 intrinsics: the operations of `log2_parts` and
//! `finish` (the same IEEE operations in the same order, no FMA), without the special cases,
//! on the ordinary lanes: y none of libm's special exponents (`ordinary_exponent`), and x = ±0
//! (libm's special case, a blend) or |x| a normal f32 other than 1, x > 0 or y an integer, and
//! |y·log2|x|| < 126, where the result is a normal f32 (no overflow, underflow or subnormal
//! scaling). Each vector says which lanes were ordinary; libm's call computes the others.
//! The select form compiled by LLVM's vectoriser ran at about a sixth of these instructions'
//! speed (mask juggling for the special cases, the halves' tuples interleaved by permutes).

use super::{
    BLOCK, CP, CP_H, CP_L, DP_H, DP_L, L1, L2, L3, L4, L5, L6, LG2, LG2_H, LG2_L, P1, P2, P3, P4,
    P5,
};
use crate::lane_math::{by_call_where_not, each};
use std::arch::x86_64::*;

/// Vectors of 16 taken side by side.
const SIDE: usize = 4;
/// Values in `SIDE` vectors.
const GROUP: usize = 16 * SIDE;

/// `run_slice` / `run_zip` (y per element where `ys` is given, else `y` for all) with each
/// vector of 16 in intrinsics, `SIDE` vectors side by side and in two halves per block of
/// `BLOCK` values (the first half's loop, then the second's, as `halves`); the lanes that are
/// not ordinary by libm's call, the last values short of `SIDE` vectors in the select form.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
pub(super) unsafe fn run(x: Bases, y: f32, ys: Option<&[f32]>, out: &mut [f32]) {
    let one_y = _mm512_set1_ps(y);
    // SAFETY: this function's features.
    let one_e = unsafe { exponents(one_y) };
    let whole = out.len() / GROUP * GROUP;
    let mut parts = [([_mm512_setzero_ps(); SIDE], [_mm512_setzero_ps(); SIDE]); BLOCK / GROUP];
    // One base for all (a number ** a tensor): its log2|x| once, the first half skipped.
    let one = [match x {
        Bases::One(b) => b,
        Bases::Each(_) => 0.0,
    }; GROUP];
    if let Bases::One(b) = x {
        // SAFETY: this function's features.
        let (t1, t2) = unsafe { log2_parts16::<1>([_mm512_set1_ps(b)]) };
        parts.fill(([t1[0]; SIDE], [t2[0]; SIDE]));
    }
    for (at, o) in (0..whole)
        .step_by(BLOCK)
        .zip(out[..whole].chunks_mut(BLOCK))
    {
        // SIDE vectors from GROUP values (a macro: a closure here is not inlined).
        macro_rules! load {
            ($v:expr) => {{
                let v: &[f32] = $v;
                let mut out = [_mm512_setzero_ps(); SIDE];
                for (k, o) in out.iter_mut().enumerate() {
                    // SAFETY: this function's features; GROUP values in v.
                    *o = _mm512_loadu_ps(v[16 * k..16 * k + 16].as_ptr());
                }
                out
            }};
        }
        if let Bases::Each(x) = x {
            let xb = &x[at..at + o.len()];
            for (p, v) in parts.iter_mut().zip(xb.chunks_exact(GROUP)) {
                let xs = load!(v);
                // SAFETY: this function's features.
                *p = unsafe { log2_parts16::<SIDE>(xs) };
            }
        }
        for (g, (o, &(t1, t2))) in o.chunks_exact_mut(GROUP).zip(&parts).enumerate() {
            let v = match x {
                Bases::Each(x) => &x[at + GROUP * g..at + GROUP * (g + 1)],
                Bases::One(_) => &one[..],
            };
            let yb = ys.map(|ys| &ys[at + GROUP * g..at + GROUP * (g + 1)]);
            let (mut yv, mut e) = ([one_y; SIDE], [one_e; SIDE]);
            if let Some(b) = yb {
                yv = load!(b);
                for k in 0..SIDE {
                    // SAFETY: this function's features.
                    e[k] = unsafe { exponents(yv[k]) };
                }
            }
            let xs = load!(v);
            // SAFETY: this function's features.
            let (p, ok) = unsafe { finish16::<SIDE>(xs, yv, e, t1, t2) };
            for k in 0..SIDE {
                let o = &mut o[16 * k..16 * k + 16];
                // SAFETY: 16 values.
                unsafe { _mm512_storeu_ps(o.as_mut_ptr(), p[k]) };
                // The other lanes: few in a vector as a rule, and libm's special cases (NaN
                // results, say) return early.
                by_call_where_not(ok[k], o, |l| {
                    libm::powf(v[16 * k + l], yb.map_or(y, |b| b[16 * k + l]))
                });
            }
        }
    }
    let rest = out.len() - whole;
    let x = match x {
        Bases::Each(x) => &x[whole..],
        Bases::One(_) => &one[..rest],
    };
    match ys {
        Some(ys) => super::run_zip(x, &ys[whole..], &mut out[whole..]),
        None => super::run_slice(x, y, &mut out[whole..]),
    }
}

/// The bases of `run`: one per element, or one for all.
#[derive(Clone, Copy)]
pub(super) enum Bases<'a> {
    Each(&'a [f32]),
    One(f32),
}

const HIGH: i32 = 0xffff_f000_u32 as i32;

/// f with its low bits cleared (`high`).
#[inline(always)]
unsafe fn high(f: __m512, mask: i32) -> __m512 {
    _mm512_castsi512_ps(_mm512_and_si512(
        _mm512_castps_si512(f),
        _mm512_set1_epi32(mask),
    ))
}

/// What the exponents of 16 lanes allow: the lanes whose y is ordinary, the lanes whose y is
/// an integer (libm's yisint 1 or 2) and those whose y is an odd one (yisint 1).
#[derive(Clone, Copy)]
pub(super) struct Exponents {
    ordinary: u16,
    integer: u16,
    odd: u16,
}

/// `Exponents` of the 16 lanes of y, from their bits as `flags` and `ordinary_exponent` read
/// them (the shifts of lanes outside 1 <= |y| < 2^24 are discarded, as there).
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
pub(super) unsafe fn exponents(y: __m512) -> Exponents {
    let i = _mm512_set1_epi32;
    let iy = _mm512_and_si512(_mm512_castps_si512(y), i(0x7fff_ffff));
    let ordinary = _mm512_cmpneq_epi32_mask(iy, i(0))
        & _mm512_cmple_epi32_mask(iy, i(0x4d00_0000))
        & _mm512_cmpneq_epi32_mask(iy, i(0x3f80_0000))
        & _mm512_cmp_ps_mask::<_CMP_NEQ_UQ>(y, _mm512_set1_ps(2.0))
        & _mm512_cmp_ps_mask::<_CMP_NEQ_UQ>(y, _mm512_set1_ps(0.5));
    let sh = _mm512_sub_epi32(i(0x96), _mm512_srli_epi32::<23>(iy));
    let yj = _mm512_srlv_epi32(iy, sh);
    let large = _mm512_cmpge_epi32_mask(iy, i(0x4b80_0000));
    let whole = _mm512_cmpge_epi32_mask(iy, i(0x3f80_0000))
        & _mm512_cmpeq_epi32_mask(_mm512_sllv_epi32(yj, sh), iy)
        & !large;
    let odd = whole & _mm512_test_epi32_mask(yj, i(1));
    Exponents {
        ordinary,
        integer: large | whole,
        odd,
    }
}

/// The first half of powf's ordinary lanes (`log2_parts`) for N vectors of 16 side by side:
/// log2|x| = t1 + t2. A powf of one vector is a chain of dependent operations too long for the
/// core to overlap the next vector's; N vectors side by side, in two halves, it overlaps them.
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
pub(super) unsafe fn log2_parts16<const N: usize>(x: [__m512; N]) -> ([__m512; N], [__m512; N]) {
    let f = _mm512_set1_ps;
    let i = _mm512_set1_epi32;
    let ix = each!(N, k => _mm512_and_si512(_mm512_castps_si512(x[k]), i(0x7fff_ffff)));

    // log2|x| = n + dp_h[k] + log2(ax), from s = (ax - bp)/(ax + bp) (`log2_parts`).
    let jm = each!(N, k => _mm512_and_si512(ix[k], i(0x007f_ffff)));
    let k1 = each!(N, k => _mm512_cmpgt_epi32_mask(jm[k], i(0x001c_c471)) & _mm512_cmplt_epi32_mask(jm[k], i(0x005d_b3d7)));
    let up = each!(N, k => _mm512_cmpge_epi32_mask(jm[k], i(0x005d_b3d7)));
    let n = each!(N, k => _mm512_sub_epi32(_mm512_srli_epi32::<23>(ix[k]), i(0x7f)));
    let n = each!(N, k => _mm512_mask_add_epi32(n[k], up[k], n[k], i(1)));
    let ixn = each!(N, k => _mm512_or_si512(jm[k], i(0x3f80_0000)));
    let ixn = each!(N, k => _mm512_mask_sub_epi32(ixn[k], up[k], ixn[k], i(0x0080_0000)));
    let axn = each!(N, k => _mm512_castsi512_ps(ixn[k]));
    let bp = each!(N, k => _mm512_mask_blend_ps(k1[k], f(1.0), f(1.5)));
    let dp_h = each!(N, k => _mm512_maskz_mov_ps(k1[k], f(DP_H)));
    let dp_l = each!(N, k => _mm512_maskz_mov_ps(k1[k], f(DP_L)));
    let q = each!(N, k => _mm512_div_ps(f(1.0), _mm512_add_ps(axn[k], bp[k])));
    let u = each!(N, k => _mm512_sub_ps(axn[k], bp[k]));
    let s = each!(N, k => _mm512_mul_ps(u[k], q[k]));
    let s_h = each!(N, k => high(s[k], HIGH));
    let t_h = each!(N, k => _mm512_and_si512(_mm512_srli_epi32::<1>(ixn[k]), i(HIGH)));
    let t_h =
        each!(N, k => _mm512_add_epi32(_mm512_or_si512(t_h[k], i(0x2000_0000)), i(0x0040_0000)));
    let t_h = each!(N, k => _mm512_castsi512_ps(_mm512_mask_add_epi32(t_h[k], k1[k], t_h[k], i(1 << 21))));
    let t_l = each!(N, k => _mm512_sub_ps(axn[k], _mm512_sub_ps(t_h[k], bp[k])));
    let s_l = each!(N, k => _mm512_mul_ps(
        q[k],
        _mm512_sub_ps(
            _mm512_sub_ps(u[k], _mm512_mul_ps(s_h[k], t_h[k])),
            _mm512_mul_ps(s_h[k], t_l[k]),
        ),
    ));
    let s2 = each!(N, k => _mm512_mul_ps(s[k], s[k]));
    let poly = each!(N, k => _mm512_add_ps(f(L5), _mm512_mul_ps(s2[k], f(L6))));
    let poly = each!(N, k => _mm512_add_ps(f(L4), _mm512_mul_ps(s2[k], poly[k])));
    let poly = each!(N, k => _mm512_add_ps(f(L3), _mm512_mul_ps(s2[k], poly[k])));
    let poly = each!(N, k => _mm512_add_ps(f(L2), _mm512_mul_ps(s2[k], poly[k])));
    let poly = each!(N, k => _mm512_add_ps(f(L1), _mm512_mul_ps(s2[k], poly[k])));
    let r = each!(N, k => _mm512_mul_ps(_mm512_mul_ps(s2[k], s2[k]), poly[k]));
    let r = each!(N, k => _mm512_add_ps(r[k], _mm512_mul_ps(s_l[k], _mm512_add_ps(s_h[k], s[k]))));
    let s2 = each!(N, k => _mm512_mul_ps(s_h[k], s_h[k]));
    let t_h = each!(N, k => high(_mm512_add_ps(_mm512_add_ps(f(3.0), s2[k]), r[k]), HIGH));
    let t_l =
        each!(N, k => _mm512_sub_ps(r[k], _mm512_sub_ps(_mm512_sub_ps(t_h[k], f(3.0)), s2[k])));
    let u = each!(N, k => _mm512_mul_ps(s_h[k], t_h[k]));
    let v =
        each!(N, k => _mm512_add_ps(_mm512_mul_ps(s_l[k], t_h[k]), _mm512_mul_ps(t_l[k], s[k])));
    let p_h = each!(N, k => high(_mm512_add_ps(u[k], v[k]), HIGH));
    let p_l = each!(N, k => _mm512_sub_ps(v[k], _mm512_sub_ps(p_h[k], u[k])));
    let z_h = each!(N, k => _mm512_mul_ps(f(CP_H), p_h[k]));
    let z_l = each!(N, k => _mm512_add_ps(
        _mm512_add_ps(_mm512_mul_ps(f(CP_L), p_h[k]), _mm512_mul_ps(p_l[k], f(CP))),
        dp_l[k],
    ));
    let t = each!(N, k => _mm512_cvtepi32_ps(n[k]));
    let t1 = each!(N, k => high(
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(z_h[k], z_l[k]), dp_h[k]), t[k]),
        HIGH,
    ));
    let t2 = each!(N, k => _mm512_sub_ps(
        z_l[k],
        _mm512_sub_ps(_mm512_sub_ps(_mm512_sub_ps(t1[k], t[k]), dp_h[k]), z_h[k]),
    ));
    (t1, t2)
}

/// The second half (`finish`) from t1 + t2: powf of the N vectors and the lanes where each
/// holds libm's bits (the ordinary ones; the others hold anything).
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
pub(super) unsafe fn finish16<const N: usize>(
    x: [__m512; N],
    y: [__m512; N],
    e: [Exponents; N],
    t1: [__m512; N],
    t2: [__m512; N],
) -> ([__m512; N], [u16; N]) {
    let f = _mm512_set1_ps;
    let i = _mm512_set1_epi32;
    let hx = each!(N, k => _mm512_castps_si512(x[k]));
    let ix = each!(N, k => _mm512_and_si512(hx[k], i(0x7fff_ffff)));
    let negative = each!(N, k => _mm512_cmplt_epi32_mask(hx[k], i(0)));
    let ordinary_x = each!(N, k => _mm512_cmpge_epi32_mask(ix[k], i(0x0080_0000))
        & _mm512_cmplt_epi32_mask(ix[k], i(0x7f80_0000))
        & _mm512_cmpneq_epi32_mask(ix[k], i(0x3f80_0000))
        & (!negative[k] | e[k].integer));

    // y·log2|x| = p_h + p_l = z, then 2^z (`finish`).
    let y1 = each!(N, k => high(y[k], HIGH));
    let p_l = each!(N, k => _mm512_add_ps(
        _mm512_mul_ps(_mm512_sub_ps(y[k], y1[k]), t1[k]),
        _mm512_mul_ps(y[k], t2[k]),
    ));
    let p_h = each!(N, k => _mm512_mul_ps(y1[k], t1[k]));
    let z = each!(N, k => _mm512_add_ps(p_l[k], p_h[k]));
    let j = each!(N, k => _mm512_castps_si512(z[k]));
    let iz = each!(N, k => _mm512_and_si512(j[k], i(0x7fff_ffff)));
    let in_range = each!(N, k => _mm512_cmplt_epi32_mask(iz[k], i(0x42fc_0000))); // |z| < 126
    let big = each!(N, k => _mm512_cmpgt_epi32_mask(iz[k], i(0x3f00_0000)));
    // Shifts in range (0..=7) on the big lanes, the only ones whose values are kept.
    let nb = each!(N, k => _mm512_add_epi32(
        j[k],
        _mm512_srlv_epi32(i(0x0080_0000), _mm512_sub_epi32(_mm512_srli_epi32::<23>(iz[k]), i(0x7e))),
    ));
    let kb = each!(N, k => _mm512_sub_epi32(
        _mm512_srli_epi32::<23>(_mm512_and_si512(nb[k], i(0x7fff_ffff))),
        i(0x7f),
    ));
    let tb = each!(N, k => _mm512_castsi512_ps(_mm512_andnot_si512(
        _mm512_srlv_epi32(i(0x007f_ffff), kb[k]),
        nb[k],
    )));
    let nm = each!(N, k => _mm512_srlv_epi32(
        _mm512_or_si512(_mm512_and_si512(nb[k], i(0x007f_ffff)), i(0x0080_0000)),
        _mm512_sub_epi32(i(23), kb[k]),
    ));
    let z_neg = each!(N, k => _mm512_cmplt_epi32_mask(j[k], i(0)));
    let nm = each!(N, k => _mm512_mask_sub_epi32(nm[k], z_neg[k], _mm512_setzero_si512(), nm[k]));
    let n = each!(N, k => _mm512_maskz_mov_epi32(big[k], nm[k]));
    let p_h = each!(N, k => _mm512_mask_sub_ps(p_h[k], big[k], p_h[k], tb[k]));
    let t = each!(N, k => high(_mm512_add_ps(p_l[k], p_h[k]), 0xffff_8000_u32 as i32));
    let u = each!(N, k => _mm512_mul_ps(t[k], f(LG2_H)));
    let v = each!(N, k => _mm512_add_ps(
        _mm512_mul_ps(_mm512_sub_ps(p_l[k], _mm512_sub_ps(t[k], p_h[k])), f(LG2)),
        _mm512_mul_ps(t[k], f(LG2_L)),
    ));
    let z = each!(N, k => _mm512_add_ps(u[k], v[k]));
    let w = each!(N, k => _mm512_sub_ps(v[k], _mm512_sub_ps(z[k], u[k])));
    let t = each!(N, k => _mm512_mul_ps(z[k], z[k]));
    let poly = each!(N, k => _mm512_add_ps(f(P4), _mm512_mul_ps(t[k], f(P5))));
    let poly = each!(N, k => _mm512_add_ps(f(P3), _mm512_mul_ps(t[k], poly[k])));
    let poly = each!(N, k => _mm512_add_ps(f(P2), _mm512_mul_ps(t[k], poly[k])));
    let poly = each!(N, k => _mm512_add_ps(f(P1), _mm512_mul_ps(t[k], poly[k])));
    let t1 = each!(N, k => _mm512_sub_ps(z[k], _mm512_mul_ps(t[k], poly[k])));
    let r = each!(N, k => _mm512_sub_ps(
        _mm512_div_ps(_mm512_mul_ps(z[k], t1[k]), _mm512_sub_ps(t1[k], f(2.0))),
        _mm512_add_ps(w[k], _mm512_mul_ps(z[k], w[k])),
    ));
    let z = each!(N, k => _mm512_sub_ps(f(1.0), _mm512_sub_ps(r[k], z[k])));
    let jz =
        each!(N, k => _mm512_add_epi32(_mm512_castps_si512(z[k]), _mm512_slli_epi32::<23>(n[k])));
    // Where jz's exponent field is positive, scalbnf(z, n) is jz's bits: a normal result.
    let normal = each!(N, k => _mm512_cmpgt_epi32_mask(_mm512_srai_epi32::<23>(jz[k]), _mm512_setzero_si512()));
    // sn · z: -1 · z for a negative x to an odd power, its sign flipped exactly.
    // x = ±0 (libm's special case of x): +0 for y > 0, +inf for y < 0.
    let zero = each!(N, k => _mm512_cmpeq_epi32_mask(ix[k], _mm512_setzero_si512()));
    let y_neg =
        each!(N, k => _mm512_cmplt_epi32_mask(_mm512_castps_si512(y[k]), _mm512_setzero_si512()));
    let zero_power = each!(N, k => _mm512_maskz_mov_epi32(y_neg[k], i(0x7f80_0000)));
    let jz = each!(N, k => _mm512_mask_blend_epi32(zero[k], jz[k], zero_power[k]));
    // sn · z: -1 · z for a negative x (-0 included) to an odd power, its sign flipped exactly.
    let flip = each!(N, k => _mm512_maskz_mov_epi32(negative[k] & e[k].odd, i(i32::MIN)));
    let out = each!(N, k => _mm512_castsi512_ps(_mm512_xor_si512(jz[k], flip[k])));
    (
        out,
        each!(N, k => e[k].ordinary & ((ordinary_x[k] & in_range[k] & normal[k]) | zero[k])),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lane_math::test_support::rng;

    /// The two halves on 16 * 4 pairs: each lane's bits and whether it claimed to be ordinary.
    fn run(xs: &[f32; 64], ys: &[f32; 64]) -> Vec<(u32, bool)> {
        // SAFETY: the callers check the CPU's features; 64 values each.
        unsafe {
            let load = |v: &[f32; 64]| -> [__m512; 4] {
                std::array::from_fn(|k| _mm512_loadu_ps(v[16 * k..].as_ptr()))
            };
            let (x, y) = (load(xs), load(ys));
            let (t1, t2) = log2_parts16(x);
            let (p, ok) = finish16(x, y, y.map(|v| exponents(v)), t1, t2);
            let mut out = vec![];
            for k in 0..4 {
                let mut lanes = [0f32; 16];
                _mm512_storeu_ps(lanes.as_mut_ptr(), p[k]);
                for (l, v) in lanes.iter().enumerate() {
                    out.push((v.to_bits(), ok[k] >> l & 1 != 0));
                }
            }
            out
        }
    }

    fn avx512() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }

    /// Every lane that calls itself ordinary holds libm's bits, and ordinary pairs (|x| in
    /// [2^-8, 2^8), y in [-8, 8), negative x with integer y) all call themselves so. Where
    /// the pairs are random bit patterns and libm's special values, the lanes that claim it
    /// still hold libm's bits.
    #[test]
    fn ordinary_lanes_hold_libms_bits_and_the_others_say_so() {
        if !avx512() {
            return; // nothing to compare: this CPU runs the select form alone
        }
        let mut next = rng();
        let mut claimed = 0usize;
        for round in 0..40_000 {
            let mut xs = [0f32; 64];
            let mut ys = [0f32; 64];
            let ordinary = round % 2 == 0;
            for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
                let (r, s) = (next(), next());
                if ordinary {
                    let m = 1.0 + (r >> 41) as f32 / (1u64 << 23) as f32; // [1, 2)
                    let e = ((r >> 8) % 16) as i32 - 8;
                    let integer = r & 1 == 0;
                    *y = if integer {
                        ((s >> 40) % 16) as f32 - 8.0
                    } else {
                        (s >> 40) as f32 / (1u64 << 20) as f32 - 8.0
                    };
                    let sign = if integer && r & 2 == 0 { -1.0 } else { 1.0 };
                    *x = sign * m * 2f32.powi(e);
                } else {
                    // Bit patterns, every eighth a zero of either sign.
                    *x = f32::from_bits(if r % 8 == 0 {
                        (r as u32) & 0x8000_0000
                    } else {
                        r as u32
                    });
                    *y = if s & 1 == 0 {
                        f32::from_bits((s >> 32) as u32)
                    } else {
                        ((s >> 40) % 9) as f32 * 0.5 - 2.0 // -2 ..= 2 by halves: 0, ±1, 2, 0.5
                    };
                }
            }
            for (i, (bits, ok)) in run(&xs, &ys).into_iter().enumerate() {
                let (x, y) = (xs[i], ys[i]);
                let y_ok = super::super::ordinary_exponent(y);
                if (ordinary || x == 0.0) && y_ok && x.abs() != 1.0 {
                    assert!(ok, "({x:e}, {y:e}) is ordinary but was not taken as such");
                }
                if ok {
                    claimed += 1;
                    let want = libm::powf(x, y).to_bits();
                    assert_eq!(
                        bits,
                        want,
                        "({:#x}, {:#x}): libm {want:#x}, lanes {bits:#x}",
                        x.to_bits(),
                        y.to_bits()
                    );
                }
            }
        }
        assert!(claimed > 1_000_000, "only {claimed} lanes were ordinary");
    }
}
