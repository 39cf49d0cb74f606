//! Where a tensor's elements live: one enum over the devices, each variant a backend's storage
//! (backend/cpu/storage.rs, backend/cuda/storage.rs); the operations' dispatch is in
//! storage/dispatch.rs. Matching on it there and here, once per operation, is the one place the
//! device is chosen (see `Storage::unary` and friends). New storage on a
//! given device is made here too (`Storage::full`, `Storage::filled`, `Storage::to_device`), and
//! code elsewhere that must know whether CPU-only kernels apply asks `Storage::on_host`: outside
//! this file, the device's definition, the backends and the bindings, nothing names a device
//! (tests/test_layering.py checks it).

use crate::backend::cuda::{gpu, ops as cuda_ops, DeviceBuffer};
use crate::{DType, Device, Error, Result};
use std::borrow::Cow;
use std::sync::Arc;

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

pub use crate::alloc::{check_alloc, check_bytes, try_alloc};
pub use crate::backend::cpu::{CpuElem, CpuStorage};
pub use crate::backend::cuda::CudaStorage;
pub use crate::error::dtype_mismatch;

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
    fn as_cpu(&self) -> Option<&CpuStorage> {
        match self {
            Storage::Cpu(c) => Some(c),
            Storage::Cuda(_) => None,
        }
    }
    fn as_cuda(&self) -> Option<&CudaStorage> {
        match self {
            Storage::Cuda(c) => Some(c),
            Storage::Cpu(_) => None,
        }
    }
    /// The values on the host: borrowed on the CPU, copied back from a device.
    pub fn host(&self) -> Result<Cow<'_, CpuStorage>> {
        match self {
            Storage::Cpu(c) => Ok(Cow::Borrowed(c)),
            Storage::Cuda(c) => Ok(Cow::Owned(c.download()?)),
        }
    }
    /// Whether the elements are in host memory, where the CPU-only paths (the per-image batch
    /// norm, the optimisers' in-place updates) read them.
    pub fn on_host(&self) -> bool {
        matches!(self, Storage::Cpu(_))
    }
    /// A copy of these values on `device`, through the host (copied back from a device first).
    /// Inverted dropout's scale on `device`: 1 / keep where keep > the counter-based uniform of
    /// (key, i), else 0; `host` makes it on the CPU, a kernel with the same bits on a device.
    pub(crate) fn dropout_scale(
        device: Device,
        dtype: DType,
        n: usize,
        (key, keep): (u64, f64),
        host: impl FnOnce() -> CpuStorage,
    ) -> Result<Storage> {
        let Device::Cuda(ordinal) = device else {
            return Ok(Storage::Cpu(host()));
        };
        Ok(cuda_ops::dropout_mask(&gpu(ordinal)?, dtype, n, key, keep)?.into())
    }

    /// The values converted to `dtype` (each rounded once), on this storage's device.
    pub fn to_dtype(&self, dtype: DType) -> Result<Storage> {
        if dtype == DType::I64 && self.dtype().is_float() {
            // Truncation toward zero, as NumPy and PyTorch cast; a value with no int64 (NaN,
            // an infinity, beyond 2**63) is refused rather than saturated.
            const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2**63
            let host = self.host()?;
            let bad = host
                .to_f64_vec()
                .into_iter()
                .find(|v| !(v.is_finite() && *v >= -LIMIT && *v < LIMIT));
            if let Some(v) = bad {
                return Err(Error::arg(
                    "to",
                    format!(
                        "cannot convert {v} to int64: expected finite values within int64's range"
                    ),
                ));
            }
        }
        Ok(match self {
            Storage::Cpu(c) => c.to_dtype(dtype).into(),
            // Casts from or to integer and bool values run on the host, then come back.
            Storage::Cuda(c) if !dtype.is_float() || !c.dtype().is_float() => {
                CudaStorage::upload(c.ordinal(), &c.download()?.to_dtype(dtype))?.into()
            }
            Storage::Cuda(c) => cuda_ops::cast_buffer(&c.0, dtype)?.into(),
        })
    }

    pub fn to_device(&self, device: Device) -> Result<Storage> {
        let host = self.host()?;
        Ok(match device {
            Device::Cpu => host.into_owned().into(),
            Device::Cuda(n) => CudaStorage::upload(n, &host)?.into(),
        })
    }
    /// `n` elements of `dtype`, each `value`, on `device` (filled there by a kernel on a CUDA
    /// device). A failed allocation is an error, not an abort.
    pub fn full(device: Device, dtype: DType, n: usize, value: f64) -> Result<Storage> {
        match device {
            Device::Cpu => CpuStorage::try_full(dtype, n, value).map(Storage::Cpu),
            // Integer and bool values are made on the host (the device kernels are float only).
            Device::Cuda(ordinal) if !dtype.is_float() => {
                CudaStorage::upload(ordinal, &CpuStorage::try_full(dtype, n, value)?)
                    .map(Storage::Cuda)
            }
            Device::Cuda(ordinal) => {
                let buf = gpu(ordinal)?.alloc(dtype, n)?;
                cuda_ops::fill_into(&buf, value)?;
                Ok(buf.into())
            }
        }
    }
    /// `n` elements of `dtype` on `device` as `fill` describes them. On the CPU they are the
    /// values `host` computes (init.rs's binary64 and binary32 formulas). On a CUDA device a
    /// kernel makes constant and sampled fills there, with no host copy and the same bits as
    /// `host` (rust/tests/cuda_emu_ops.rs checks it), and a payload is rounded to `dtype` and
    /// uploaded.
    pub(crate) fn filled(
        device: Device,
        dtype: DType,
        n: usize,
        fill: Fill<'_>,
        host: impl FnOnce() -> CpuStorage,
    ) -> Result<Storage> {
        let Device::Cuda(ordinal) = device else {
            return Ok(Storage::Cpu(host()));
        };
        let g = gpu(ordinal)?;
        let buf = match fill {
            Fill::Constant(c) => return Storage::full(device, dtype, n, c),
            Fill::Payload(v) => match dtype {
                DType::F64 => g.upload(dtype, v)?,
                DType::F32 => g.upload(dtype, &v.iter().map(|&x| x as f32).collect::<Vec<_>>())?,
                other => return Err(crate::error::not_float("init", other)),
            },
            Fill::Sampled { lo, hi, seed } => {
                cuda_ops::init_uniform(&g, dtype, n, crate::rng::key_of(seed, 0), lo, hi - lo)?
            }
        };
        Ok(buf.into())
    }
}

