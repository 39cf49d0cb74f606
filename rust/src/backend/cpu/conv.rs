//! 2-D convolution (cross-correlation, zero padding) on [N, C, H, W]. Reference kernels fold
//! each output over (input channel, kernel row, kernel column) in that order from 0, skipping
//! padding cells; fast kernels lower to im2col + the `gemm` crate.

use super::matmul::{gemm_fast, GemmElem};
use super::parallel::install;
use crate::dtype::Float;
use rayon::prelude::*;

/// Sizes of one convolution.
#[derive(Debug, Clone, Copy)]
pub struct ConvDims {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub oc: usize,
    pub kh: usize,
    pub kw: usize,
    pub stride: usize,
    pub pad: usize,
    pub oh: usize,
    pub ow: usize,
}

impl ConvDims {
    /// Output columns `ow` whose input column `ow*s + kx - p` lies inside [0, w).
    fn valid_cols(&self, kx: usize) -> (usize, usize) {
        let (s, p) = (self.stride, self.pad);
        let lo = if kx >= p { 0 } else { (p - kx).div_ceil(s) };
        // Largest ow with ow*s + kx - p <= w - 1.
        let hi = if self.w + p > kx {
            ((self.w + p - kx - 1) / s + 1).min(self.ow)
        } else {
            0
        };
        (lo, hi.max(lo))
    }
    fn in_row(&self, oy: usize, ky: usize) -> Option<usize> {
        let r = oy * self.stride + ky;
        (r >= self.pad && r - self.pad < self.h).then(|| r - self.pad)
    }
}

/// Reference forward: y[n, o] = (fold over c, ky, kx of w * x) + bias.
pub fn conv2d_ref<T: Float>(x: &[T], wt: &[T], bias: Option<&[T]>, d: ConvDims) -> Vec<T> {
    let plane = d.oh * d.ow;
    let mut y = vec![T::ZERO; d.n * d.oc * plane];
    let kernel = d.c * d.kh * d.kw;
    install(|| {
        y.par_chunks_mut(plane.max(1))
            .enumerate()
            .for_each(|(no, out)| {
                let (n, o) = (no / d.oc, no % d.oc);
                for c in 0..d.c {
                    let xp = &x[(n * d.c + c) * d.h * d.w..][..d.h * d.w];
                    for ky in 0..d.kh {
                        for kx in 0..d.kw {
                            let wv = wt[o * kernel + (c * d.kh + ky) * d.kw + kx];
                            let (lo, hi) = d.valid_cols(kx);
                            for oy in 0..d.oh {
                                let Some(iy) = d.in_row(oy, ky) else { continue };
                                let row = &xp[iy * d.w..][..d.w];
                                let acc = &mut out[oy * d.ow..][..d.ow];
                                for ox in lo..hi {
                                    acc[ox] = acc[ox] + wv * row[ox * d.stride + kx - d.pad];
                                }
                            }
                        }
                    }
                }
                if let Some(b) = bias {
                    out.iter_mut().for_each(|v| *v = *v + b[o]);
                }
            });
    });
    y
}

/// Reference input gradient: gx[n, c] folds over (o, ky, kx) in order.
pub fn conv2d_grad_input_ref<T: Float>(g: &[T], wt: &[T], d: ConvDims) -> Vec<T> {
    let plane = d.h * d.w;
    let kernel = d.c * d.kh * d.kw;
    let mut gx = vec![T::ZERO; d.n * d.c * plane];
    install(|| {
        gx.par_chunks_mut(plane.max(1))
            .enumerate()
            .for_each(|(nc, acc)| {
                let (n, c) = (nc / d.c, nc % d.c);
                for o in 0..d.oc {
                    let gp = &g[(n * d.oc + o) * d.oh * d.ow..][..d.oh * d.ow];
                    for ky in 0..d.kh {
                        for kx in 0..d.kw {
                            let wv = wt[o * kernel + (c * d.kh + ky) * d.kw + kx];
                            let (lo, hi) = d.valid_cols(kx);
                            for oy in 0..d.oh {
                                let Some(iy) = d.in_row(oy, ky) else { continue };
                                for ox in lo..hi {
                                    let i = iy * d.w + ox * d.stride + kx - d.pad;
                                    acc[i] = acc[i] + gp[oy * d.ow + ox] * wv;
                                }
                            }
                        }
                    }
                }
            });
    });
    gx
}

