//! DLPack both ways (the data-interchange protocol of NumPy, PyTorch, JAX and CuPy):
//! `Tensor.__dlpack__` / `__dlpack_device__` hand out a capsule over a tensor's memory
//! (export.rs; read-only flag set: tlrs tensors are immutable), and `from_dlpack` wraps another
//! library's memory without a copy where the layout allows (import.rs). This file holds the C
//! layout both sides share, and the two managed-tensor forms (versioned 1.x and legacy).

mod export;
mod import;

pub use export::{data_address, dl_device_tuple, dlpack};
pub use import::from_dlpack_py;

use pyo3::ffi;
use std::ffi::{c_void, CStr};

const K_DL_CPU: i32 = 1;
const K_DL_CUDA: i32 = 2;
const K_DL_CUDA_HOST: i32 = 3;
const K_DL_INT: u8 = 0;
const K_DL_FLOAT: u8 = 2;
const K_DL_BOOL: u8 = 6;
const FLAG_READ_ONLY: u64 = 1;
const FLAG_IS_COPIED: u64 = 2;

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

/// What the two managed-tensor forms share: their capsule names, the tensor they describe,
/// their manager context and their deleter.
trait Managed: Sized + 'static {
    /// The capsule name while unconsumed, and after a consumer took it.
    const NAME: &'static CStr;
    const USED: &'static CStr;
    fn tensor(&self) -> &DLTensor;
    fn ctx(&self) -> *mut c_void;
    fn set_ctx(&mut self, ctx: *mut c_void);
    /// The producer's deleter, if any, called once on `m`.
    ///
    /// # Safety
    /// `m` points at a live managed tensor of this form that nobody else will delete.
    unsafe fn delete(m: *mut Self);
}

impl Managed for DLManagedTensorVersioned {
    const NAME: &'static CStr = c"dltensor_versioned";
    const USED: &'static CStr = c"used_dltensor_versioned";
    fn tensor(&self) -> &DLTensor {
        &self.dl_tensor
    }
    fn ctx(&self) -> *mut c_void {
        self.manager_ctx
    }
    fn set_ctx(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
    unsafe fn delete(m: *mut Self) {
        if let Some(d) = (*m).deleter {
            d(m)
        }
    }
}

impl Managed for DLManagedTensor {
    const NAME: &'static CStr = c"dltensor";
    const USED: &'static CStr = c"used_dltensor";
    fn tensor(&self) -> &DLTensor {
        &self.dl_tensor
    }
    fn ctx(&self) -> *mut c_void {
        self.manager_ctx
    }
    fn set_ctx(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
    unsafe fn delete(m: *mut Self) {
        if let Some(d) = (*m).deleter {
            d(m)
        }
    }
}

/// Deletes the managed tensor of a capsule still under its unconsumed name `M::NAME`.
unsafe fn delete_unconsumed<M: Managed>(cap: *mut ffi::PyObject) {
    if ffi::PyCapsule_IsValid(cap, M::NAME.as_ptr()) == 1 {
        M::delete(ffi::PyCapsule_GetPointer(cap, M::NAME.as_ptr()) as *mut M);
    }
}

/// Frees the managed tensor of a capsule nobody consumed (a consumer renames it to `used_...`).
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    delete_unconsumed::<DLManagedTensorVersioned>(cap);
    delete_unconsumed::<DLManagedTensor>(cap);
}

/// Row-major strides (in elements) of `dims`, as DLPack's int64 values.
fn row_major_strides(dims: &[usize]) -> Vec<i64> {
    crate::Shape(dims.to_vec())
        .strides()
        .into_iter()
        .map(|s| s as i64)
        .collect()
}
