//! Data movement: permute, concat, slice, index_select, and the scatters their gradients need.

use crate::dtype::Float;
use crate::strided::Strided;
use crate::Shape;

/// Output of permuting `x` (shape `dims`) so that output axis i is input axis `perm[i]`.
pub fn permute<T: Copy>(x: &[T], dims: &[usize], perm: &[usize]) -> Vec<T> {
    let view = Strided::row_major(&Shape::new(dims.to_vec())).permuted(perm);
    let out: Vec<usize> = perm.iter().map(|&a| dims[a]).collect();
    gather(x, &out, &view)
}

/// The elements of the view `view` of `x` with shape `dims`, in row-major order.
///
/// Axes of length 1 are dropped and axes whose strides line up merged first. When the last axis
/// reads `x` contiguously, the output is runs copied whole; otherwise, when another axis does,
/// it is written in `TILE`-square tiles spanning the output's last axis and that axis, so both
/// sides touch whole cache lines (an element-by-element walk reads the input a stride apart: a
/// 512x784 f32 transpose took 0.71 ms; tiled it streams).
pub fn gather<T: Copy>(x: &[T], dims: &[usize], view: &Strided) -> Vec<T> {
    let n: usize = dims.iter().product();
    if n == 0 {
        return Vec::new();
    }
    assert!(view.extent(dims) <= x.len(), "a view reads inside its base");
    let (od, ss) = view.simplified(dims);
    // One element seen everywhere (a scalar broadcast, as a full sum's gradient is): a fill, not
    // a walk of short rows (8 x 64 x 16 x 16 from one value: 0.08 ms as rows of 16).
    if ss.iter().all(|&s| s == 0) {
        return vec![x[view.offset]; n];
    }
    let r = od.len();
    let mut out: Vec<T> = Vec::with_capacity(n);
    let dst = out.spare_capacity_mut();
    // Output strides (row-major).
    let mut ds = vec![1usize; r];
    for d in (0..r.saturating_sub(1)).rev() {
        ds[d] = ds[d + 1] * od[d + 1];
    }
    // The output axis that reads the input contiguously (stride 1), if any besides the last.
    let last = r - 1;
    let unit = (0..last).find(|&d| ss[d] == 1).filter(|_| ss[last] != 1);
    let outer: Vec<usize> = (0..last).filter(|&d| Some(d) != unit).collect();
    let count: usize = outer.iter().map(|&d| od[d]).product();
    // Offsets of the current combination of the outer axes (an odometer, the last outer axis
    // fastest): no divisions per run.
    let mut index = vec![0usize; outer.len()];
    let (mut src, mut at) = (view.offset, 0usize);
    for _ in 0..count {
        match unit {
            None if ss[last] == 1 => {
                let run = &x[src..src + od[last]];
                let out = &mut dst[at..at + od[last]];
                out.iter_mut().zip(run).for_each(|(o, &v)| _ = o.write(v));
            }
            None => {
                for j in 0..od[last] {
                    dst[at + j].write(x[src + j * ss[last]]);
                }
            }
            Some(u) => {
                let (rows, cols, sc, du) = (od[u], od[last], ss[last], ds[u]);
                for i0 in (0..rows).step_by(TILE) {
                    for j0 in (0..cols).step_by(TILE) {
                        for j in j0..(j0 + TILE).min(cols) {
                            for i in i0..(i0 + TILE).min(rows) {
                                dst[at + i * du + j].write(x[src + i + j * sc]);
                            }
                        }
                    }
                }
            }
        }
        for (k, &d) in outer.iter().enumerate().rev() {
            index[k] += 1;
            src += ss[d];
            at += ds[d];
            if index[k] < od[d] {
                break;
            }
            src -= ss[d] * od[d];
            at -= ds[d] * od[d];
            index[k] = 0;
        }
    }
    // SAFETY: every output offset sum(index[d] * ds[d]) over all index combinations was written
    // exactly once above (the outer axes, then the unit axis and the last axis in full).
    unsafe { out.set_len(n) };
    out
}

/// Side of the square tiles of a transposing gather (elements).
const TILE: usize = 16;

/// Concatenates parts viewed as [outer, len_i, inner] along the middle axis.
pub fn concat<T: Copy>(parts: &[&[T]], lens: &[usize], outer: usize, inner: usize) -> Vec<T> {
    let total: usize = lens.iter().sum();
    let mut out = Vec::with_capacity(outer * total * inner);
    for o in 0..outer {
        for (p, &l) in parts.iter().zip(lens) {
            out.extend_from_slice(&p[o * l * inner..(o + 1) * l * inner]);
        }
    }
    out
}

