//! Pooling windows over [N*C, H, W] planes: max pooling (padding cells never win; the first
//! maximum in row-major window order is recorded for backward) and average pooling.
//!
//! Planes are independent, so large inputs spread whole planes over the thread pool; each
//! output is computed exactly as in one thread (same comparisons or additions, same order), so
//! the bits do not depend on the thread count.

use super::parallel::{for_chunks, for_chunks2};
use crate::dtype::Float;
use crate::geometry::PoolDims;

/// Whether `v` replaces `best` as a window's maximum (a NaN wins and then stays).
#[inline(always)]
fn beats<T: Float>(v: T, best: T) -> bool {
    (v > best || v.is_nan()) && !best.is_nan()
}

fn max_pool_plane<T: Float>(xp: &[T], d: &PoolDims, y: &mut [T], arg: &mut [usize]) {
    if d.kh == 2 && d.kw == 2 && d.stride == 2 && d.pad == 0 {
        // The common 2x2 / stride 2 window, always inside the image: the general loop's
        // candidates in its order, without its range bookkeeping.
        for oy in 0..d.oh {
            let (r0, r1) = (2 * oy * d.w, (2 * oy + 1) * d.w);
            for ox in 0..d.ow {
                let c = 2 * ox;
                let (mut best, mut bi) = (xp[r0 + c], r0 + c);
                for k in [r0 + c + 1, r1 + c, r1 + c + 1] {
                    if beats(xp[k], best) {
                        best = xp[k];
                        bi = k;
                    }
                }
                y[oy * d.ow + ox] = best;
                arg[oy * d.ow + ox] = bi;
            }
        }
        return;
    }
    for oy in 0..d.oh {
        for ox in 0..d.ow {
            let (rows, cols) = d.window(oy, ox);
            let (mut best, mut bi) = (T::NEG_INFINITY, usize::MAX);
            for r in rows {
                for c in cols.clone() {
                    let v = xp[r * d.w + c];
                    if bi == usize::MAX || beats(v, best) {
                        best = v;
                        bi = r * d.w + c;
                    }
                }
            }
            y[oy * d.ow + ox] = best;
            arg[oy * d.ow + ox] = bi;
        }
    }
}

/// Max over each window; also returns the flat input index that won (within its plane).
pub fn max_pool<T: Float>(x: &[T], d: PoolDims) -> (Vec<T>, Vec<usize>) {
    let per = d.oh * d.ow;
    let mut y = vec![T::ZERO; d.planes * per];
    let mut arg = vec![0usize; d.planes * per];
    let hw = d.h * d.w;
    for_chunks2(&mut y, per, &mut arg, per, x.len(), |p, yp, ap| {
        max_pool_plane(&x[p * hw..][..hw], &d, yp, ap)
    });
    (y, arg)
}

/// Gradient of max pooling: each output's gradient added to its winner, in output order.
pub fn max_pool_grad<T: Float>(g: &[T], arg: &[usize], d: PoolDims) -> Vec<T> {
    let hw = d.h * d.w;
    let per = d.oh * d.ow;
    let mut gx = vec![T::ZERO; d.planes * hw];
    for_chunks(&mut gx, hw, gx_len(&d), |p, gp| {
        for (&gv, &a) in g[p * per..][..per].iter().zip(&arg[p * per..][..per]) {
            if a != usize::MAX {
                gp[a] = gp[a] + gv;
            }
        }
    });
    gx
}

fn gx_len(d: &PoolDims) -> usize {
    d.planes * d.h * d.w
}

/// Mean over each window. Padding cells count in the divisor (PyTorch's default
/// `count_include_pad=True`): the divisor is always kh*kw.
pub fn avg_pool<T: Float>(x: &[T], d: PoolDims) -> Vec<T> {
    let div = T::from_f64((d.kh * d.kw) as f64);
    let per = d.oh * d.ow;
    let hw = d.h * d.w;
    let mut y = vec![T::ZERO; d.planes * per];
    for_chunks(&mut y, per, x.len(), |p, yp| {
        let xp = &x[p * hw..][..hw];
        for oy in 0..d.oh {
            for ox in 0..d.ow {
                let (rows, cols) = d.window(oy, ox);
                let mut s = T::ZERO;
                for r in rows {
                    for c in cols.clone() {
                        s = s + xp[r * d.w + c];
                    }
                }
                yp[oy * d.ow + ox] = s / div;
            }
        }
    });
    y
}

pub fn avg_pool_grad<T: Float>(g: &[T], d: PoolDims) -> Vec<T> {
    let div = T::from_f64((d.kh * d.kw) as f64);
    let per = d.oh * d.ow;
    let mut gx = vec![T::ZERO; gx_len(&d)];
    for_chunks(&mut gx, d.h * d.w, gx_len(&d), |p, gp| {
        for oy in 0..d.oh {
            for ox in 0..d.ow {
                let gv = g[p * per + oy * d.ow + ox] / div;
                let (rows, cols) = d.window(oy, ox);
                for r in rows {
                    for c in cols.clone() {
                        let k = r * d.w + c;
                        gp[k] = gp[k] + gv;
                    }
                }
            }
        }
    });
    gx
}
