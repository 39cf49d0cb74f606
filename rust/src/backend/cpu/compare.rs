//! Elementwise comparisons of host storages of one dtype: a bool mask. The operands have equal
//! lengths, or the second is one value compared with every element of the first (a scalar
//! operand, not spread out first). Each comparison's loop is compiled on its own for the widest
//! vectors, and long masks are written by the threads in chunks.

use super::uninit::filled;
use super::wide_rows::{test_row, test_with_row};
use super::CpuStorage;
use crate::op_table::CompareOp;
use crate::Result;

/// Elements per chunk a thread writes.
const CHUNK: usize = 1 << 14;

impl CpuStorage {
    /// `self op other`, element by element: equal lengths, or `other` one element (one dtype).
    pub fn compare(&self, op: CompareOp, other: &CpuStorage) -> Result<CpuStorage> {
        let mask = match (self, other) {
            (CpuStorage::F32(x), CpuStorage::F32(y)) => compare_slices(op, x, y),
            (CpuStorage::F64(x), CpuStorage::F64(y)) => compare_slices(op, x, y),
            (CpuStorage::I64(x), CpuStorage::I64(y)) => compare_slices(op, x, y),
            (CpuStorage::Bool(x), CpuStorage::Bool(y)) => compare_slices(op, x, y),
            (x, y) => {
                return Err(crate::error::dtype_mismatch(
                    op.name(),
                    x.dtype(),
                    y.dtype(),
                ))
            }
        };
        Ok(CpuStorage::Bool(mask.into()))
    }
}

/// The mask of `x op y` (`y` of x's length, or one value).
fn compare_slices<T: Copy + PartialOrd + Send + Sync>(
    op: CompareOp,
    x: &[T],
    y: &[T],
) -> Vec<bool> {
    // One closure per comparison, so each loop is compiled (and vectorised) for its own test.
    match op {
        CompareOp::Eq => mask(x, y, |a, b| a == b),
        CompareOp::Ne => mask(x, y, |a, b| a != b),
        CompareOp::Lt => mask(x, y, |a, b| a < b),
        CompareOp::Le => mask(x, y, |a, b| a <= b),
        CompareOp::Gt => mask(x, y, |a, b| a > b),
        CompareOp::Ge => mask(x, y, |a, b| a >= b),
    }
}

fn mask<T: Copy + Send + Sync>(x: &[T], y: &[T], f: impl Fn(T, T) -> bool + Sync) -> Vec<bool> {
    if y.len() == 1 && x.len() != 1 {
        let s = y[0];
        return filled(x.len(), CHUNK, x.len(), |ci, o| {
            test_with_row(&x[ci * CHUNK..], s, o, &f)
        });
    }
    debug_assert_eq!(x.len(), y.len());
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        test_row(&x[ci * CHUNK..], &y[ci * CHUNK..], o, &f)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every comparison against its IEEE meaning (`CompareOp::apply`), element against element
    /// and against one value, NaN, infinities and signed zeros included, past one chunk.
    #[test]
    fn masks_follow_the_ieee_comparisons() {
        let special = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1.5,
            -2.0,
        ];
        let n = CHUNK + 37;
        let x: Vec<f64> = (0..n).map(|i| special[i % 7]).collect();
        let y: Vec<f64> = (0..n).map(|i| special[(i / 7) % 7]).collect();
        for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
            let op = CompareOp::parse(op).unwrap();
            let m = compare_slices(op, &x, &y);
            for i in 0..n {
                assert_eq!(m[i], op.apply(x[i], y[i]), "{op:?} at {i}");
            }
            for s in special {
                let m = compare_slices(op, &x, &[s]);
                for i in 0..n {
                    assert_eq!(m[i], op.apply(x[i], s), "{op:?} with {s} at {i}");
                }
            }
            let xi: Vec<i64> = (0..n as i64).map(|i| i % 5 - 2).collect();
            let m = compare_slices(op, &xi, &[0]);
            for i in 0..n {
                assert_eq!(m[i], op.apply(xi[i], 0), "{op:?} int at {i}");
            }
        }
    }
}
