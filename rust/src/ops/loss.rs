//! Losses: cross-entropy over class indices and the negative log-likelihood, averaged over the
//! batch as PyTorch's default `reduction="mean"` (probability targets: cross_entropy_probs.rs;
//! mse, smooth L1 and Huber: pointwise_loss.rs).

use crate::autograd::record::{first, Attr, Record};
use crate::geometry::IGNORED_ROW;
use crate::ops::elementwise::{check_same_device, check_same_dtype};
use crate::{Error, Result, Shape, Tensor};
use std::sync::Arc;

/// What `cross_entropy` compares against.
pub enum Target<'a> {
    /// One class index per row.
    Indices(&'a [i64]),
    /// One class index per row, as an int64 tensor (kept as the record's input, so a compiled
    /// graph reads each step's labels).
    IndexTensor(&'a Tensor),
    /// One-hot rows or class probabilities, same shape as the input.
    Probs(&'a Tensor),
}

/// Cross-entropy of logits `input` ([N, C] or [C]) against `target`, averaged over rows.
pub fn cross_entropy(input: &Tensor, target: Target<'_>) -> Result<Tensor> {
    cross_entropy_ignoring(input, target, None)
}

/// `cross_entropy`, where a class index equal to `ignore_index` counts for nothing: not in the
/// sum, not in the mean's divisor (PyTorch's `ignore_index`; every row ignored gives NaN). The
/// rows are read where the labels are, so a compiled step replays it on each batch's labels.
pub fn cross_entropy_ignoring(
    input: &Tensor,
    target: Target<'_>,
    ignore_index: Option<i64>,
) -> Result<Tensor> {
    check_rows("cross_entropy", input, "logits")?;
    match target {
        Target::Probs(p) => crate::ops::cross_entropy_probs::cross_entropy_probs(input, p),
        labels => {
            let labels = row_labels("cross_entropy", input, labels, ignore_index)?;
            cross_entropy_from(input, labels)
        }
    }
}

/// Cross-entropy of logits `x` ([N, C] or [C]) at checked row labels, as one recorded op.
fn cross_entropy_from(x: &Tensor, labels: Labels) -> Result<Tensor> {
    let (rows, classes) = (labels.rows.len(), x.dims()[x.rank() - 1]);
    let logp = x.storage().softmax(rows, classes, 1, true)?;
    let logp = Tensor::from_storage(logp, x.shape().clone())?;
    let s = logp.storage().nll(rows, classes, &labels.rows)?;
    let op = CrossEntropy {
        x: x.clone(),
        logp,
        labels,
    };
    Ok(Tensor::from_op(s, Shape::scalar(), op))
}

/// The negative log-likelihood of log-probabilities `logp` ([N, C] or [C]) at class labels,
/// averaged over the counted rows: cross-entropy's last step (one left fold over the rows),
/// recorded as one op. Labels equal to `ignore_index` count for nothing.
pub fn nll_loss_ignoring(
    logp: &Tensor,
    target: Target<'_>,
    ignore_index: Option<i64>,
) -> Result<Tensor> {
    check_rows("nll_loss", logp, "log-probabilities")?;
    if let Target::Probs(_) = target {
        return Err(Error::arg(
            "nll_loss",
            "expected class labels, got probabilities",
        ));
    }
    nll_at_labels("nll_loss", logp, target, ignore_index)
}

pub(crate) fn check_rows(name: &'static str, input: &Tensor, what: &str) -> Result<()> {
    if input.rank() != 1 && input.rank() != 2 {
        return Err(Error::shape(
            name,
            format!(
                "expected {what} of shape [N, C] or [C], got {}",
                input.shape()
            ),
        ));
    }
    Ok(())
}

/// -mean over the counted rows of `logp[n, label[n]]`, the labels as a list or an int64 tensor.
fn nll_at_labels(
    name: &'static str,
    logp: &Tensor,
    target: Target<'_>,
    ignore_index: Option<i64>,
) -> Result<Tensor> {
    nll_loss_from(logp, row_labels(name, logp, target, ignore_index)?)
}

/// Each row's label of `x` ([N, C] or [C]) checked against its classes.
fn row_labels(
    name: &'static str,
    x: &Tensor,
    target: Target<'_>,
    ignore_index: Option<i64>,
) -> Result<Labels> {
    let (values, tensor);
    let t: &[i64] = match target {
        Target::IndexTensor(t) => {
            if t.rank() > 1 {
                return Err(Error::shape(
                    name,
                    format!(
                        "expected class indices of shape [N] or [], got {}",
                        t.shape()
                    ),
                ));
            }
            values = crate::ops::layout::host_ints(name, t)?;
            tensor = Some(t);
            &values
        }
        Target::Indices(t) => {
            tensor = None;
            t
        }
        Target::Probs(_) => unreachable!("the callers take probabilities elsewhere"),
    };
    let rows = if x.rank() == 2 { x.dims()[0] } else { 1 };
    if t.len() != rows {
        return Err(Error::shape(
            name,
            format!(
                "expected {rows} class indices for input {}, got {}",
                x.shape(),
                t.len()
            ),
        ));
    }
    let classes = x.dims()[x.rank() - 1];
    Ok(Labels {
        rows: Arc::new(check_labels(name, t, classes, ignore_index)?),
        tensor: tensor.cloned(),
        ignore_index,
    })
}

/// Each row's class index, checked against `classes`; a row equal to `ignore_index` (in range
/// or not) is `IGNORED_ROW`.
fn check_labels(
    name: &'static str,
    values: &[i64],
    classes: usize,
    ignore_index: Option<i64>,
) -> Result<Vec<usize>> {
    values
        .iter()
        .map(|&v| match ignore_index {
            Some(i) if v == i => Ok(IGNORED_ROW),
            _ if v >= 0 && (v as u64) < classes as u64 => Ok(v as usize),
            _ => Err(Error::Index {
                op: name,
                index: v,
                bound: classes,
            }),
        })
        .collect()
}

fn nll_loss_from(logp: &Tensor, labels: Labels) -> Result<Tensor> {
    let c = logp.dims()[logp.rank() - 1];
    let s = logp.storage().nll(labels.rows.len(), c, &labels.rows)?;
    let op = NllLoss {
        logp: logp.clone(),
        labels,
    };
    Ok(Tensor::from_op(s, Shape::scalar(), op))
}

pub(crate) fn nll_grad(logp: &Tensor, idx: &[usize], g: &Tensor) -> Result<Tensor> {
    check_same_device("cross_entropy", logp, g)?;
    check_same_dtype("cross_entropy", &[logp, g])?;
    let c = logp.dims()[logp.rank() - 1];
    let s = g.storage().nll_grad(idx.len(), c, idx)?;
    Tensor::from_storage(s, logp.shape().clone())
}

/// A loss's class labels: each row's checked index (`IGNORED_ROW` where it is `ignore_index`),
/// and the int64 tensor they came from when given as one (then a record input, read again on
/// replay, rather than an attribute).
#[derive(Clone)]
pub struct Labels {
    pub rows: Arc<Vec<usize>>,
    pub tensor: Option<Tensor>,
    /// The label that counts for nothing.
    pub ignore_index: Option<i64>,
}

impl Labels {
    /// A record's inputs: `first`, then the labels' tensor if there is one.
    fn inputs<'a>(&'a self, first: &'a Tensor) -> Vec<&'a Tensor> {
        let mut v = vec![first];
        v.extend(&self.tensor);
        v
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        let ignore = ("ignore_index", Attr::Int(self.ignore_index));
        match self.tensor {
            None => vec![("target", Attr::List(self.rows.to_vec())), ignore],
            Some(_) => vec![ignore],
        }
    }
    /// `grad` for the first input, none for the labels' tensor.
    fn grads(&self, grad: Tensor) -> Vec<Option<Tensor>> {
        let mut grads = vec![Some(grad)];
        grads.extend(self.tensor.iter().map(|_| None));
        grads
    }
}

/// -mean over rows of `logp[n, target[n]]` (cross-entropy's likelihood term).
#[derive(Clone)]
pub struct NllLoss {
    pub logp: Tensor,
    pub labels: Labels,
}

impl Record for NllLoss {
    crate::autograd::record::named!("nll_loss");
    fn inputs(&self) -> Vec<&Tensor> {
        self.labels.inputs(&self.logp)
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        self.labels.attributes()
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(self
            .labels
            .grads(nll_grad(&self.logp, &self.labels.rows, g)?))
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let ignore = self.labels.ignore_index;
        match (xs, &self.labels.tensor) {
            ([logp, target, ..], Some(_)) => {
                nll_loss_ignoring(logp, Target::IndexTensor(target), ignore)
            }
            _ => nll_loss_from(first("nll_loss", xs)?, self.labels.clone()),
        }
    }
}

/// Cross-entropy of logits `x` at class labels: log-softmax, then the mean negative
/// log-likelihood over the counted rows, as one op. The log-probabilities are kept for the
/// gradient, which runs nll's and log-softmax's in one pass on the CPU.
#[derive(Clone)]
pub struct CrossEntropy {
    pub x: Tensor,
    pub logp: Tensor,
    pub labels: Labels,
}

impl Record for CrossEntropy {
    crate::autograd::record::named!("cross_entropy");
    fn inputs(&self) -> Vec<&Tensor> {
        self.labels.inputs(&self.x)
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        self.labels.attributes()
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        check_same_device("cross_entropy", &self.logp, g)?;
        check_same_dtype("cross_entropy", &[&self.logp, g])?;
        let (rows, classes) = (&self.labels.rows, self.x.dims()[self.x.rank() - 1]);
        let s = self
            .logp
            .storage()
            .cross_entropy_grad(g.storage(), rows.len(), classes, rows)?;
        Ok(self
            .labels
            .grads(Tensor::from_storage(s, self.x.shape().clone())?))
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let ignore = self.labels.ignore_index;
        match (xs, &self.labels.tensor) {
            ([x, target, ..], Some(_)) => {
                cross_entropy_ignoring(x, Target::IndexTensor(target), ignore)
            }
            _ => cross_entropy_from(first("cross_entropy", xs)?, self.labels.clone()),
        }
    }
}
