//! Elementwise comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=`) with broadcasting: bool tensors,
//! the masks `masked_fill` and `where` take. Operands share one dtype (float, int64 or bool; tlrs
//! never promotes). A comparison has no gradient; it is recorded only so that a compiled graph
//! replays it on each step's values.

use crate::autograd::record::{Attr, Record};
pub use crate::op_table::CompareOp;
use crate::shape::broadcast_shapes;
use crate::{Error, Result, Shape, Tensor};

/// `a op b` elementwise, broadcast to their common shape: a bool tensor on the host.
pub fn compare(op: CompareOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.dtype() != b.dtype() {
        return Err(crate::error::dtype_mismatch(
            op.name(),
            a.dtype(),
            b.dtype(),
        ));
    }
    let out = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    crate::storage::check_alloc(op.name(), &out)?;
    // One value against a whole tensor is compared as it is, not spread out first.
    let mask = if b.numel() == 1 && a.shape() == &out {
        a.storage().compare(op, b.storage())?
    } else if a.numel() == 1 && b.shape() == &out {
        b.storage().compare(op.flipped(), a.storage())?
    } else {
        let (wa, wb) = (
            crate::autograd::no_grad(|| crate::ops::broadcast_to(a, &out))?,
            crate::autograd::no_grad(|| crate::ops::broadcast_to(b, &out))?,
        );
        wa.storage().compare(op, wb.storage())?
    };
    Ok(Tensor::from_op(
        mask,
        out,
        Compare {
            op,
            a: a.clone(),
            b: b.clone(),
        },
    ))
}

/// A comparison (no gradient; replayed by compiled graphs).
#[derive(Clone)]
pub struct Compare {
    pub op: CompareOp,
    pub a: Tensor,
    pub b: Tensor,
}

impl Record for Compare {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn names() -> Vec<&'static str> {
        ["eq", "ne", "lt", "le", "gt", "ge"].to_vec()
    }
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.a, &self.b]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![]
    }
    fn input_grads(&self, _out: &Tensor, _g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![None, None])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        match xs {
            [a, b, ..] => compare(self.op, a, b),
            _ => Err(Error::arg("graph", "a comparison needs two inputs")),
        }
    }
}
