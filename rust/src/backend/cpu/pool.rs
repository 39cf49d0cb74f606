//! Pooling windows over [N*C, H, W] planes: max pooling (padding cells never win; the first
//! maximum in row-major window order is recorded for backward) and average pooling.
//!
//! Planes are independent, so large inputs spread whole planes over the thread pool; each
//! output is computed exactly as in one thread (same comparisons or additions, same order), so
//! the bits do not depend on the thread count.

use super::f32_view::as_f32;
use super::parallel::{for_chunks, for_chunks2};
use super::uninit::{fill_with, filled, written};
use crate::dtype::Float;
use crate::geometry::PoolDims;
use std::mem::MaybeUninit;

/// Whether `v` replaces `best` as a window's maximum: IEEE 754-2019 `maximum` (a NaN wins and
/// then stays; +0 beats -0), the first such cell recorded.
#[inline(always)]
pub(super) fn beats<T: Float>(v: T, best: T) -> bool {
    let zero_over_negative_zero =
        v == best && v == T::ZERO && best.is_sign_negative() && !v.is_sign_negative();
    (v > best || v.is_nan() || zero_over_negative_zero) && !best.is_nan()
}

/// `max_pool_plane` compiled for AVX-512 (a closure passed to `simd::widest` stayed at the
/// baseline width here, and the row loops then ran scalar).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn plane_avx512<T: Float>(xp: &[T], d: &PoolDims, y: &mut [T], arg: &mut [usize]) {
    max_pool_plane(xp, d, y, arg)
}

/// Scratch of one thread's planes: the gathered candidates, the best values and the winners
/// (as offsets from the window's first valid cell) of a block of outputs.
struct Scratch<T> {
    cand: Vec<T>,
    best: Vec<T>,
    off: Vec<u32>,
}

#[inline(always)]
fn max_pool_plane<T: Float>(xp: &[T], d: &PoolDims, y: &mut [T], arg: &mut [usize]) {
    let (mut lo, mut hi) = interior(d.ow, d.w, d.kw, d.sw, d.pw, d.dw);
    if ((d.kh - 1) * d.dh + 1).saturating_mul(d.w) > u32::MAX as usize {
        // Winners' offsets would not fit the blocks' u32: every column per window.
        (lo, hi) = (0, 0);
    }
    for oy in 0..d.oh {
        for ox in (0..lo).chain(hi..d.ow) {
            (y[oy * d.ow + ox], arg[oy * d.ow + ox]) = max_window(xp, d, oy, ox);
        }
    }
    if lo == hi {
        return;
    }
    let (rlo, rhi) = interior(d.oh, d.h, d.kh, d.sh, d.ph, d.dh);
    let mut sc = Scratch {
        cand: Vec::new(),
        best: Vec::new(),
        off: Vec::new(),
    };
    // Rows whose windows are clipped by the padding one at a time (their valid kernel rows
    // differ), the rows in between as one block.
    for oy in (0..rlo).chain(rhi..d.oh) {
        let ky = d.taps(oy, 0).0;
        max_block(xp, d, oy..oy + 1, ky, (lo, hi), y, arg, &mut sc);
    }
    if rlo < rhi {
        max_block(xp, d, rlo..rhi, 0..d.kh, (lo, hi), y, arg, &mut sc);
    }
}

/// The outputs `lo..hi` along an axis of `out` outputs (stride `s`, padding `p`) whose windows
/// of `k` taps `dil` apart lie wholly inside the input's `n` cells.
fn interior(out: usize, n: usize, k: usize, s: usize, p: usize, dil: usize) -> (usize, usize) {
    let span = (k.max(1) - 1) * dil + 1;
    if span > n || s == 0 {
        return (0, 0);
    }
    let lo = p.div_ceil(s).min(out);
    // o * s - p + span <= n
    let hi = ((n + p - span) / s + 1).min(out);
    (lo, hi.max(lo))
}

