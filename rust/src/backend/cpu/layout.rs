//! Data movement: permute, concat, slice, index_select, and the scatters their gradients need.

use crate::dtype::Float;

/// Output of permuting `x` (shape `dims`) so that output axis i is input axis `perm[i]`.
pub fn permute<T: Float>(x: &[T], dims: &[usize], perm: &[usize]) -> Vec<T> {
    let rank = dims.len();
    let in_strides = crate::Shape::new(dims.to_vec()).strides();
    let out_dims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let src_strides: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
    let n = x.len();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut index = vec![0usize; rank];
    let mut src = 0usize;
    for _ in 0..n {
        out.push(x[src]);
        for d in (0..rank).rev() {
            index[d] += 1;
            src += src_strides[d];
            if index[d] < out_dims[d] {
                break;
            }
            src -= src_strides[d] * index[d];
            index[d] = 0;
        }
    }
    out
}

/// Concatenates parts viewed as [outer, len_i, inner] along the middle axis.
pub fn concat<T: Float>(parts: &[&[T]], lens: &[usize], outer: usize, inner: usize) -> Vec<T> {
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
pub fn slice<T: Float>(
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

/// Rows `idx` of the middle axis of [outer, len, inner]: [outer, idx.len(), inner].
pub fn index_select<T: Float>(
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