/// Elements [start, end) of the middle axis of [outer, len, inner].
pub fn slice<T: Copy>(
    x: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    start: usize,
    end: usize,
) -> Vec<T> {
    let mut out = Vec::with_capacity(outer * (end - start) * inner);
    for o in 0..outer {
        out.extend_from_slice(&x[(o * len + start) * inner..(o * len + end) * inner]);
    }
    out
}

/// The gradient of `slice`: `g` placed at [start, end) of a zero tensor [outer, len, inner].
pub fn unslice<T: Float>(
    g: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    start: usize,
    end: usize,
) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * len * inner];
    let w = (end - start) * inner;
    for o in 0..outer {
        out[(o * len + start) * inner..(o * len + end) * inner]
            .copy_from_slice(&g[o * w..(o + 1) * w]);
    }
    out
}

/// `prev + unslice(g, ..)` in one pass, each element the same addition: `prev + g` in the
/// stretch `start..end` of the middle axis, `prev + 0` elsewhere (which turns -0 into +0, as
/// adding the unsliced zeros does).
pub fn add_unsliced<T: Float>(
    prev: &[T],
    g: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    start: usize,
    end: usize,
) -> Vec<T> {
    let row = len * inner;
    debug_assert_eq!(prev.len(), outer * row);
    let (lo, hi) = (start * inner, end * inner);
    let w = hi - lo;
    super::uninit::filled(prev.len(), row.max(1), prev.len(), |o, out| {
        let p = &prev[o * row..][..out.len()];
        let gs = &g[o * w..][..w];
        let (before, rest) = out.split_at_mut(lo);
        let (inside, after) = rest.split_at_mut(w);
        let plus_zero = |v: T| v + T::ZERO;
        super::wide_rows::map_row(&p[..lo], before, &plus_zero);
        super::wide_rows::zip_row(&p[lo..hi], gs, inside, &|v: T, d: T| v + d);
        super::wide_rows::map_row(&p[hi..], after, &plus_zero);
    })
}

/// Rows `idx` of the middle axis of [outer, len, inner]: [outer, idx.len(), inner].
pub fn index_select<T: Copy>(
    x: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    idx: &[usize],
) -> Vec<T> {
    let mut out = Vec::with_capacity(outer * idx.len() * inner);
    for o in 0..outer {
        for &i in idx {
            out.extend_from_slice(&x[(o * len + i) * inner..(o * len + i + 1) * inner]);
        }
    }
    out
}

/// The gradient of `index_select`: adds row r of `g` into row idx[r], in index order, so a
/// row selected twice accumulates as a left fold.
pub fn index_add<T: Float>(
    g: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    idx: &[usize],
) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * len * inner];
    let k = idx.len();
    for o in 0..outer {
        for (r, &i) in idx.iter().enumerate() {
            let src = &g[(o * k + r) * inner..(o * k + r + 1) * inner];
            let dst = &mut out[(o * len + i) * inner..(o * len + i + 1) * inner];
            for j in 0..inner {
                dst[j] = dst[j] + src[j];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass accumulation equals adding the unsliced gradient, bit for bit: -0 in `prev`
    /// outside the stretch becomes +0 there, as `prev + 0` does.
    #[test]
    fn add_unsliced_is_the_add_of_the_unsliced_gradient() {
        let (outer, len, inner) = (3, 5, 4);
        let specials = [-0.0, 0.0, f64::NAN, -1.5, f64::INFINITY];
        let prev: Vec<f64> = (0..outer * len * inner)
            .map(|i| specials[i % 5] * if i % 3 == 0 { 1.0 } else { (i as f64).sqrt() })
            .collect();
        for (start, end) in [(0, 5), (1, 3), (4, 5), (2, 2)] {
            let w = (end - start) * inner;
            let g: Vec<f64> = (0..outer * w)
                .map(|i| specials[(i + 2) % 5] + i as f64)
                .collect();
            let want: Vec<f64> = prev
                .iter()
                .zip(unslice(&g, outer, len, inner, start, end))
                .map(|(&p, u)| p + u)
                .collect();
            let got = add_unsliced(&prev, &g, outer, len, inner, start, end);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{start}..{end}");
        }
    }
}
