//! DLPack both ways (the data-interchange protocol of NumPy, PyTorch, JAX and CuPy):
//! `Tensor.__dlpack__` / `__dlpack_device__` hand out a capsule over a tensor's memory (read-only
//! flag set: tlrs tensors are immutable), and `from_dlpack` wraps another library's memory
//! without a copy where the layout allows (C-contiguous, aligned float32/float64), keeping the
//! producer's buffer alive until the last tlrs tensor over it is dropped.

use super::errors::{guard, DTypeError};
use super::tensor::{readable, PyTensor};
use crate::backend::cpu::host_buf::{HostBuf, Owner};
use crate::backend::cuda::DeviceBuffer;
use crate::storage::{CpuStorage, CudaStorage, Storage};
use crate::{DType, Device, Shape, Tensor};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};
use std::ffi::{c_void, CStr};
use std::sync::Arc;

const K_DL_CPU: i32 = 1;
const K_DL_CUDA: i32 = 2;
const K_DL_CUDA_HOST: i32 = 3;
const K_DL_FLOAT: u8 = 2;
const FLAG_READ_ONLY: u64 = 1;
const FLAG_IS_COPIED: u64 = 2;
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

// ---- export ----

/// What a capsule hands out: the managed tensor, the shape and strides it points at, and the
/// tensor that keeps the memory alive. Boxed; `manager_ctx` points at the box.
struct Export<M> {
    managed: M,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
    _keep: Tensor,
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    drop(Box::from_raw(
        (*m).manager_ctx as *mut Export<DLManagedTensorVersioned>,
    ));
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    drop(Box::from_raw(
        (*m).manager_ctx as *mut Export<DLManagedTensor>,
    ));
}

/// Frees the managed tensor of a capsule nobody consumed (a consumer renames it to `used_...`).
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    if ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
        let m = ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
        if let Some(d) = (*m).deleter {
            d(m)
        }
    } else if ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
        let m = ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()) as *mut DLManagedTensor;
        if let Some(d) = (*m).deleter {
            d(m)
        }
    }
}

fn dl_device(t: &Tensor) -> DLDevice {
    match t.device() {
        Device::Cpu => DLDevice {
            device_type: K_DL_CPU,
            device_id: 0,
        },
        Device::Cuda(i) => DLDevice {
            device_type: K_DL_CUDA,
            device_id: i as i32,
        },
    }
}

/// The address of a tensor's first element (host, or device on CUDA).
pub fn data_address(t: &Tensor) -> u64 {
    match t.storage() {
        Storage::Cpu(CpuStorage::F32(v)) => v.as_ptr() as u64,
        Storage::Cpu(CpuStorage::F64(v)) => v.as_ptr() as u64,
        Storage::Cuda(c) => c.0.address(),
    }
}

fn dl_tensor(t: &Tensor, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data_address(t) as *mut c_void,
        device: dl_device(t),
        ndim: shape.len() as i32,
        dtype: DLDataType {
            code: K_DL_FLOAT,
            bits: (t.dtype().size_in_bytes() * 8) as u8,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

/// Row-major shape and strides (in elements) of `dims`, as DLPack's int64 arrays.
fn layout(dims: &[usize]) -> (Vec<i64>, Vec<i64>) {
    let shape: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1].max(1);
    }
    (shape, strides)
}

/// A tensor with `t`'s values in memory of its own (for `copy=True`).
fn fresh_copy(t: &Tensor) -> crate::Result<Tensor> {
    let storage: Storage = match t.storage() {
        Storage::Cpu(CpuStorage::F32(v)) => CpuStorage::F32(v.to_vec().into()).into(),
        Storage::Cpu(CpuStorage::F64(v)) => CpuStorage::F64(v.to_vec().into()).into(),
        Storage::Cuda(c) => CudaStorage::upload(c.ordinal(), &c.download()?)?.into(),
    };
    Tensor::from_storage(storage, t.shape().clone())
}

fn new_capsule<'py>(
    py: Python<'py>,
    ptr: *mut c_void,
    name: &'static CStr,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `ptr` is a boxed managed tensor whose deleter frees it; the destructor above
    // calls that deleter unless a consumer took ownership by renaming the capsule.
    unsafe {
        let cap = ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor));
        Bound::from_owned_ptr_or_err(py, cap)
    }
}

