//! Attention's weights in one op: `softmax(masked_fill(x * scale, hidden, -inf))` over the last
//! axis of scores [.., queries, keys], with the causal mask (query q sees keys 0..=q) or none.
//! Every value is the op chain's (mul, masked_fill, softmax): the same IEEE operations on each
//! element and the same left folds (`softmax.rs`'s sixteen-row kernels), so the bits match. Two
//! shortcuts keep them: a hidden key's weight is exp(-inf - m) = +0 for a row whose max m is
//! finite, so only the visible keys take an exponential (half the work under a causal mask), and
//! adding +0 to a row's sum, which is never -0, leaves it unchanged. A row with a non-finite max
//! takes every exponential, as the chain does.
//!
//! Backward, per element: `(hidden ? +0 : y * (g - sum(g * y))) * scale`, the chain's gradient
//! through softmax, masked_fill (zeros where hidden) and the product by the scale.

use super::exp_lanes::ExpRow;
use super::row_folds::{fold_rows, max_rows};
use super::simd::wide_fn;
use super::softmax::{by_groups, softmax_grad_rows_body, ROWS};
use super::storage::{CpuElem, CpuStorage};
use super::uninit::{assume_init, written};
pub use crate::geometry::ScoreRows;
use crate::{DType, Result};
use std::mem::MaybeUninit;

/// The rows from global row `r0` on; writes every element of `out`.
#[inline(always)]
fn forward_body<T: ExpRow>(x: &[T], out: &mut [MaybeUninit<T>], d: ScoreRows, r0: usize, scale: T) {
    let len = d.keys;
    for (b, (x, out)) in x
        .chunks(ROWS * len)
        .zip(out.chunks_mut(ROWS * len))
        .enumerate()
    {
        let first = r0 + b * ROWS;
        for (r, (o, xr)) in out
            .chunks_exact_mut(len)
            .zip(x.chunks_exact(len))
            .enumerate()
        {
            let k = d.seen(first + r);
            for (o, &v) in o[..k].iter_mut().zip(&xr[..k]) {
                o.write(v * scale);
            }
            for o in &mut o[k..] {
                o.write(T::NEG_INFINITY);
            }
        }
        // SAFETY: the chunk holds whole rows, each just written.
        let out = unsafe { assume_init(out) };
        let m = max_rows(out, len);
        for (r, o) in out.chunks_exact_mut(len).enumerate() {
            let k = if m[r].is_finite() {
                d.seen(first + r)
            } else {
                len
            };
            for v in &mut o[..k] {
                *v = *v - m[r];
            }
            T::exp_row(&mut o[..k]);
            o[k..].fill(T::ZERO);
        }
        let s = fold_rows([T::ZERO; ROWS], out, len, false);
        for (r, o) in out.chunks_exact_mut(len).enumerate() {
            for v in o.iter_mut() {
                *v = *v / s[r];
            }
        }
    }
}

/// The gradient for rows from global row `r0` on; writes every element of `out`.
#[inline(always)]
fn backward_body<T: ExpRow>(
    y: &[T],
    g: &[T],
    out: &mut [MaybeUninit<T>],
    d: ScoreRows,
    r0: usize,
    scale: T,
) {
    let len = d.keys;
    softmax_grad_rows_body(y, g, out, len, false);
    // SAFETY: softmax_grad_rows_body writes every element.
    let out = unsafe { assume_init(out) };
    for (r, o) in out.chunks_exact_mut(len).enumerate() {
        let k = d.seen(r0 + r);
        for v in &mut o[..k] {
            *v = *v * scale;
        }
        o[k..].fill(T::ZERO * scale);
    }
}

wide_fn!(fn forward_wide<T: ExpRow>(
    x: &[T], out: &mut [MaybeUninit<T>], d: ScoreRows, r0: usize, scale: T,
) = forward_body);
wide_fn!(fn backward_wide<T: ExpRow>(
    y: &[T], g: &[T], out: &mut [MaybeUninit<T>], d: ScoreRows, r0: usize, scale: T,
) = backward_body);

/// Attention weights of scores `x` (whole rows of `d.keys`).
pub fn attention_softmax<T: ExpRow>(x: &[T], d: ScoreRows, scale: T) -> Vec<T> {
    if d.keys == 0 {
        return Vec::new();
    }
    written(x.len(), |out| {
        by_groups(x, out, d.keys, |at, out| {
            forward_wide(&x[at.clone()], out, d, at.start / d.keys, scale)
        })
    })
}

/// The scores' gradient for upstream `g`, from the weights `y`.
pub fn attention_softmax_grad<T: ExpRow>(y: &[T], g: &[T], d: ScoreRows, scale: T) -> Vec<T> {
    if d.keys == 0 {
        return Vec::new();
    }
    written(y.len(), |out| {
        by_groups(y, out, d.keys, |at, out| {
            let (yr, gr) = (&y[at.clone()], &g[at.clone()]);
            backward_wide(yr, gr, out, d, at.start / d.keys, scale)
        })
    })
}

const OP: &str = "attention_softmax";

impl CpuStorage {
    /// `attention_softmax` of `self` (f32 or f64), the scale rounded to that dtype.
    pub fn attention_softmax(&self, d: ScoreRows, scale: f64) -> Result<CpuStorage> {
        fn go<T: CpuElem + ExpRow>(x: &CpuStorage, d: ScoreRows, scale: f64) -> Result<CpuStorage> {
            let x = x.typed::<T>(OP)?;
            Ok(T::wrap(attention_softmax(x, d, T::from_f64(scale))))
        }
        match self.dtype() {
            DType::F32 => go::<f32>(self, d, scale),
            DType::F64 => go::<f64>(self, d, scale),
            other => Err(crate::error::not_float(OP, other)),
        }
    }

    /// The gradient of `attention_softmax` for upstream `g`, from its output `self`.
    pub fn attention_softmax_grad(
        &self,
        g: &CpuStorage,
        d: ScoreRows,
        scale: f64,
    ) -> Result<CpuStorage> {
        fn go<T: CpuElem + ExpRow>(
            y: &CpuStorage,
            g: &CpuStorage,
            d: ScoreRows,
            scale: f64,
        ) -> Result<CpuStorage> {
            let (y, g) = (y.typed::<T>(OP)?, g.typed::<T>(OP)?);
            Ok(T::wrap(attention_softmax_grad(y, g, d, T::from_f64(scale))))
        }
        match self.dtype() {
            DType::F32 => go::<f32>(self, g, d, scale),
            DType::F64 => go::<f64>(self, g, d, scale),
            other => Err(crate::error::not_float(OP, other)),
        }
    }
}
