//! 2-D convolution (cross-correlation, zero padding) on [N, C, H, W], lowered to im2col and a
//! GEMM per image. Reference kernels use the reference GEMM, so each output is a left fold from 0
//! over (input channel, kernel row, kernel column) with separate multiply and add, padding cells
//! taking part as zeros, then + bias; fast kernels use the `gemm` crate.

use super::matmul::{product, GemmElem};
use super::parallel::{install, worth_threads};
use crate::dtype::Float;
use crate::geometry::ConvDims;
use rayon::prelude::*;

/// Bias gradient: per output channel, a fold over (n, oy, ox).
pub fn conv2d_grad_bias<T: Float>(g: &[T], d: ConvDims) -> Vec<T> {
    let plane = d.oh * d.ow;
    (0..d.oc)
        .map(|o| {
            let mut s = T::ZERO;
            for n in 0..d.n {
                for &v in &g[(n * d.oc + o) * plane..][..plane] {
                    s = s + v;
                }
            }
            s
        })
        .collect()
}

/// Unfolds one image [C, H, W] into columns [C*KH*KW, OH*OW] (padding cells are 0).
fn im2col<T: Float>(x: &[T], d: ConvDims) -> Vec<T> {
    let plane = d.oh * d.ow;
    let mut cols = vec![T::ZERO; d.c * d.kh * d.kw * plane];
    for c in 0..d.c {
        for ky in 0..d.kh {
            for kx in 0..d.kw {
                let row = &mut cols[((c * d.kh + ky) * d.kw + kx) * plane..][..plane];
                let (lo, hi) = d.valid_cols(kx);
                for oy in 0..d.oh {
                    let Some(iy) = d.in_row(oy, ky) else { continue };
                    for ox in lo..hi {
                        row[oy * d.ow + ox] = x[(c * d.h + iy) * d.w + ox * d.stride + kx - d.pad];
                    }
                }
            }
        }
    }
    cols
}

/// Adds columns [C*KH*KW, OH*OW] back into an image [C, H, W] (the adjoint of im2col).
fn col2im<T: Float>(cols: &[T], d: ConvDims, x: &mut [T]) {
    let plane = d.oh * d.ow;
    for c in 0..d.c {
        for ky in 0..d.kh {
            for kx in 0..d.kw {
                let row = &cols[((c * d.kh + ky) * d.kw + kx) * plane..][..plane];
                let (lo, hi) = d.valid_cols(kx);
                for oy in 0..d.oh {
                    let Some(iy) = d.in_row(oy, ky) else { continue };
                    for ox in lo..hi {
                        let i = (c * d.h + iy) * d.w + ox * d.stride + kx - d.pad;
                        x[i] = x[i] + row[oy * d.ow + ox];
                    }
                }
            }
        }
    }
}

/// Forward: per image, W [OC, CKK] @ cols [CKK, OH*OW], then + bias. Images run in parallel
/// when there are several; a single image threads inside its GEMM instead.
pub fn conv2d<T: GemmElem>(
    x: &[T],
    wt: &[T],
    bias: Option<&[T]>,
    d: ConvDims,
    fast: bool,
) -> Vec<T> {
    let (plane, kk, img) = (d.oh * d.ow, d.c * d.kh * d.kw, d.c * d.h * d.w);
    let mut y = vec![T::ZERO; d.n * d.oc * plane];
    let one = |n: usize, out: &mut [T], parallel: bool| {
        let cols = im2col(&x[n * img..][..img], d);
        product(
            fast, d.oc, plane, kk, wt, kk, 1, &cols, plane, 1, out, parallel,
        );
        if let Some(b) = bias {
            for (o, row) in out.chunks_mut(plane.max(1)).enumerate() {
                row.iter_mut().for_each(|v| *v = *v + b[o]);
            }
        }
    };
    let work = d.n * d.oc * plane * kk;
    if !worth_threads(work, 1 << 20) {
        y.chunks_mut((d.oc * plane).max(1))
            .enumerate()
            .for_each(|(n, out)| one(n, out, false));
    } else if d.n == 1 {
        install(|| one(0, &mut y, true));
    } else {
        install(|| {
            y.par_chunks_mut((d.oc * plane).max(1))
                .enumerate()
                .for_each(|(n, out)| one(n, out, false))
        });
    }
    y
}

/// Gradients of input and weight through the same lowering. Large images run one pair of
/// products per image (in parallel across images); small feature maps, where per-image products
/// would be thin, fold the batch into the products' spatial axis. Either way the result is a
/// fixed function of the shapes, whatever the thread count.
pub fn conv2d_grads<T: GemmElem>(
    g: &[T],
    x: &[T],
    wt: &[T],
    d: ConvDims,
    fast: bool,
) -> (Vec<T>, Vec<T>) {
    if d.oh * d.ow >= 64 {
        grads_per_image(g, x, wt, d, fast)
    } else {
        grads_batched(g, x, wt, d, fast)
    }
}

