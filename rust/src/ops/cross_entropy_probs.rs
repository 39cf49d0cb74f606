//! Cross-entropy of logits against probability targets (one-hot rows, soft labels, a teacher's
//! probabilities), averaged over the rows, as one recorded op: log-softmax, p * logp, the row
//! sums and their mean in one pass on the CPU, and a gradient of two passes' work in one
//! (`backend/cpu/cross_entropy_probs.rs`) where the composition of recorded ops took five.

use crate::autograd::record::{need, Record};
use crate::ops::elementwise::{check_same_device, check_same_dtype, div, mul, neg};
use crate::{DType, Error, Result, Shape, Tensor};

/// -mean over rows of sum_j p[r, j] * log_softmax(x)[r, j], for logits `x` [N, C] or [C] and
/// targets `p` of the same shape. The rows' sums fold in index order, the mean sums the rows
/// in order and divides once.
pub fn cross_entropy_probs(x: &Tensor, p: &Tensor) -> Result<Tensor> {
    check_same_dtype("cross_entropy", &[x, p])?;
    check_same_device("cross_entropy", x, p)?;
    if p.shape() != x.shape() {
        return Err(Error::shape(
            "cross_entropy",
            format!(
                "expected a target of shape {} (one-hot or probabilities), got {}",
                x.shape(),
                p.shape()
            ),
        ));
    }
    let (rows, classes) = rows_and_classes(x);
    let (logp, loss) = x
        .storage()
        .cross_entropy_probs(p.storage(), rows, classes)?;
    let logp = Tensor::from_storage(logp, x.shape().clone())?;
    let op = CrossEntropyProbs {
        x: x.clone(),
        p: p.clone(),
        logp,
    };
    Ok(Tensor::from_op(loss, Shape::scalar(), op))
}

/// Cross-entropy with label smoothing `epsilon` at class `labels` (one per row, none ignored),
/// averaged: `cross_entropy_probs` against the smoothed one-hot rows, (1 - eps) + eps / C at a
/// row's label and eps / C elsewhere (each rounded once from f64). PyTorch's loss,
/// (1 - eps) * nll + eps / C * (-sum of the log-probabilities), rounded its own way.
pub fn cross_entropy_smoothed(x: &Tensor, labels: &[i64], epsilon: f64) -> Result<Tensor> {
    crate::ops::elementwise::float_only("cross_entropy", &[x])?;
    crate::ops::loss::check_rows("cross_entropy", x, "logits")?;
    let (rows, classes) = rows_and_classes(x);
    if labels.len() != rows {
        return Err(Error::shape(
            "cross_entropy",
            format!(
                "expected {rows} class indices for input {}, got {}",
                x.shape(),
                labels.len()
            ),
        ));
    }
    let at = |r: usize, &l: &i64| match usize::try_from(l) {
        Ok(c) if c < classes => Ok(r * classes + c),
        _ => Err(Error::Index {
            op: "cross_entropy",
            index: l,
            bound: classes,
        }),
    };
    let hot: Vec<usize> = labels
        .iter()
        .enumerate()
        .map(|(r, l)| at(r, l))
        .collect::<Result<_>>()?;
    let off = epsilon / classes as f64;
    let on = (1.0 - epsilon) + off;
    let target = match x.dtype() {
        DType::F32 => {
            let mut t = vec![off as f32; rows * classes];
            hot.iter().for_each(|&i| t[i] = on as f32);
            Tensor::from_vec_f32(t, x.shape().clone())?
        }
        _ => {
            let mut t = vec![off; rows * classes];
            hot.iter().for_each(|&i| t[i] = on);
            Tensor::from_vec_f64(t, x.shape().clone())?
        }
    };
    // Built on the host, then where the logits are (the same tensor when that is the host).
    cross_entropy_probs(x, &target.to_device(x.device())?)
}

fn rows_and_classes(x: &Tensor) -> (usize, usize) {
    match x.dims() {
        [rows, classes] => (*rows, *classes),
        [classes] => (1, *classes),
        _ => unreachable!("cross_entropy checks the rank first"),
    }
}

/// Cross-entropy against probabilities; the log-probabilities are kept for the gradient.
#[derive(Clone)]
pub struct CrossEntropyProbs {
    pub x: Tensor,
    pub p: Tensor,
    pub logp: Tensor,
}

impl Record for CrossEntropyProbs {
    crate::autograd::record::named!("cross_entropy_probs");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x, &self.p]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        check_same_device("cross_entropy", &self.logp, g)?;
        check_same_dtype("cross_entropy", &[&self.logp, g])?;
        let (rows, classes) = rows_and_classes(&self.x);
        // Each input's gradient only where it wants one (targets usually do not).
        let gx = if need(&self.x) {
            let s = self.logp.storage().cross_entropy_probs_grad(
                self.p.storage(),
                g.storage(),
                rows,
                classes,
            )?;
            Some(Tensor::from_storage(s, self.x.shape().clone())?)
        } else {
            None
        };
        // The targets' gradient: -(g / rows) * logp.
        let gp = if need(&self.p) {
            let w = neg(&div(g, &Tensor::scalar(rows as f64, g.dtype()))?)?;
            Some(mul(&w, &self.logp)?)
        } else {
            None
        };
        Ok(vec![gx, gp])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        match xs {
            [x, p] => cross_entropy_probs(x, p),
            _ => Err(Error::arg(
                "graph",
                "cross_entropy_probs replays on two inputs",
            )),
        }
    }
}
