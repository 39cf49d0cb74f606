//! A 16 × 16 block of f32 transposed in AVX-512 registers: the direct convolutions' layout
//! changes and the reference GEMM's packing of a transposed operand use it.

use std::arch::x86_64::*;

const LANES: usize = 16;

/// The 16 × 16 tile `r` (row i = 16 values of position i) transposed: row j = channel j.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn tile(r: [__m512; LANES]) -> [__m512; LANES] {
    let pd = _mm512_castps_pd;
    let ps = _mm512_castpd_ps;
    // Pairs of rows interleaved by 32-bit lanes, then by 64-bit lanes: each 128-bit lane of
    // q[i] now holds 4 rows' values of one column group.
    let mut t = [_mm512_setzero_ps(); LANES];
    for i in 0..LANES / 2 {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    let mut q = [_mm512_setzero_ps(); LANES];
    for g in 0..LANES / 4 {
        let b = 4 * g;
        q[b] = ps(_mm512_unpacklo_pd(pd(t[b]), pd(t[b + 2])));
        q[b + 1] = ps(_mm512_unpackhi_pd(pd(t[b]), pd(t[b + 2])));
        q[b + 2] = ps(_mm512_unpacklo_pd(pd(t[b + 1]), pd(t[b + 3])));
        q[b + 3] = ps(_mm512_unpackhi_pd(pd(t[b + 1]), pd(t[b + 3])));
    }
    // Then whole 128-bit lanes: first between rows 0-3 and 4-7 (and 8-11, 12-15), then
    // between the two halves.
    for h in 0..2 {
        for k in 0..4 {
            let (a, b) = (q[8 * h + k], q[8 * h + 4 + k]);
            t[8 * h + k] = _mm512_shuffle_f32x4::<0x88>(a, b);
            t[8 * h + 4 + k] = _mm512_shuffle_f32x4::<0xdd>(a, b);
        }
    }
    let mut out = [_mm512_setzero_ps(); LANES];
    for k in 0..8 {
        out[k] = _mm512_shuffle_f32x4::<0x88>(t[k], t[8 + k]);
        out[8 + k] = _mm512_shuffle_f32x4::<0xdd>(t[k], t[8 + k]);
    }
    out
}

/// dst[p·nr + j] = src[start + j·cs + p] for p < kc, j < w: columns of a column-major matrix
/// (each contiguous in `src`) laid out as the rows of a panel of width `nr`, 16 × 16 blocks at a
/// time, the ragged edges element by element.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn columns_to_rows(
    dst: &mut [f32],
    nr: usize,
    src: &[f32],
    start: usize,
    cs: usize,
    kc: usize,
    w: usize,
) {
    assert!(w <= nr && dst.len() >= kc * nr);
    assert!(w == 0 || kc == 0 || start + (w - 1) * cs + kc <= src.len());
    let (wj, wp) = (w / LANES * LANES, kc / LANES * LANES);
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    for j0 in (0..wj).step_by(LANES) {
        for p0 in (0..wp).step_by(LANES) {
            let r = std::array::from_fn(|i| _mm512_loadu_ps(s.add(start + (j0 + i) * cs + p0)));
            for (q, v) in tile(r).iter().enumerate() {
                _mm512_storeu_ps(d.add((p0 + q) * nr + j0), *v);
            }
        }
        for p in wp..kc {
            for i in 0..LANES {
                dst[p * nr + j0 + i] = src[start + (j0 + i) * cs + p];
            }
        }
    }
    for j in wj..w {
        for p in 0..kc {
            dst[p * nr + j] = src[start + j * cs + p];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_to_rows_matches_element_copies_on_every_edge() {
        if !is_x86_feature_detected!("avx512f") {
            return;
        }
        for (kc, w, nr, cs) in [
            (16, 16, 16, 16),
            (40, 35, 48, 45),
            (7, 20, 32, 9),
            (33, 3, 48, 40),
        ] {
            let src: Vec<f32> = (0..w * cs + kc).map(|i| i as f32 * 0.25 - 3.0).collect();
            let mut dst = vec![f32::NAN; kc * nr];
            // SAFETY: AVX-512F checked above; sizes are asserted inside.
            unsafe { columns_to_rows(&mut dst, nr, &src, 2, cs, kc, w) };
            for p in 0..kc {
                for j in 0..w {
                    assert_eq!(
                        dst[p * nr + j],
                        src[2 + j * cs + p],
                        "kc {kc} w {w} p {p} j {j}"
                    );
                }
                // Columns w..nr are the caller's to fill: untouched here.
                assert!(dst[p * nr + w..(p + 1) * nr].iter().all(|v| v.is_nan()));
            }
        }
    }
}
