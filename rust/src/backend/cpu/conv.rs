//! 2-D convolution (cross-correlation, zero padding) on [N, C, H, W], lowered to im2col and
//! GEMMs over groups of images side by side (conv_grad.rs has the gradients). Reference kernels
//! use the reference GEMM, so each output is a left fold from 0 over (input channel, kernel row,
//! kernel column) with separate multiply and add, padding cells taking part as zeros, then plus
//! the bias, however many images share a product; fast kernels use the `gemm` crate. Where a
//! direct kernel covers the shapes (`conv_direct/`, f32 on AVX-512) it runs instead, with the
//! same bits in reference mode.

use super::matmul::{product_into, GemmElem};
use super::parallel::{for_chunks, worth_threads};
use super::simd;
use super::uninit::{assume_init, filled, written};
use crate::dtype::Float;
use crate::geometry::{Activation, ConvDims};
use std::mem::MaybeUninit;

/// Products below this many multiply-adds run on the calling thread.
pub(super) const PAR_MIN_FLOPS: usize = 1 << 20;

/// Column elements one group of images may fill ([CKK, G·P] stays under it): bounds the
/// lowering's memory for large batches. The group size is a function of the shapes alone.
const COLS_BUDGET: usize = 1 << 22;

/// Feature maps with fewer output positions than this fold a group of images into one product
/// (a product per image would be too thin to run fast); larger ones run a product per image,
/// images across threads.
pub(crate) const BATCH_BELOW: usize = 64;

pub(super) fn group_size(d: &ConvDims) -> usize {
    let per_image = (d.c * d.kh * d.kw * d.oh * d.ow).max(1);
    (COLS_BUDGET / per_image).clamp(1, d.n.max(1))
}

/// Weights (OC·C·KH·KW) from which a fast forward on small maps goes through the unpacked thin
/// product rather than a kernel that packs them (4 MiB of f32).
const THIN_WEIGHTS: usize = 1 << 20;

/// Bias gradient: per output channel, a left fold from 0 over (n, oy, ox). Sixteen channels go
/// side by side, each its own fold in that order (so the bits are the fold's), which turns one
/// chain of dependent adds into sixteen independent ones (8 images, 64 channels at 16x16:
/// 56 -> 9 us on 2 threads).
pub fn conv2d_grad_bias<T: Float>(g: &[T], d: ConvDims) -> Vec<T> {
    const SIDE: usize = 16;
    let plane = d.oh * d.ow;
    filled(d.oc, SIDE, d.n * d.oc * plane, |ci, out| {
        let o0 = ci * SIDE;
        let mut acc = [T::ZERO; SIDE];
        if out.len() == SIDE {
            for n in 0..d.n {
                let rows: [&[T]; SIDE] =
                    std::array::from_fn(|j| &g[(n * d.oc + o0 + j) * plane..][..plane]);
                // `p` indexes sixteen rows at once.
                #[allow(clippy::needless_range_loop)]
                for p in 0..plane {
                    for j in 0..SIDE {
                        acc[j] = acc[j] + rows[j][p];
                    }
                }
            }
        } else {
            for (j, a) in acc.iter_mut().enumerate().take(out.len()) {
                for n in 0..d.n {
                    for &v in &g[(n * d.oc + o0 + j) * plane..][..plane] {
                        *a = *a + v;
                    }
                }
            }
        }
        for (o, &a) in out.iter_mut().zip(&acc) {
            o.write(a);
        }
    })
}

