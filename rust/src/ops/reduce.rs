//! Reductions over all elements or one axis (sum, mean, max), and the two shape-moving helpers
//! their gradients need: `sum_to_shape` and `broadcast_to`.

use crate::autograd::record::{axis as axis_attr, first, Attr, Record};
use crate::autograd::Argmax;
use crate::op_table::BinaryOp;
use crate::ops::elementwise::check_same_dtype;
use crate::ops::layout::reshape_to;
use crate::shape::broadcast_shapes;
use crate::storage::Storage;
use crate::{Error, Result, Shape, Tensor};

/// The shape left after reducing `axis` (all axes when None).
pub(crate) fn reduced_shape(shape: &Shape, axis: Option<usize>, keepdim: bool) -> Shape {
    match axis {
        None if keepdim => Shape(vec![1; shape.rank()]),
        None => Shape::scalar(),
        Some(a) => {
            let mut d = shape.0.clone();
            if keepdim {
                d[a] = 1;
            } else {
                d.remove(a);
            }
            Shape(d)
        }
    }
}

/// The axis to reduce, checked, with the result's size refused when it cannot be allocated:
/// reducing a zero-size axis gives a result larger than its input (`[0, 2^40]` over axis 0).
/// As PyTorch, dim 0 or -1 of a 0-d tensor reduces the tensor itself (as dim None does).
fn resolve(op: &'static str, x: &Tensor, axis: Option<isize>) -> Result<Option<usize>> {
    let axis = match axis {
        Some(0 | -1) if x.shape().rank() == 0 => None,
        a => a.map(|a| x.shape().axis(op, a)).transpose()?,
    };
    crate::storage::check_alloc(op, &reduced_shape(x.shape(), axis, false))?;
    Ok(axis)
}

fn sum_raw(x: &Tensor, axis: Option<usize>) -> Result<Storage> {
    x.storage().sum(x.shape(), axis)
}

/// Sum over all elements (axis None) or one axis; a left fold from 0 in index order.
pub fn sum(x: &Tensor, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
    crate::ops::elementwise::float_only("sum", &[x])?;
    let axis = resolve("sum", x, axis)?;
    let s = sum_raw(x, axis)?;
    let shape = reduced_shape(x.shape(), axis, keepdim);
    Ok(Tensor::from_op(
        s,
        shape,
        Sum {
            x: x.clone(),
            axis,
            keepdim,
        },
    ))
}

/// Mean: the left-fold sum divided once by the count (an empty reduction gives NaN).
pub fn mean(x: &Tensor, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
    crate::ops::elementwise::float_only("mean", &[x])?;
    let axis = resolve("mean", x, axis)?;
    let count = match axis {
        None => x.numel(),
        Some(a) => x.dims()[a],
    };
    // The sum divided once by the count, rounded to the dtype (an empty reduction: 0/0, NaN).
    let s = sum_raw(x, axis)?.binary_scalar(BinaryOp::Div, count as f64, false)?;
    let shape = reduced_shape(x.shape(), axis, keepdim);
    Ok(Tensor::from_op(
        s,
        shape,
        Mean {
            x: x.clone(),
            axis,
            keepdim,
        },
    ))
}

/// Maximum over all elements or one axis; the gradient goes to the first maximal element.
pub fn max(x: &Tensor, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
    crate::ops::elementwise::float_only("max", &[x])?;
    let axis = resolve("max", x, axis)?;
    if x.numel() == 0 {
        return Err(Error::shape(
            "max",
            format!("cannot reduce an empty tensor of shape {}", x.shape()),
        ));
    }
    let (o, l, i) = match axis {
        None => (1, x.numel(), 1),
        Some(a) => x.shape().split_at_axis(a),
    };
    if l == 0 {
        return Err(Error::shape(
            "max",
            format!("cannot reduce an empty axis of shape {}", x.shape()),
        ));
    }
    let (s, argmax) = x.storage().max_axis(o, l, i)?;
    let shape = reduced_shape(x.shape(), axis, keepdim);
    Ok(Tensor::from_op(
        s,
        shape,
        Max {
            x: x.clone(),
            axis,
            keepdim,
            argmax,
        },
    ))
}

