//! The forward's product on small maps, fast kind: y = W·cols [OC, N·P] from W [OC, C·KH·KW] and
//! the columns [C·KH·KW, N·P], where N·P (images × output positions) is at most 64. Every
//! weight is used only N·P times, so packing W first, as a GEMM or the direct forward does,
//! costs more than the arithmetic (512 channels at 2×2, 8 images: 9.4 MB of weights for 32
//! columns). Here W is read once, in place: an item takes a few rows of W, walks them in step
//! along C·KH·KW (a few sequential streams), and multiplies each weight, broadcast, into the
//! 16-wide vectors of its column row, which stays in L1/L2.

use super::super::parallel::for_chunks;
use super::super::uninit::written;
use super::{thin_columns, LANES};
use std::mem::MaybeUninit;

/// Whether `thin_rows` covers a product with `np` columns on this CPU (at most four vectors
/// per row of y).
pub fn thin_rows_applies(np: usize) -> bool {
    thin_columns(np)
}

/// y [oc, np] = W [oc, kk] · cols [kk, np], row-major (`thin_rows_applies` checked). Each sum
/// is a chain of fused multiply-adds over kk in order.
pub fn thin_rows(wt: &[f32], cols: &[f32], oc: usize, kk: usize, np: usize) -> Vec<f32> {
    assert!(wt.len() >= oc * kk && cols.len() >= kk * np && thin_rows_applies(np));
    // Rows of y per item: 24 accumulators in all.
    let rows = 24 / (np / LANES);
    written(oc * np, |out| {
        for_chunks(out, rows * np, oc * np * kk, |t, dst| {
            let o0 = t * rows;
            // SAFETY: `thin_rows_applies` checked AVX-512 on this CPU; the assert above and the
            // chunking size every access.
            unsafe {
                match np / LANES {
                    1 => row_block::<1>(wt, cols, kk, o0, dst),
                    2 => row_block::<2>(wt, cols, kk, o0, dst),
                    3 => row_block::<3>(wt, cols, kk, o0, dst),
                    _ => row_block::<4>(wt, cols, kk, o0, dst),
                }
            }
        })
    })
}

/// Rows o0 .. of y into `dst` (whole rows of JV vectors): a full block of 24 / JV rows at
/// once, a shorter last block row by row.
///
/// # Safety
/// The CPU must have AVX-512F; `wt` holds the rows `dst` covers, `cols` [kk, 16·JV].
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn row_block<const JV: usize>(
    wt: &[f32],
    cols: &[f32],
    kk: usize,
    o0: usize,
    dst: &mut [MaybeUninit<f32>],
) {
    let np = JV * LANES;
    let n_rows = dst.len() / np;
    assert!(dst.len() == n_rows * np && (o0 + n_rows) * kk <= wt.len());
    match JV {
        1 if n_rows == 24 => rows_of::<1, 24>(wt, cols, kk, o0, dst),
        2 if n_rows == 12 => rows_of::<2, 12>(wt, cols, kk, o0, dst),
        3 if n_rows == 8 => rows_of::<3, 8>(wt, cols, kk, o0, dst),
        4 if n_rows == 6 => rows_of::<4, 6>(wt, cols, kk, o0, dst),
        _ => {
            for r in 0..n_rows {
                rows_of::<JV, 1>(wt, cols, kk, o0 + r, &mut dst[r * np..(r + 1) * np]);
            }
        }
    }
}

/// R rows of y from o0, each JV vectors wide, into `dst`.
///
/// # Safety
/// As `row_block`, with `dst` exactly R rows.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn rows_of<const JV: usize, const R: usize>(
    wt: &[f32],
    cols: &[f32],
    kk: usize,
    o0: usize,
    dst: &mut [MaybeUninit<f32>],
) {
    use std::arch::x86_64::*;
    assert!(
        dst.len() == R * JV * LANES && (o0 + R) * kk <= wt.len() && cols.len() >= kk * JV * LANES
    );
    let (w, c) = (wt.as_ptr().add(o0 * kk), cols.as_ptr());
    let mut acc = [[_mm512_setzero_ps(); JV]; R];
    for q in 0..kk {
        let mut v = [_mm512_setzero_ps(); JV];
        for (j, v) in v.iter_mut().enumerate() {
            *v = _mm512_loadu_ps(c.add((q * JV + j) * LANES));
        }
        for (r, acc) in acc.iter_mut().enumerate() {
            let b = _mm512_set1_ps(*w.add(r * kk + q));
            for (a, &v) in acc.iter_mut().zip(&v) {
                *a = _mm512_fmadd_ps(v, b, *a);
            }
        }
    }
    super::store_rows(&acc, dst);
}

#[cfg(test)]
mod tests {
    use super::super::{cpu_has_them, THIN_COLUMNS};
    use super::*;

    #[test]
    fn rows_match_a_float64_product() {
        if !cpu_has_them() {
            return;
        }
        // Full blocks and a shorter last one, for every width.
        for (oc, kk, np) in [(30, 9, 16), (13, 40, 32), (17, 7, 48), (7, 33, 64)] {
            let wt: Vec<f32> = (0..oc * kk)
                .map(|i| ((i * 7919) % 23) as f32 / 11.0 - 1.0)
                .collect();
            let cols: Vec<f32> = (0..kk * np)
                .map(|i| ((i * 104729) % 19) as f32 / 9.0 - 1.0)
                .collect();
            let got = thin_rows(&wt, &cols, oc, kk, np);
            for o in 0..oc {
                for j in 0..np {
                    let want: f64 = (0..kk)
                        .map(|q| wt[o * kk + q] as f64 * cols[q * np + j] as f64)
                        .sum();
                    let g = got[o * np + j] as f64;
                    assert!(
                        (g - want).abs() <= 1e-5 * kk as f64,
                        "{oc}x{np} ({o}, {j}): {g} vs {want}"
                    );
                }
            }
        }
        assert!(!thin_rows_applies(8) && !thin_rows_applies(THIN_COLUMNS + LANES));
    }
}
