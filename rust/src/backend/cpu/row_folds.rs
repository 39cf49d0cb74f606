//! Up to sixteen left folds over contiguous rows (the planes of a per-image norm, the rows of a
//! last-axis sum) stepping together. Each is still one left fold in index order, but sixteen
//! independent chains advance side by side instead of each addition waiting on the one before;
//! in f32 on AVX-512 the sixteen folds are the lanes of one vector, fed by 16 x 16 register
//! transposes of the rows.

use crate::dtype::Float;

/// Planes whose statistics fold side by side: each is still one left fold in index order, but
/// sixteen of them advance together (independent chains), instead of one fold waiting on each
/// scalar addition (the passes were bound by that wait). In f32 on AVX-512 the sixteen folds
/// are the lanes of one vector, fed by 16 × 16 register transposes of the planes. The terms
/// themselves are computed plane by plane in contiguous runs, where the divisions vectorise.
pub const LANES: usize = 16;

/// For each plane l of `terms` (up to `LANES` planes of `hw` terms, one after another):
/// `init_l + t_0 + ... + t_(hw-1)` left to right, where t_i is the plane's term i, negated when
/// `negate`; the planes' folds step together.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // one position index steps all planes together
pub fn fold_rows<T: Float>(acc: [T; LANES], terms: &[T], hw: usize, negate: bool) -> [T; LANES] {
    let f = |v: T| if negate { -v } else { v };
    let lanes = (terms.len() / hw.max(1)).min(LANES);
    if lanes == LANES {
        #[cfg(target_arch = "x86_64")]
        if let Some(acc) = fold16::lanes(acc, terms, hw, negate) {
            return acc;
        }
        let planes: [&[T]; LANES] = std::array::from_fn(|l| &terms[l * hw..][..hw]);
        let mut acc = acc;
        for i in 0..hw {
            for l in 0..LANES {
                acc[l] = acc[l] + f(planes[l][i]);
            }
        }
        acc
    } else if lanes == 1 {
        // One row: its fold in a register (an array indexed by a run-time count stays in
        // memory, each add then waiting on a store and a load).
        let mut a = acc[0];
        for &t in &terms[..hw] {
            a = a + f(t);
        }
        let mut acc = acc;
        acc[0] = a;
        acc
    } else {
        let mut acc = acc;
        for i in 0..hw {
            for l in 0..lanes {
                acc[l] = acc[l] + f(terms[l * hw + i]);
            }
        }
        acc
    }
}

/// For each of up to `LANES` rows of `hw` values: the running maximum from -inf in index order,
/// where a value replaces the maximum when it is greater or NaN (so NaN propagates, and of
/// equal values the first stays: softmax's max). The rows step together.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // one position index steps all rows together
pub fn max_rows<T: Float>(rows: &[T], hw: usize) -> [T; LANES] {
    let lanes = (rows.len() / hw.max(1)).min(LANES);
    #[cfg(target_arch = "x86_64")]
    if lanes == LANES {
        if let Some(m) = fold16::max_lanes(rows, hw) {
            return m;
        }
    }
    let mut m = [T::NEG_INFINITY; LANES];
    for i in 0..hw {
        for l in 0..lanes {
            let v = rows[l * hw + i];
            if v > m[l] || v.is_nan() {
                m[l] = v;
            }
        }
    }
    m
}

/// For each of up to `LANES` rows of `hw` values (hw >= 1): the maximum as a left fold of
/// `pool::beats` (NaN propagates, +0 beats -0, of equal values the first stays) and its
/// index. The rows step together.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // one position index steps all rows together
pub fn max_index_rows<T: Float>(rows: &[T], hw: usize) -> ([T; LANES], [usize; LANES]) {
    let lanes = (rows.len() / hw.max(1)).min(LANES);
    #[cfg(target_arch = "x86_64")]
    if lanes == LANES {
        if let Some(m) = fold16::max_index_lanes(rows, hw) {
            return m;
        }
    }
    let mut best = [T::NEG_INFINITY; LANES];
    let mut at = [0usize; LANES];
    for l in 0..lanes {
        best[l] = rows[l * hw];
    }
    for i in 1..hw {
        for l in 0..lanes {
            let v = rows[l * hw + i];
            if super::pool::beats(v, best[l]) {
                best[l] = v;
                at[l] = i;
            }
        }
    }
    (best, at)
}

/// Running sums of 16 contiguous rows of `len` values into `out` (same layout): out[l][0] =
/// rows[l][0], out[l][k] = out[l][k-1] + rows[l][k] (from the far end when `reverse`: out[l][len-1]
/// = rows[l][len-1], out[l][k] = out[l][k+1] + rows[l][k]), the rows' chains stepping together (in f32
/// on AVX-512 the lanes of one vector, fed by 16 x 16 register transposes). False (nothing
/// written) where T is not f32, the CPU lacks AVX-512 or there are not 16 rows.
#[inline(always)]
pub fn cumsum_rows<T: Float>(rows: &[T], len: usize, out: &mut [T], reverse: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if len > 0 && rows.len() == LANES * len && out.len() == rows.len() {
        return fold16::cumsum_lanes(rows, len, out, reverse);
    }
    let _ = (rows, len, out, reverse);
    false
}

