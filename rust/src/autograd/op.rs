//! The record an op result keeps: one variant per recorded op, each wrapping the record its
//! ops/ file declares (inputs, attributes, gradient rule and replay, autograd/record.rs).
//! `declare_ops!` makes the enum and its dispatch from the one list below, so adding an op is
//! one line here beside its record.

use super::record::{Attr, Record};
use crate::ops::{attention_softmax, norm_per_image, pool, reduce, softmax};
use crate::ops::{
    compare, conv, convert, dropout, elementwise, fused, index, layout, logsumexp, loss, matmul,
    prod, variance,
};
use crate::{Result, Shape, Tensor};

/// Where a max or max-pool recorded its winners: on the device that computed them (host
/// indices for CPU tensors, device memory for CUDA ones, so the forward never waits).
pub type Argmax = crate::storage::Winners;

macro_rules! declare_ops {
    ($( $(#[$doc:meta])* $V:ident($T:ty), )*) => {
        #[derive(Clone)]
        pub enum Op {
            $( $(#[$doc])* $V($T), )*
        }

        $( impl From<$T> for Op {
            fn from(r: $T) -> Op {
                Op::$V(r)
            }
        } )*

        impl Op {
            fn record(&self) -> &dyn Record {
                match self {
                    $( Op::$V(r) => r, )*
                }
            }
        }

        /// Every name a recorded op can have (each needs an ONNX mapping or a stated refusal).
        pub fn recorded_op_names() -> Vec<&'static str> {
            let mut v = Vec::new();
            $( v.extend(<$T as Record>::names()); )*
            v
        }
    };
}

declare_ops! {
    /// A dtype conversion.
    Cast(convert::Cast),
    /// A copy to another device.
    ToDevice(convert::ToDevice),
    /// An op of the unary table (op_table/unary.rs).
    Unary(elementwise::Unary),
    /// x ** a scalar exponent.
    Pow(elementwise::Pow),
    Clamp(elementwise::Clamp),
    /// An op of the binary table (op_table/binary.rs).
    Binary(elementwise::Binary),
    Sum(reduce::Sum),
    Mean(reduce::Mean),
    Max(reduce::Max),
    CumSum(reduce::CumSum),
    SumTo(reduce::SumTo),
    BroadcastTo(reduce::BroadcastTo),
    Reshape(layout::Reshape),
    Permute(layout::Permute),
    Concat(layout::Concat),
    Slice(layout::Slice),
    IndexSelect(layout::IndexSelect),
    Matmul(matmul::Matmul),
    /// Softmax or log-softmax along one axis.
    Softmax(softmax::Softmax),
    NllLoss(loss::NllLoss),
    /// Cross-entropy of logits at class labels (log-softmax and nll in one op).
    CrossEntropy(loss::CrossEntropy),
    /// Cross-entropy of logits against probability targets.
    CrossEntropyProbs(crate::ops::cross_entropy_probs::CrossEntropyProbs),
    /// mse, L1, smooth L1, Huber or logits' binary cross-entropy loss (terms and mean in one
    /// op).
    PointwiseLoss(crate::ops::pointwise_loss::PointwiseLoss),
    /// logsumexp along one axis.
    LogSumExp(logsumexp::LogSumExp),
    /// The variance along one axis or over all elements.
    Var(variance::Var),
    /// The product along one axis or over all elements (by halving).
    Prod(prod::Prod),
    Conv2d(conv::Conv2d),
    MaxPool2d(pool::MaxPool2d),
    AvgPool2d(pool::AvgPool2d),
    Gather(index::Gather),
    ScatterAdd(index::ScatterAdd),
    MaskedFill(index::MaskedFill),
    /// An elementwise comparison (a bool mask; no gradient).
    Compare(compare::Compare),
    /// Dropout inside a training step (a fresh mask each step).
    StepDropout(dropout::StepDropout),
    /// A fused elementwise chain (ops/fused.rs), made by the compiled backend's fusion pass.
    Chain(fused::Chain),
    /// Per-image batch norm on the CPU.
    BatchNormPerImage(norm_per_image::BatchNormPerImage),
    /// Attention's scale, causal mask and softmax in one op on the CPU.
    AttentionSoftmax(attention_softmax::AttentionSoftmax),
}

impl Op {
    /// The inputs, in argument order (the order backward visits them).
    pub fn inputs(&self) -> Vec<&Tensor> {
        self.record().inputs()
    }

    /// The inputs, by value (used to free long graphs without recursion): the clones become
    /// the only handles once the op itself is dropped.
    pub fn into_inputs(self) -> Vec<Tensor> {
        let inputs = self.inputs().into_iter().cloned().collect();
        drop(self);
        inputs
    }

    pub fn name(&self) -> &'static str {
        self.record().name()
    }

    /// Every attribute replay takes from the record, by name.
    pub fn attributes(&self) -> Vec<(&'static str, Attr)> {
        self.record().attributes()
    }

    /// The gradient of each input, given `g` for `out` (autograd/record.rs).
    pub fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        self.record().input_grads(out, g)
    }

    /// `prev + (the gradient for the op's one input)` in one pass, where the record can
    /// (autograd/record.rs).
    pub fn accumulate_input_grad(&self, prev: &Tensor, g: &Tensor) -> Option<Result<Tensor>> {
        self.record().accumulate_input_grad(prev, g)
    }

    /// The op on new inputs, its output checked against the traced shape `out`.
    pub fn replay(&self, xs: &[Tensor], out: &Shape) -> Result<Tensor> {
        let y = self.record().replay(xs, out)?;
        if y.shape() != out {
            return Err(crate::Error::shape(
                "graph",
                format!(
                    "{} replayed to shape {}, traced as {}; inputs changed shape since tracing",
                    self.name(),
                    y.shape(),
                    out
                ),
            ));
        }
        Ok(y)
    }
}
