//! row_folds' AVX-512 kernels: sixteen rows' folds (sums, running sums, maxima and their
//! indices) stepping together. In f32 each 16 × 16 block of (rows, positions) is transposed in
//! registers, so one vector add steps all sixteen folds; f64 sums and maxima take two 8 × 8
//! blocks per eight positions, two vectors of eight rows. Positions past the last whole block come from
//! an overlapping block, or step one by one, in order.

use super::LANES;
use crate::dtype::Float;
use std::any::TypeId;
use std::arch::x86_64::*;

/// The folds, or None where T is neither f32 nor f64 or the CPU lacks AVX-512.
#[inline(always)]
pub fn lanes<T: Float>(
    acc: [T; LANES],
    terms: &[T],
    hw: usize,
    negate: bool,
) -> Option<[T; LANES]> {
    if !crate::backend::cpu::simd::has_avx512() {
        return None;
    }
    if TypeId::of::<T>() == TypeId::of::<f64>() {
        // SAFETY: T is f64 (checked above), so these are the same bytes under their own type.
        let (acc64, t64) = unsafe {
            (
                std::mem::transmute_copy::<[T; LANES], [f64; LANES]>(&acc),
                std::slice::from_raw_parts(terms.as_ptr() as *const f64, terms.len()),
            )
        };
        // SAFETY: AVX-512F was detected above.
        let out = unsafe { fold64(acc64, t64, hw, negate) };
        // SAFETY: as above, f64 is T.
        return Some(unsafe { std::mem::transmute_copy::<[f64; LANES], [T; LANES]>(&out) });
    }
    if TypeId::of::<T>() != TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: T is f32 (checked above), so these are the same bytes under their own type.
    let (acc32, t32) = unsafe {
        (
            std::mem::transmute_copy::<[T; LANES], [f32; LANES]>(&acc),
            std::slice::from_raw_parts(terms.as_ptr() as *const f32, terms.len()),
        )
    };
    // SAFETY: AVX-512F was detected above.
    let out = unsafe { fold(acc32, t32, hw, negate) };
    // SAFETY: as above, f32 is T.
    Some(unsafe { std::mem::transmute_copy::<[f32; LANES], [T; LANES]>(&out) })
}

#[target_feature(enable = "avx512f")]
unsafe fn fold(acc: [f32; LANES], terms: &[f32], hw: usize, negate: bool) -> [f32; LANES] {
    assert!(terms.len() >= LANES * hw);
    let sign = _mm512_set1_ps(if negate { -0.0 } else { 0.0 });
    // -v is v with its sign flipped, exactly as the scalar negation.
    let term = |v: __m512| {
        _mm512_castsi512_ps(_mm512_xor_si512(
            _mm512_castps_si512(v),
            _mm512_castps_si512(sign),
        ))
    };
    let mut a = _mm512_loadu_ps(acc.as_ptr());
    let whole = hw / LANES * LANES;
    let p = terms.as_ptr();
    for i0 in (0..whole).step_by(LANES) {
        let r = std::array::from_fn(|l| _mm512_loadu_ps(p.add(l * hw + i0)));
        for v in crate::backend::cpu::tile16::tile(r) {
            a = _mm512_add_ps(a, term(v));
        }
    }
    // The last positions (fewer than 16) from a tile of each row's last 16, adding only
    // those not yet added, in order; rows shorter than that one by one.
    let mut rest = whole;
    if hw >= LANES && whole < hw {
        let i0 = hw - LANES;
        let r = std::array::from_fn(|l| _mm512_loadu_ps(p.add(l * hw + i0)));
        for v in &crate::backend::cpu::tile16::tile(r)[whole - i0..] {
            a = _mm512_add_ps(a, term(*v));
        }
        rest = hw;
    }
    let mut out = [0f32; LANES];
    _mm512_storeu_ps(out.as_mut_ptr(), a);
    for i in rest..hw {
        for (l, o) in out.iter_mut().enumerate() {
            let v = terms[l * hw + i];
            *o += if negate { -v } else { v };
        }
    }
    out
}

