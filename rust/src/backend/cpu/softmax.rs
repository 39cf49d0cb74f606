//! Softmax and log-softmax over the middle axis of [outer, len, inner], with the max
//! subtracted first for stability; sums are left folds in index order. Each outer index is
//! independent, so groups of them run across threads (an exponential is tens of operations:
//! attention's 8×4×16×16 scores are worth spreading) without changing a bit.

use super::exp_lanes::ExpRow;
use super::parallel::for_each_chunk;
use crate::dtype::Float;

/// Groups of outer indices per call, so that each thread claims a few.
const GROUPS: usize = 8;
/// Operations an element costs, for the parallel loop's worth-it test (an exponential).
const ELEM_COST: usize = 16;

/// `f(x_part, out_part)` over `x` and `out` cut into groups of whole outer indices (`row`
/// elements each), spread over the threads when the work is worth it.
fn by_groups<T: Float>(
    x: &[T],
    out: &mut [T],
    row: usize,
    f: impl Fn(std::ops::Range<usize>, &mut [T]) + Sync,
) {
    let outer = x.len() / row.max(1);
    let per = outer.div_ceil(GROUPS).max(1) * row.max(1);
    for_each_chunk(out, per, x.len() * ELEM_COST, |i, dst| {
        f(i * per..i * per + dst.len(), dst)
    });
}

fn for_each_lane(outer: usize, len: usize, inner: usize, mut f: impl FnMut(usize)) {
    for o in 0..outer {
        for i in 0..inner {
            f(o * len * inner + i);
        }
    }
}

/// Softmax of contiguous rows of `len` (the last axis): the shifted values `x - m` of a row are
/// written first and their exponentials taken as one row (`ExpRow`: vector lanes with the scalar
/// bits), then summed in index order, so every bit is the strided form's.
fn softmax_rows<T: ExpRow>(x: &[T], out: &mut [T], len: usize, log: bool) {
    for (x, out) in x.chunks_exact(len).zip(out.chunks_exact_mut(len)) {
        let mut m = T::NEG_INFINITY;
        for &v in x {
            if v > m || v.is_nan() {
                m = v;
            }
        }
        for (o, &v) in out.iter_mut().zip(x) {
            *o = v - m;
        }
        T::exp_row(out);
        let mut s = T::ZERO;
        for &e in out.iter() {
            s = s + e;
        }
        if log {
            let ls = s.ln();
            for (o, &v) in out.iter_mut().zip(x) {
                *o = (v - m) - ls;
            }
        } else {
            for o in out.iter_mut() {
                *o = *o / s;
            }
        }
    }
}

pub fn softmax<T: ExpRow>(x: &[T], outer: usize, len: usize, inner: usize, log: bool) -> Vec<T> {
    let mut out = vec![T::ZERO; x.len()];
    debug_assert_eq!(x.len(), outer * len * inner);
    if inner == 1 && len > 0 {
        by_groups(x, &mut out, len, |at, out| {
            softmax_rows(&x[at], out, len, log)
        });
        return out;
    }
    by_groups(x, &mut out, len * inner, |at, out| {
        let x = &x[at];
        for_each_lane(out.len() / (len * inner).max(1), len, inner, |base| {
            let mut m = T::NEG_INFINITY;
            for l in 0..len {
                let v = x[base + l * inner];
                if v > m || v.is_nan() {
                    m = v;
                }
            }
            let mut s = T::ZERO;
            for l in 0..len {
                let e = (x[base + l * inner] - m).exp();
                if !log {
                    out[base + l * inner] = e;
                }
                s = s + e;
            }
            if log {
                let ls = s.ln();
                for l in 0..len {
                    out[base + l * inner] = (x[base + l * inner] - m) - ls;
                }
            } else {
                for l in 0..len {
                    out[base + l * inner] = out[base + l * inner] / s;
                }
            }
        })
    });
    out
}

/// Gradient through softmax (`y` its output): y * (g - sum(g * y)).
/// Through log-softmax: g - exp(y) * sum(g).
pub fn softmax_grad<T: Float>(
    y: &[T],
    g: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    log: bool,
) -> Vec<T> {
    let mut out = vec![T::ZERO; y.len()];
    debug_assert_eq!(y.len(), outer * len * inner);
    by_groups(y, &mut out, len * inner, |at, out| {
        let (y, g) = (&y[at.clone()], &g[at]);
        for_each_lane(out.len() / (len * inner).max(1), len, inner, |base| {
            let mut s = T::ZERO;
            for l in 0..len {
                let k = base + l * inner;
                s = s + if log { g[k] } else { g[k] * y[k] };
            }
            for l in 0..len {
                let k = base + l * inner;
                out[k] = if log {
                    g[k] - y[k].exp() * s
                } else {
                    y[k] * (g[k] - s)
                };
            }
        })
    });
    out
}
