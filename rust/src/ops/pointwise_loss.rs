//! Losses averaged over all elements of an input and a target of its shape, each one recorded
//! op with the bits of its composition: `mean(term(sub(input, target)))` for mse_loss (term
//! d * d, a `mul`), l1_loss, smooth_l1_loss and huber_loss (the op table's abs, smooth_l1 and
//! huber), and `mean(sub(mul(sub(1, t), x), logsigmoid(x)))` for
//! binary_cross_entropy_with_logits. The CPU sums the terms and computes the gradient in one
//! pass each (`backend/cpu/pointwise_loss.rs`).

use crate::autograd::record::{need, Attr, Record};
use crate::geometry::LossTerm;
use crate::op_table::BinaryOp;
use crate::ops::elementwise::{check_same_device, check_same_dtype, div, float_only, mul, neg};
use crate::{Error, Result, Shape, Tensor};

/// Mean of (input - target)² over all elements; the shapes must be equal.
pub fn mse_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    pointwise_loss(input, target, LossTerm::Square)
}

/// Mean of |input - target| over all elements; the shapes must be equal.
pub fn l1_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    pointwise_loss(input, target, LossTerm::Abs)
}

/// Mean of smooth_l1(input - target, beta) over all elements (beta > 0); equal shapes.
pub fn smooth_l1_loss(input: &Tensor, target: &Tensor, beta: f64) -> Result<Tensor> {
    pointwise_loss(input, target, LossTerm::SmoothL1 { beta })
}

/// Mean of huber(input - target, delta) over all elements (delta > 0); equal shapes.
pub fn huber_loss(input: &Tensor, target: &Tensor, delta: f64) -> Result<Tensor> {
    pointwise_loss(input, target, LossTerm::Huber { delta })
}

/// Mean over all elements of PyTorch's stable binary cross-entropy of logits `input` at
/// targets in [0, 1], (1 - target) * input - logsigmoid(input); equal shapes.
pub fn binary_cross_entropy_with_logits(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    pointwise_loss(input, target, LossTerm::BceWithLogits)
}

fn name(term: LossTerm) -> &'static str {
    match term {
        LossTerm::BceWithLogits => "binary_cross_entropy_with_logits",
        LossTerm::Square => "mse_loss",
        LossTerm::Abs => "l1_loss",
        LossTerm::SmoothL1 { .. } => "smooth_l1_loss",
        LossTerm::Huber { .. } => "huber_loss",
    }
}

/// The terms summed as a whole tensor is, then divided once by the count (`mean`'s steps).
fn pointwise_loss(input: &Tensor, target: &Tensor, term: LossTerm) -> Result<Tensor> {
    let what = name(term);
    if let Some(op) = term.table_op() {
        // The term's parameter as the table op itself checks it (beta > 0, delta > 0).
        op.check().map_err(|msg| Error::arg(what, msg))?;
    }
    float_only(what, &[input, target])?;
    check_same_dtype(what, &[input, target])?;
    check_same_device(what, input, target)?;
    if input.shape() != target.shape() {
        return Err(Error::shape(
            what,
            format!(
                "input and target shapes differ: {} vs {}",
                input.shape(),
                target.shape()
            ),
        ));
    }
    let s = input
        .storage()
        .pointwise_loss_sum(target.storage(), term, input.shape())?
        .binary_scalar(BinaryOp::Div, input.numel() as f64, false)?;
    let op = PointwiseLoss {
        x: input.clone(),
        t: target.clone(),
        term,
    };
    Ok(Tensor::from_op(s, Shape::scalar(), op))
}

/// A pointwise loss as one op.
#[derive(Clone)]
pub struct PointwiseLoss {
    pub x: Tensor,
    pub t: Tensor,
    pub term: LossTerm,
}

impl Record for PointwiseLoss {
    fn name(&self) -> &'static str {
        name(self.term)
    }
    fn names() -> Vec<&'static str> {
        vec![
            "mse_loss",
            "l1_loss",
            "smooth_l1_loss",
            "huber_loss",
            "binary_cross_entropy_with_logits",
        ]
    }
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x, &self.t]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        match self.term {
            LossTerm::Square | LossTerm::Abs | LossTerm::BceWithLogits => vec![],
            LossTerm::SmoothL1 { beta } => vec![("beta", Attr::Float(Some(beta)))],
            LossTerm::Huber { delta } => vec![("delta", Attr::Float(Some(delta)))],
        }
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let what = name(self.term);
        check_same_device(what, &self.x, g)?;
        check_same_dtype(what, &[&self.x, g])?;
        if !need(&self.x) && !need(&self.t) {
            return Ok(vec![None, None]);
        }
        // The mean's gradient g / count, then the term's (for the differences, sub passes it
        // to the input and its negation to the target).
        let w = div(g, &Tensor::scalar(self.x.numel() as f64, g.dtype()))?;
        let gx = self.x.storage().pointwise_loss_grad(
            self.t.storage(),
            w.storage(),
            self.term,
            self.x.shape(),
        )?;
        let gx = Tensor::from_storage(gx, self.x.shape().clone())?;
        let gt = match (need(&self.t), self.term) {
            (false, _) => None,
            // sub(1, t)'s for t after mul's for (1 - t): -(w * x).
            (true, LossTerm::BceWithLogits) => Some(neg(&mul(&w, &self.x)?)?),
            (true, _) => Some(neg(&gx)?),
        };
        Ok(vec![need(&self.x).then_some(gx), gt])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        match xs {
            [x, t] => pointwise_loss(x, t, self.term),
            _ => Err(Error::arg(
                "graph",
                "a pointwise loss replays on two inputs",
            )),
        }
    }
}
