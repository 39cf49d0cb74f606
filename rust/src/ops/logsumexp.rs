//! logsumexp along one axis as one recorded op: m + log(sum(exp(x - m))), m the maximum clamped
//! to the dtype's finite range (so a row of -inf gives -inf and one holding +inf gives +inf, as
//! PyTorch), the sum a left fold in index order. The gradient is PyTorch's rule,
//! g * exp(x - out).

use crate::autograd::record::{first, Attr, Record};
use crate::ops::elementwise::{exp, mul, sub};
use crate::ops::layout::reshape_to;
use crate::{DType, Error, Result, Shape, Tensor};

/// logsumexp of `x` along `axis` (negative counts from the end); the axis is dropped, or kept
/// with size 1 when `keepdim`. The axis must not be empty.
pub fn logsumexp(x: &Tensor, axis: isize, keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(crate::error::not_float("logsumexp", x.dtype()));
    }
    let ax = x.shape().axis("logsumexp", axis)?;
    let (outer, len, inner) = x.shape().split_at_axis(ax);
    if len == 0 {
        return Err(Error::arg(
            "logsumexp",
            format!("axis {ax} of {} is empty", x.shape()),
        ));
    }
    let big = match x.dtype() {
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    let s = x.storage().logsumexp(outer, len, inner, big)?;
    let op = LogSumExp {
        x: x.clone(),
        axis: ax,
        keepdim,
    };
    Ok(Tensor::from_op(s, reduced(x.shape(), ax, keepdim), op))
}

/// `shape` without `axis`, or with it as 1 when `keep`.
fn reduced(shape: &Shape, axis: usize, keep: bool) -> Shape {
    let mut dims = shape.dims().to_vec();
    if keep {
        dims[axis] = 1;
    } else {
        dims.remove(axis);
    }
    Shape(dims)
}

/// logsumexp of `x` along `axis`.
#[derive(Clone)]
pub struct LogSumExp {
    pub x: Tensor,
    pub axis: usize,
    pub keepdim: bool,
}

impl Record for LogSumExp {
    crate::autograd::record::named!("logsumexp");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("axis", Attr::Count(Some(self.axis))),
            ("keepdim", Attr::Flag(self.keepdim)),
        ]
    }
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        // PyTorch's logsumexp_backward: g * exp(x - out), the axis kept to broadcast.
        let kept = reduced(self.x.shape(), self.axis, true);
        let (out, g) = (reshape_to(out, kept.clone()), reshape_to(g, kept));
        Ok(vec![Some(mul(&g, &exp(&sub(&self.x, &out)?)?)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        logsumexp(first("logsumexp", xs)?, self.axis as isize, self.keepdim)
    }
}
