//! The fold in units of the sum's last place (`mod.rs`) with the binade checked per group of
//! vectors by a bound instead of per value: every prefix of a group lies within the sum before
//! it plus or minus the group's total |units|, so where that interval keeps the ties' margin
//! inside the binade, the group needs no prefix sums, only its lanes' running totals (vertical
//! adds, no shuffles). A tie still needs the exact sum before it, taken from the running
//! totals kept per vector. Near the binade's edge the bound fails and the caller takes the
//! exact per-value check (`in_units`).

use super::{other_neighbour, Units, BLOCK, MAX_TIES};
use std::arch::x86_64::*;

/// Vectors of 16 the bound covers at once: 64 values, whose total |units| stays under 2^30.
const GROUP: usize = 4;

/// `s + x0 + x1 + ...` over the leading groups of GROUP vectors of `block` (a multiple of 16
/// values, at most BLOCK) whose bound keeps every sum in s's binade: the new sum, how many
/// values it took (0 where s cannot use units or the first group's bound fails) and the
/// bound (the group's total |x|, about) of the group that failed it, or 0.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,popcnt")]
pub(super) unsafe fn in_units_bounded(s: f32, block: &[f32]) -> (f32, usize, f32) {
    let Some(Units {
        inv_u,
        start,
        lo,
        hi,
    }) = Units::of(s)
    else {
        return (s, 0, 0.0);
    };
    let (start, lo, hi) = (start as i64, lo as i64, hi as i64);
    let (inv, half) = (_mm512_set1_ps(inv_u), _mm512_set1_ps(0.5));
    // After vector j: each lane's total of RNE(x / u) over the block so far, and its ties.
    let mut totals = [_mm512_setzero_si512(); BLOCK / 16];
    let mut tie_masks = [0u16; BLOCK / 16];
    let mut running = _mm512_setzero_si512();
    // The sum before the next group, in units (the taken groups' RNE(x / u) added).
    let mut before = start;
    let (mut used, mut ties, mut reach) = (0usize, 0u32, 0.0);
    for (g, group) in block.chunks_exact(16 * GROUP).enumerate() {
        let at_start = running;
        let (mut bound, mut largest) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut group_ties = 0u32;
        for k in 0..GROUP {
            // SAFETY: 16 * k + 16 <= group.len().
            let v = unsafe { _mm512_loadu_ps(group.as_ptr().add(16 * k)) };
            // x / u, exact (a power of two) unless it underflows, and then far below 1/2.
            let y = _mm512_mul_ps(v, inv);
            // RNE(y), even at a tie (where the sum's parity decides: fixed below).
            let r = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(y);
            let tie = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(_mm512_abs_ps(_mm512_sub_ps(y, r)), half);
            // A y that is not finite or has |y| >= 2^31 converts to i32::MIN, whose absolute
            // value (unsigned) is 2^31: caught with the large ones below.
            let q = _mm512_cvtps_epi32(r);
            let a = _mm512_abs_epi32(q);
            running = _mm512_add_epi32(running, q);
            bound = _mm512_add_epi32(bound, a);
            largest = _mm512_max_epu32(largest, a);
            totals[GROUP * g + k] = running;
            tie_masks[GROUP * g + k] = tie;
            group_ties += tie.count_ones();
        }
        // Every |unit count| below 2^24, so the group's total |units| stays below 2^30.
        if _mm512_reduce_max_epu32(largest) >= 1 << 24 {
            break;
        }
        let b = _mm512_reduce_add_epi32(bound) as i64;
        ties += group_ties;
        if before - b < lo || before + b > hi || ties > MAX_TIES as u32 {
            reach = b as f32 / inv_u;
            break;
        }
        before += _mm512_reduce_add_epi32(_mm512_sub_epi32(running, at_start)) as i64;
        used += 16 * GROUP;
    }
    if used == 0 {
        return (s, 0, reach);
    }
    // Ties in order, as in `in_units`: the sum through the tie (its RNE(y) even) comes from the
    // running totals; a sum that came out odd takes the other neighbour of y (2y - r).
    let mut extra = 0i64;
    for (j, &m) in tie_masks[..used / 16].iter().enumerate() {
        let mut m = m;
        while m != 0 {
            let l = m.trailing_zeros();
            let earlier = if j == 0 {
                _mm512_setzero_si512()
            } else {
                totals[j - 1]
            };
            // Lane sums stay below 2^29 and the true sums inside the binade, so the 32-bit
            // reductions are exact.
            let through = _mm512_mask_reduce_add_epi32(
                ((2u32 << l) - 1) as u16,
                _mm512_sub_epi32(totals[j], earlier),
            );
            let sum = start + _mm512_reduce_add_epi32(earlier) as i64 + through as i64;
            if (sum + extra) & 1 != 0 {
                extra += other_neighbour(block[16 * j + l as usize] * inv_u) as i64;
            }
            m &= m - 1;
        }
    }
    // |before + extra| < 2^24: exact in f32; times u, a power of two, exact in the binade.
    ((before + extra) as f32 / inv_u, used, reach)
}
