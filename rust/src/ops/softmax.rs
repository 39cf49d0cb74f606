//! Softmax and log-softmax along one axis.

use crate::autograd::Op;
use crate::ops::elementwise::check_same_dtype;
use crate::{Result, Tensor};

fn run(x: &Tensor, axis: isize, log: bool) -> Result<Tensor> {
    let name = if log { "log_softmax" } else { "softmax" };
    if x.shape().rank() == 0 && (axis == 0 || axis == -1) {
        // As PyTorch: dim 0 or -1 of a 0-d tensor is the tensor itself, a one-element row.
        let row = crate::ops::layout::reshape(x, &[1])?;
        return crate::ops::layout::reshape(&run(&row, 0, log)?, &[]);
    }
    let ax = x.shape().axis(name, axis)?;
    let (o, l, i) = x.shape().split_at_axis(ax);
    let s = x.storage().softmax(o, l, i, log)?;
    let op = if log {
        Op::LogSoftmax {
            x: x.clone(),
            axis: ax,
        }
    } else {
        Op::Softmax {
            x: x.clone(),
            axis: ax,
        }
    };
    Ok(Tensor::from_op(s, x.shape().clone(), op))
}

pub fn softmax(x: &Tensor, axis: isize) -> Result<Tensor> {
    run(x, axis, false)
}

pub fn log_softmax(x: &Tensor, axis: isize) -> Result<Tensor> {
    run(x, axis, true)
}

pub(crate) fn softmax_grad(y: &Tensor, g: &Tensor, axis: usize, log: bool) -> Result<Tensor> {
    let (o, l, i) = y.shape().split_at_axis(axis);
    check_same_dtype("softmax", &[y, g])?;
    let s = y.storage().softmax_grad(g.storage(), o, l, i, log)?;
    Tensor::from_storage(s, y.shape().clone())
}
