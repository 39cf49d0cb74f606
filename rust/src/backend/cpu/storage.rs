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
    /// Integer and bool tensors: data movement and the index ops only (`map_cpu_any!`); the
    /// float kernels (`map_cpu!`) refuse them.
    I64(HostBuf<i64>),
    Bool(HostBuf<bool>),
}

impl CpuStorage {
    /// The elements as `T`, or the dtype mismatch, named for `op`, of an operand that should
    /// share `T` with the others.
    pub fn typed<T: CpuElem>(&self, op: &'static str) -> Result<&[T]> {
        T::view(self).ok_or_else(|| match self.dtype() {
            d if d.is_float() => crate::error::dtype_mismatch(op, T::DTYPE, d),
            d => crate::error::not_float(op, d),
        })
    }
    /// The integer elements, or an error naming `op` for a float or bool storage.
    pub fn ints(&self, op: &'static str) -> Result<&[i64]> {
        match self {
            CpuStorage::I64(v) => Ok(v),
            other => Err(crate::Error::DType {
                op,
                expected: "an int64 tensor".into(),
                got: format!("{}", other.dtype()),
            }),
        }
    }
    /// The bool elements, or an error naming `op` for another dtype.
    pub fn bools(&self, op: &'static str) -> Result<&[bool]> {
        match self {
            CpuStorage::Bool(v) => Ok(v),
            other => Err(crate::Error::DType {
                op,
                expected: "a bool tensor".into(),
                got: format!("{}", other.dtype()),
            }),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
            CpuStorage::I64(_) => DType::I64,
            CpuStorage::Bool(_) => DType::Bool,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            CpuStorage::F32(v) => v.len(),
            CpuStorage::F64(v) => v.len(),
            CpuStorage::I64(v) => v.len(),
            CpuStorage::Bool(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn zeros(dtype: DType, n: usize) -> Self {
        Self::full(dtype, n, 0.0)
    }
    /// `n` copies of `v` in `dtype` (for an integer dtype `v` is an integer-valued f64 that
    /// callers have checked; for bool, nonzero is true).
    pub fn full(dtype: DType, n: usize, v: f64) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(vec![v as f32; n].into()),
            DType::F64 => CpuStorage::F64(vec![v; n].into()),
            DType::I64 => CpuStorage::I64(vec![v as i64; n].into()),
            DType::Bool => CpuStorage::Bool(vec![v != 0.0; n].into()),
        }
    }
    pub fn from_f64(dtype: DType, v: &[f64]) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(v.iter().map(|&x| x as f32).collect::<Vec<_>>().into()),
            DType::F64 => CpuStorage::F64(v.to_vec().into()),
            DType::I64 => CpuStorage::I64(v.iter().map(|&x| x as i64).collect::<Vec<_>>().into()),
            DType::Bool => CpuStorage::Bool(v.iter().map(|&x| x != 0.0).collect::<Vec<_>>().into()),
        }
    }
    /// Like `full`, but an impossible size or a failed allocation is an error, not an abort.
    pub fn try_full(dtype: DType, n: usize, v: f64) -> Result<Self> {
        fn filled<T: Clone>(n: usize, v: T) -> Result<HostBuf<T>> {
            let mut out = try_alloc(n)?;
            out.resize(n, v);
            Ok(out.into())
        }
        Ok(match dtype {
            DType::F32 => CpuStorage::F32(filled(n, v as f32)?),
            DType::F64 => CpuStorage::F64(filled(n, v)?),
            DType::I64 => CpuStorage::I64(filled(n, v as i64)?),
            DType::Bool => CpuStorage::Bool(filled(n, v != 0.0)?),
        })
    }
    /// Values widened to f64 (exact for the float dtypes and bool; integers beyond 2**53 round).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            CpuStorage::F32(v) => v.iter().map(|&x| x as f64).collect(),
            CpuStorage::F64(v) => v.to_vec(),
            CpuStorage::I64(v) => v.iter().map(|&x| x as f64).collect(),
            CpuStorage::Bool(v) => v.iter().map(|&x| x as u8 as f64).collect(),
        }
    }
    /// Converts to another dtype: floats round to nearest when narrowing, a float becomes an
    /// integer by truncation toward zero (NumPy's and PyTorch's cast; NaN and out-of-range
    /// values are refused by the caller, `Storage::to_dtype`), bool is nonzero, and true is 1.
    pub fn to_dtype(&self, dtype: DType) -> Self {
        fn cast<A: Copy, B>(v: &[A], f: impl Fn(A) -> B) -> HostBuf<B> {
            v.iter().map(|&x| f(x)).collect::<Vec<_>>().into()
        }
        match (self, dtype) {
            (s, d) if s.dtype() == d => self.clone(),
            (CpuStorage::F32(v), DType::F64) => CpuStorage::F64(cast(v, |x| x as f64)),
            (CpuStorage::F64(v), DType::F32) => CpuStorage::F32(cast(v, |x| x as f32)),
            (CpuStorage::F32(v), DType::I64) => CpuStorage::I64(cast(v, |x| x as i64)),
            (CpuStorage::F64(v), DType::I64) => CpuStorage::I64(cast(v, |x| x as i64)),
            (CpuStorage::Bool(v), DType::I64) => CpuStorage::I64(cast(v, |x| x as i64)),
            (CpuStorage::I64(v), DType::F32) => CpuStorage::F32(cast(v, |x| x as f32)),
            (CpuStorage::I64(v), DType::F64) => CpuStorage::F64(cast(v, |x| x as f64)),
            (CpuStorage::Bool(v), DType::F32) => CpuStorage::F32(cast(v, |x| x as u8 as f32)),
            (CpuStorage::Bool(v), DType::F64) => CpuStorage::F64(cast(v, |x| x as u8 as f64)),
            (CpuStorage::F32(v), DType::Bool) => CpuStorage::Bool(cast(v, |x| x != 0.0)),
            (CpuStorage::F64(v), DType::Bool) => CpuStorage::Bool(cast(v, |x| x != 0.0)),
            (CpuStorage::I64(v), DType::Bool) => CpuStorage::Bool(cast(v, |x| x != 0)),
            _ => unreachable!("every pair of dtypes is listed above"),
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
            other => return Err($crate::error::not_float("this operation", other.dtype())),
        }
    };
}

