//! Re-running one recorded op on new inputs: the op's attributes come from the trace, the
//! values from the replay. The same op functions as eager run, so results are bit-identical.

use crate::autograd::Op;
use crate::ops::{self, conv, index, layout, reduce};
use crate::{Error, Result, Shape, Tensor};

fn idx(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&i| i as i64).collect()
}

/// `op` applied to `xs` (its inputs in argument order); `out` is the traced output shape.
pub fn replay(op: &Op, xs: &[Tensor], out: &Shape) -> Result<Tensor> {
    let x = || {
        xs.first()
            .ok_or_else(|| Error::arg("graph", format!("{} has no input", op.name())))
    };
    let y = match op {
        Op::Cast(_, to) => x()?.to_dtype(*to)?,
        Op::ToDevice(_) => {
            return Err(Error::arg(
                "graph",
                "a device copy cannot be compiled; move inputs and parameters before tracing",
            ))
        }
        Op::Unary(u, _) => ops::unary(*u, x()?)?,
        Op::Pow(_, e) => ops::pow(x()?, *e)?,
        Op::Clamp(_, lo, hi) => ops::clamp(x()?, *lo, *hi)?,
        Op::Binary(b, ..) => ops::binary(*b, &xs[0], &xs[1])?,
        Op::Sum { axis, keepdim, .. } => ops::sum(x()?, axis.map(|a| a as isize), *keepdim)?,
        Op::Mean { axis, keepdim, .. } => ops::mean(x()?, axis.map(|a| a as isize), *keepdim)?,
        Op::Max { axis, keepdim, .. } => ops::max(x()?, axis.map(|a| a as isize), *keepdim)?,
        Op::SumTo(_) => reduce::sum_to_shape(x()?, out)?,
        Op::BroadcastTo(_) => reduce::broadcast_to(x()?, out)?,
        Op::Reshape(_) => layout::reshape_to(x()?, out.clone()),
        Op::Permute(_, p) => layout::permute_raw(x()?, p.clone())?,
        Op::Concat(_, axis) => ops::concat(xs, *axis as isize)?,
        Op::Slice {
            axis, start, end, ..
        } => ops::slice(x()?, *axis as isize, *start as isize, *end as isize)?,
        Op::IndexSelect { axis, index, .. } => {
            ops::index_select(x()?, *axis as isize, &idx(index))?
        }
        Op::Matmul { ta, tb, .. } => ops::matmul_t(&xs[0], &xs[1], *ta, *tb)?,
        Op::Softmax { axis, .. } => ops::softmax(x()?, *axis as isize)?,
        Op::LogSoftmax { axis, .. } => ops::log_softmax(x()?, *axis as isize)?,
        Op::NllLoss { target, .. } => ops::loss::nll_loss_indices(x()?, target.clone())?,
        Op::Conv2d { b, d, act, .. } => {
            let bias = if b.is_some() { xs.get(2) } else { None };
            conv::conv2d_act(&xs[0], &xs[1], bias, d.stride, d.pad, *act)?
        }
        Op::MaxPool2d { d, ceil_mode, .. } => {
            ops::max_pool2d_with(x()?, &ops::PoolSpec::of(d, *ceil_mode))?
        }
        Op::AvgPool2d { d, ceil_mode, .. } => {
            ops::avg_pool2d_with(x()?, &ops::PoolSpec::of(d, *ceil_mode))?
        }
        Op::Gather {
            axis,
            index,
            index_shape,
            ..
        } => index::gather(x()?, *axis as isize, &idx(index), index_shape.dims())?,
        Op::ScatterAdd { axis, index, .. } => {
            index::scatter_add(&xs[0], *axis as isize, &idx(index), &xs[1])?
        }
        Op::MaskedFill { mask, value, .. } => index::masked_fill(x()?, mask, out.dims(), *value)?,
        Op::Chain { steps, head, .. } => ops::fused::fused_chain(steps, xs, *head)?,
        Op::BatchNormPerImage { w, b, eps, .. } => {
            let weight = w.as_ref().and(xs.get(1));
            let bias = b.as_ref().and(xs.get(if w.is_some() { 2 } else { 1 }));
            ops::batch_norm_per_image(x()?, weight, bias, *eps)?
        }
    };
    if y.shape() != out {
        return Err(Error::shape(
            "graph",
            format!(
                "{} replayed to shape {}, traced as {}; inputs changed shape since tracing",
                op.name(),
                y.shape(),
                out
            ),
        ));
    }
    Ok(y)
}
