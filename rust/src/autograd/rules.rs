//! One gradient rule per `Op`, written with tensor ops (run under no_grad), so the same rules
//! can later be traced into the compiled graph.

use super::Op;
use crate::geometry::Activation;
use crate::op_table::binary_ops;
use crate::ops::conv::conv2d_grads;
use crate::ops::elementwise::{clamp_grad, pow_grad, select_weight, unary_grad};
use crate::ops::index::{gather_grad, masked_fill_grad, scatter_src_grad};
use crate::ops::layout::{index_select_grad, permute_raw, reshape_to, unslice};
use crate::ops::loss::nll_grad;
use crate::ops::norm::batch_norm_per_image_grads;
use crate::ops::pool::{avg_pool2d_grad, max_pool2d_grad};
use crate::ops::reduce::{max_grad, reduced_shape};
use crate::ops::softmax::softmax_grad;
use crate::ops::{
    binary, broadcast_to, div, matmul_t, mul, neg, slice, sum_to_shape, BinaryOp, UnaryOp,
};
use crate::{Result, Tensor};

/// `g` (shaped like a reduction's output) spread back over `x`'s shape.
fn expand_reduced(x: &Tensor, axis: Option<usize>, g: &Tensor) -> Result<Tensor> {
    let kept = reduced_shape(x.shape(), axis, true);
    broadcast_to(&reshape_to(g, kept), x.shape())
}

/// The gradient of a batched matmul operand, summed over batches it was broadcast across.
fn fit(t: Tensor, like: &Tensor) -> Result<Tensor> {
    sum_to_shape(&t, like.shape())
}

/// The refusal of ops that are themselves gradients (tensor_pow's partial derivatives).
fn no_second_derivative() -> crate::Error {
    crate::Error::arg(
        "tensor_pow",
        "the second derivative of pow with a tensor exponent is not supported",
    )
}

/// Zeros shaped like `g`, on its device: the gradient of an op that is flat almost everywhere
/// (PyTorch's `zeros_like(grad)`, so a NaN or infinite `g` still gives 0).
fn zeros_like(g: &Tensor) -> Result<Tensor> {
    Tensor::full_on(g.shape().clone(), 0.0, g.dtype(), g.device())
}

/// A rule of the binary table: (g, a, b, out) to the gradient for one input.
fn rule<F>(f: F, g: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Tensor>
where
    F: FnOnce(&Tensor, &Tensor, &Tensor, &Tensor) -> Result<Tensor>,
{
    f(g, a, b, out)
}

// The gradients of a binary op from its table entry (op_table/binary.rs), each computed only
// for an input that requires one; shaped like the broadcast output.
macro_rules! binary_grad_rules {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        py: $py:ident,
        f: $f:expr,
        cuda: $cuda:literal,
        da: $da:expr,
        db: $db:expr $(,)?
    } )*) => {
        type Grads = (Option<Tensor>, Option<Tensor>);

        fn binary_grads(op: BinaryOp, a: &Tensor, b: &Tensor, out: &Tensor, g: &Tensor) -> Result<Grads> {
            let need = |t: &Tensor| t.requires_grad();
            Ok(match op {
                $( BinaryOp::$V => (
                    need(a).then(|| rule($da, g, a, b, out)).transpose()?,
                    need(b).then(|| rule($db, g, a, b, out)).transpose()?,
                ), )*
            })
        }
    };
}
binary_ops!(binary_grad_rules);