/// Eight rows of eight f64 positions (`r[l]` row l) as eight vectors of the rows' values at
/// one position each.
#[inline(always)]
unsafe fn tile8(r: [__m512d; 8]) -> [__m512d; 8] {
    // Pairs of rows interleaved, then 128-bit quarters gathered twice: (0x88 takes quarters 0
    // and 2 of each operand, 0xdd quarters 1 and 3).
    let t: [__m512d; 8] = std::array::from_fn(|k| {
        let (a, b) = (r[k / 2 * 2], r[k / 2 * 2 + 1]);
        if k % 2 == 0 {
            _mm512_unpacklo_pd(a, b)
        } else {
            _mm512_unpackhi_pd(a, b)
        }
    });
    // u[0..4]: rows 0-3 at positions (0, 4), (2, 6), (1, 5), (3, 7); u[4..8]: rows 4-7.
    let u = |a: __m512d, b: __m512d, odd: bool| {
        if odd {
            _mm512_shuffle_f64x2::<0xdd>(a, b)
        } else {
            _mm512_shuffle_f64x2::<0x88>(a, b)
        }
    };
    let u = [
        u(t[0], t[2], false),
        u(t[0], t[2], true),
        u(t[1], t[3], false),
        u(t[1], t[3], true),
        u(t[4], t[6], false),
        u(t[4], t[6], true),
        u(t[5], t[7], false),
        u(t[5], t[7], true),
    ];
    // Position p: from u pair (0, 4) for p = 0 and 4, (2, 6) for 1 and 5, (1, 5) for 2 and 6,
    // (3, 7) for 3 and 7; the low quarters for p < 4.
    let pair = [0, 2, 1, 3];
    std::array::from_fn(|p| {
        let k = pair[p % 4];
        if p < 4 {
            _mm512_shuffle_f64x2::<0x88>(u[k], u[k + 4])
        } else {
            _mm512_shuffle_f64x2::<0xdd>(u[k], u[k + 4])
        }
    })
}

/// `fold_rows` for f64: per eight positions, the two 8 × 8 blocks of rows 0-7 and 8-15
/// transposed, then each position's two vectors added, in order.
#[target_feature(enable = "avx512f")]
unsafe fn fold64(acc: [f64; LANES], terms: &[f64], hw: usize, negate: bool) -> [f64; LANES] {
    assert!(terms.len() >= LANES * hw);
    let sign = _mm512_set1_pd(if negate { -0.0 } else { 0.0 });
    // -v is v with its sign flipped, exactly as the scalar negation.
    let term = |v: __m512d| {
        _mm512_castsi512_pd(_mm512_xor_si512(
            _mm512_castpd_si512(v),
            _mm512_castpd_si512(sign),
        ))
    };
    let mut a = [
        _mm512_loadu_pd(acc.as_ptr()),
        _mm512_loadu_pd(acc.as_ptr().add(8)),
    ];
    let p = terms.as_ptr();
    let blocks = |i0: usize| {
        [0, 8].map(|r0| {
            tile8(std::array::from_fn(|l| {
                _mm512_loadu_pd(p.add((r0 + l) * hw + i0))
            }))
        })
    };
    let whole = hw / 8 * 8;
    for i0 in (0..whole).step_by(8) {
        let [lo, hi] = blocks(i0);
        for k in 0..8 {
            a[0] = _mm512_add_pd(a[0], term(lo[k]));
            a[1] = _mm512_add_pd(a[1], term(hi[k]));
        }
    }
    // The last positions (fewer than 8) from the blocks of each row's last 8, adding only
    // those not yet added, in order; rows shorter than that one by one.
    let mut rest = whole;
    if hw >= 8 && whole < hw {
        let i0 = hw - 8;
        let [lo, hi] = blocks(i0);
        for k in whole - i0..8 {
            a[0] = _mm512_add_pd(a[0], term(lo[k]));
            a[1] = _mm512_add_pd(a[1], term(hi[k]));
        }
        rest = hw;
    }
    let mut out = [0f64; LANES];
    _mm512_storeu_pd(out.as_mut_ptr(), a[0]);
    _mm512_storeu_pd(out.as_mut_ptr().add(8), a[1]);
    for i in rest..hw {
        for (l, o) in out.iter_mut().enumerate() {
            let v = terms[l * hw + i];
            *o += if negate { -v } else { v };
        }
    }
    out
}