/// Running sums along `axis` (PyTorch `cumsum`): y[k] = y[k-1] + x[k] from y[0] = x[0], in
/// index order and in the tensor's dtype, as NumPy computes it (PyTorch's CPU kernel carries a
/// float32 sum in float64, so its float32 results can differ in the last bit). Dim 0 or -1 of
/// a 0-d tensor is the tensor itself, as in PyTorch.
pub fn cumsum(x: &Tensor, axis: isize) -> Result<Tensor> {
    crate::ops::elementwise::float_only("cumsum", &[x])?;
    let axis = match axis {
        0 | -1 if x.shape().rank() == 0 => None,
        a => Some(x.shape().axis("cumsum", a)?),
    };
    cumsum_raw(x, axis, false)
}

/// `cumsum` from either end; `axis` None: a 0-d tensor, copied.
fn cumsum_raw(x: &Tensor, axis: Option<usize>, reverse: bool) -> Result<Tensor> {
    let (o, l, i) = match axis {
        None => (1, 1, 1),
        Some(a) => x.shape().split_at_axis(a),
    };
    let s = x.storage().cumsum(o, l, i, reverse)?;
    let op = CumSum {
        x: x.clone(),
        axis,
        reverse,
    };
    Ok(Tensor::from_op(s, x.shape().clone(), op))
}

/// Gradient of `max`: `g` placed at the recorded argmax positions of a zero tensor.
pub(crate) fn max_grad(
    x: &Tensor,
    axis: Option<usize>,
    argmax: &Argmax,
    g: &Tensor,
) -> Result<Tensor> {
    let (o, l, i) = match axis {
        None => (1, x.numel(), 1),
        Some(a) => x.shape().split_at_axis(a),
    };
    check_same_dtype("max", &[x, g])?;
    let s = g.storage().max_axis_grad(argmax, o, l, i)?;
    Tensor::from_storage(s, x.shape().clone())
}

/// Sums `x` down to `shape` over the axes that broadcasting expanded (gradient of broadcast).
pub fn sum_to_shape(x: &Tensor, shape: &Shape) -> Result<Tensor> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    let out = broadcast_shapes("sum_to_shape", shape, x.shape())?;
    if &out != x.shape() {
        return Err(Error::shape(
            "sum_to_shape",
            format!("cannot reduce {} to {}", x.shape(), shape),
        ));
    }
    // Larger than x where x has a zero-size axis ([0, 2^40] to [1, 2^40]).
    crate::storage::check_alloc("sum_to_shape", shape)?;
    let s = x.storage().sum_to_shape(x.shape(), shape)?;
    Ok(Tensor::from_op(s, shape.clone(), SumTo { x: x.clone() }))
}

/// Repeats `x` along broadcast axes to `shape` (NumPy rules).
pub fn broadcast_to(x: &Tensor, shape: &Shape) -> Result<Tensor> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    let out = broadcast_shapes("broadcast_to", x.shape(), shape)?;
    if &out != shape {
        return Err(Error::shape(
            "broadcast_to",
            format!("cannot broadcast {} to {}", x.shape(), shape),
        ));
    }
    if x.viewable() {
        let layout = x.strided().broadcast(x.shape(), shape);
        return Ok(x.view_as(shape.clone(), layout, BroadcastTo { x: x.clone() }));
    }
    let s = x.storage().broadcast_to(x.shape(), shape)?;
    Ok(Tensor::from_op(
        s,
        shape.clone(),
        BroadcastTo { x: x.clone() },
    ))
}

