//! A fused elementwise chain as one recorded op (the compiled backend's `graph/fuse.rs` builds
//! them): unary and binary table ops applied to one running value, with the chain's other
//! inputs as the binary ops' second operands. On the CPU the forward is one pass and the
//! gradients one more (backend/cpu/fused.rs), on CUDA one generated kernel each
//! (backend/cuda/ops/chain.rs), with every step rounded as the op alone rounds, so values and
//! gradients are bit-identical to the ops run one by one.

use crate::autograd::record::{Attr, Record};
use crate::op_table::{ChainGrad, ChainStep};
use crate::ops::{binary, reduce::sum_to_shape, unary};
use crate::{Error, Result, Shape, Tensor};
use std::sync::Arc;

const OP: &str = "fused_chain";

/// Whether `operand` can repeat over a chain value of shape `value` without changing its
/// shape: no more axes than it, and its dims, without leading ones, are `value`'s trailing dims
/// (a scalar repeats everywhere).
pub fn repeats_over(operand: &Shape, value: &Shape) -> bool {
    if operand.rank() > value.rank() {
        return false;
    }
    let od = operand.dims();
    let od = &od[od.iter().take_while(|&&d| d == 1).count()..];
    let vd = value.dims();
    od.len() <= vd.len() && od == &vd[vd.len() - od.len()..]
}

/// Checks that `steps` read every input once (the head at the start, each operand at one step)
/// and that operands repeat over the head's shape in its dtype.
fn check(steps: &[ChainStep], inputs: &[Tensor], head: usize) -> Result<()> {
    let bad = |msg: String| Err(Error::arg(OP, msg));
    if steps.is_empty() || head >= inputs.len() {
        return bad(format!(
            "expected at least one step and a head among the {} inputs, got {} steps and head {head}",
            inputs.len(),
            steps.len()
        ));
    }
    let mut used = vec![false; inputs.len()];
    used[head] = true;
    for step in steps {
        match *step {
            ChainStep::Unary(u) => u
                .check()
                .or_else(|msg| bad(format!("{}: {msg}", u.name())))?,
            ChainStep::Binary { op, operand, .. } => {
                if !ChainStep::fusable_binary(op) {
                    return bad(format!(
                        "expected add, sub, mul or div as a binary step, got {}",
                        op.name()
                    ));
                }
                if operand >= inputs.len() || std::mem::replace(&mut used[operand], true) {
                    return bad(format!(
                        "step {step} reads input {operand}: expected each of the {} inputs read once",
                        inputs.len()
                    ));
                }
            }
        }
    }
    if let Some(k) = used.iter().position(|u| !u) {
        return bad(format!("input {k} is read by no step"));
    }
    let value = inputs[head].shape();
    for (k, x) in inputs.iter().enumerate() {
        if x.dtype() != inputs[head].dtype() {
            return bad(format!(
                "expected every input in {}, got {} at input {k}",
                inputs[head].dtype(),
                x.dtype()
            ));
        }
        if !repeats_over(x.shape(), value) {
            return Err(Error::shape(
                OP,
                format!(
                    "input {k} of shape {} does not repeat over the chain's shape {value}",
                    x.shape()
                ),
            ));
        }
    }
    Ok(())
}

/// `steps` applied to `inputs[head]`, the binary steps taking their other operand from `inputs`.
pub fn fused_chain(steps: &Arc<[ChainStep]>, inputs: &[Tensor], head: usize) -> Result<Tensor> {
    check(steps, inputs, head)?;
    let shape = inputs[head].shape().clone();
    crate::storage::check_alloc(OP, &shape)?;
    let storages: Vec<_> = inputs.iter().map(Tensor::storage).collect();
    let s = inputs[head]
        .storage()
        .chain(steps, &storages, head, shape.numel())?;
    let op = Chain {
        steps: steps.clone(),
        inputs: inputs.to_vec(),
        head,
    };
    Ok(Tensor::from_op(s, shape, op))
}

/// The chain as separate recorded ops (what the fused op equals bit for bit; the tests' oracle).
pub fn steps_one_by_one(steps: &[ChainStep], inputs: &[Tensor], head: usize) -> Result<Tensor> {
    let mut v = inputs[head].clone();
    for step in steps {
        v = match *step {
            ChainStep::Unary(u) => unary(u, &v)?,
            ChainStep::Binary {
                op,
                operand,
                value_left: true,
            } => binary(op, &v, &inputs[operand])?,
            ChainStep::Binary { op, operand, .. } => binary(op, &inputs[operand], &v)?,
        };
    }
    Ok(v)
}

/// Gradients of the chain's inputs (`None` for those that need none): each summed to its
/// input's shape as eager sums a broadcast operand's gradient.
pub(crate) fn fused_chain_grads(
    steps: &[ChainStep],
    inputs: &[Tensor],
    head: usize,
    out: &Tensor,
    g: &Tensor,
) -> Result<Vec<Option<Tensor>>> {
    if g.shape() != out.shape() || g.dtype() != out.dtype() {
        return Err(Error::shape(
            OP,
            format!(
                "expected a gradient {} {}, got {} {}",
                out.dtype(),
                out.shape(),
                g.dtype(),
                g.shape()
            ),
        ));
    }
    let want: Vec<bool> = inputs.iter().map(Tensor::requires_grad).collect();
    let storages: Vec<_> = inputs.iter().map(Tensor::storage).collect();
    let grads = inputs[head].storage().chain_grads(
        steps,
        &storages,
        head,
        (out.storage(), g.storage()),
        &want,
    )?;
    let full = |s| Tensor::from_storage(s, out.shape().clone());
    let mut tensors: Vec<Option<Tensor>> = Vec::with_capacity(grads.len());
    let mut same: Vec<bool> = Vec::with_capacity(grads.len());
    for grad in grads {
        same.push(matches!(grad, ChainGrad::SameAsHead));
        tensors.push(match grad {
            ChainGrad::Own(s) => Some(full(s)?),
            ChainGrad::Skip | ChainGrad::SameAsHead => None,
        });
    }
    let head_grad = tensors[head].clone();
    tensors
        .into_iter()
        .zip(same)
        .zip(inputs)
        .map(|((t, same), x)| {
            let t = if same { head_grad.clone() } else { t };
            t.map(|t| sum_to_shape(&t, x.shape())).transpose()
        })
        .collect()
}

/// `steps` run from `inputs[head]`, the binary steps' other operands from `inputs`.
#[derive(Clone)]
pub struct Chain {
    pub steps: Arc<[ChainStep]>,
    pub inputs: Vec<Tensor>,
    pub head: usize,
}

impl Record for Chain {
    crate::autograd::record::named!("fused_chain");
    fn inputs(&self) -> Vec<&Tensor> {
        self.inputs.iter().collect()
    }
    /// Built by the fusion pass after the traces are compared; its steps say what it runs.
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("steps", Attr::Count(Some(self.steps.len()))),
            ("head", Attr::Count(Some(self.head))),
        ]
    }
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        fused_chain_grads(&self.steps, &self.inputs, self.head, out, g)
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        fused_chain(&self.steps, xs, self.head)
    }
}