/// Reference weight gradient: gw[o, c, ky, kx] folds over (n, oy, ox) in order.
pub fn conv2d_grad_weight_ref<T: Float>(g: &[T], x: &[T], d: ConvDims) -> Vec<T> {
    let kernel = d.c * d.kh * d.kw;
    let mut gw = vec![T::ZERO; d.oc * kernel];
    install(|| {
        gw.par_chunks_mut(kernel.max(1))
            .enumerate()
            .for_each(|(o, acc)| {
                for c in 0..d.c {
                    for ky in 0..d.kh {
                        for kx in 0..d.kw {
                            let (lo, hi) = d.valid_cols(kx);
                            let mut s = T::ZERO;
                            for n in 0..d.n {
                                let gp = &g[(n * d.oc + o) * d.oh * d.ow..][..d.oh * d.ow];
                                let xp = &x[(n * d.c + c) * d.h * d.w..][..d.h * d.w];
                                for oy in 0..d.oh {
                                    let Some(iy) = d.in_row(oy, ky) else { continue };
                                    for ox in lo..hi {
                                        s = s + gp[oy * d.ow + ox]
                                            * xp[iy * d.w + ox * d.stride + kx - d.pad];
                                    }
                                }
                            }
                            acc[(c * d.kh + ky) * d.kw + kx] = s;
                        }
                    }
                }
            });
    });
    gw
}

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

/// Fast forward: per image, W [OC, CKK] @ cols [CKK, OH*OW] through the gemm crate.
pub fn conv2d_fast<T: GemmElem>(x: &[T], wt: &[T], bias: Option<&[T]>, d: ConvDims) -> Vec<T> {
    let (plane, kk) = (d.oh * d.ow, d.c * d.kh * d.kw);
    let mut y = vec![T::ZERO; d.n * d.oc * plane];
    install(|| {
        y.par_chunks_mut((d.oc * plane).max(1))
            .enumerate()
            .for_each(|(n, out)| {
                let cols = im2col(&x[n * d.c * d.h * d.w..][..d.c * d.h * d.w], d);
                gemm_fast(d.oc, plane, kk, wt, kk, 1, &cols, plane, 1, out, false);
                if let Some(b) = bias {
                    for (o, row) in out.chunks_mut(plane.max(1)).enumerate() {
                        row.iter_mut().for_each(|v| *v = *v + b[o]);
                    }
                }
            });
    });
    y
}

/// Fast gradients of input and weight through the same lowering.
pub fn conv2d_grads_fast<T: GemmElem>(g: &[T], x: &[T], wt: &[T], d: ConvDims) -> (Vec<T>, Vec<T>) {
    let (plane, kk, img) = (d.oh * d.ow, d.c * d.kh * d.kw, d.c * d.h * d.w);
    let mut gx = vec![T::ZERO; d.n * img];
    let mut gw = vec![T::ZERO; d.oc * kk];
    let mut tmp = vec![T::ZERO; d.oc * kk];
    for n in 0..d.n {
        let gy = &g[n * d.oc * plane..][..d.oc * plane];
        let cols = im2col(&x[n * img..][..img], d);
        // gW += gY [OC, P] @ colsᵀ [P, CKK]
        gemm_fast(
            d.oc, kk, plane, gy, plane, 1, &cols, 1, plane, &mut tmp, true,
        );
        gw.iter_mut().zip(&tmp).for_each(|(a, &b)| *a = *a + b);
        // gcols = Wᵀ [CKK, OC] @ gY [OC, P]
        let mut gcols = vec![T::ZERO; kk * plane];
        gemm_fast(kk, plane, d.oc, wt, 1, kk, gy, plane, 1, &mut gcols, true);
        col2im(&gcols, d, &mut gx[n * img..][..img]);
    }
    (gx, gw)
}
