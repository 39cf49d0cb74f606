//! Softmax and log-softmax along one axis.

use crate::autograd::record::{first, Attr, Record};
use crate::ops::elementwise::check_same_dtype;
use crate::{Result, Shape, Tensor};

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
    let op = Softmax {
        x: x.clone(),
        axis: ax,
        log,
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

/// Softmax (or, when `log`, log-softmax) of `x` along `axis`.
#[derive(Clone)]
pub struct Softmax {
    pub x: Tensor,
    pub axis: usize,
    pub log: bool,
}

impl Record for Softmax {
    fn name(&self) -> &'static str {
        if self.log {
            "log_softmax"
        } else {
            "softmax"
        }
    }
    fn names() -> Vec<&'static str> {
        vec!["softmax", "log_softmax"]
    }
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![("axis", Attr::Count(Some(self.axis)))]
    }
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(softmax_grad(out, g, self.axis, self.log)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        run(first(self.name(), xs)?, self.axis as isize, self.log)
    }
}
