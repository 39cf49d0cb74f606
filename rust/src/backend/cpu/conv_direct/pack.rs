//! Weights packed for the direct forward: W [OC, C·KH·KW] as [OC / 32, C·KH·KW, 32], each fold
//! step's 32 output channels side by side (two vector loads per step), either from W itself or,
//! for an input gradient taken as a convolution, from the forward's W read transposed and
//! flipped.

use super::{cpu_has_them, lane_mask, transpose, BLOCK, LANES};
use crate::backend::cpu::parallel::for_chunks;
use crate::backend::cpu::uninit::written;
use crate::geometry::ConvDims;
use std::mem::MaybeUninit;

/// W [OC, C·KH·KW] as [OC / 32, C·KH·KW, 32]: each fold step's 32 weights side by side.
pub(super) fn pack_weights(wt: &[f32], d: &ConvDims) -> Vec<f32> {
    let k = d.c * d.kh * d.kw;
    written(d.oc * k, |out| {
        for_chunks(out, BLOCK * k, d.oc * k, |b, dst| {
            // A block's 32 rows of k weights as k steps of 32 (rows to position-major).
            // SAFETY: `forward_applies` checked AVX-512 on this CPU.
            unsafe { transpose::block_in(&wt[b * BLOCK * k..][..BLOCK * k], dst) }
        })
    })
}

/// W' [OC, C·KH·KW] packed as `pack_weights` packs it, where W'[o, c, ky, kx] =
/// wt[c, o, KH-1-ky, KW-1-kx] is read from wt [C, OC, KH, KW] in place (no flipped copy first):
/// per block and channel, 16 output channels' taps at a time are loaded (reversed in
/// registers) and transposed, so each fold step's 16 weights leave as one vector.
pub(super) fn pack_flipped(wt: &[f32], d: &ConvDims) -> Vec<f32> {
    let kk = d.kh * d.kw;
    let k = d.c * kk;
    assert!(wt.len() == d.oc * k && d.oc.is_multiple_of(BLOCK) && cpu_has_them());
    written(d.oc * k, |out| {
        for_chunks(out, BLOCK * kk, d.oc * k, |i, dst| {
            // Chunk i is block b's fold steps of channel c: [kk, 32].
            let (b, c) = (i / d.c, i % d.c);
            let rows = &wt[(c * d.oc + b * BLOCK) * kk..][..BLOCK * kk];
            // SAFETY: AVX-512 checked above; `rows` is the block's 32 rows of kk taps and `dst`
            // holds kk steps of 32.
            unsafe { flip_block(rows, kk, dst) }
        })
    })
}

/// dst[t][j] = rows[j][kk - 1 - t] for the 32 rows j of kk taps each.
///
/// # Safety
/// The CPU must have AVX-512F; `rows` holds 32·kk floats and `dst` kk·32.
#[target_feature(enable = "avx512f")]
unsafe fn flip_block(rows: &[f32], kk: usize, dst: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    assert!(rows.len() == BLOCK * kk && dst.len() == kk * BLOCK);
    let out = dst.as_mut_ptr() as *mut f32;
    // Lane l takes lane n - 1 - l: the n loaded taps in reverse.
    let reverse = |n: usize| {
        let idx: [i32; LANES] = std::array::from_fn(|l| (n as i32 - 1 - l as i32).max(0));
        _mm512_loadu_si512(idx.as_ptr() as *const _)
    };
    for t0 in (0..kk).step_by(LANES) {
        let n = LANES.min(kk - t0);
        let (mask, rev) = (lane_mask(0, n), reverse(n));
        for h in 0..2 {
            // Row j's taps kk-1-t0 down to kk-t0-n, i.e. its cells kk-t0-n .. kk-t0, reversed.
            let r: [__m512; LANES] = std::array::from_fn(|j| {
                let src = rows.as_ptr().add((h * LANES + j) * kk + kk - t0 - n);
                _mm512_permutexvar_ps(rev, _mm512_maskz_loadu_ps(mask, src))
            });
            for (l, v) in crate::backend::cpu::tile16::tile(r)
                .iter()
                .take(n)
                .enumerate()
            {
                _mm512_storeu_ps(out.add((t0 + l) * BLOCK + h * LANES), *v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_flipped_reads_each_weight_transposed_and_flipped() {
        if !cpu_has_them() {
            return; // the direct forward, its only user, does not run on this CPU either
        }
        // Kernels of 1, 4, 9, 25 (two groups of taps) and 49 cells; 32 or 64 output channels.
        for (k, oc, c) in [(1, 32, 3), (2, 64, 2), (3, 32, 5), (5, 32, 2), (7, 64, 1)] {
            let kk = k * k;
            let d = ConvDims {
                n: 1,
                c,
                h: 8,
                w: 8,
                oc,
                kh: k,
                kw: k,
                stride: 1,
                pad: k / 2,
                oh: 8,
                ow: 8,
            };
            // wt is the forward's weight [C', OC', KH, KW] with C' = d.c, OC' = d.oc.
            let wt: Vec<f32> = (0..c * oc * kk).map(|i| i as f32).collect();
            let got = pack_flipped(&wt, &d);
            for o in 0..oc {
                for ci in 0..c {
                    for t in 0..kk {
                        let want = wt[(ci * oc + o) * kk + kk - 1 - t];
                        let at = ((o / BLOCK) * c * kk + ci * kk + t) * BLOCK + o % BLOCK;
                        assert_eq!(got[at], want, "k {k}, o {o}, c {ci}, tap {t}");
                    }
                }
            }
        }
    }
}