/// A capsule over `t`'s memory: versioned (DLPack 1.x, read-only flag) when the consumer
/// asked for major version >= 1, else the legacy unversioned form.
fn export(py: Python<'_>, t: Tensor, versioned: bool, copied: bool) -> PyResult<Bound<'_, PyAny>> {
    let (mut shape, mut strides) = layout(t.dims());
    let dl = dl_tensor(&t, &mut shape, &mut strides);
    if versioned {
        let managed = DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags: FLAG_READ_ONLY | if copied { FLAG_IS_COPIED } else { 0 },
            dl_tensor: dl,
        };
        let b = Box::into_raw(Box::new(Export {
            managed,
            _shape: shape,
            _strides: strides,
            _keep: t,
        }));
        // SAFETY: `b` is a live box; its managed tensor is its first field's address.
        unsafe { (*b).managed.manager_ctx = b as *mut c_void };
        new_capsule(
            py,
            unsafe { &mut (*b).managed } as *mut _ as *mut c_void,
            VERSIONED,
        )
    } else {
        let managed = DLManagedTensor {
            dl_tensor: dl,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_legacy),
        };
        let b = Box::into_raw(Box::new(Export {
            managed,
            _shape: shape,
            _strides: strides,
            _keep: t,
        }));
        // SAFETY: as above.
        unsafe { (*b).managed.manager_ctx = b as *mut c_void };
        new_capsule(
            py,
            unsafe { &mut (*b).managed } as *mut _ as *mut c_void,
            LEGACY,
        )
    }
}

fn wants_versioned(max_version: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    match max_version {
        Some(v) if !v.is_none() => {
            let (major, _minor): (u32, u32) = v.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "__dlpack__: max_version must be a (major, minor) tuple of integers, got {v}"
                ))
            })?;
            Ok(major >= 1)
        }
        _ => Ok(false),
    }
}

/// `Tensor.__dlpack__(stream=None, max_version=None, dl_device=None, copy=None)`.
pub fn dlpack<'py>(
    py: Python<'py>,
    t: &Tensor,
    stream: Option<&Bound<'py, PyAny>>,
    max_version: Option<&Bound<'py, PyAny>>,
    dl_device: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    readable(t, "Tensor.__dlpack__()")?;
    let versioned = wants_versioned(max_version)?;
    let own = dl_device_tuple(t);
    if let Some(d) = dl_device.filter(|d| !d.is_none()) {
        let want: (i32, i32) = d.extract()?;
        if want != own {
            return Err(PyBufferError::new_err(format!(
                "__dlpack__: the tensor is on {} (DLPack device {own:?}); export to device {want:?} \
                 is not supported: move it with .to() first",
                t.device()
            )));
        }
    }
    let has_stream = stream.is_some_and(|s| !s.is_none());
    if t.is_cuda() {
        // tlrs runs everything on one stream: finishing it makes the values visible on any
        // stream the consumer names.
        if !matches!(stream.map(|s| s.extract::<i64>()), Some(Ok(-1))) {
            guard(crate::backend::cuda::synchronize_all)?;
        }
    } else if has_stream {
        return Err(PyBufferError::new_err(
            "__dlpack__: stream must be None for a CPU tensor",
        ));
    }
    if copy == Some(true) {
        let c = guard(|| fresh_copy(t))?;
        return export(py, c, versioned, true);
    }
    export(py, t.detach(), versioned, false)
}

pub fn dl_device_tuple(t: &Tensor) -> (i32, i32) {
    let d = dl_device(t);
    (d.device_type, d.device_id)
}

// ---- import ----

/// Releases an imported managed tensor (calls its producer's deleter) when dropped.
struct Imported {
    managed: *mut c_void,
    versioned: bool,
}