/// Like `map_cpu!` for data movement, which any dtype may take: `$body` is generic over
/// `T: Copy`.
#[macro_export]
macro_rules! map_cpu_any {
    ($s:expr, |$v:ident| $body:expr) => {
        match $s {
            $crate::backend::cpu::CpuStorage::F32($v) => {
                $crate::backend::cpu::CpuStorage::F32(($body).into())
            }
            $crate::backend::cpu::CpuStorage::F64($v) => {
                $crate::backend::cpu::CpuStorage::F64(($body).into())
            }
            $crate::backend::cpu::CpuStorage::I64($v) => {
                $crate::backend::cpu::CpuStorage::I64(($body).into())
            }
            $crate::backend::cpu::CpuStorage::Bool($v) => {
                $crate::backend::cpu::CpuStorage::Bool(($body).into())
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
            (a, b) if a.dtype() == b.dtype() => Err($crate::error::not_float($op, a.dtype())),
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
            CpuStorage::I64(v) => v.is_borrowed(),
            CpuStorage::Bool(v) => v.is_borrowed(),
        }
    }

    /// The elements of the view `view` (of shape `dims`) of these values, in row-major order.
    pub fn gather(&self, dims: &[usize], view: &crate::strided::Strided) -> Self {
        map_cpu_any!(self, |v| super::layout::gather(v, dims, view))
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

impl CpuStorage {
    /// `self + unslice(g)` over [outer, len, inner] (`layout::add_unsliced`).
    pub fn add_unsliced(
        &self,
        g: &CpuStorage,
        outer: usize,
        len: usize,
        inner: usize,
        start: usize,
        end: usize,
    ) -> crate::Result<CpuStorage> {
        map_cpu2!("slice", self, g, |p, g| super::layout::add_unsliced(
            p, g, outer, len, inner, start, end
        ))
    }
}
