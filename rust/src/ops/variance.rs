//! The variance along one axis as one recorded op: the mean as a left fold divided by the
//! count, then the squared deviations folded and divided by
//! max(0, N - correction). The gradient is PyTorch's rule, (2 / (N - correction)) * g *
//! (x - mean), NaN where N - correction <= 0.

use crate::autograd::record::{first, Attr, Record};
use crate::ops::elementwise::{mul, scalar_like, sub};
use crate::ops::layout::reshape_to;
use crate::ops::prod::{lanes, reduced};
use crate::{Error, Result, Shape, Tensor};

/// The variance of `x` along `axis` (negative counts from the end), the axis dropped or kept
/// with size 1 when `keepdim`. Over several axes, Python composes folds axis by axis: one fold
/// over all of them would wait on every add.
pub fn var(x: &Tensor, axis: isize, correction: f64, keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(crate::error::not_float("var", x.dtype()));
    }
    let ax = x.shape().axis("var", axis)?;
    let [outer, len, inner] = lanes(x.shape(), Some(ax));
    if len == 0 {
        return Err(Error::arg(
            "var",
            format!("nothing to reduce in {}", x.shape()),
        ));
    }
    let divisor = (len as f64 - correction).max(0.0);
    let (v, mean) = x.storage().var(outer, len, inner, divisor)?;
    let mean = Tensor::from_storage(mean, reduced(x.shape(), Some(ax), true))?;
    let op = Var {
        x: x.clone(),
        axis: ax,
        correction,
        keepdim,
        mean,
    };
    Ok(Tensor::from_op(
        v,
        reduced(x.shape(), Some(ax), keepdim),
        op,
    ))
}

/// The variance of `x` along `axis`, and the mean the forward found (the axis kept).
#[derive(Clone)]
pub struct Var {
    pub x: Tensor,
    pub axis: usize,
    pub correction: f64,
    pub keepdim: bool,
    pub mean: Tensor,
}

impl Record for Var {
    crate::autograd::record::named!("var");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("axis", Attr::Count(Some(self.axis))),
            ("correction", Attr::Float(Some(self.correction))),
            ("keepdim", Attr::Flag(self.keepdim)),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        // PyTorch's var_backward: (2 / dof) * g * (x - mean), NaN * g where dof <= 0.
        let len = self.x.dims()[self.axis];
        let dof = len as f64 - self.correction;
        let g = reshape_to(g, reduced(self.x.shape(), Some(self.axis), true));
        // A NaN factor where dof <= 0 makes every element NaN, as PyTorch's grad * NaN.
        let k = if dof <= 0.0 { f64::NAN } else { 2.0 / dof };
        let scaled = mul(&g, &scalar_like(k, &g))?;
        Ok(vec![Some(mul(&scaled, &sub(&self.x, &self.mean)?)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        var(
            first("var", xs)?,
            self.axis as isize,
            self.correction,
            self.keepdim,
        )
    }
}
