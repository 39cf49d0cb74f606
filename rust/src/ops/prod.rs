//! The product along one axis, or over all elements, as one recorded op: by halving (each
//! level multiplies the axis's first half by its second, the odd last entry carried on), and
//! its gradient by the product rule back down that tree (zeros need no special case).

use crate::autograd::record::{first, Attr, Record};
use crate::ops::elementwise::check_same_dtype;
use crate::ops::reduce::reduced_shape;
use crate::{Error, Result, Shape, Tensor};

/// The product of `x` along `axis` (None: every element, as one flattened axis), the axis
/// dropped or kept with size 1 (every axis kept for None) when `keepdim`.
pub fn prod(x: &Tensor, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(crate::error::not_float("prod", x.dtype()));
    }
    let ax = axis.map(|a| x.shape().axis("prod", a)).transpose()?;
    let [outer, len, inner] = lanes(x.shape(), ax);
    if len == 0 {
        return Err(Error::arg(
            "prod",
            format!("nothing to reduce in {}", x.shape()),
        ));
    }
    let p = x.storage().prod(outer, len, inner)?;
    let op = Prod {
        x: x.clone(),
        axis: ax,
        keepdim,
    };
    Ok(Tensor::from_op(
        p,
        reduced_shape(x.shape(), ax, keepdim),
        op,
    ))
}

/// [outer, len, inner] around `axis`; all of the tensor as one row for None.
pub(crate) fn lanes(shape: &Shape, axis: Option<usize>) -> [usize; 3] {
    match axis {
        Some(a) => {
            let (o, l, i) = shape.split_at_axis(a);
            [o, l, i]
        }
        None => [1, shape.numel(), 1],
    }
}

/// The product of `x` along `axis` (None: all).
#[derive(Clone)]
pub struct Prod {
    pub x: Tensor,
    pub axis: Option<usize>,
    pub keepdim: bool,
}

impl Record for Prod {
    crate::autograd::record::named!("prod");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("axis", Attr::Count(self.axis)),
            ("keepdim", Attr::Flag(self.keepdim)),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        check_same_dtype("prod", &[&self.x, g])?;
        let [outer, len, inner] = lanes(self.x.shape(), self.axis);
        let s = self.x.storage().prod_grad(g.storage(), outer, len, inner)?;
        Ok(vec![Some(Tensor::from_storage(s, self.x.shape().clone())?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let axis = self.axis.map(|a| a as isize);
        prod(first("prod", xs)?, axis, self.keepdim)
    }
}
