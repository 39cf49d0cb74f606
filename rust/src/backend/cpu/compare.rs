//! Elementwise comparisons of two host storages of one dtype and shape: a bool mask.

use super::CpuStorage;
use crate::op_table::CompareOp;
use crate::Result;

impl CpuStorage {
    /// `self op other`, element by element (equal lengths, one dtype).
    pub fn compare(&self, op: CompareOp, other: &CpuStorage) -> Result<CpuStorage> {
        fn zip<T: Copy + PartialOrd>(op: CompareOp, x: &[T], y: &[T]) -> Vec<bool> {
            x.iter().zip(y).map(|(&p, &q)| op.apply(p, q)).collect()
        }
        let mask = match (self, other) {
            (CpuStorage::F32(x), CpuStorage::F32(y)) => zip(op, x, y),
            (CpuStorage::F64(x), CpuStorage::F64(y)) => zip(op, x, y),
            (CpuStorage::I64(x), CpuStorage::I64(y)) => zip(op, x, y),
            (CpuStorage::Bool(x), CpuStorage::Bool(y)) => zip(op, x, y),
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