pub(super) fn input_grads(op: &Op, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let need = |t: &Tensor| t.requires_grad();
    Ok(match op {
        Op::Cast(x, _) => vec![Some(g.to_dtype(x.dtype())?)],
        Op::ToDevice(x) => vec![Some(g.to_device(x.device())?)],
        Op::Unary(u, x) => vec![Some(unary_grad(*u, x, out, g)?)],
        Op::Pow(x, e) => vec![Some(pow_grad(x, *e, g)?)],
        Op::Clamp(x, lo, hi) => vec![Some(clamp_grad(x, *lo, *hi, g)?)],
        Op::Binary(b, x, y) => {
            let (gx, gy) = binary_grads(*b, x, y, out, g)?;
            vec![
                gx.map(|t| sum_to_shape(&t, x.shape())).transpose()?,
                gy.map(|t| sum_to_shape(&t, y.shape())).transpose()?,
            ]
        }
        Op::Sum { x, axis, .. } => vec![Some(expand_reduced(x, *axis, g)?)],
        Op::Mean { x, axis, .. } => {
            let n = match axis {
                None => x.numel(),
                Some(a) => x.dims()[*a],
            };
            let scaled = div(g, &Tensor::scalar(n as f64, g.dtype()))?;
            vec![Some(expand_reduced(x, *axis, &scaled)?)]
        }
        Op::Max {
            x, axis, argmax, ..
        } => vec![Some(max_grad(x, *axis, argmax, g)?)],
        Op::SumTo(x) => vec![Some(broadcast_to(g, x.shape())?)],
        Op::BroadcastTo(x) => vec![Some(sum_to_shape(g, x.shape())?)],
        Op::Reshape(x) => vec![Some(reshape_to(g, x.shape().clone()))],
        Op::Permute(_, p) => {
            let mut inv = vec![0; p.len()];
            for (i, &a) in p.iter().enumerate() {
                inv[a] = i;
            }
            vec![Some(permute_raw(g, inv)?)]
        }
        Op::Concat(xs, axis) => {
            let mut start = 0isize;
            let mut out = Vec::with_capacity(xs.len());
            for x in xs {
                let len = x.dims()[*axis] as isize;
                out.push(
                    need(x)
                        .then(|| slice(g, *axis as isize, start, start + len))
                        .transpose()?,
                );
                start += len;
            }
            out
        }
        Op::Slice {
            x,
            axis,
            start,
            end,
        } => vec![Some(unslice(x, *axis, *start, *end, g)?)],
        Op::IndexSelect { x, axis, index } => vec![Some(index_select_grad(x, *axis, index, g)?)],
        Op::Matmul { a, b, ta, tb } => {
            let ga = need(a)
                .then(|| {
                    if *ta {
                        matmul_t(b, g, *tb, true)
                    } else {
                        matmul_t(g, b, false, !*tb)
                    }
                })
                .transpose()?;
            let gb = need(b)
                .then(|| {
                    if *tb {
                        matmul_t(g, a, true, *ta)
                    } else {
                        matmul_t(a, g, !*ta, false)
                    }
                })
                .transpose()?;
            vec![
                ga.map(|t| fit(t, a)).transpose()?,
                gb.map(|t| fit(t, b)).transpose()?,
            ]
        }
        Op::Softmax { axis, .. } => vec![Some(softmax_grad(out, g, *axis, false)?)],
        Op::LogSoftmax { axis, .. } => vec![Some(softmax_grad(out, g, *axis, true)?)],
        Op::NllLoss { logp, target } => vec![Some(nll_grad(logp, target, g)?)],
        Op::Conv2d { x, w, b, d, act } => {
            // A fused ReLU's gradient from its output: y > 0 exactly where the pre-activation
            // was > 0 (a NaN stays NaN, not > 0), so this masks as the `relu` op's rule does.
            let masked;
            let g = match act {
                Activation::None => g,
                Activation::Relu => {
                    masked = unary_grad(UnaryOp::Relu, out, out, g)?;
                    &masked
                }
            };
            let need_b = b.as_ref().is_some_and(need);
            let [gx, gw, gb] = conv2d_grads(x, w, g, *d, [need(x), need(w), need_b])?;
            let mut v = vec![gx, gw];
            if b.is_some() {
                v.push(gb);
            }
            v
        }
        Op::MaxPool2d { x, d, argmax, .. } => vec![Some(max_pool2d_grad(x, *d, argmax, g)?)],
        Op::AvgPool2d { x, d, .. } => vec![Some(avg_pool2d_grad(x, *d, g)?)],
        Op::Gather {
            x,
            axis,
            index,
            index_shape,
        } => vec![Some(gather_grad(x, *axis, index, index_shape, g)?)],
        Op::ScatterAdd {
            x,
            src,
            axis,
            index,
        } => vec![
            Some(g.clone()),
            need(src)
                .then(|| scatter_src_grad(x, *axis, index, src, g))
                .transpose()?,
        ],
        Op::MaskedFill { mask, .. } => vec![Some(masked_fill_grad(mask, g)?)],
        Op::Chain {
            steps,
            inputs,
            head,
        } => crate::ops::fused::fused_chain_grads(steps, inputs, *head, out, g)?,
        Op::BatchNormPerImage { x, w, b, stats, .. } => {
            batch_norm_per_image_grads(x, w.as_ref(), b.as_ref(), stats, g)?
        }
    })
}
