//! Elementwise kernels: maps over one tensor and NumPy-broadcast maps over two. Each output
//! element is computed independently, so splitting work across threads cannot change a bit.

use super::uninit::filled;
use crate::dtype::Float;
use crate::Shape;
use std::mem::MaybeUninit;

const CHUNK: usize = 1 << 13;

pub fn map<T: Float>(x: &[T], f: impl Fn(T) -> T + Sync) -> Vec<T> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        let x = &x[ci * CHUNK..][..o.len()];
        o.iter_mut().zip(x).for_each(|(o, &v)| {
            o.write(f(v));
        });
    })
}

pub fn zip_map<T: Float>(a: &[T], b: &[T], f: impl Fn(T, T) -> T + Sync) -> Vec<T> {
    debug_assert_eq!(a.len(), b.len());
    filled(a.len(), CHUNK, a.len(), |ci, o| {
        let (x, y) = (&a[ci * CHUNK..][..o.len()], &b[ci * CHUNK..][..o.len()]);
        for i in 0..o.len() {
            o[i].write(f(x[i], y[i]));
        }
    })
}

pub fn zip3_map<T: Float>(a: &[T], b: &[T], c: &[T], f: impl Fn(T, T, T) -> T + Sync) -> Vec<T> {
    filled(a.len(), CHUNK, a.len(), |ci, o| {
        let s = ci * CHUNK;
        let (x, y, z) = (&a[s..][..o.len()], &b[s..][..o.len()], &c[s..][..o.len()]);
        for i in 0..o.len() {
            o[i].write(f(x[i], y[i], z[i]));
        }
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
        match (la, lb) {
            (1, 1) => {
                let (x, y) = (&a[oa..oa + last], &b[ob..ob + last]);
                for j in 0..last {
                    o[j].write(f(x[j], y[j]));
                }
            }
            (1, 0) => {
                let (x, y) = (&a[oa..oa + last], b[ob]);
                for j in 0..last {
                    o[j].write(f(x[j], y));
                }
            }
            (0, 1) => {
                let (x, y) = (a[oa], &b[ob..ob + last]);
                for j in 0..last {
                    o[j].write(f(x, y[j]));
                }
            }
            _ => {
                for j in 0..last {
                    o[j].write(f(a[oa + j * la], b[ob + j * lb]));
                }
            }
        }
    };
    filled(n, last, n, row)
}