/// Unfolds images `n0..n0 + g` into columns [C*KH*KW, g*OH*OW] (padding cells are 0): row
/// (c, ky, kx) holds image i's patch values at columns i*P .. (i+1)*P. Rows fill in parallel,
/// each output row's valid span as one contiguous (stride 1) or strided copy, into memory that
/// is never zeroed first (the padding cells are written as zeros).
pub(super) fn im2col<T: Float>(x: &[T], d: ConvDims, n0: usize, g: usize) -> Vec<T> {
    let (plane, img) = (d.oh * d.ow, d.c * d.h * d.w);
    let kk = d.c * d.kh * d.kw;
    // A huge padding with a huge stride reads a few cells of a huge padded plane: no copy.
    let padded = (d.h + 2 * d.pad).saturating_mul(d.w + 2 * d.pad);
    if plane <= TINY_PLANE && d.h * d.w <= 4 * TINY_PLANE && padded <= 16 * TINY_PLANE {
        return im2col_tiny(x, d, n0, g);
    }
    filled(kk * g * plane, g * plane, kk * g * plane, |q, row| {
        let (c, ky, kx) = (q / (d.kh * d.kw), (q / d.kw) % d.kh, q % d.kw);
        let (lo, hi) = d.valid_cols(kx);
        for (i, r) in row.chunks_mut(plane).enumerate() {
            let xi = &x[(n0 + i) * img + c * d.h * d.w..][..d.h * d.w];
            if shifts(&d) {
                shifted_plane(xi, d, ky, kx, r);
                continue;
            }
            for (oy, out) in r.chunks_mut(d.ow).enumerate() {
                let Some(iy) = d.in_row(oy, ky).filter(|_| hi > lo) else {
                    zero(out);
                    continue;
                };
                zero(&mut out[..lo]);
                zero(&mut out[hi..]);
                let src = &xi[iy * d.w + lo * d.stride + kx - d.pad..];
                let dst = &mut out[lo..hi];
                match d.stride {
                    1 => dst.iter_mut().zip(src).for_each(|(o, &v)| _ = o.write(v)),
                    2 => gather_every::<T, 2>(dst, src),
                    s => dst
                        .iter_mut()
                        .zip(src.iter().step_by(s))
                        .for_each(|(o, &v)| _ = o.write(v)),
                }
            }
        }
    })
}

