//! `tlrs.from_dlpack`: a tlrs tensor over another library's memory, without a copy where the
//! layout allows (C-contiguous, aligned float32/float64), keeping the producer's buffer alive
//! until the last tlrs tensor over it is dropped.

use super::{
    row_major_strides, DLDataType, DLManagedTensor, DLManagedTensorVersioned, DLTensor, Managed,
    K_DL_BOOL, K_DL_CPU, K_DL_CUDA, K_DL_CUDA_HOST, K_DL_FLOAT, K_DL_INT,
};
use crate::backend::cpu::host_buf::{HostBuf, Owner};
use crate::backend::cuda::DeviceBuffer;
use crate::py::errors::{guard, DTypeError};
use crate::py::tensor::{parse_device, PyTensor};
use crate::storage::{CpuStorage, CudaStorage, Storage};
use crate::{DType, Device, Shape, Tensor};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};
use std::sync::Arc;

/// Releases an imported managed tensor (calls its producer's deleter) when dropped.
struct Imported<M: Managed>(*mut M);

// The deleter contract: callable once, from any thread, when the consumer is done.
unsafe impl<M: Managed> Send for Imported<M> {}
unsafe impl<M: Managed> Sync for Imported<M> {}

impl<M: Managed> Drop for Imported<M> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a capsule we renamed, so this is the one deleter call.
        unsafe { M::delete(self.0) }
    }
}

fn dtype_name(dt: DLDataType) -> String {
    let kind = match dt.code {
        0 => "int",
        1 => "uint",
        2 => "float",
        4 => "bfloat",
        5 => "complex",
        6 => "bool",
        _ => "an opaque type of",
    };
    let lanes = if dt.lanes == 1 {
        String::new()
    } else {
        format!(" x{}", dt.lanes)
    };
    format!("{kind}{}{lanes}", dt.bits)
}

fn elem_dtype(dt: DLDataType) -> PyResult<DType> {
    match (dt.code, dt.bits, dt.lanes) {
        (K_DL_FLOAT, 32, 1) => Ok(DType::F32),
        (K_DL_FLOAT, 64, 1) => Ok(DType::F64),
        (K_DL_INT, 64, 1) => Ok(DType::I64),
        (K_DL_BOOL, 8, 1) => Ok(DType::Bool),
        _ => Err(DTypeError::new_err(format!(
            "from_dlpack: expected a float32, float64, int64 or bool tensor, got {}",
            dtype_name(dt)
        ))),
    }
}

/// The capsule of `x`: `x` itself, or what its `__dlpack__` returns (asking for DLPack 1.0 and
/// falling back to the legacy call for producers that do not know `max_version`).
fn capsule_of<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
    if let Ok(c) = x.cast::<PyCapsule>() {
        return Ok(c.clone());
    }
    if !x.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "from_dlpack: expected an object with __dlpack__ (a NumPy array, a torch tensor, ...) \
             or a DLPack capsule, got {}",
            x.get_type().name()?
        )));
    }
    let kwargs = PyDict::new(py);
    if x.hasattr("__dlpack_device__")? {
        let (kind, _): (i32, i32) = x.call_method0("__dlpack_device__")?.extract()?;
        if kind == K_DL_CUDA {
            // tlrs runs on the legacy default stream, which DLPack names 1.
            kwargs.set_item("stream", 1)?;
        }
    }
    kwargs.set_item("max_version", PyTuple::new(py, [1u32, 0])?)?;
    let cap = match x.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            x.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    cap.cast_into::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("from_dlpack: __dlpack__ did not return a capsule"))
}

