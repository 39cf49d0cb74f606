//! The record an op result keeps: which op, its inputs, and what its gradient rule needs.

use crate::geometry::{Activation, ConvDims, PoolDims};
use crate::op_table::ChainStep;
use crate::ops::{BinaryOp, UnaryOp};
use crate::Tensor;
use crate::{DType, Shape};
use std::sync::Arc;

/// Where a max or max-pool recorded its winners: on the device that computed them (host
/// indices for CPU tensors, device memory for CUDA ones, so the forward never waits).
pub type Argmax = crate::storage::Winners;

#[derive(Clone)]
pub enum Op {
    /// A dtype conversion and its target dtype.
    Cast(Tensor, DType),
    ToDevice(Tensor),
    Unary(UnaryOp, Tensor),
    Pow(Tensor, f64),
    Clamp(Tensor, Option<f64>, Option<f64>),
    Binary(BinaryOp, Tensor, Tensor),
    Sum {
        x: Tensor,
        axis: Option<usize>,
        keepdim: bool,
    },
    Mean {
        x: Tensor,
        axis: Option<usize>,
        keepdim: bool,
    },
    Max {
        x: Tensor,
        axis: Option<usize>,
        keepdim: bool,
        argmax: Argmax,
    },
    SumTo(Tensor),
    BroadcastTo(Tensor),
    Reshape(Tensor),
    Permute(Tensor, Vec<usize>),
    Concat(Vec<Tensor>, usize),
    Slice {
        x: Tensor,
        axis: usize,
        start: usize,
        end: usize,
    },
    IndexSelect {
        x: Tensor,
        axis: usize,
        index: Arc<Vec<usize>>,
    },
    Matmul {
        a: Tensor,
        b: Tensor,
        ta: bool,
        tb: bool,
    },
    Softmax {
        x: Tensor,
        axis: usize,
    },
    LogSoftmax {
        x: Tensor,
        axis: usize,
    },
    NllLoss {
        logp: Tensor,
        target: Arc<Vec<usize>>,
    },
    Conv2d {
        x: Tensor,
        w: Tensor,
        b: Option<Tensor>,
        d: ConvDims,
        /// Applied to each output after the bias (a fused ReLU; `None` in every trace).
        act: Activation,
    },
    MaxPool2d {
        x: Tensor,
        d: PoolDims,
        /// Whether output sizes were rounded up (what a replay on new sizes needs).
        ceil_mode: bool,
        argmax: Argmax,
    },
    AvgPool2d {
        x: Tensor,
        d: PoolDims,
        ceil_mode: bool,
    },
    Gather {
        x: Tensor,
        axis: usize,
        index: Arc<Vec<usize>>,
        index_shape: Shape,
    },
    ScatterAdd {
        x: Tensor,
        src: Tensor,
        axis: usize,
        index: Arc<Vec<usize>>,
    },
    MaskedFill {
        x: Tensor,
        mask: Arc<Vec<bool>>,
        value: f64,
    },
    /// A fused elementwise chain (ops/fused.rs): `steps` from `inputs[head]`.
    Chain {
        steps: Arc<[ChainStep]>,
        inputs: Vec<Tensor>,
        head: usize,
    },
    /// Per-image batch norm on the CPU; `stats` holds each plane's mean and sqrt(var + eps).
    BatchNormPerImage {
        x: Tensor,
        w: Option<Tensor>,
        b: Option<Tensor>,
        eps: f64,
        stats: Tensor,
    },
}

impl Op {
    /// The inputs, in argument order (the order backward visits them).
    pub fn inputs(&self) -> Vec<&Tensor> {
        match self {
            Op::Cast(x, _)
            | Op::ToDevice(x)
            | Op::Unary(_, x)
            | Op::Pow(x, _)
            | Op::Clamp(x, _, _)
            | Op::Sum { x, .. }
            | Op::Mean { x, .. }
            | Op::Max { x, .. }
            | Op::SumTo(x)
            | Op::BroadcastTo(x)
            | Op::Reshape(x)
            | Op::Permute(x, _)
            | Op::Slice { x, .. }
            | Op::IndexSelect { x, .. }
            | Op::Softmax { x, .. }
            | Op::LogSoftmax { x, .. }
            | Op::MaxPool2d { x, .. }
            | Op::AvgPool2d { x, .. }
            | Op::Gather { x, .. }
            | Op::MaskedFill { x, .. } => vec![x],
            Op::NllLoss { logp, .. } => vec![logp],
            Op::Binary(_, a, b) | Op::Matmul { a, b, .. } => vec![a, b],
            Op::ScatterAdd { x, src, .. } => vec![x, src],
            Op::Conv2d { x, w, b, .. } => std::iter::once(x)
                .chain(std::iter::once(w))
                .chain(b.iter())
                .collect(),
            Op::Concat(xs, _) | Op::Chain { inputs: xs, .. } => xs.iter().collect(),
            Op::BatchNormPerImage { x, w, b, .. } => {
                std::iter::once(x).chain(w.iter()).chain(b.iter()).collect()
            }
        }
    }

    /// The inputs, by value (used to free long graphs without recursion): the clones become
    /// the only handles once the op itself is dropped.
    pub fn into_inputs(self) -> Vec<Tensor> {
        let inputs = self.inputs().into_iter().cloned().collect();
        drop(self);
        inputs
    }

    pub fn name(&self) -> &'static str {
        match self {
            Op::Cast(..) => "cast",
            Op::ToDevice(_) => "to_device",
            Op::Unary(u, _) => u.name(),
            Op::Pow(..) => "pow",
            Op::Clamp(..) => "clamp",
            Op::Binary(b, ..) => b.name(),
            Op::Sum { .. } => "sum",
            Op::Mean { .. } => "mean",
            Op::Max { .. } => "max",
            Op::SumTo(_) => "sum_to_shape",
            Op::BroadcastTo(_) => "broadcast_to",
            Op::Reshape(_) => "reshape",
            Op::Permute(..) => "permute",
            Op::Concat(..) => "concat",
            Op::Slice { .. } => "slice",
            Op::IndexSelect { .. } => "index_select",
            Op::Matmul { .. } => "matmul",
            Op::Softmax { .. } => "softmax",
            Op::LogSoftmax { .. } => "log_softmax",
            Op::NllLoss { .. } => "cross_entropy",
            Op::Conv2d {
                act: Activation::Relu,
                ..
            } => "conv2d_relu",
            Op::Conv2d { .. } => "conv2d",
            Op::MaxPool2d { .. } => "max_pool2d",
            Op::AvgPool2d { .. } => "avg_pool2d",
            Op::Gather { .. } => "gather",
            Op::ScatterAdd { .. } => "scatter_add",
            Op::MaskedFill { .. } => "masked_fill",
            Op::BatchNormPerImage { .. } => "batch_norm_per_image",
            Op::Chain { .. } => "fused_chain",
        }
    }
}