/// One window, cells in row-major order: the first valid cell, then each later one that beats
/// the best so far (a window wholly in the padding gives -inf with no winner).
fn max_window<T: Float>(xp: &[T], d: &PoolDims, oy: usize, ox: usize) -> (T, usize) {
    let (rows, cols) = d.taps(oy, ox);
    let (top, left) = (d.top(oy), d.left(ox));
    let (mut best, mut bi) = (T::NEG_INFINITY, usize::MAX);
    for ky in rows {
        let r = (top + (ky * d.dh) as isize) as usize;
        for kx in cols.clone() {
            let c = (left + (kx * d.dw) as isize) as usize;
            let v = xp[r * d.w + c];
            if bi == usize::MAX || beats(v, best) {
                best = v;
                bi = r * d.w + c;
            }
        }
    }
    (best, bi)
}

/// Outputs rows `oys` x columns `lo..hi`, whose windows' valid kernel rows are `ky` and whose
/// columns lie inside the image: the cells are visited in the same row-major window order, one
/// cell for the whole block at a time. Its candidates are gathered into one run, then compared
/// and selected without branches (winners are data-dependent, so branches would mispredict),
/// which vectorises; each winner is kept as its offset from the window's first valid cell.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn max_block<T: Float>(
    xp: &[T],
    d: &PoolDims,
    oys: std::ops::Range<usize>,
    ky: std::ops::Range<usize>,
    (lo, hi): (usize, usize),
    y: &mut [T],
    arg: &mut [usize],
    sc: &mut Scratch<T>,
) {
    let (s, nc) = (d.sw, hi - lo);
    let m = oys.len() * nc;
    if ky.is_empty() {
        for oy in oys {
            y[oy * d.ow + lo..][..nc].fill(T::NEG_INFINITY);
            arg[oy * d.ow + lo..][..nc].fill(usize::MAX);
        }
        return;
    }
    sc.cand.resize(m, T::ZERO);
    sc.best.resize(m, T::ZERO);
    sc.off.resize(m, 0);
    // Input index of tap (ky.start + dy, kx) of output (oy, ox): `at(oy, ox) + dy·dh·w + kx·dw`.
    let at = |oy: usize, ox: usize| (oy * d.sh + ky.start * d.dh - d.ph) * d.w + ox * s - d.pw;
    // Index loops, not iterator chains: a chain's fold can stay out of line, outside the
    // AVX-512 wrapper (`plane_avx512`).
    for dy in 0..ky.len() {
        for kx in 0..d.kw {
            for (i, oy) in oys.clone().enumerate() {
                let src = &xp[at(oy, lo) + dy * d.dh * d.w + kx * d.dw..][..(nc - 1) * s + 1];
                let dst = &mut sc.cand[i * nc..][..nc];
                if s == 2 {
                    // A constant stride vectorises (loads and shuffles); `s * j` stays scalar.
                    for (o, pair) in dst[..nc - 1].iter_mut().zip(src.chunks_exact(2)) {
                        *o = pair[0];
                    }
                    dst[nc - 1] = src[2 * (nc - 1)];
                } else {
                    for j in 0..nc {
                        dst[j] = src[s * j];
                    }
                }
            }
            let c = (dy * d.dh * d.w + kx * d.dw) as u32;
            if dy == 0 && kx == 0 {
                // The first cell of every window wins outright.
                sc.best.copy_from_slice(&sc.cand);
                sc.off.fill(c);
                continue;
            }
            let (cand, best, off) = (&sc.cand[..m], &mut sc.best[..m], &mut sc.off[..m]);
            for t in 0..m {
                let (v, b) = (cand[t], best[t]);
                let take = beats(v, b);
                best[t] = if take { v } else { b };
                off[t] = if take { c } else { off[t] };
            }
        }
    }
    for (i, oy) in oys.enumerate() {
        for j in 0..nc {
            let (t, o) = (i * nc + j, oy * d.ow + lo + j);
            y[o] = sc.best[t];
            arg[o] = at(oy, lo + j) + sc.off[t] as usize;
        }
    }
}

/// `as_f32` for an output slice.
fn as_f32_mut<T: Float>(v: &mut [MaybeUninit<T>]) -> Option<&mut [MaybeUninit<f32>]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        // SAFETY: as in `as_f32`.
        .then(|| unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut _, v.len()) })
}