/// `cumsum_rows` for f32 on AVX-512; false otherwise.
#[inline(always)]
pub fn cumsum_lanes<T: Float>(rows: &[T], len: usize, out: &mut [T], reverse: bool) -> bool {
    if TypeId::of::<T>() != TypeId::of::<f32>() || !crate::backend::cpu::simd::has_avx512() {
        return false;
    }
    // SAFETY: T is f32 (checked above), so these are the same bytes under their own type.
    let (r32, o32) = unsafe {
        (
            std::slice::from_raw_parts(rows.as_ptr() as *const f32, rows.len()),
            std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut f32, out.len()),
        )
    };
    // SAFETY: AVX-512F was detected above.
    unsafe { cumsum16(r32, len, o32, reverse) };
    true
}

#[target_feature(enable = "avx512f")]
unsafe fn cumsum16(rows: &[f32], len: usize, out: &mut [f32], reverse: bool) {
    assert!(rows.len() >= LANES * len && out.len() >= LANES * len && len >= 1);
    let whole = len / LANES * LANES;
    let p = rows.as_ptr();
    // Position i's step: the chain's first position starts it as it is (y = x, not 0 + x).
    let first = if reverse { len - 1 } else { 0 };
    let mut last = [0f32; LANES];
    let scalar_step = |i: usize, last: &mut [f32; LANES], out: &mut [f32]| {
        for (l, a) in last.iter_mut().enumerate() {
            *a = if i == first {
                rows[l * len + i]
            } else {
                *a + rows[l * len + i]
            };
            out[l * len + i] = *a;
        }
    };
    if reverse {
        // The tail past the last whole tile comes first, from the far end.
        for i in (whole..len).rev() {
            scalar_step(i, &mut last, out);
        }
    }
    let mut acc = _mm512_loadu_ps(last.as_ptr());
    let q_out = out.as_mut_ptr();
    let tiles: Vec<usize> = if reverse {
        (0..whole).step_by(LANES).rev().collect()
    } else {
        (0..whole).step_by(LANES).collect()
    };
    for i0 in tiles {
        let r = std::array::from_fn(|l| _mm512_loadu_ps(p.add(l * len + i0)));
        let mut sums = crate::backend::cpu::tile16::tile(r);
        for k in 0..LANES {
            let k = if reverse { LANES - 1 - k } else { k };
            acc = if i0 + k == first {
                sums[k]
            } else {
                _mm512_add_ps(acc, sums[k])
            };
            sums[k] = acc;
        }
        for (l, row) in crate::backend::cpu::tile16::tile(sums)
            .into_iter()
            .enumerate()
        {
            _mm512_storeu_ps(q_out.add(l * len + i0), row);
        }
    }
    _mm512_storeu_ps(last.as_mut_ptr(), acc);
    if !reverse {
        for i in whole..len {
            scalar_step(i, &mut last, out);
        }
    }
}

/// `max_rows` of 16 whole rows, or None where T is neither f32 nor f64 or the CPU lacks
/// AVX-512.
#[inline(always)]
pub fn max_lanes<T: Float>(rows: &[T], hw: usize) -> Option<[T; LANES]> {
    if !crate::backend::cpu::simd::has_avx512() {
        return None;
    }
    if TypeId::of::<T>() == TypeId::of::<f64>() {
        // SAFETY: T is f64 (checked above).
        let r64 = unsafe { std::slice::from_raw_parts(rows.as_ptr() as *const f64, rows.len()) };
        // SAFETY: AVX-512F was detected above.
        let out = unsafe { max8x2(r64, hw) };
        // SAFETY: as above, f64 is T.
        return Some(unsafe { std::mem::transmute_copy::<[f64; LANES], [T; LANES]>(&out) });
    }
    if TypeId::of::<T>() != TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: T is f32 (checked above).
    let r32 = unsafe { std::slice::from_raw_parts(rows.as_ptr() as *const f32, rows.len()) };
    // SAFETY: AVX-512F was detected above.
    let out = unsafe { max16(r32, hw) };
    // SAFETY: as above, f32 is T.
    Some(unsafe { std::mem::transmute_copy::<[f32; LANES], [T; LANES]>(&out) })
}

