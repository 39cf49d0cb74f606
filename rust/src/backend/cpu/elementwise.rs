//! Elementwise kernels: maps over one tensor and NumPy-broadcast maps over two. Each output
//! element is computed independently, so splitting work across threads cannot change a bit.

use super::uninit::filled;
use super::wide_rows::{map_row, with_row, zip3_row, zip_row};
use crate::dtype::Float;
use crate::Shape;
use std::mem::MaybeUninit;

const CHUNK: usize = 1 << 13;

pub fn map<T: Float>(x: &[T], f: impl Fn(T) -> T + Sync) -> Vec<T> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        map_row(&x[ci * CHUNK..], o, &f);
    })
}

pub fn zip_map<T: Float>(a: &[T], b: &[T], f: impl Fn(T, T) -> T + Sync) -> Vec<T> {
    debug_assert_eq!(a.len(), b.len());
    filled(a.len(), CHUNK, a.len(), |ci, o| {
        zip_row(&a[ci * CHUNK..], &b[ci * CHUNK..], o, &f);
    })
}

pub fn zip3_map<T: Float>(a: &[T], b: &[T], c: &[T], f: impl Fn(T, T, T) -> T + Sync) -> Vec<T> {
    filled(a.len(), CHUNK, a.len(), |ci, o| {
        let s = ci * CHUNK;
        zip3_row(&a[s..], &b[s..], &c[s..], o, &f);
    })
}

/// `f(a, b)` over the broadcast shape `out`; `sa`/`sb` are the operands' broadcast strides.
pub fn broadcast_map<T: Float>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    out: &Shape,
    f: impl Fn(T, T) -> T + Sync,
) -> Vec<T> {
    let n = out.numel();
    let dims = out.dims();
    if dims.is_empty() {
        return vec![f(a[0], b[0])];
    }
    let last = dims[dims.len() - 1];
    let (la, lb) = (sa[sa.len() - 1], sb[sb.len() - 1]);
    if last == 0 {
        return vec![T::ZERO; n];
    }
    let rank = dims.len();
    // One output row at a time: compute the operands' row offsets from the row index.
    let row = |r: usize, o: &mut [MaybeUninit<T>]| {
        let (mut oa, mut ob, mut rem) = (0usize, 0usize, r);
        for d in (0..rank - 1).rev() {
            let i = rem % dims[d];
            rem /= dims[d];
            oa += i * sa[d];
            ob += i * sb[d];
        }
        // Rows too short for vectors take the plain loop (no per-row dispatch).
        let wide = last >= 16;
        match (la, lb) {
            (1, 1) if wide => zip_row(&a[oa..oa + last], &b[ob..ob + last], o, &f),
            (1, 0) if wide => with_row(&a[oa..oa + last], b[ob], o, &f),
            (0, 1) if wide => with_row(&b[ob..ob + last], a[oa], o, &|y, x| f(x, y)),
            _ => {
                for j in 0..last {
                    o[j].write(f(a[oa + j * la], b[ob + j * lb]));
                }
            }
        }
    };
    filled(n, last, n, row)
}
