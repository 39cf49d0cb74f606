//! The variance along one or more axes as one recorded op: the mean as left folds divided by the
//! count, then the squared deviations folded and divided by max(0, N - correction). The
//! gradient is PyTorch's rule, (2 / (N - correction)) * g * (x - mean), NaN where
//! N - correction <= 0: one pass, where the composition's gradient walked back through every
//! fold and the mean.

use super::axes::{count, fold_each, reduced, resolve};
use crate::autograd::no_grad;
use crate::autograd::record::{first, Attr, Record};
use crate::op_table::BinaryOp;
use crate::ops::elementwise::{binary, mul, scalar_like, sub};
use crate::ops::layout::reshape_to;
use crate::ops::prod::lanes;
use crate::ops::reduce::sum;
use crate::{Error, Result, Shape, Tensor};

/// The variance of `x` along `axes` (negative counts from the end), the axes dropped or kept
/// with size 1 when `keepdim`. One axis runs the storage's kernel; several fold axis by axis,
/// from the last (each fold across the lanes of the others, where one fold over all of them
/// would wait on every add).
pub fn var(x: &Tensor, axes: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(crate::error::not_float("var", x.dtype()));
    }
    let axes = resolve("var", x.shape(), axes)?;
    let n = count(x.shape(), &axes);
    if n == 0 {
        return Err(Error::arg(
            "var",
            format!("nothing to reduce in {}", x.shape()),
        ));
    }
    let divisor = (n as f64 - correction).max(0.0);
    let kept = reduced(x.shape(), &axes, true);
    let (v, mean) = match axes[..] {
        [ax] => {
            let [outer, len, inner] = lanes(x.shape(), Some(ax));
            let (v, mean) = x.storage().var(outer, len, inner, divisor)?;
            (v, Tensor::from_storage(mean, kept)?)
        }
        _ => no_grad(|| var_by_axes(x, &axes, n, divisor))?,
    };
    let op = Var {
        x: x.clone(),
        axes: axes.clone(),
        correction,
        keepdim,
        mean,
    };
    Ok(Tensor::from_op(v, reduced(x.shape(), &axes, keepdim), op))
}

/// The variance's storage (the axes kept) and the mean, by sums axis by axis.
fn var_by_axes(
    x: &Tensor,
    axes: &[usize],
    n: usize,
    divisor: f64,
) -> Result<(crate::storage::Storage, Tensor)> {
    let sum_kept = |t: &Tensor, a: isize| sum(t, Some(a), true);
    let divide = |t: &Tensor, by: f64| binary(BinaryOp::Div, t, &scalar_like(by, t));
    let mean = divide(&fold_each(x, axes, sum_kept)?, n as f64)?;
    let d = sub(x, &mean)?;
    let v = divide(&fold_each(&mul(&d, &d)?, axes, sum_kept)?, divisor)?;
    Ok((v.storage().clone(), mean))
}

/// The variance of `x` along `axes`, and the mean the forward found (the axes kept).
#[derive(Clone)]
pub struct Var {
    pub x: Tensor,
    pub axes: Vec<usize>,
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
            ("axes", Attr::List(self.axes.clone())),
            ("correction", Attr::Float(Some(self.correction))),
            ("keepdim", Attr::Flag(self.keepdim)),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        // PyTorch's var_backward: (2 / dof) * g * (x - mean), NaN * g where dof <= 0.
        let dof = count(self.x.shape(), &self.axes) as f64 - self.correction;
        let g = reshape_to(g, reduced(self.x.shape(), &self.axes, true));
        // A NaN factor where dof <= 0 makes every element NaN, as PyTorch's grad * NaN.
        let k = if dof <= 0.0 { f64::NAN } else { 2.0 / dof };
        let scaled = mul(&g, &scalar_like(k, &g))?;
        Ok(vec![Some(mul(&scaled, &sub(&self.x, &self.mean)?)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        var(first("var", xs)?, &axes, self.correction, self.keepdim)
    }
}