/// One element offset per element in row-major order (strides in elements, may be negative).
fn strided_offsets(shape: &[usize], strides: &[i64]) -> Vec<i64> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(idx.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

fn copy_host<T: Copy>(base: *const T, offsets: &[i64]) -> Vec<T> {
    // SAFETY: every offset is inside the producer's tensor (its shape and strides say so).
    offsets
        .iter()
        .map(|&o| unsafe { std::ptr::read_unaligned(base.offset(o as isize)) })
        .collect()
}

/// What the producer's DLTensor says, checked: dtype, shape, strides, where the data is.
struct Layout {
    dtype: DType,
    dims: Vec<usize>,
    strides: Vec<i64>,
    numel: usize,
    compact: bool,
    aligned: bool,
    addr: u64,
    device: Device,
}

impl Layout {
    fn read(dl: &DLTensor) -> PyResult<Layout> {
        let dtype = elem_dtype(dl.dtype)?;
        let ndim = usize::try_from(dl.ndim).map_err(|_| {
            PyValueError::new_err(format!("from_dlpack: ndim {} is negative", dl.ndim))
        })?;
        // SAFETY: shape (and strides, when not null) point at ndim int64 values.
        let raw_dims: &[i64] = if ndim == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(dl.shape, ndim) }
        };
        let dims = raw_dims
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<Vec<usize>, _>>()
            .map_err(|_| {
                PyValueError::new_err(format!("from_dlpack: negative dimension in {raw_dims:?}"))
            })?;
        let shape = Shape(dims.clone());
        let numel =
            guard(|| crate::storage::check_alloc("from_dlpack", &shape).map(|_| shape.numel()))?;
        let contiguous = row_major_strides(&dims);
        let strides = if dl.strides.is_null() || ndim == 0 {
            contiguous.clone()
        } else {
            unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec()
        };
        let compact = dims
            .iter()
            .zip(strides.iter().zip(&contiguous))
            .all(|(&d, (&s, &c))| d <= 1 || s == c);
        let addr = (dl.data as u64).wrapping_add(dl.byte_offset);
        let device = match dl.device.device_type {
            K_DL_CPU | K_DL_CUDA_HOST => Device::Cpu,
            K_DL_CUDA => Device::Cuda(dl.device.device_id.max(0) as usize),
            other => {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: DLPack device type {other} (id {}) is not supported: tlrs reads \
                     CPU and CUDA memory",
                    dl.device.device_id
                )))
            }
        };
        Ok(Layout {
            aligned: addr.is_multiple_of(dtype.size_in_bytes() as u64),
            dtype,
            dims,
            strides,
            numel,
            compact,
            addr,
            device,
        })
    }

    /// Why the data cannot be read in place (None when it can).
    fn needs_copy(&self) -> Option<&'static str> {
        if !self.compact {
            Some("it is not C-contiguous")
        } else if !self.aligned {
            Some("its data is not aligned")
        } else {
            None
        }
    }

    /// Host storage: the producer's memory itself, or a row-major copy of it.
    fn host_storage(&self, owner: Owner, borrow: bool) -> Storage {
        let (addr, n) = (self.addr, self.numel);
        if borrow {
            // SAFETY: a compact, aligned tensor of `n` elements at `addr`, kept by `owner`.
            return unsafe {
                match self.dtype {
                    DType::F32 => CpuStorage::F32(HostBuf::borrowed(addr as *const f32, n, owner)),
                    DType::F64 => CpuStorage::F64(HostBuf::borrowed(addr as *const f64, n, owner)),
                    DType::I64 => CpuStorage::I64(HostBuf::borrowed(addr as *const i64, n, owner)),
                    DType::Bool => {
                        CpuStorage::Bool(HostBuf::borrowed(addr as *const bool, n, owner))
                    }
                }
            }
            .into();
        }
        let offsets: Vec<i64> = if self.compact {
            (0..n as i64).collect()
        } else {
            strided_offsets(&self.dims, &self.strides)
        };
        let s = match self.dtype {
            DType::F32 => CpuStorage::F32(copy_host(addr as *const f32, &offsets).into()),
            DType::F64 => CpuStorage::F64(copy_host(addr as *const f64, &offsets).into()),
            DType::I64 => CpuStorage::I64(copy_host(addr as *const i64, &offsets).into()),
            DType::Bool => CpuStorage::Bool(copy_host(addr as *const bool, &offsets).into()),
        };
        drop(owner); // the copy is ours: release the producer's buffer now
        s.into()
    }
}