/// Per image: gcols = Wᵀ gY (then col2im) and gW_n = gY colsᵀ; the weight gradient adds the
/// images' gW_n in image order.
fn grads_per_image<T: GemmElem>(
    g: &[T],
    x: &[T],
    wt: &[T],
    d: ConvDims,
    fast: bool,
) -> (Vec<T>, Vec<T>) {
    let (plane, kk, img) = (d.oh * d.ow, d.c * d.kh * d.kw, d.c * d.h * d.w);
    let mut gx = vec![T::ZERO; d.n * img];
    let mut per_image = vec![T::ZERO; d.n * d.oc * kk];
    let one = |n: usize, gxn: &mut [T], gwn: &mut [T], parallel: bool| {
        let gy = &g[n * d.oc * plane..][..d.oc * plane];
        let cols = im2col(&x[n * img..][..img], d);
        // gW_n = gY [OC, P] @ colsᵀ [P, CKK]
        product(
            fast, d.oc, kk, plane, gy, plane, 1, &cols, 1, plane, gwn, parallel,
        );
        // gcols = Wᵀ [CKK, OC] @ gY [OC, P]
        let mut gcols = vec![T::ZERO; kk * plane];
        product(
            fast, kk, plane, d.oc, wt, 1, kk, gy, plane, 1, &mut gcols, parallel,
        );
        col2im(&gcols, d, gxn);
    };
    let work = d.n * d.oc * plane * kk;
    let (gx_chunk, gw_chunk) = (img.max(1), (d.oc * kk).max(1));
    if !worth_threads(work, 1 << 20) {
        for (n, (gxn, gwn)) in gx
            .chunks_mut(gx_chunk)
            .zip(per_image.chunks_mut(gw_chunk))
            .enumerate()
        {
            one(n, gxn, gwn, false);
        }
    } else if d.n == 1 {
        install(|| one(0, &mut gx, &mut per_image, true));
    } else {
        install(|| {
            gx.par_chunks_mut(gx_chunk)
                .zip(per_image.par_chunks_mut(gw_chunk))
                .enumerate()
                .for_each(|(n, (gxn, gwn))| one(n, gxn, gwn, false))
        });
    }
    let mut gw = vec![T::ZERO; d.oc * kk];
    for part in per_image.chunks(gw_chunk) {
        gw.iter_mut().zip(part).for_each(|(a, &b)| *a = *a + b);
    }
    (gx, gw)
}

/// The batch folded into the GEMMs' spatial axis: with gY as [OC, N·P] and the images' columns side by side as
/// [CKK, N·P], gW = gY · colsᵀ is one product (each weight gradient a fold over (n, oy, ox))
/// and gcols = Wᵀ · gY another, scattered back per image by col2im.
fn grads_batched<T: GemmElem>(
    g: &[T],
    x: &[T],
    wt: &[T],
    d: ConvDims,
    fast: bool,
) -> (Vec<T>, Vec<T>) {
    let (plane, kk, img) = (d.oh * d.ow, d.c * d.kh * d.kw, d.c * d.h * d.w);
    let np = d.n * plane;
    // [CKK, N·P]: image n's columns occupy columns n·P .. (n+1)·P.
    let mut cols = vec![T::ZERO; kk * np];
    // [OC, N·P]: gY with the image axis moved next to the spatial one.
    let mut gy = vec![T::ZERO; d.oc * np];
    for n in 0..d.n {
        let c_n = im2col(&x[n * img..][..img], d);
        for q in 0..kk {
            cols[q * np + n * plane..][..plane].copy_from_slice(&c_n[q * plane..][..plane]);
        }
        for o in 0..d.oc {
            gy[o * np + n * plane..][..plane]
                .copy_from_slice(&g[(n * d.oc + o) * plane..][..plane]);
        }
    }
    let parallel = worth_threads(d.oc * np * kk, 1 << 20);
    let mut gw = vec![T::ZERO; d.oc * kk];
    let mut gcols = vec![T::ZERO; kk * np];
    let run = |gw: &mut [T], gcols: &mut [T]| {
        // gW = gY [OC, N·P] @ colsᵀ [N·P, CKK]
        product(fast, d.oc, kk, np, &gy, np, 1, &cols, 1, np, gw, parallel);
        // gcols = Wᵀ [CKK, OC] @ gY [OC, N·P]
        product(fast, kk, np, d.oc, wt, 1, kk, &gy, np, 1, gcols, parallel);
    };
    if parallel {
        install(|| run(&mut gw, &mut gcols));
    } else {
        run(&mut gw, &mut gcols);
    }
    let mut gx = vec![T::ZERO; d.n * img];
    let mut block = vec![T::ZERO; kk * plane];
    for n in 0..d.n {
        for q in 0..kk {
            block[q * plane..][..plane].copy_from_slice(&gcols[q * np + n * plane..][..plane]);
        }
        col2im(&block, d, &mut gx[n * img..][..img]);
    }
    (gx, gw)
}
