//! Shapes, row-major strides, axis normalisation and NumPy broadcasting.

use crate::{Error, Result};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape(dims.into())
    }
    pub fn scalar() -> Self {
        Shape(Vec::new())
    }
    pub fn dims(&self) -> &[usize] {
        &self.0
    }
    pub fn rank(&self) -> usize {
        self.0.len()
    }
    pub fn numel(&self) -> usize {
        self.0.iter().product()
    }
    /// The element count, or an error when the shape cannot be addressed: its element count
    /// overflows, or its extent in bytes (the product of its non-zero dims, 8 bytes each, which
    /// NumPy's strides must hold) exceeds `isize::MAX`. Zero-size tensors of any other shape
    /// are fine.
    pub fn checked_numel(&self) -> Result<usize> {
        let too_big = || {
            Error::shape(
                "tensor",
                format!("shape {self} has too many elements to address"),
            )
        };
        let n = self
            .0
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(too_big)?;
        let extent = self
            .0
            .iter()
            .filter(|&&d| d != 0)
            .try_fold(8usize, |n, &d| n.checked_mul(d))
            .ok_or_else(too_big)?;
        if extent > isize::MAX as usize {
            return Err(too_big());
        }
        Ok(n)
    }
    /// Row-major (C order) strides in elements.
    pub fn strides(&self) -> Vec<usize> {
        let mut s = vec![1; self.0.len()];
        for i in (0..self.0.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * self.0[i + 1];
        }
        s
    }
    /// Resolves a possibly negative axis against this rank.
    pub fn axis(&self, op: &'static str, axis: isize) -> Result<usize> {
        normalize_axis(op, axis, self.rank())
    }
    /// Splits the shape around `axis` into (outer, len, inner) element counts.
    pub fn split_at_axis(&self, axis: usize) -> (usize, usize, usize) {
        let outer = self.0[..axis].iter().product();
        let inner = self.0[axis + 1..].iter().product();
        (outer, self.0[axis], inner)
    }
}

pub fn normalize_axis(op: &'static str, axis: isize, rank: usize) -> Result<usize> {
    let r = rank as isize;
    let a = if axis < 0 { axis + r } else { axis };
    if rank == 0 {
        return Err(Error::arg(
            op,
            format!("a 0-d tensor has no axes, got axis {axis} (reshape it to [1] first)"),
        ));
    }
    if a < 0 || a >= r {
        return Err(Error::arg(
            op,
            format!(
                "axis {axis} is out of range for a tensor of rank {rank} (expected -{r}..{})",
                r - 1
            ),
        ));
    }
    Ok(a as usize)
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]")
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Self {
        Shape(v)
    }
}
impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Self {
        Shape(v.to_vec())
    }
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shapes(op: &'static str, a: &Shape, b: &Shape) -> Result<Shape> {
    let n = a.rank().max(b.rank());
    let mut out = vec![0; n];
    #[allow(clippy::needless_range_loop)] // i indexes three shapes aligned from the right
    for i in 0..n {
        let da = if i + a.rank() >= n {
            a.0[i + a.rank() - n]
        } else {
            1
        };
        let db = if i + b.rank() >= n {
            b.0[i + b.rank() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format!("shapes {a} and {b} cannot be broadcast together"),
            ));
        };
    }
    let out = Shape(out);
    crate::storage::check_alloc(op, &out)?;
    Ok(out)
}

/// Strides for reading `from` as if it had shape `to` (0 along broadcast axes).
pub fn broadcast_strides(from: &Shape, to: &Shape) -> Vec<usize> {
    let s = from.strides();
    let off = to.rank() - from.rank();
    (0..to.rank())
        .map(|i| {
            if i < off || from.0[i - off] == 1 {
                0
            } else {
                s[i - off]
            }
        })
        .collect()
}