/// Takes the managed tensor `raw` of form `M` out of `cap` and wraps its memory.
fn import<M: Managed>(
    py: Python<'_>,
    cap: &Bound<'_, PyCapsule>,
    raw: *mut M,
    device: Option<&str>,
    copy: Option<bool>,
) -> PyResult<Tensor> {
    // SAFETY: a capsule of M's name holds a live managed tensor of that form.
    let layout = Layout::read(unsafe { (*raw).tensor() })?;
    if let Some(want) = device {
        let want = parse_device(want)?;
        if want != layout.device {
            return Err(PyValueError::new_err(format!(
                "from_dlpack: the tensor is on {}, not {want}; import it, then move it with .to()",
                layout.device
            )));
        }
    }
    let empty = layout.numel == 0;
    let why_copy = layout.needs_copy();
    if let (Some(false), Some(why), false) = (copy, why_copy, empty) {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: copy=False was given, but the tensor needs a copy ({why})"
        )));
    }
    // From here we own the managed tensor: rename the capsule so its destructor leaves it alone.
    // SAFETY: renaming a live capsule to a static name.
    if unsafe { ffi::PyCapsule_SetName(cap.as_ptr(), M::USED.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    let owner: Owner = Arc::new(Imported(raw));
    let storage = match layout.device {
        Device::Cpu => {
            let borrow = why_copy.is_none() && !empty && copy != Some(true);
            layout.host_storage(owner, borrow)
        }
        Device::Cuda(ordinal) => {
            // Even a copy would read the producer's memory as compact, so strided data is refused.
            if let (Some(why), false) = (why_copy, empty) {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: a CUDA tensor must be C-contiguous and aligned to import ({why}); \
                     make it contiguous first"
                )));
            }
            let gpu = guard(|| crate::backend::cuda::gpu(ordinal))?;
            // SAFETY: a compact device tensor of `numel` elements at `addr`, kept by `owner`.
            let buf = unsafe {
                DeviceBuffer::borrowed(gpu, layout.addr, layout.dtype, layout.numel, owner)
            };
            let s = CudaStorage::new(buf);
            if copy == Some(true) {
                // A copy through the host: the borrowed buffer is released right after.
                let host = guard(|| s.download())?;
                guard(|| CudaStorage::upload(ordinal, &host))?.into()
            } else {
                s.into()
            }
        }
    };
    guard(|| Tensor::from_storage(storage, Shape(layout.dims)))
}

/// `tlrs.from_dlpack(x, device=None, copy=None)`: the array API standard's signature.
fn from_dlpack(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    device: Option<&str>,
    copy: Option<bool>,
) -> PyResult<Tensor> {
    let cap = capsule_of(py, x)?;
    // SAFETY: the name outlives this call (the capsule is alive and not renamed meanwhile).
    let name = cap.name()?.map(|n| unsafe { n.as_cstr() }.to_owned());
    match name.as_deref() {
        Some(n) if n == DLManagedTensorVersioned::NAME => {
            let raw = cap.pointer_checked(Some(n))?.as_ptr() as *mut DLManagedTensorVersioned;
            // SAFETY: a versioned capsule holds a DLManagedTensorVersioned.
            let (major, minor) = unsafe { ((*raw).version.major, (*raw).version.minor) };
            if major != 1 {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: DLPack version {major}.{minor} is not supported (expected 1.x)"
                )));
            }
            import(py, &cap, raw, device, copy)
        }
        Some(n) if n == DLManagedTensor::NAME => {
            let raw = cap.pointer_checked(Some(n))?.as_ptr() as *mut DLManagedTensor;
            import(py, &cap, raw, device, copy)
        }
        Some(n) if n == DLManagedTensorVersioned::USED || n == DLManagedTensor::USED => Err(
            PyValueError::new_err("from_dlpack: this DLPack capsule was already consumed"),
        ),
        other => Err(PyTypeError::new_err(format!(
            "from_dlpack: expected a capsule named 'dltensor_versioned' or 'dltensor', got {other:?}"
        ))),
    }
}

/// A tlrs tensor over the memory of `x` (anything with `__dlpack__`, or a DLPack capsule),
/// without a copy when it is C-contiguous and aligned float32/float64; `copy=True` always
/// copies, `copy=False` refuses to; `device` must name the tensor's own device.
#[pyfunction(name = "from_dlpack")]
#[pyo3(signature = (x, /, *, device=None, copy=None))]
pub fn from_dlpack_py(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    device: Option<&str>,
    copy: Option<bool>,
) -> PyResult<PyTensor> {
    from_dlpack(py, x, device, copy).map(PyTensor::new)
}
