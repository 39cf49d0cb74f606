//! The input gradient's columns on small maps, fast kind: gcols = Wᵀ·gY [C·KH·KW, N·P] from
//! W [OC, C·KH·KW] and gY [OC, N·P], where N·P (images × output positions) is small. There the
//! product is thin: every weight is used only N·P times, so a GEMM that packs W first (reading
//! and writing all of it before the arithmetic) spends most of its time packing (512 channels
//! at 2×2, 8 images: 9.4 MB of weights for 32 columns, 68 GFLOP/s on one core). Here W is read
//! once, in place: each item takes 16 of its columns (one cache line per row), multiplies them
//! by 16 columns of gY at a time into 16 accumulators, and writes 16 rows of gcols through a
//! 16 × 16 register transpose.

use super::super::parallel::for_chunks;
use super::super::tile16::tile;
use super::super::uninit::written;
use super::{thin_columns, LANES};
use std::mem::MaybeUninit;

/// Rows of W ahead of the one in use that each item asks the memory system for.
const PREFETCH_ROWS: usize = 8;

/// Whether `input_cols` covers a product of these sizes on this CPU (whole 16 × 16 tiles, a
/// thin gY: each item streams all of gY once per 16 rows of gcols, cheap while gY is narrow).
pub fn input_cols_applies(kk: usize, np: usize) -> bool {
    kk > 0 && kk.is_multiple_of(LANES) && thin_columns(np)
}

/// gcols [kk, np] = Wᵀ·gY for W [oc, kk] and gY [oc, np], both row-major (`input_cols_applies`
/// checked). Each sum is a chain of fused multiply-adds over the output channels in order.
pub fn input_cols(wt: &[f32], gy: &[f32], kk: usize, oc: usize, np: usize) -> Vec<f32> {
    assert!(wt.len() >= oc * kk && gy.len() >= oc * np && input_cols_applies(kk, np));
    written(kk * np, |out| {
        for_chunks(out, LANES * np, kk * np * oc, |t, rows| {
            // SAFETY: `input_cols_applies` checked AVX-512 on this CPU; the assert above and
            // the chunking size every access.
            unsafe { columns_tile(wt, gy, kk, oc, np, t * LANES, rows) }
        })
    })
}

/// Rows q0 .. q0 + 16 of gcols into `out` (16 rows of `np`).
///
/// # Safety
/// The CPU must have AVX-512F; `wt` holds [oc, kk], `gy` [oc, np], q0 + 16 <= kk.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn columns_tile(
    wt: &[f32],
    gy: &[f32],
    kk: usize,
    oc: usize,
    np: usize,
    q0: usize,
    out: &mut [MaybeUninit<f32>],
) {
    use std::arch::x86_64::*;
    assert!(out.len() == LANES * np && q0 + LANES <= kk);
    let (w, g, o) = (wt.as_ptr(), gy.as_ptr(), out.as_mut_ptr() as *mut f32);
    for j0 in (0..np).step_by(LANES) {
        // acc[j] lane r: gcols[q0 + r, j0 + j].
        let mut acc = [_mm512_setzero_ps(); LANES];
        for c in 0..oc {
            if c + PREFETCH_ROWS < oc {
                _mm_prefetch::<_MM_HINT_T0>(w.add((c + PREFETCH_ROWS) * kk + q0) as *const i8);
            }
            let a = _mm512_loadu_ps(w.add(c * kk + q0));
            let row = g.add(c * np + j0);
            for (j, acc) in acc.iter_mut().enumerate() {
                *acc = _mm512_fmadd_ps(a, _mm512_set1_ps(*row.add(j)), *acc);
            }
        }
        for (r, v) in tile(acc).into_iter().enumerate() {
            _mm512_storeu_ps(o.add(r * np + j0), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{cpu_has_them, THIN_COLUMNS};
    use super::*;

    #[test]
    fn columns_match_a_float64_product() {
        if !cpu_has_them() {
            return;
        }
        // Fewer and more output channels than the prefetch distance, one and several tiles.
        for (kk, oc, np) in [(16, 3, 16), (48, 37, 32), (160, 9, 64)] {
            let wt: Vec<f32> = (0..oc * kk)
                .map(|i| ((i * 7919) % 23) as f32 / 11.0 - 1.0)
                .collect();
            let gy: Vec<f32> = (0..oc * np)
                .map(|i| ((i * 104729) % 19) as f32 / 9.0 - 1.0)
                .collect();
            let got = input_cols(&wt, &gy, kk, oc, np);
            for q in 0..kk {
                for j in 0..np {
                    let want: f64 = (0..oc)
                        .map(|o| wt[o * kk + q] as f64 * gy[o * np + j] as f64)
                        .sum();
                    let g = got[q * np + j] as f64;
                    assert!(
                        (g - want).abs() <= 1e-5 * oc as f64,
                        "{kk}x{np} ({q}, {j}): {g} vs {want}"
                    );
                }
            }
        }
        assert!(!input_cols_applies(24, 16) && !input_cols_applies(16, 8));
        assert!(!input_cols_applies(16, THIN_COLUMNS + LANES));
    }
}