/// `fold_rows` over 16 whole rows of f32 with AVX-512: each 16 × 16 block of (planes,
/// positions) transposed in registers, so one vector add steps all sixteen folds; positions
/// past the last whole block step one by one, in order.
#[cfg(target_arch = "x86_64")]
mod fold16 {
    use super::LANES;
    use crate::dtype::Float;
    use std::any::TypeId;
    use std::arch::x86_64::*;

    /// The folds, or None where T is not f32 or the CPU lacks AVX-512.
    #[inline(always)]
    pub fn lanes<T: Float>(
        acc: [T; LANES],
        terms: &[T],
        hw: usize,
        negate: bool,
    ) -> Option<[T; LANES]> {
        if TypeId::of::<T>() != TypeId::of::<f32>() || !crate::backend::cpu::simd::has_avx512() {
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

    /// `max_rows` of 16 whole rows, or None where T is not f32 or the CPU lacks AVX-512.
    #[inline(always)]
    pub fn max_lanes<T: Float>(rows: &[T], hw: usize) -> Option<[T; LANES]> {
        if TypeId::of::<T>() != TypeId::of::<f32>() || !crate::backend::cpu::simd::has_avx512() {
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

    /// `max_index_rows` of 16 whole rows, or None where T is not f32 or the CPU lacks
    /// AVX-512 (F and DQ).
    #[inline(always)]
    pub fn max_index_lanes<T: Float>(
        rows: &[T],
        hw: usize,
    ) -> Option<([T; LANES], [usize; LANES])> {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The next value of a xorshift64 stream.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// `fold_rows` (on AVX-512, 16 x 16 tiles, the last positions from a partial tile) against
    /// each row's left fold one term at a time, bit for bit: terms of many magnitudes, so any
    /// change of order shows in the rounding.
    #[test]
    fn fold_rows_keeps_each_rows_left_fold() {
        let mut state = 0x1234_5678_9abc_def1u64;
        for hw in [1, 5, 16, 17, 31, 40, 95, 128, 131] {
            for negate in [false, true] {
                let terms: Vec<f32> = (0..LANES * hw)
                    .map(|_| {
                        let r = xorshift(&mut state);
                        let m = (r >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                        m * f32::powi(2.0, (r % 24) as i32 - 12)
                    })
                    .collect();
                let acc: [f32; LANES] = std::array::from_fn(|l| l as f32 * 0.37 - 3.0);
                let got = fold_rows(acc, &terms, hw, negate);
                for l in 0..LANES {
                    let mut want = acc[l];
                    for &t in &terms[l * hw..][..hw] {
                        want += if negate { -t } else { t };
                    }
                    assert_eq!(
                        got[l].to_bits(),
                        want.to_bits(),
                        "hw {hw} negate {negate} row {l}"
                    );
                }
            }
        }
    }

    /// `max_index_rows` (on AVX-512, 16 x 16 tiles, the last positions from an overlapping
    /// tile) against the left fold of `pool::beats` one position at a time: values and indices,
    /// bit for bit, on rows drawn from few values (ties, signed zeros, NaN payloads).
    #[test]
    fn max_index_rows_keeps_the_left_folds_bits_and_indices() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::NEG_INFINITY,
            f32::from_bits(0x7fc0_0001),
            f32::from_bits(0xffc0_0002),
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for hw in [1, 5, 16, 17, 20, 32, 33, 40, 95, 128, 131] {
            for round in 0..100 {
                let kinds = if round % 4 == 0 { values.len() } else { 5 };
                let rows: Vec<f32> = (0..LANES * hw)
                    .map(|_| values[(xorshift(&mut state) % kinds as u64) as usize])
                    .collect();
                let (best, at) = max_index_rows(&rows, hw);
                for l in 0..LANES {
                    let row = &rows[l * hw..][..hw];
                    let (mut m, mut i) = (row[0], 0);
                    for (k, &v) in row.iter().enumerate().skip(1) {
                        if crate::backend::cpu::pool::beats(v, m) {
                            (m, i) = (v, k);
                        }
                    }
                    let got = (best[l].to_bits(), at[l]);
                    assert_eq!(got, (m.to_bits(), i), "hw {hw} round {round} row {l}");
                }
            }
        }
    }

    /// `max_rows` (on AVX-512, tiles combined as trees) against the left fold one value at a
    /// time, bit for bit: rows drawn from few values, so ties of +0 and -0 (the first stays) and
    /// NaNs with different payloads (the last wins) are common.
    #[test]
    fn max_rows_keeps_the_left_folds_bits() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(0x7fc0_0001),
            f32::from_bits(0xffc0_0002),
            f32::from_bits(0x7fc0_0003),
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for hw in [1, 5, 16, 17, 40, 64, 95] {
            for round in 0..200 {
                // Few NaNs in most rounds, so rows without one are common too.
                let kinds = if round % 4 == 0 { values.len() } else { 7 };
                let rows: Vec<f32> = (0..LANES * hw)
                    .map(|_| values[(xorshift(&mut state) % kinds as u64) as usize])
                    .collect();
                let got = max_rows(&rows, hw);
                for (l, g) in got.iter().enumerate() {
                    let mut m = f32::NEG_INFINITY;
                    for &v in &rows[l * hw..][..hw] {
                        if v > m || v.is_nan() {
                            m = v;
                        }
                    }
                    assert_eq!(g.to_bits(), m.to_bits(), "hw {hw} round {round} row {l}");
                }
            }
        }
    }
}