// The deleter contract: callable once, from any thread, when the consumer is done.
unsafe impl Send for Imported {}
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: `managed` came from a capsule we renamed, so we own the single deleter call.
        unsafe {
            if self.versioned {
                let m = self.managed as *mut DLManagedTensorVersioned;
                if let Some(d) = (*m).deleter {
                    d(m)
                }
            } else {
                let m = self.managed as *mut DLManagedTensor;
                if let Some(d) = (*m).deleter {
                    d(m)
                }
            }
        }
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
        _ => Err(DTypeError::new_err(format!(
            "from_dlpack: expected a float32 or float64 tensor, got {}",
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

/// `tlrs.from_dlpack(x, device=None, copy=None)`: the array API standard's signature.
pub fn from_dlpack(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    device: Option<&str>,
    copy: Option<bool>,
) -> PyResult<Tensor> {
    let cap = capsule_of(py, x)?;
    let name = cap.name()?.map(|n| unsafe { n.as_cstr() }.to_owned());
    let versioned = match name.as_deref() {
        Some(n) if n == VERSIONED => true,
        Some(n) if n == LEGACY => false,
        Some(n) if n == USED_VERSIONED || n == USED_LEGACY => {
            return Err(PyValueError::new_err(
                "from_dlpack: this DLPack capsule was already consumed",
            ))
        }
        other => {
            return Err(PyTypeError::new_err(format!(
                "from_dlpack: expected a capsule named 'dltensor_versioned' or 'dltensor', got {other:?}"
            )))
        }
    };
    let raw = cap.pointer_checked(name.as_deref())?.as_ptr();
    // SAFETY: a capsule of that name holds a managed tensor of the matching layout.
    let (dl, version) = unsafe {
        if versioned {
            let m = &*(raw as *const DLManagedTensorVersioned);
            (&m.dl_tensor, Some((m.version.major, m.version.minor)))
        } else {
            (&(*(raw as *const DLManagedTensor)).dl_tensor, None)
        }
    };
    if let Some((major, minor)) = version {
        if major != 1 {
            return Err(PyBufferError::new_err(format!(
                "from_dlpack: DLPack version {major}.{minor} is not supported (expected 1.x)"
            )));
        }
    }
    let dtype = elem_dtype(dl.dtype)?;
    let ndim = usize::try_from(dl.ndim)
        .map_err(|_| PyValueError::new_err(format!("from_dlpack: ndim {} is negative", dl.ndim)))?;
    // SAFETY: shape (and strides, when not null) point at ndim int64 values.
    let dims_i: &[i64] = if ndim == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(dl.shape, ndim) }
    };
    let dims = dims_i
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| {
            PyValueError::new_err(format!("from_dlpack: negative dimension in {dims_i:?}"))
        })?;
    let shape = Shape(dims.clone());
    let numel =
        guard(|| crate::storage::check_alloc("from_dlpack", &shape).map(|_| shape.numel()))?;
    let (_, contiguous) = layout(&dims);
    let strides: Vec<i64> = if dl.strides.is_null() || ndim == 0 {
        contiguous.clone()
    } else {
        unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec()
    };
    let is_compact = dims
        .iter()
        .zip(strides.iter().zip(&contiguous))
        .all(|(&d, (&s, &c))| d <= 1 || s == c);
    let addr = (dl.data as u64).wrapping_add(dl.byte_offset);
    let aligned = addr % dtype.size_in_bytes() as u64 == 0;
    let on_host = matches!(dl.device.device_type, K_DL_CPU | K_DL_CUDA_HOST);
    let target = if on_host {
        Device::Cpu
    } else if dl.device.device_type == K_DL_CUDA {
        Device::Cuda(dl.device.device_id.max(0) as usize)
    } else {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: DLPack device type {} (id {}) is not supported: tlrs reads CPU and CUDA memory",
            dl.device.device_type, dl.device.device_id
        )));
    };
    if let Some(want) = device {
        let want = super::tensor::parse_device(want)?;
        if want != target {
            return Err(PyValueError::new_err(format!(
                "from_dlpack: the tensor is on {target}, not {want}; import it, then move it with .to()"
            )));
        }
    }
    let zero_copy = is_compact && aligned && numel > 0 && copy != Some(true);
    if copy == Some(false) && !zero_copy && numel > 0 {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: copy=False was given, but the tensor needs a copy ({})",
            if !is_compact {
                "it is not C-contiguous"
            } else {
                "its data is not aligned"
            }
        )));
    }
    // From here we own the managed tensor: rename the capsule so its destructor leaves it alone.
    let used = if versioned {
        USED_VERSIONED
    } else {
        USED_LEGACY
    };
    // SAFETY: renaming a live capsule to a static name.
    if unsafe { ffi::PyCapsule_SetName(cap.as_ptr(), used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    let owner = Imported {
        managed: raw,
        versioned,
    };
    let storage: Storage = match target {
        Device::Cpu => {
            let owner: Owner = Arc::new(owner);
            if zero_copy {
                // SAFETY: a compact, aligned tensor of `numel` elements at `addr`, kept by `owner`.
                unsafe {
                    match dtype {
                        DType::F32 => {
                            CpuStorage::F32(HostBuf::borrowed(addr as *const f32, numel, owner))
                        }
                        DType::F64 => {
                            CpuStorage::F64(HostBuf::borrowed(addr as *const f64, numel, owner))
                        }
                    }
                }
                .into()
            } else {
                let offsets = if is_compact {
                    (0..numel as i64).collect()
                } else {
                    strided_offsets(&dims, &strides)
                };
                let s = match dtype {
                    DType::F32 => CpuStorage::F32(copy_host(addr as *const f32, &offsets).into()),
                    DType::F64 => CpuStorage::F64(copy_host(addr as *const f64, &offsets).into()),
                };
                drop(owner);
                s.into()
            }
        }
        Device::Cuda(ordinal) => {
            // Even a copy would read the producer's memory as compact, so strided data is refused.
            if numel > 0 && !(is_compact && aligned) {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: a CUDA tensor must be C-contiguous and aligned to import ({}); \
                     make it contiguous first",
                    if !is_compact {
                        "it is not C-contiguous"
                    } else {
                        "its data is not aligned"
                    }
                )));
            }
            let gpu = guard(|| crate::backend::cuda::gpu(ordinal))?;
            // SAFETY: a compact device tensor of `numel` elements at `addr`, kept by `owner`.
            let buf = unsafe { DeviceBuffer::borrowed(gpu, addr, dtype, numel, Arc::new(owner)) };
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
    guard(|| Tensor::from_storage(storage, shape))
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