/// `dst[j] = src[j * S]`: with the stride a constant, the loop vectorises (loads and shuffles)
/// where `step_by` stays one element at a time; compiled for AVX-512 where the CPU has it (the
/// closures this runs in keep the baseline width).
#[inline(always)]
fn gather_every<T: Float, const S: usize>(dst: &mut [MaybeUninit<T>], src: &[T]) {
    #[inline(always)]
    fn body<T: Float, const S: usize>(dst: &mut [MaybeUninit<T>], src: &[T]) {
        let Some(last) = dst.len().checked_sub(1) else {
            return;
        };
        let (body, tail) = src.split_at(last * S);
        for (o, run) in dst[..last].iter_mut().zip(body.chunks_exact(S)) {
            o.write(run[0]);
        }
        dst[last].write(tail[0]);
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
    unsafe fn wide<T: Float, const S: usize>(dst: &mut [MaybeUninit<T>], src: &[T]) {
        body::<T, S>(dst, src)
    }
    #[cfg(target_arch = "x86_64")]
    if simd::has_avx512() {
        // SAFETY: the features `wide` is compiled for were just detected.
        return unsafe { wide::<T, S>(dst, src) };
    }
    body::<T, S>(dst, src)
}

fn zero<T: Float>(o: &mut [MaybeUninit<T>]) {
    o.iter_mut().for_each(|v| _ = v.write(T::ZERO));
}

/// Output positions per map up to which `im2col` gathers from a padded copy (from inputs of at
/// most 4× as many cells, padded planes of at most 16×, so the copy stays small): on 2×2 maps
/// the stretch copies and zero fills of the general form cost more in calls than in cells.
const TINY_PLANE: usize = 4;

/// `im2col` on tiny maps: the images' planes are padded once (zeros around), then row
/// (c, ky, kx) is a gather from its padded planes through one table of offsets, the same for
/// every row: column (i, oy, ox) reads image i's plane at row oy·s + ky, column ox·s + kx. Rows
/// of a few cells per image make a loop per image and map row too short to pay its setup.
fn im2col_tiny<T: Float>(x: &[T], d: ConvDims, n0: usize, g: usize) -> Vec<T> {
    let (hw, pw) = (d.h * d.w, d.w + 2 * d.pad);
    let pp = (d.h + 2 * d.pad) * pw;
    let mut padded = vec![T::ZERO; g * d.c * pp];
    // Plane i is channel i % C of image n0 + i / C, as x holds them.
    for (i, dst) in padded.chunks_mut(pp.max(1)).enumerate() {
        let src = &x[(n0 * d.c + i) * hw..][..hw];
        for (y, row) in src.chunks_exact(d.w.max(1)).enumerate().take(d.h) {
            dst[(y + d.pad) * pw + d.pad..][..d.w].copy_from_slice(row);
        }
    }
    let offsets: Vec<usize> = (0..g)
        .flat_map(|i| (0..d.oh).map(move |oy| (i, oy)))
        .flat_map(|(i, oy)| {
            (0..d.ow).map(move |ox| i * d.c * pp + oy * d.stride * pw + ox * d.stride)
        })
        .collect();
    let kk = d.c * d.kh * d.kw;
    let cols = offsets.len();
    filled(kk * cols, cols, kk * cols, |q, row| {
        let (c, ky, kx) = (q / (d.kh * d.kw), (q / d.kw) % d.kh, q % d.kw);
        let src = &padded[c * pp + ky * pw + kx..];
        for (o, &at) in row.iter_mut().zip(&offsets) {
            o.write(src[at]);
        }
    })
}

/// One im2col row of one image when the stride is 1 and rows keep their width (OW = W): the
/// plane shifted by (ky - pad) rows and (kx - pad) columns, so every row that reads the input
/// is one stretch of one copy; the cells that stretch wraps across row ends are then zeroed,
/// like the rows above and below the input.
fn shifted_plane<T: Float>(xi: &[T], d: ConvDims, ky: usize, kx: usize, r: &mut [MaybeUninit<T>]) {
    let (lo, hi) = d.valid_cols(kx);
    let (oy0, oy1) = valid_rows(&d, ky);
    if oy1 == oy0 || hi == lo {
        return zero(r);
    }
    let (start, end) = (oy0 * d.ow + lo, (oy1 - 1) * d.ow + hi);
    let src = &xi[(oy0 + ky - d.pad) * d.w + lo + kx - d.pad..][..end - start];
    zero(&mut r[..start]);
    r[start..end]
        .iter_mut()
        .zip(src)
        .for_each(|(o, &v)| _ = o.write(v));
    zero(&mut r[end..]);
    for oy in oy0..oy1 - 1 {
        zero(&mut r[oy * d.ow + hi..(oy + 1) * d.ow + lo]);
    }
}

/// Whether im2col rows of this geometry are shifted copies of the input plane (stride 1, rows
/// as wide as the input's): then an output row's valid span runs on into the next row's.
fn shifts(d: &ConvDims) -> bool {
    d.stride == 1 && d.ow == d.w
}

/// The output rows oy0..oy1 of kernel row `ky` that read the input (`oy*s + ky - p` in [0, h)).
fn valid_rows(d: &ConvDims, ky: usize) -> (usize, usize) {
    let oy0 = d.pad.saturating_sub(ky).div_ceil(d.stride).min(d.oh);
    let oy1 = match (d.h + d.pad).checked_sub(ky + 1) {
        Some(last) => (last / d.stride + 1).min(d.oh),
        None => 0,
    };
    (oy0, oy1.max(oy0))
}

/// Zeroes, in every row of columns [CKK, stride] holding `images` images side by side, the
/// cells between one output row's valid span and the next (they read padding), so that
/// `col2im` can add each row's valid rows as one stretch. Only shifting geometries have such
/// cells in a stretch; others are left as they are.
pub(super) fn clear_wrapped<T: Float>(cols: &mut [T], stride: usize, images: usize, d: ConvDims) {
    if !shifts(&d) {
        return;
    }
    let plane = d.oh * d.ow;
    for (q, row) in cols.chunks_mut(stride).enumerate() {
        let (ky, kx) = ((q / d.kw) % d.kh, q % d.kw);
        let (lo, hi) = d.valid_cols(kx);
        let (oy0, oy1) = valid_rows(&d, ky);
        for r in row[..images * plane].chunks_mut(plane) {
            for oy in oy0..oy1.saturating_sub(1) {
                r[oy * d.ow + hi..(oy + 1) * d.ow + lo].fill(T::ZERO);
            }
        }
    }
}

/// Adds one image's columns back into it [C, H, W] (the adjoint of im2col): column block
/// `cols[q * stride + off ..][..P]` for row q, added in (c, ky, kx, oy, ox) order, each output
/// row's valid span at once, or in shifting geometries (after `clear_wrapped`) all valid rows
/// as one stretch. Every element of x takes the same additions in the same order either way,
/// plus in a stretch some +0.0 from cleared cells, which leave any sum that started from +0.0
/// as it is (such a sum is never -0.0).
pub(super) fn col2im<T: Float>(cols: &[T], stride: usize, off: usize, d: ConvDims, x: &mut [T]) {
    let plane = d.oh * d.ow;
    if shifts(&d) {
        return col2im_shifting(cols, stride, off, d, x);
    }
    simd::widest(|| {
        for c in 0..d.c {
            let xc = &mut x[c * d.h * d.w..][..d.h * d.w];
            for ky in 0..d.kh {
                for kx in 0..d.kw {
                    let q = (c * d.kh + ky) * d.kw + kx;
                    let row = &cols[q * stride + off..][..plane];
                    let (lo, hi) = d.valid_cols(kx);
                    let (oy0, oy1) = valid_rows(&d, ky);
                    if hi == lo || oy1 == oy0 {
                        continue;
                    }
                    if shifts(&d) {
                        let (start, end) = (oy0 * d.ow + lo, (oy1 - 1) * d.ow + hi);
                        let dst = &mut xc[(oy0 + ky - d.pad) * d.w + lo + kx - d.pad..];
                        let src = &row[start..end];
                        dst.iter_mut().zip(src).for_each(|(a, &b)| *a = *a + b);
                        continue;
                    }
                    for oy in oy0..oy1 {
                        let iy = oy * d.stride + ky - d.pad;
                        let src = &row[oy * d.ow + lo..oy * d.ow + hi];
                        let dst = &mut xc[iy * d.w + lo * d.stride + kx - d.pad..];
                        if d.stride == 1 {
                            dst.iter_mut().zip(src).for_each(|(a, &b)| *a = *a + b);
                        } else {
                            let dst = dst.iter_mut().step_by(d.stride);
                            dst.zip(src).for_each(|(a, &b)| *a = *a + b);
                        }
                    }
                }
            }
        }
    })
}

/// `col2im` in a shifting geometry: each tap's stretch (where in its column row it starts and
/// ends, where in the plane it lands) is worked out once for all channels, which on small
/// planes is most of the work (512 channels of 2×2: 4608 taps per image of 4 cells or fewer).
/// The additions and their order are `col2im`'s.
fn col2im_shifting<T: Float>(cols: &[T], stride: usize, off: usize, d: ConvDims, x: &mut [T]) {
    let taps: Vec<Option<(usize, usize, usize)>> = (0..d.kh * d.kw)
        .map(|t| {
            let (ky, kx) = (t / d.kw, t % d.kw);
            let (lo, hi) = d.valid_cols(kx);
            let (oy0, oy1) = valid_rows(&d, ky);
            (hi > lo && oy1 > oy0).then(|| {
                let (start, end) = (oy0 * d.ow + lo, (oy1 - 1) * d.ow + hi);
                (start, end, (oy0 + ky - d.pad) * d.w + lo + kx - d.pad)
            })
        })
        .collect();
    simd::widest(|| {
        for (c, xc) in x.chunks_mut(d.h * d.w).take(d.c).enumerate() {
            for (t, tap) in taps.iter().enumerate() {
                let Some((start, end, at)) = *tap else {
                    continue;
                };
                let row = &cols[(c * taps.len() + t) * stride + off..];
                let (src, dst) = (&row[start..end], &mut xc[at..at + end - start]);
                dst.iter_mut().zip(src).for_each(|(a, &b)| *a = *a + b);
            }
        }
    })
}

/// One product into unwritten memory, threaded inside the GEMM when it is large enough.
#[allow(clippy::too_many_arguments)]
pub(super) fn product_auto<T: GemmElem>(
    fast: bool,
    m: usize,
    n: usize,
    k: usize,
    a: (&[T], usize, usize),
    b: (&[T], usize, usize),
    c: &mut [MaybeUninit<T>],
) {
    let par = worth_threads(m * n * k, PAR_MIN_FLOPS);
    product_into(fast, m, n, k, a.0, a.1, a.2, b.0, b.1, b.2, c, par)
}

/// Forward: `act`(W [OC, CKK] @ cols [CKK, G·P] + bias), the activation applied to each output
/// as it is written (while it is still in cache). Small feature maps put a group of images side
/// by side in one wide product (the weights are read once per group, not once per image) and
/// move each (image, channel) row to its place in [N, OC, P]; larger ones run one product per
/// image, images across threads (one image alone threads inside its product).
pub fn conv2d<T: GemmElem>(
    x: &[T],
    wt: &[T],
    bias: Option<&[T]>,
    d: ConvDims,
    act: Activation,
    fast: bool,
) -> Vec<T> {
    conv2d_with(x, Weights::Plain(wt), bias, d, act, fast)
}

/// The weights a convolution reads: W [OC, C, KH, KW] itself, or, for an input gradient taken
/// as a convolution, the forward's W [C, OC, KH, KW] read transposed and flipped
/// (W'[o, c, ky, kx] = W[c, o, KH-1-ky, KW-1-kx]; `forward` holds the forward's sizes).
#[derive(Clone, Copy)]
pub(super) enum Weights<'a, T> {
    Plain(&'a [T]),
    Flipped { wt: &'a [T], forward: &'a ConvDims },
}

impl<T: GemmElem> Weights<'_, T> {
    /// The stored weights and whether they are read flipped (the kernels that can).
    fn raw(&self) -> (&[T], bool) {
        match *self {
            Weights::Plain(wt) => (wt, false),
            Weights::Flipped { wt, .. } => (wt, true),
        }
    }

    /// The weights as W [OC, C, KH, KW] (a flipped copy where they are read flipped), for the
    /// paths that read them in that layout.
    fn plain(&self) -> std::borrow::Cow<'_, [T]> {
        match *self {
            Weights::Plain(wt) => std::borrow::Cow::Borrowed(wt),
            Weights::Flipped { wt, forward } => std::borrow::Cow::Owned(flipped(wt, forward)),
        }
    }
}