#[target_feature(enable = "avx512f")]
unsafe fn max16(rows: &[f32], hw: usize) -> [f32; LANES] {
    assert!(rows.len() >= LANES * hw);
    let mut m = _mm512_set1_ps(f32::NEG_INFINITY);
    // Each step: the value wins where it is greater than the maximum (ordered) or NaN.
    let step = |m: __m512, v: __m512| {
        let take =
            _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, m) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_blend_ps(take, m, v)
    };
    let whole = hw / LANES * LANES;
    let p = rows.as_ptr();
    // The last positions (fewer than 16) from a tile of each row's last 16: the positions
    // it repeats end where the fold stands, so their winner is the running maximum itself
    // (the last NaN of the suffix is the last so far) or loses to it; rows shorter than
    // that one by one.
    let last = (hw >= LANES && whole < hw).then(|| hw - LANES);
    for i0 in (0..whole).step_by(LANES).chain(last) {
        let r = std::array::from_fn(|l| _mm512_loadu_ps(p.add(l * hw + i0)));
        // The step is associative over adjacent runs (the later run's winner beats the
        // earlier's when greater or NaN: the last NaN, else the first greatest value), so
        // a tile's sixteen positions combine as a tree, neighbours in order, four steps
        // deep instead of sixteen.
        let mut v = crate::backend::cpu::tile16::tile(r);
        let mut width = LANES;
        while width > 1 {
            width /= 2;
            for k in 0..width {
                v[k] = step(v[2 * k], v[2 * k + 1]);
            }
        }
        m = step(m, v[0]);
    }
    let rest = if last.is_some() { hw } else { whole };
    let mut out = [0f32; LANES];
    _mm512_storeu_ps(out.as_mut_ptr(), m);
    for i in rest..hw {
        for (l, o) in out.iter_mut().enumerate() {
            let v = rows[l * hw + i];
            if v > *o || v.is_nan() {
                *o = v;
            }
        }
    }
    out
}

/// `max16` for f64: per eight positions, the two 8 × 8 blocks of rows 0-7 and 8-15
/// transposed, each block's positions combined as a tree of neighbours, then one step into
/// each half's running maximum.
#[target_feature(enable = "avx512f")]
unsafe fn max8x2(rows: &[f64], hw: usize) -> [f64; LANES] {
    assert!(rows.len() >= LANES * hw);
    let mut m = [_mm512_set1_pd(f64::NEG_INFINITY); 2];
    // Each step: the value wins where it is greater than the maximum (ordered) or NaN.
    let step = |m: __m512d, v: __m512d| {
        let take =
            _mm512_cmp_pd_mask::<_CMP_GT_OQ>(v, m) | _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_blend_pd(take, m, v)
    };
    let whole = hw / 8 * 8;
    let p = rows.as_ptr();
    // The last positions from an overlapping block, as `max16` (its repeats cannot change the
    // running maximum); rows shorter than a block one by one.
    let last = (hw >= 8 && whole < hw).then(|| hw - 8);
    for i0 in (0..whole).step_by(8).chain(last) {
        for (h, m) in m.iter_mut().enumerate() {
            let r = std::array::from_fn(|l| _mm512_loadu_pd(p.add((8 * h + l) * hw + i0)));
            let mut v = tile8(r);
            let mut width = 8;
            while width > 1 {
                width /= 2;
                for k in 0..width {
                    v[k] = step(v[2 * k], v[2 * k + 1]);
                }
            }
            *m = step(*m, v[0]);
        }
    }
    let rest = if last.is_some() { hw } else { whole };
    let mut out = [0f64; LANES];
    _mm512_storeu_pd(out.as_mut_ptr(), m[0]);
    _mm512_storeu_pd(out.as_mut_ptr().add(8), m[1]);
    for i in rest..hw {
        for (l, o) in out.iter_mut().enumerate() {
            let v = rows[l * hw + i];
            if v > *o || v.is_nan() {
                *o = v;
            }
        }
    }
    out
}

