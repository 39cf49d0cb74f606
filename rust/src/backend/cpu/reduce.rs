//! Reductions. Every sum is a left fold from 0 in index order (docs/numerics.md): outputs are split
//! across threads, a single output's accumulation never is.

use super::parallel::for_chunks;
use crate::dtype::Float;
use crate::shape::broadcast_strides;
use crate::Shape;

pub fn sum_all<T: Float>(x: &[T]) -> T {
    let mut acc = T::ZERO;
    for &v in x {
        acc = acc + v;
    }
    acc
}

/// Sums a tensor viewed as [outer, len, inner] over its middle axis: [outer, inner].
pub fn sum_axis<T: Float>(x: &[T], outer: usize, len: usize, inner: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * inner];
    if inner == 0 {
        return out;
    }
    let block = |o: usize, acc: &mut [T]| {
        let base = o * len * inner;
        for l in 0..len {
            let row = &x[base + l * inner..base + (l + 1) * inner];
            for i in 0..inner {
                acc[i] = acc[i] + row[i];
            }
        }
    };
    for_chunks(&mut out, inner, x.len(), block);
    out
}

/// Max over the middle axis of [outer, len, inner] with the index of the first maximum.
/// A NaN wins over any number, so NaN propagates.
pub fn max_axis<T: Float>(x: &[T], outer: usize, len: usize, inner: usize) -> (Vec<T>, Vec<usize>) {
    let mut vals = vec![T::NEG_INFINITY; outer * inner];
    let mut idx = vec![0usize; outer * inner];
    for o in 0..outer {
        for i in 0..inner {
            let base = o * len * inner + i;
            let (mut best, mut bi) = (x[base], 0);
            for l in 1..len {
                let v = x[base + l * inner];
                if (v > best || v.is_nan()) && !best.is_nan() {
                    best = v;
                    bi = l;
                }
            }
            vals[o * inner + i] = best;
            idx[o * inner + i] = bi;
        }
    }
    (vals, idx)
}

/// Reduces a gradient of broadcast shape `from` back to `to` by summing the broadcast axes.
/// Each target element is a left fold over the source elements in increasing index order.
pub fn sum_to_shape<T: Float>(g: &[T], from: &Shape, to: &Shape) -> Vec<T> {
    let strides = broadcast_strides(to, from);
    let dims = from.dims();
    let mut out = vec![T::ZERO; to.numel()];
    let mut index = vec![0usize; dims.len()];
    let mut target = 0usize;
    for &v in g {
        out[target] = out[target] + v;
        // Advance the odometer over `from` and keep the target offset in step.
        for d in (0..dims.len()).rev() {
            index[d] += 1;
            target += strides[d];
            if index[d] < dims[d] {
                break;
            }
            target -= strides[d] * index[d];
            index[d] = 0;
        }
    }
    out
}

/// The gradient of `max_axis`: `g` [outer, inner] placed at each lane's winner of zeros
/// [outer, len, inner].
pub fn max_axis_grad<T: Float>(
    g: &[T],
    arg: &[usize],
    outer: usize,
    len: usize,
    inner: usize,
) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * len * inner];
    for o in 0..outer {
        for i in 0..inner {
            let r = o * inner + i;
            out[o * len * inner + arg[r] * inner + i] = g[r];
        }
    }
    out
}
