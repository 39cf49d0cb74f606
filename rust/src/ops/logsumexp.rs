//! logsumexp along one or more axes as one recorded op: m + log(sum(exp(x - m))), m the maximum
//! clamped to the dtype's finite range (so a row of -inf gives -inf and one holding +inf gives
//! +inf, as PyTorch), each sum a left fold in index order. The gradient is PyTorch's rule,
//! g * exp(x - out), in one pass.

use super::axes::{count, fold_each, reduced, resolve};
use crate::autograd::no_grad;
use crate::autograd::record::{first, Attr, Record};
use crate::ops::elementwise::{add, clamp, exp, log, mul, sub};
use crate::ops::layout::reshape_to;
use crate::ops::reduce::{max, sum};
use crate::{DType, Error, Result, Shape, Tensor};

/// logsumexp of `x` along `axes` (negative counts from the end); the axes are dropped, or kept
/// with size 1 when `keepdim`. They must not be empty. One axis runs the storage's kernel (max,
/// exp, sum and log in one pass per row); several compose max, exp, sum and log axis by axis,
/// from the last (each fold across the lanes of the others).
pub fn logsumexp(x: &Tensor, axes: &[isize], keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(crate::error::not_float("logsumexp", x.dtype()));
    }
    let axes = resolve("logsumexp", x.shape(), axes)?;
    if count(x.shape(), &axes) == 0 {
        return Err(Error::arg(
            "logsumexp",
            format!("axes {axes:?} of {} are empty", x.shape()),
        ));
    }
    let big = match x.dtype() {
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    let s = match axes[..] {
        [ax] => {
            let (outer, len, inner) = x.shape().split_at_axis(ax);
            x.storage().logsumexp(outer, len, inner, big)?
        }
        _ => no_grad(|| -> Result<_> {
            let m = fold_each(x, &axes, |t, a| max(t, Some(a), true))?;
            let m = clamp(&m, Some(-big), Some(big))?;
            let e = exp(&sub(x, &m)?)?;
            let s = fold_each(&e, &axes, |t, a| sum(t, Some(a), true))?;
            Ok(add(&log(&s)?, &m)?.storage().clone())
        })?,
    };
    let op = LogSumExp {
        x: x.clone(),
        axes: axes.clone(),
        keepdim,
    };
    Ok(Tensor::from_op(s, reduced(x.shape(), &axes, keepdim), op))
}

/// logsumexp of `x` along `axes`.
#[derive(Clone)]
pub struct LogSumExp {
    pub x: Tensor,
    pub axes: Vec<usize>,
    pub keepdim: bool,
}

impl Record for LogSumExp {
    crate::autograd::record::named!("logsumexp");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("axes", Attr::List(self.axes.clone())),
            ("keepdim", Attr::Flag(self.keepdim)),
        ]
    }
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        // PyTorch's logsumexp_backward: g * exp(x - out), the axes kept to broadcast.
        let kept = reduced(self.x.shape(), &self.axes, true);
        let (out, g) = (reshape_to(out, kept.clone()), reshape_to(g, kept));
        Ok(vec![Some(mul(&g, &exp(&sub(&self.x, &out)?)?)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        logsumexp(first("logsumexp", xs)?, &axes, self.keepdim)
    }
}
