//! Softmax and log-softmax over the middle axis of [outer, len, inner], with the max
//! subtracted first for stability; sums are left folds in index order.

use crate::dtype::Float;

fn for_each_lane(outer: usize, len: usize, inner: usize, mut f: impl FnMut(usize)) {
    for o in 0..outer {
        for i in 0..inner {
            f(o * len * inner + i);
        }
    }
}

pub fn softmax<T: Float>(x: &[T], outer: usize, len: usize, inner: usize, log: bool) -> Vec<T> {
    let mut out = vec![T::ZERO; x.len()];
    for_each_lane(outer, len, inner, |base| {
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
    for_each_lane(outer, len, inner, |base| {
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
    });
    out
}
