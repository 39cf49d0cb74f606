//! Losses: cross-entropy (class indices, or one-hot / probability targets) and mean squared
//! error, both averaged over the batch as PyTorch's default `reduction="mean"`.

use crate::autograd::Op;
use crate::backend::cuda::ops as cu;
use crate::ops::device::{dev, on_dev};
use crate::ops::elementwise::{mul, neg, sub};
use crate::ops::layout::check_indices;
use crate::ops::reduce::{mean, sum};
use crate::ops::softmax::log_softmax;
use crate::storage::{CpuElem, Storage};
use crate::{DType, Error, Result, Shape, Tensor};
use std::sync::Arc;

/// What `cross_entropy` compares against.
pub enum Target<'a> {
    /// One class index per row.
    Indices(&'a [i64]),
    /// One-hot rows or class probabilities, same shape as the input.
    Probs(&'a Tensor),
}

/// Cross-entropy of logits `input` ([N, C] or [C]) against `target`, averaged over rows.
pub fn cross_entropy(input: &Tensor, target: Target<'_>) -> Result<Tensor> {
    if input.rank() != 1 && input.rank() != 2 {
        return Err(Error::shape(
            "cross_entropy",
            format!(
                "expected logits of shape [N, C] or [C], got {}",
                input.shape()
            ),
        ));
    }
    let logp = log_softmax(input, -1)?;
    match target {
        Target::Indices(t) => {
            let rows = if input.rank() == 2 {
                input.dims()[0]
            } else {
                1
            };
            if t.len() != rows {
                return Err(Error::shape(
                    "cross_entropy",
                    format!(
                        "expected {rows} class indices for logits {}, got {}",
                        input.shape(),
                        t.len()
                    ),
                ));
            }
            let classes = input.dims()[input.rank() - 1];
            let idx = check_indices("cross_entropy", t, classes)?;
            nll_loss_indices(&logp, Arc::new(idx))
        }
        Target::Probs(p) => {
            crate::ops::elementwise::check_same_dtype("cross_entropy", &[input, p])?;
            if p.shape() != input.shape() {
                return Err(Error::shape(
                    "cross_entropy",
                    format!(
                        "expected a target of shape {} (one-hot or probabilities), got {}",
                        input.shape(),
                        p.shape()
                    ),
                ));
            }
            let per_row = neg(&sum(&mul(p, &logp)?, Some(-1), false)?)?;
            mean(&per_row, None, false)
        }
    }
}

fn nll_typed<T: CpuElem>(logp: &Tensor, idx: &[usize]) -> Result<crate::storage::CpuStorage> {
    let v = T::view(logp.cpu()?)
        .ok_or_else(|| crate::storage::dtype_mismatch("cross_entropy", T::DTYPE, logp.dtype()))?;
    let c = logp.dims()[logp.rank() - 1];
    let mut acc = T::ZERO;
    for (n, &t) in idx.iter().enumerate() {
        acc = acc + v[n * c + t];
    }
    Ok(T::wrap(vec![-acc / T::from_f64(idx.len() as f64)]))
}

/// -mean over rows of logp[n, target[n]].
pub(crate) fn nll_loss_indices(logp: &Tensor, idx: Arc<Vec<usize>>) -> Result<Tensor> {
    let s: Storage = match (dev(logp), logp.dtype()) {
        (Some(b), _) => {
            let c = logp.dims()[logp.rank() - 1];
            cu::nll(b, idx.len(), c, &idx)?.into()
        }
        (None, DType::F32) => nll_typed::<f32>(logp, &idx)?.into(),
        (None, DType::F64) => nll_typed::<f64>(logp, &idx)?.into(),
    };
    Ok(Tensor::from_op(
        s,
        Shape::scalar(),
        Op::NllLoss {
            logp: logp.clone(),
            target: idx,
        },
    ))
}

fn nll_grad_typed<T: CpuElem>(
    logp: &Tensor,
    idx: &[usize],
    g: &Tensor,
) -> Result<crate::storage::CpuStorage> {
    let gv = T::view(g.cpu()?)
        .ok_or_else(|| crate::storage::dtype_mismatch("cross_entropy", T::DTYPE, g.dtype()))?;
    let c = logp.dims()[logp.rank() - 1];
    let mut out = vec![T::ZERO; logp.numel()];
    let w = -(gv[0] / T::from_f64(idx.len() as f64));
    for (n, &t) in idx.iter().enumerate() {
        out[n * c + t] = out[n * c + t] + w;
    }
    Ok(T::wrap(out))
}

pub(crate) fn nll_grad(logp: &Tensor, idx: &[usize], g: &Tensor) -> Result<Tensor> {
    if dev(logp).is_some() {
        let c = logp.dims()[logp.rank() - 1];
        let s = cu::nll_grad(idx.len(), c, idx, on_dev("cross_entropy", logp, g)?)?;
        return Tensor::from_storage(s, logp.shape().clone());
    }
    let s = match logp.dtype() {
        DType::F32 => nll_grad_typed::<f32>(logp, idx, g)?,
        DType::F64 => nll_grad_typed::<f64>(logp, idx, g)?,
    };
    Tensor::from_cpu(s, logp.shape().clone())
}

/// Mean of (input - target)² over all elements; the shapes must be equal.
pub fn mse_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    crate::ops::elementwise::check_same_dtype("mse_loss", &[input, target])?;
    if input.shape() != target.shape() {
        return Err(Error::shape(
            "mse_loss",
            format!(
                "input and target shapes differ: {} vs {}",
                input.shape(),
                target.shape()
            ),
        ));
    }
    let d = sub(input, target)?;
    mean(&mul(&d, &d)?, None, false)
}
