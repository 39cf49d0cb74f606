//! `Tensor.__dlpack__` / `__dlpack_device__`: a capsule over a tensor's memory that keeps the
//! tensor alive until the consumer's deleter runs (or the capsule is collected unconsumed).

use super::{
    capsule_destructor, row_major_strides, DLDataType, DLDevice, DLManagedTensor,
    DLManagedTensorVersioned, DLPackVersion, DLTensor, Managed, FLAG_IS_COPIED, FLAG_READ_ONLY,
    K_DL_BOOL, K_DL_CPU, K_DL_CUDA, K_DL_FLOAT, K_DL_INT,
};
use crate::py::errors::guard;
use crate::py::tensor::readable;
use crate::storage::{CpuStorage, CudaStorage, Storage};
use crate::{DType, Device, Tensor};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::c_void;

/// What a capsule hands out: the managed tensor, the shape and strides it points at, and the
/// tensor that keeps the memory alive. Boxed; `manager_ctx` points at the box.
struct Export<M> {
    managed: M,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
    _keep: Tensor,
}

/// The deleter tlrs gives its managed tensors: frees the box `manager_ctx` points at.
unsafe extern "C" fn delete_export<M: Managed>(m: *mut M) {
    drop(Box::from_raw((*m).ctx() as *mut Export<M>));
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

pub fn dl_device_tuple(t: &Tensor) -> (i32, i32) {
    let d = dl_device(t);
    (d.device_type, d.device_id)
}

/// The address of a tensor's first element (host, or device on CUDA).
pub fn data_address(t: &Tensor) -> u64 {
    match t.storage() {
        Storage::Cpu(CpuStorage::F32(v)) => v.as_ptr() as u64,
        Storage::Cpu(CpuStorage::F64(v)) => v.as_ptr() as u64,
        Storage::Cpu(CpuStorage::I64(v)) => v.as_ptr() as u64,
        Storage::Cpu(CpuStorage::Bool(v)) => v.as_ptr() as u64,
        Storage::Cuda(c) => c.0.address(),
    }
}

fn dl_tensor(t: &Tensor, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data_address(t) as *mut c_void,
        device: dl_device(t),
        ndim: shape.len() as i32,
        dtype: DLDataType {
            code: match t.dtype() {
                DType::I64 => K_DL_INT,
                DType::Bool => K_DL_BOOL,
                _ => K_DL_FLOAT,
            },
            bits: (t.dtype().size_in_bytes() * 8) as u8,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

/// A tensor with `t`'s values in memory of its own (for `copy=True`).
fn fresh_copy(t: &Tensor) -> crate::Result<Tensor> {
    let storage: Storage = match t.storage() {
        Storage::Cpu(c) => crate::map_cpu_any!(c, |v| v.to_vec()).into(),
        Storage::Cuda(c) => CudaStorage::upload(c.ordinal(), &c.download()?)?.into(),
    };
    Tensor::from_storage(storage, t.shape().clone())
}

/// A capsule named `M::NAME` over the managed tensor `make(dl)` builds for `t`.
fn capsule<'py, M: Managed>(
    py: Python<'py>,
    t: Tensor,
    make: impl FnOnce(DLTensor) -> M,
) -> PyResult<Bound<'py, PyAny>> {
    let mut shape: Vec<i64> = t.dims().iter().map(|&d| d as i64).collect();
    let mut strides = row_major_strides(t.dims());
    let managed = make(dl_tensor(&t, &mut shape, &mut strides));
    let b = Box::into_raw(Box::new(Export {
        managed,
        _shape: shape,
        _strides: strides,
        _keep: t,
    }));
    // SAFETY: `b` is a live box; the capsule points at its managed tensor, whose context is `b`
    // (what the deleter frees). The capsule's destructor calls the deleter unless a consumer
    // took ownership by renaming the capsule.
    unsafe {
        (*b).managed.set_ctx(b as *mut c_void);
        let ptr = &mut (*b).managed as *mut M as *mut c_void;
        let cap = ffi::PyCapsule_New(ptr, M::NAME.as_ptr(), Some(capsule_destructor));
        Bound::from_owned_ptr_or_err(py, cap)
    }
}

/// A capsule over `t`'s memory: versioned (DLPack 1.x, read-only flag) when the consumer
/// asked for major version >= 1, else the legacy unversioned form.
fn export(py: Python<'_>, t: Tensor, versioned: bool, copied: bool) -> PyResult<Bound<'_, PyAny>> {
    if versioned {
        capsule(py, t, |dl_tensor| DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export::<DLManagedTensorVersioned>),
            flags: FLAG_READ_ONLY | if copied { FLAG_IS_COPIED } else { 0 },
            dl_tensor,
        })
    } else {
        capsule(py, t, |dl_tensor| DLManagedTensor {
            dl_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export::<DLManagedTensor>),
        })
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
    if !t.on_host() {
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
        return export(py, guard(|| fresh_copy(t))?, versioned, true);
    }
    export(py, t.detach(), versioned, false)
}