/// `max_index_rows` of 16 whole rows, or None where T is not f32 or the CPU lacks
/// AVX-512 (F and DQ).
#[inline(always)]
pub fn max_index_lanes<T: Float>(rows: &[T], hw: usize) -> Option<([T; LANES], [usize; LANES])> {
    if TypeId::of::<T>() != TypeId::of::<f32>()
        || !crate::backend::cpu::simd::has_avx512()
        || hw == 0
        || hw > i32::MAX as usize
    {
        return None;
    }
    // SAFETY: T is f32 (checked above).
    let r32 = unsafe { std::slice::from_raw_parts(rows.as_ptr() as *const f32, rows.len()) };
    // SAFETY: AVX-512 F and DQ were detected above (`has_avx512`).
    let (best, at) = unsafe { max_index16(r32, hw) };
    // SAFETY: as above, f32 is T.
    let best = unsafe { std::mem::transmute_copy::<[f32; LANES], [T; LANES]>(&best) };
    Some((best, at.map(|i| i as usize)))
}

#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn max_index16(rows: &[f32], hw: usize) -> ([f32; LANES], [u32; LANES]) {
    assert!(rows.len() >= LANES * hw && hw >= 1);
    use crate::backend::cpu::pool_2x2::beats;
    // The later run's winner replaces the earlier's where it beats it: associative over
    // adjacent runs (the first NaN, else the greatest value, +0 over -0, the first of
    // equals), so a tile's sixteen positions combine as a tree of neighbours, four steps
    // deep, before one step into the running winner. Starting from -inf at index 0 gives
    // the fold from position 0: its value beats -inf, or is -inf itself at index 0.
    // Macros, not closures: a closure is not compiled with this function's target features,
    // and stayed out of line, its vectors passed through memory.
    macro_rules! step {
        ($earlier:expr, $later:expr) => {{
            let ((m, i), (v, j)): ((__m512, __m512i), (__m512, __m512i)) = ($earlier, $later);
            let take = beats(v, m);
            (
                _mm512_mask_blend_ps(take, m, v),
                _mm512_mask_blend_epi32(take, i, j),
            )
        }};
    }
    let mut best = (_mm512_set1_ps(f32::NEG_INFINITY), _mm512_setzero_si512());
    let p = rows.as_ptr();
    macro_rules! tile {
        ($i0:expr) => {{
            let i0: usize = $i0;
            let r = std::array::from_fn(|l| _mm512_loadu_ps(p.add(l * hw + i0)));
            let v = crate::backend::cpu::tile16::tile(r);
            let mut t: [(__m512, __m512i); LANES] =
                std::array::from_fn(|k| (v[k], _mm512_set1_epi32((i0 + k) as i32)));
            let mut width = LANES;
            while width > 1 {
                width /= 2;
                for k in 0..width {
                    t[k] = step!(t[2 * k], t[2 * k + 1]);
                }
            }
            t[0]
        }};
    }
    let whole = hw / LANES * LANES;
    // The last positions (fewer than 16) from a tile of the row's last 16: the positions
    // it repeats were folded already and cannot beat the winner they lost to or are.
    let last = (hw >= LANES && whole < hw).then(|| hw - LANES);
    for i0 in (0..whole).step_by(LANES).chain(last) {
        best = step!(best, tile!(i0));
    }
    let rest = if last.is_some() { hw } else { whole };
    let mut b = [0f32; LANES];
    let mut a = [0u32; LANES];
    _mm512_storeu_ps(b.as_mut_ptr(), best.0);
    _mm512_storeu_si512(a.as_mut_ptr().cast(), best.1);
    for i in rest..hw {
        for l in 0..LANES {
            let v = rows[l * hw + i];
            if crate::backend::cpu::pool::beats(v, b[l]) {
                b[l] = v;
                a[l] = i as u32;
            }
        }
    }
    (b, a)
}
