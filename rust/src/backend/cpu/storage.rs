//! Host storage: a tensor's elements in one buffer of its dtype (owned, or borrowed from NumPy
//! or a DLPack producer: host_buf.rs), and the macros that apply a kernel written once, generic
//! over `Float`, to whichever dtype a storage holds.

use super::host_buf::HostBuf;
use crate::alloc::try_alloc;
use crate::{DType, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum CpuStorage {
    F32(HostBuf<f32>),
    F64(HostBuf<f64>),
}

impl CpuStorage {
    /// The elements as `T`, or the dtype mismatch, named for `op`, of an operand that should
    /// share `T` with the others.
    pub fn typed<T: CpuElem>(&self, op: &'static str) -> Result<&[T]> {
        T::view(self).ok_or_else(|| crate::error::dtype_mismatch(op, T::DTYPE, self.dtype()))
    }

    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            CpuStorage::F32(v) => v.len(),
            CpuStorage::F64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn zeros(dtype: DType, n: usize) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(vec![0.0; n].into()),
            DType::F64 => CpuStorage::F64(vec![0.0; n].into()),
        }
    }
    pub fn full(dtype: DType, n: usize, v: f64) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(vec![v as f32; n].into()),
            DType::F64 => CpuStorage::F64(vec![v; n].into()),
        }
    }
    pub fn from_f64(dtype: DType, v: &[f64]) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(v.iter().map(|&x| x as f32).collect::<Vec<_>>().into()),
            DType::F64 => CpuStorage::F64(v.to_vec().into()),
        }
    }
    /// Like `full`, but an impossible size or a failed allocation is an error, not an abort.
    pub fn try_full(dtype: DType, n: usize, v: f64) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => {
                let mut out = try_alloc(n)?;
                out.resize(n, v as f32);
                CpuStorage::F32(out.into())
            }
            DType::F64 => {
                let mut out = try_alloc(n)?;
                out.resize(n, v);
                CpuStorage::F64(out.into())
            }
        })
    }
    /// Values widened to f64 (exact for both dtypes).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            CpuStorage::F32(v) => v.iter().map(|&x| x as f64).collect(),
            CpuStorage::F64(v) => v.to_vec(),
        }
    }
    /// Converts to another dtype (rounding to nearest when narrowing).
    pub fn to_dtype(&self, dtype: DType) -> Self {
        match (self, dtype) {
            (CpuStorage::F32(v), DType::F64) => {
                CpuStorage::F64(v.iter().map(|&x| x as f64).collect::<Vec<_>>().into())
            }
            (CpuStorage::F64(v), DType::F32) => {
                CpuStorage::F32(v.iter().map(|&x| x as f32).collect::<Vec<_>>().into())
            }
            _ => self.clone(),
        }
    }
}

/// Applies a generic kernel to one CPU storage: `map_cpu!(s, |v| expr)` where `v: &HostBuf<T>`
/// (read as `&[T]`) and `expr: Vec<T>`; the result keeps the dtype.
#[macro_export]
macro_rules! map_cpu {
    ($s:expr, |$v:ident| $body:expr) => {
        match $s {
            $crate::backend::cpu::CpuStorage::F32($v) => {
                $crate::backend::cpu::CpuStorage::F32(($body).into())
            }
            $crate::backend::cpu::CpuStorage::F64($v) => {
                $crate::backend::cpu::CpuStorage::F64(($body).into())
            }
        }
    };
}

/// Applies a generic kernel to two CPU storages of the same dtype; mixed dtypes are an error.
#[macro_export]
macro_rules! map_cpu2 {
    ($op:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (
                $crate::backend::cpu::CpuStorage::F32($x),
                $crate::backend::cpu::CpuStorage::F32($y),
            ) => Ok($crate::backend::cpu::CpuStorage::F32(($body).into())),
            (
                $crate::backend::cpu::CpuStorage::F64($x),
                $crate::backend::cpu::CpuStorage::F64($y),
            ) => Ok($crate::backend::cpu::CpuStorage::F64(($body).into())),
            (a, b) => Err($crate::Error::DType {
                op: $op,
                expected: "operands of one dtype (tlrs never promotes; convert with .to())".into(),
                got: format!("{} and {}", a.dtype(), b.dtype()),
            }),
        }
    };
}

/// Typed access to CPU storage, for kernels that handle several tensors of one dtype.
pub trait CpuElem: crate::dtype::Float {
    fn view(s: &CpuStorage) -> Option<&[Self]>;
    /// The elements for writing: only owned storage of this dtype.
    fn view_mut(s: &mut CpuStorage) -> Option<&mut [Self]>;
    fn wrap(v: Vec<Self>) -> CpuStorage;
}
impl CpuElem for f32 {
    fn view(s: &CpuStorage) -> Option<&[f32]> {
        match s {
            CpuStorage::F32(v) => Some(v),
            _ => None,
        }
    }
    fn view_mut(s: &mut CpuStorage) -> Option<&mut [f32]> {
        match s {
            CpuStorage::F32(v) => v.owned_mut(),
            _ => None,
        }
    }
    fn wrap(v: Vec<f32>) -> CpuStorage {
        CpuStorage::F32(v.into())
    }
}
impl CpuElem for f64 {
    fn view(s: &CpuStorage) -> Option<&[f64]> {
        match s {
            CpuStorage::F64(v) => Some(v),
            _ => None,
        }
    }
    fn view_mut(s: &mut CpuStorage) -> Option<&mut [f64]> {
        match s {
            CpuStorage::F64(v) => v.owned_mut(),
            _ => None,
        }
    }
    fn wrap(v: Vec<f64>) -> CpuStorage {
        CpuStorage::F64(v.into())
    }
}

impl CpuStorage {
    /// Whether the elements are borrowed from outside (a NumPy array or a DLPack producer,
    /// which may still write them) rather than owned.
    pub fn is_borrowed(&self) -> bool {
        match self {
            CpuStorage::F32(v) => v.is_borrowed(),
            CpuStorage::F64(v) => v.is_borrowed(),
        }
    }

    /// The elements of the view `view` (of shape `dims`) of these values, in row-major order.
    pub fn gather(&self, dims: &[usize], view: &crate::strided::Strided) -> Self {
        map_cpu!(self, |v| super::layout::gather(v, dims, view))
    }

    /// The batch of products of `self` read as `a` and `rhs` read as `b`, in place.
    pub fn matmul_strided(
        &self,
        a: &crate::geometry::MatOperand,
        rhs: &CpuStorage,
        b: &crate::geometry::MatOperand,
        mnk: [usize; 3],
    ) -> Result<Self> {
        let fast = super::parallel::fast_kernels();
        map_cpu2!("matmul", self, rhs, |x, y| super::matmul::matmul_strided(
            x, a, y, b, mnk, fast
        ))
    }
}
