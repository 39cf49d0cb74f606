//! Packing for the reference GEMM: A and B tiles copied (zero-padded at the edges) into the
//! contiguous panel layouts the microkernels read.

use super::{RefGemmElem, View};

/// Element `start + t*stride` for t in 0..count (stride may be 0 or anything else).
#[inline]
fn strided<T: Copy>(
    s: &[T],
    start: usize,
    stride: usize,
    count: usize,
) -> impl Iterator<Item = T> + '_ {
    (0..count).map(move |t| s[start + t * stride])
}

/// Packs A rows `i0..i0+h`, depth `p0..p0+kc` into the `mr x kc` panel `dst`, row by row
/// (`dst[i*kc + p]`) if `by_rows`, else column by column (`dst[p*mr + i]`), zero-padding rows
/// h..mr (their outputs are computed but never stored).
#[allow(clippy::too_many_arguments)]
pub(super) fn pack_a<T: RefGemmElem>(
    dst: &mut [T],
    a: View<'_, T>,
    by_rows: bool,
    i0: usize,
    h: usize,
    p0: usize,
    kc: usize,
    mr: usize,
) {
    if by_rows {
        for (ii, d) in dst.chunks_exact_mut(kc).enumerate() {
            let start = (i0 + ii) * a.rs + p0 * a.cs;
            if ii >= h {
                d.fill(T::REF_ZERO);
            } else if a.cs == 1 {
                d.copy_from_slice(&a.data[start..start + kc]);
            } else {
                d.iter_mut()
                    .zip(strided(a.data, start, a.cs, kc))
                    .for_each(|(d, s)| *d = s);
            }
        }
    } else {
        for (p, d) in dst.chunks_exact_mut(mr).enumerate() {
            let start = i0 * a.rs + (p0 + p) * a.cs;
            if a.rs == 1 {
                d[..h].copy_from_slice(&a.data[start..start + h]);
            } else {
                d[..h]
                    .iter_mut()
                    .zip(strided(a.data, start, a.rs, h))
                    .for_each(|(d, s)| *d = s);
            }
            d[h..].fill(T::REF_ZERO);
        }
    }
}

/// Packs B depth `p0..p0+kc`, columns `j0..j0+w` into `dst` (kc x nr, row p at `dst[p*nr..]`),
/// zero-padding columns w..nr.
pub(super) fn pack_b<T: RefGemmElem>(
    dst: &mut [T],
    b: View<'_, T>,
    p0: usize,
    kc: usize,
    j0: usize,
    w: usize,
    nr: usize,
) {
    if b.cs <= b.rs {
        // Walk each row along j: contiguous reads for row-major B.
        for p in 0..kc {
            let start = (p0 + p) * b.rs + j0 * b.cs;
            let d = &mut dst[p * nr..p * nr + w];
            if b.cs == 1 {
                d.copy_from_slice(&b.data[start..start + w]);
            } else {
                d.iter_mut()
                    .zip(strided(b.data, start, b.cs, w))
                    .for_each(|(d, s)| *d = s);
            }
        }
    } else if b.rs == 1 && T::pack_columns_fast(dst, nr, b.data, p0 + j0 * b.cs, b.cs, kc, w) {
        // Column-major (transposed) B, 16 × 16 blocks transposed in registers.
    } else {
        // Walk each column along p: contiguous reads for column-major (transposed) B.
        for jj in 0..w {
            let start = p0 * b.rs + (j0 + jj) * b.cs;
            let col = dst[jj..].iter_mut().step_by(nr);
            if b.rs == 1 {
                col.zip(&b.data[start..start + kc])
                    .for_each(|(d, &s)| *d = s);
            } else {
                col.zip(strided(b.data, start, b.rs, kc))
                    .for_each(|(d, s)| *d = s);
            }
        }
    }
    if w < nr {
        for p in 0..kc {
            dst[p * nr + w..(p + 1) * nr].fill(T::REF_ZERO);
        }
    }
}
