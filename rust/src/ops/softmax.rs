//! Softmax and log-softmax along one axis.

use crate::autograd::Op;
use crate::backend::cpu::softmax as k;
use crate::backend::cuda::ops as cu;
use crate::ops::device::{dev, on_dev};
use crate::storage::Storage;
use crate::{map_cpu, map_cpu2, Result, Tensor};

fn run(x: &Tensor, axis: isize, log: bool) -> Result<Tensor> {
    let name = if log { "log_softmax" } else { "softmax" };
    let ax = x.shape().axis(name, axis)?;
    let (o, l, i) = x.shape().split_at_axis(ax);
    let s: Storage = match dev(x) {
        Some(b) => cu::softmax(b, o, l, i, log)?.into(),
        None => map_cpu!(x.cpu()?, |v| k::softmax(v, o, l, i, log)).into(),
    };
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
    if let Some(b) = dev(y) {
        crate::ops::elementwise::check_same_dtype("softmax", &[y, g])?;
        let s = cu::softmax_grad(b, on_dev("softmax", y, g)?, o, l, i, log)?;
        return Tensor::from_storage(s, y.shape().clone());
    }
    let s = map_cpu2!("softmax", y.cpu()?, g.cpu()?, |yv, gv| k::softmax_grad(
        yv, gv, o, l, i, log
    ))?;
    Tensor::from_cpu(s, y.shape().clone())
}