/// What an initialiser puts in each element (`Storage::filled`), with the Xavier/Kaiming bounds
/// already worked out.
pub(crate) enum Fill<'a> {
    /// Every element this value.
    Constant(f64),
    /// These values, row-major, rounded once to the dtype.
    Payload(&'a [f64]),
    /// Uniform on [lo, hi) from the runtime-init sampler (`rng::runtime_init_unit*`) with `seed`.
    Sampled { lo: f64, hi: f64, seed: u64 },
}

/// A gradient on another device than the winners its forward kept.
fn winners_elsewhere(op: &'static str, g: &Storage) -> Error {
    Error::Device {
        op,
        expected: "the gradient on the device of the forward pass".into(),
        got: format!("a gradient on {}", g.device()),
    }
}

/// Operands on two devices where one was expected.
fn device_mismatch(op: &'static str, a: &Storage, b: &Storage) -> Error {
    Error::Device {
        op,
        expected: format!("one device ({})", a.device()),
        got: format!("{} and {}", a.device(), b.device()),
    }
}

// The one place an operation picks its device: each method matches the storages once and
// calls that backend's `BackendStorage` implementation (backend/storage_ops.rs).
macro_rules! on_one_device {
    ($op:expr, ($first:expr $(, $other:expr)*), |$s:ident $(, $o:ident)*| $call:expr) => {
        match ($first, $($other),*) {
            (Storage::Cpu($s), $(Storage::Cpu($o)),*) => $call.map(Storage::Cpu),
            // Integer and bool values on a device move through the host (the kernels are
            // float only): the CPU's operation, its result copied back.
            (Storage::Cuda($s), $(Storage::Cuda($o)),*)
                if !$s.dtype().is_float() $(&& $s.ordinal() == $o.ordinal())* =>
            {
                let ordinal = $s.ordinal();
                let $s = &$s.download()?;
                $( let $o = &$o.download()?; )*
                $call.and_then(|c| CudaStorage::upload(ordinal, &c)).map(Storage::Cuda)
            }
            (Storage::Cuda($s), $(Storage::Cuda($o)),*)
                if true $(&& $s.ordinal() == $o.ordinal())* => $call.map(Storage::Cuda),
            #[allow(unreachable_patterns)]
            _ => {
                let first: &Storage = $first;
                let other = [$($other),*]
                    .into_iter()
                    .find(|o: &&Storage| o.device() != first.device())
                    .unwrap_or(first);
                Err(device_mismatch($op, first, other))
            }
        }
    };
}

/// Where a max or max pooling kept its winners for backward, on the device that computed them.
#[derive(Clone)]
pub enum Winners {
    Cpu(Arc<Vec<usize>>),
    Cuda(Arc<crate::backend::cuda::IndexBuffer>),
}

impl Winners {
    /// The winners as host indices (`usize::MAX` where a window had none).
    pub fn to_host(&self) -> Result<Vec<usize>> {
        match self {
            Winners::Cpu(w) => Ok(w.to_vec()),
            Winners::Cuda(w) => Ok(w
                .gpu()
                .download_indices(w)?
                .into_iter()
                .map(|a| usize::try_from(a).unwrap_or(usize::MAX))
                .collect()),
        }
    }
}

// Each operation's one match on the storages' devices (the methods `ops/` calls).
mod dispatch;