/// Max over each window; also returns the flat input index that won (within its plane).
pub fn max_pool<T: Float>(x: &[T], d: PoolDims) -> (Vec<T>, Vec<usize>) {
    let per = d.oh * d.ow;
    let hw = d.h * d.w;
    let mut arg = Vec::new();
    #[cfg(target_arch = "x86_64")]
    let two_by_two = super::pool_2x2::applies(&d);
    // Each plane's outputs are zeroed by the thread that computes them, just before (in L1),
    // rather than the whole of y and the winners up front on one thread.
    let y = written(d.planes * per, |y| {
        arg = written(d.planes * per, |arg| {
            for_chunks2(y, per, arg, per, x.len(), |p, yp, ap| {
                let xp = &x[p * hw..][..hw];
                #[cfg(target_arch = "x86_64")]
                if two_by_two {
                    if let (Some(xp), Some(yp)) = (as_f32(xp), as_f32_mut(yp)) {
                        // SAFETY: `pool_2x2::applies` detected AVX-512 on this CPU.
                        return unsafe { super::pool_2x2::plane(xp, &d, yp, ap) };
                    }
                }
                let (yp, ap) = (fill_with(yp, T::ZERO), fill_with(ap, 0usize));
                #[cfg(target_arch = "x86_64")]
                if super::simd::has_avx512() {
                    // SAFETY: the features it is compiled for were just detected on this CPU.
                    return unsafe { plane_avx512(xp, &d, yp, ap) };
                }
                max_pool_plane(xp, &d, yp, ap)
            })
        })
    });
    (y, arg)
}

/// Gradient of max pooling: each output's gradient added to its winner, in output order.
pub fn max_pool_grad<T: Float>(g: &[T], arg: &[usize], d: PoolDims) -> Vec<T> {
    let hw = d.h * d.w;
    let per = d.oh * d.ow;
    // Each plane starts from zeros written by its own thread.
    filled(gx_len(&d), hw, gx_len(&d), |p, gp| {
        let gp = fill_with(gp, T::ZERO);
        for (&gv, &a) in g[p * per..][..per].iter().zip(&arg[p * per..][..per]) {
            if a != usize::MAX {
                gp[a] = gp[a] + gv;
            }
        }
    })
}

fn gx_len(d: &PoolDims) -> usize {
    d.planes * d.h * d.w
}

/// Visits the input cells of the window at (oy, ox) inside the image, in row-major tap order.
#[inline(always)]
fn for_taps(d: &PoolDims, oy: usize, ox: usize, mut f: impl FnMut(usize)) {
    let (rows, cols) = d.taps(oy, ox);
    let (top, left) = (d.top(oy), d.left(ox));
    for ky in rows {
        let r = (top + (ky * d.dh) as isize) as usize;
        for kx in cols.clone() {
            f(r * d.w + (left + (kx * d.dw) as isize) as usize);
        }
    }
}

/// Mean over each window: the sum in row-major order over `d.avg_divisor` (PyTorch's rule:
/// by default padding cells count, so kh·kw unless `ceil_mode` clips a window).
pub fn avg_pool<T: Float>(x: &[T], d: PoolDims) -> Vec<T> {
    let per = d.oh * d.ow;
    let hw = d.h * d.w;
    let mut y = vec![T::ZERO; d.planes * per];
    for_chunks(&mut y, per, x.len(), |p, yp| {
        let xp = &x[p * hw..][..hw];
        for oy in 0..d.oh {
            for ox in 0..d.ow {
                let mut s = T::ZERO;
                for_taps(&d, oy, ox, |k| s = s + xp[k]);
                yp[oy * d.ow + ox] = s / T::from_i64(d.avg_divisor(oy, ox));
            }
        }
    });
    y
}

pub fn avg_pool_grad<T: Float>(g: &[T], d: PoolDims) -> Vec<T> {
    let per = d.oh * d.ow;
    let mut gx = vec![T::ZERO; gx_len(&d)];
    for_chunks(&mut gx, d.h * d.w, gx_len(&d), |p, gp| {
        for oy in 0..d.oh {
            for ox in 0..d.ow {
                let div = T::from_i64(d.avg_divisor(oy, ox));
                let gv = g[p * per + oy * d.ow + ox] / div;
                for_taps(&d, oy, ox, |k| gp[k] = gp[k] + gv);
            }
        }
    });
    gx
}

#[cfg(all(test, target_arch = "x86_64"))]
#[path = "pool_tests.rs"]
mod tests;
