//! Where a tensor's elements live: one enum over devices and dtypes. Kernels are written once,
//! generic over `Float`, and reached through the dispatch macros below.

use crate::backend::cuda::DeviceBuffer;
use crate::{DType, Device, Error, Result};
use std::borrow::Cow;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum CpuStorage {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Device memory: one immutable buffer on a CUDA device (or the emulator), shared by reference.
#[derive(Clone)]
pub struct CudaStorage(pub Arc<DeviceBuffer>);

impl std::fmt::Debug for CudaStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Device buffers compare by identity: comparing contents would need a copy to the host.
impl PartialEq for CudaStorage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl CudaStorage {
    pub fn new(buf: DeviceBuffer) -> Self {
        CudaStorage(Arc::new(buf))
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn ordinal(&self) -> usize {
        self.0.gpu().ordinal()
    }
    /// The values copied to the host.
    pub fn download(&self) -> Result<CpuStorage> {
        let gpu = self.0.gpu();
        Ok(match self.dtype() {
            DType::F32 => CpuStorage::F32(gpu.download::<f32>(&self.0)?),
            DType::F64 => CpuStorage::F64(gpu.download::<f64>(&self.0)?),
        })
    }
    /// Copies host values to device `ordinal`.
    pub fn upload(ordinal: usize, s: &CpuStorage) -> Result<Self> {
        let gpu = crate::backend::cuda::gpu(ordinal)?;
        let buf = match s {
            CpuStorage::F32(v) => gpu.upload(DType::F32, v)?,
            CpuStorage::F64(v) => gpu.upload(DType::F64, v)?,
        };
        Ok(CudaStorage::new(buf))
    }
}

impl From<CpuStorage> for Storage {
    fn from(s: CpuStorage) -> Self {
        Storage::Cpu(s)
    }
}
impl From<CudaStorage> for Storage {
    fn from(s: CudaStorage) -> Self {
        Storage::Cuda(s)
    }
}
impl From<DeviceBuffer> for Storage {
    fn from(b: DeviceBuffer) -> Self {
        Storage::Cuda(CudaStorage::new(b))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Storage {
    Cpu(CpuStorage),
    Cuda(CudaStorage),
}

impl CpuStorage {
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
            DType::F32 => CpuStorage::F32(vec![0.0; n]),
            DType::F64 => CpuStorage::F64(vec![0.0; n]),
        }
    }
    pub fn full(dtype: DType, n: usize, v: f64) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(vec![v as f32; n]),
            DType::F64 => CpuStorage::F64(vec![v; n]),
        }
    }
    pub fn from_f64(dtype: DType, v: &[f64]) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(v.iter().map(|&x| x as f32).collect()),
            DType::F64 => CpuStorage::F64(v.to_vec()),
        }
    }
    /// Like `full`, but an impossible size or a failed allocation is an error, not an abort.
    pub fn try_full(dtype: DType, n: usize, v: f64) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => {
                let mut out = try_alloc(n)?;
                out.resize(n, v as f32);
                CpuStorage::F32(out)
            }
            DType::F64 => {
                let mut out = try_alloc(n)?;
                out.resize(n, v);
                CpuStorage::F64(out)
            }
        })
    }
    /// Values widened to f64 (exact for both dtypes).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            CpuStorage::F32(v) => v.iter().map(|&x| x as f64).collect(),
            CpuStorage::F64(v) => v.clone(),
        }
    }
    /// Converts to another dtype (rounding to nearest when narrowing).
    pub fn to_dtype(&self, dtype: DType) -> Self {
        match (self, dtype) {
            (CpuStorage::F32(v), DType::F64) => {
                CpuStorage::F64(v.iter().map(|&x| x as f64).collect())
            }
            (CpuStorage::F64(v), DType::F32) => {
                CpuStorage::F32(v.iter().map(|&x| x as f32).collect())
            }
            _ => self.clone(),
        }
    }
}

pub use crate::alloc::{check_alloc, check_bytes, try_alloc};

/// Applies a generic kernel to one CPU storage: `map_cpu!(s, |v| expr)` where `v: &Vec<T>`
/// and `expr: Vec<T>`; the result keeps the dtype.
#[macro_export]
macro_rules! map_cpu {
    ($s:expr, |$v:ident| $body:expr) => {
        match $s {
            $crate::storage::CpuStorage::F32($v) => $crate::storage::CpuStorage::F32($body),
            $crate::storage::CpuStorage::F64($v) => $crate::storage::CpuStorage::F64($body),
        }
    };
}

/// Applies a generic kernel to two CPU storages of the same dtype; mixed dtypes are an error.
#[macro_export]
macro_rules! map_cpu2 {
    ($op:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            ($crate::storage::CpuStorage::F32($x), $crate::storage::CpuStorage::F32($y)) => {
                Ok($crate::storage::CpuStorage::F32($body))
            }
            ($crate::storage::CpuStorage::F64($x), $crate::storage::CpuStorage::F64($y)) => {
                Ok($crate::storage::CpuStorage::F64($body))
            }
            (a, b) => Err($crate::Error::DType {
                op: $op,
                expected: "operands of one dtype (tlrs never promotes; convert with .to())".into(),
                got: format!("{} and {}", a.dtype(), b.dtype()),
            }),
        }
    };
}

pub fn dtype_mismatch(op: &'static str, a: DType, b: DType) -> Error {
    Error::DType {
        op,
        expected: "operands of one dtype (tlrs never promotes; convert with .to())".into(),
        got: format!("{a} and {b}"),
    }
}

impl Storage {
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(c) => c.dtype(),
            Storage::Cuda(c) => c.dtype(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(c) => c.len(),
            Storage::Cuda(c) => c.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(c) => Device::Cuda(c.ordinal()),
        }
    }
    /// The CPU values; a device tensor is an error here (callers that accept either use `host`).
    pub fn cpu(&self) -> Result<&CpuStorage> {
        match self {
            Storage::Cpu(c) => Ok(c),
            Storage::Cuda(c) => Err(Error::Device {
                op: "cpu",
                expected: "the CPU for this operation (it has no CUDA kernel; move the tensor \
                           with .to('cpu'))"
                    .into(),
                got: format!("a tensor on cuda:{}", c.ordinal()),
            }),
        }
    }
    /// The values on the host: borrowed on the CPU, copied back from a device.
    pub fn host(&self) -> Result<Cow<'_, CpuStorage>> {
        match self {
            Storage::Cpu(c) => Ok(Cow::Borrowed(c)),
            Storage::Cuda(c) => Ok(Cow::Owned(c.download()?)),
        }
    }
}

/// Typed access to CPU storage, for kernels that handle several tensors of one dtype.
pub trait CpuElem: crate::dtype::Float {
    fn view(s: &CpuStorage) -> Option<&[Self]>;
    fn wrap(v: Vec<Self>) -> CpuStorage;
}
impl CpuElem for f32 {
    fn view(s: &CpuStorage) -> Option<&[f32]> {
        match s {
            CpuStorage::F32(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(v: Vec<f32>) -> CpuStorage {
        CpuStorage::F32(v)
    }
}
impl CpuElem for f64 {
    fn view(s: &CpuStorage) -> Option<&[f64]> {
        match s {
            CpuStorage::F64(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(v: Vec<f64>) -> CpuStorage {
        CpuStorage::F64(v)
    }
}