/// `g` (shaped like a reduction's output) spread back over `x`'s shape.
fn expand_reduced(x: &Tensor, axis: Option<usize>, g: &Tensor) -> Result<Tensor> {
    let kept = reduced_shape(x.shape(), axis, true);
    broadcast_to(&reshape_to(g, kept), x.shape())
}

/// The sum of `x` over `axis` (all axes when None).
#[derive(Clone)]
pub struct Sum {
    pub x: Tensor,
    pub axis: Option<usize>,
    pub keepdim: bool,
}

impl Record for Sum {
    crate::autograd::record::named!("sum");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![axis_attr(self.axis), ("keepdim", Attr::Flag(self.keepdim))]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(expand_reduced(&self.x, self.axis, g)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        sum(
            first("sum", xs)?,
            self.axis.map(|a| a as isize),
            self.keepdim,
        )
    }
}

/// The mean of `x` over `axis` (all axes when None).
#[derive(Clone)]
pub struct Mean {
    pub x: Tensor,
    pub axis: Option<usize>,
    pub keepdim: bool,
}

impl Record for Mean {
    crate::autograd::record::named!("mean");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![axis_attr(self.axis), ("keepdim", Attr::Flag(self.keepdim))]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let n = match self.axis {
            None => self.x.numel(),
            Some(a) => self.x.dims()[a],
        };
        let scaled = crate::ops::div(g, &Tensor::scalar(n as f64, g.dtype()))?;
        Ok(vec![Some(expand_reduced(&self.x, self.axis, &scaled)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        mean(
            first("mean", xs)?,
            self.axis.map(|a| a as isize),
            self.keepdim,
        )
    }
}

/// The maximum of `x` over `axis`, with where each maximum was found.
#[derive(Clone)]
pub struct Max {
    pub x: Tensor,
    pub axis: Option<usize>,
    pub keepdim: bool,
    pub argmax: Argmax,
}

impl Record for Max {
    crate::autograd::record::named!("max");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![axis_attr(self.axis), ("keepdim", Attr::Flag(self.keepdim))]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(max_grad(&self.x, self.axis, &self.argmax, g)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        max(
            first("max", xs)?,
            self.axis.map(|a| a as isize),
            self.keepdim,
        )
    }
}

/// `x` summed down to the output's shape.
#[derive(Clone)]
pub struct SumTo {
    pub x: Tensor,
}

impl Record for SumTo {
    crate::autograd::record::named!("sum_to_shape");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(broadcast_to(g, self.x.shape())?)])
    }
    fn replay(&self, xs: &[Tensor], out: &Shape) -> Result<Tensor> {
        sum_to_shape(first("sum_to_shape", xs)?, out)
    }
}

/// `x` repeated along broadcast axes to the output's shape.
#[derive(Clone)]
pub struct BroadcastTo {
    pub x: Tensor,
}

impl Record for BroadcastTo {
    crate::autograd::record::named!("broadcast_to");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(sum_to_shape(g, self.x.shape())?)])
    }
    fn replay(&self, xs: &[Tensor], out: &Shape) -> Result<Tensor> {
        broadcast_to(first("broadcast_to", xs)?, out)
    }
}

/// Running sums of `x` along `axis` (from the far end when `reverse`: cumsum's gradient).
#[derive(Clone)]
pub struct CumSum {
    pub x: Tensor,
    /// None for a 0-d tensor.
    pub axis: Option<usize>,
    pub reverse: bool,
}

impl Record for CumSum {
    crate::autograd::record::named!("cumsum");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![axis_attr(self.axis), ("reverse", Attr::Flag(self.reverse))]
    }
    /// Each input reaches every output at or after it: the gradient is the running sum of `g`
    /// from the other end (PyTorch's `g.flip(d).cumsum(d).flip(d)`, the same fold order).
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(cumsum_raw(g, self.axis, !self.reverse)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        cumsum_raw(first("cumsum", xs)?, self.axis, self.reverse)
    }
}