/// W [OC, C, KH, KW] (sizes `d`) as W' [C, OC, KH, KW] with both kernel axes reversed.
fn flipped<T: GemmElem>(wt: &[T], d: &ConvDims) -> Vec<T> {
    let kk = d.kh * d.kw;
    filled(wt.len(), (d.oc * kk).max(1), wt.len(), |c, row| {
        for (o, dst) in row.chunks_mut(kk).enumerate() {
            let src = &wt[(o * d.c + c) * kk..][..kk];
            dst.iter_mut()
                .zip(src.iter().rev())
                .for_each(|(v, &s)| _ = v.write(s));
        }
    })
}

/// `conv2d` with its weights plain or flipped: the kernels that read W in place (small maps,
/// direct forward) take the flipped reading as it is; the thin product and the lowering read a
/// flipped copy.
pub(super) fn conv2d_with<T: GemmElem>(
    x: &[T],
    weights: Weights<'_, T>,
    bias: Option<&[T]>,
    d: ConvDims,
    act: Activation,
    fast: bool,
) -> Vec<T> {
    let (plane, kk) = (d.oh * d.ow, d.c * d.kh * d.kw);
    let total = d.n * d.oc * plane;
    if plane == 0 || d.oc == 0 {
        return vec![T::ZERO; total];
    }
    // Fast kernels with many weights on small maps: every weight meets only the few columns of
    // one group of images, so packing W (as the direct forward and the GEMM do) would cost more
    // than the arithmetic; `fast_thin_rows` reads it once, unpacked (measured on 8 images of
    // 512 channels at 2×2, forward 0.77 -> 0.47 ms on 2 threads, before the small-map kernel
    // below took that shape; stride-2 convolutions onto small maps still come here).
    // 3×3 on maps of a few vectors of columns (2×2 and 4×4 at 8 images): the small-map kernel
    // skips border rows and reads W in place (8 images, 512 channels at 2×2: 0.67 -> 0.44 ms
    // on 2 threads; 256 at 4×4: 0.52 -> 0.44).
    let (raw, flip) = weights.raw();
    if fast {
        if let Some(y) = T::fast_small_maps(x, raw, bias, &d, act, flip) {
            return y;
        }
    }
    let thin = fast
        && plane < BATCH_BELOW
        && d.oc * kk >= THIN_WEIGHTS
        && T::fast_thin_rows_applies(group_size(&d).min(d.n) * plane);
    if !thin {
        if let Some(y) = T::direct_forward(x, raw, bias, &d, act, fast, flip) {
            return y;
        }
    }
    let wt = &*weights.plain();
    if plane >= BATCH_BELOW {
        let one = |n: usize, out: &mut [MaybeUninit<T>], par: bool| {
            let cols = im2col(x, d, n, 1);
            product_into(fast, d.oc, plane, kk, wt, kk, 1, &cols, plane, 1, out, par);
            // SAFETY: the product wrote every element of `out` ([OC, P]).
            let out = unsafe { assume_init(out) };
            if bias.is_some() || act != Activation::None {
                for (o, row) in out.chunks_mut(plane).enumerate() {
                    let b = bias.map(|b| b[o]);
                    row.iter_mut().for_each(|v| *v = act.finish(*v, b));
                }
            }
        };
        let per = d.oc * plane;
        return written(total, |y| {
            if d.n == 1 && worth_threads(per * kk, PAR_MIN_FLOPS) {
                one(0, y, true);
            } else {
                for_chunks(y, per, d.n * per * kk, |n, out| one(n, out, false));
            }
        });
    }
    let finish_row = |row: &mut [MaybeUninit<T>], src: &[T], o: usize| {
        let b = bias.map(|b| b[o]);
        row.iter_mut()
            .zip(src)
            .for_each(|(v, &s)| _ = v.write(act.finish(s, b)));
    };
    let g = group_size(&d);
    written(total, |y| {
        for n0 in (0..d.n).step_by(g) {
            let gn = g.min(d.n - n0);
            let np = gn * plane;
            let cols = im2col(x, d, n0, gn);
            let direct = thin
                .then(|| T::fast_thin_rows(wt, &cols, d.oc, kk, np))
                .flatten();
            let out = direct.unwrap_or_else(|| {
                written(d.oc * np, |c| {
                    product_auto(fast, d.oc, np, kk, (wt, kk, 1), (&cols, np, 1), c)
                })
            });
            // Every (image, channel) row of the group, so all of y over the groups.
            let dst = &mut y[n0 * d.oc * plane..][..gn * d.oc * plane];
            for_chunks(dst, plane, dst.len(), |r, row| {
                let (i, o) = (r / d.oc, r % d.oc);
                finish_row(row, &out[o * np + i * plane..][..plane], o);
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `valid_rows` is exactly the set of rows `in_row` accepts, for strides 1-3 and paddings
    /// below, at and beyond the kernel.
    #[test]
    fn valid_rows_are_the_rows_that_read_the_input() {
        for (h, kh, stride, pad) in [(5, 3, 1, 1), (4, 7, 2, 3), (9, 2, 3, 4), (1, 1, 1, 0)] {
            let oh = (h + 2 * pad - kh) / stride + 1;
            let d = ConvDims {
                n: 1,
                c: 1,
                h,
                w: h,
                oc: 1,
                kh,
                kw: kh,
                stride,
                pad,
                oh,
                ow: oh,
            };
            for ky in 0..kh {
                let (oy0, oy1) = valid_rows(&d, ky);
                let want: Vec<usize> = (0..oh).filter(|&oy| d.in_row(oy, ky).is_some()).collect();
                assert_eq!(
                    (oy0..oy1).collect::<Vec<_>>(),
                    want,
                    "{h} {kh} {stride} {pad} {ky}"
                );
            }
        }
    }
}
