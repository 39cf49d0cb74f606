//! Pooling windows over [N*C, H, W] planes: max pooling (padding cells never win; the first
//! maximum in row-major window order is recorded for backward) and average pooling.

use crate::dtype::Float;
use crate::geometry::PoolDims;

/// Max over each window; also returns the flat input index that won (within its plane).
pub fn max_pool<T: Float>(x: &[T], d: PoolDims) -> (Vec<T>, Vec<usize>) {
    let mut y = Vec::with_capacity(d.planes * d.oh * d.ow);
    let mut arg = Vec::with_capacity(y.capacity());
    for p in 0..d.planes {
        let xp = &x[p * d.h * d.w..][..d.h * d.w];
        for oy in 0..d.oh {
            for ox in 0..d.ow {
                let (rows, cols) = d.window(oy, ox);
                let (mut best, mut bi) = (T::NEG_INFINITY, usize::MAX);
                for r in rows {
                    for c in cols.clone() {
                        let v = xp[r * d.w + c];
                        if bi == usize::MAX || ((v > best || v.is_nan()) && !best.is_nan()) {
                            best = v;
                            bi = r * d.w + c;
                        }
                    }
                }
                y.push(best);
                arg.push(bi);
            }
        }
    }
    (y, arg)
}

/// Gradient of max pooling: each output's gradient added to its winner, in output order.
pub fn max_pool_grad<T: Float>(g: &[T], arg: &[usize], d: PoolDims) -> Vec<T> {
    let mut gx = vec![T::ZERO; d.planes * d.h * d.w];
    let per = d.oh * d.ow;
    for (i, (&gv, &a)) in g.iter().zip(arg).enumerate() {
        if a != usize::MAX {
            let k = (i / per) * d.h * d.w + a;
            gx[k] = gx[k] + gv;
        }
    }
    gx
}

/// Mean over each window. Padding cells count in the divisor (PyTorch's default
/// `count_include_pad=True`): the divisor is always kh*kw.
pub fn avg_pool<T: Float>(x: &[T], d: PoolDims) -> Vec<T> {
    let div = T::from_f64((d.kh * d.kw) as f64);
    let mut y = Vec::with_capacity(d.planes * d.oh * d.ow);
    for p in 0..d.planes {
        let xp = &x[p * d.h * d.w..][..d.h * d.w];
        for oy in 0..d.oh {
            for ox in 0..d.ow {
                let (rows, cols) = d.window(oy, ox);
                let mut s = T::ZERO;
                for r in rows {
                    for c in cols.clone() {
                        s = s + xp[r * d.w + c];
                    }
                }
                y.push(s / div);
            }
        }
    }
    y
}

pub fn avg_pool_grad<T: Float>(g: &[T], d: PoolDims) -> Vec<T> {
    let div = T::from_f64((d.kh * d.kw) as f64);
    let mut gx = vec![T::ZERO; d.planes * d.h * d.w];
    for p in 0..d.planes {
        for oy in 0..d.oh {
            for ox in 0..d.ow {
                let gv = g[(p * d.oh + oy) * d.ow + ox] / div;
                let (rows, cols) = d.window(oy, ox);
                for r in rows {
                    for c in cols.clone() {
                        let k = p * d.h * d.w + r * d.w + c;
                        gx[k] = gx[k] + gv;
                    }
                }
            }
        }
    }
    gx
}
