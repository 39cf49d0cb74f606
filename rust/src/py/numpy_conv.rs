//! NumPy conversion both ways without copies where the layout allows: `from_numpy` borrows a
//! C-contiguous, aligned float32/float64 array (the tensor keeps the array alive), `numpy()`
//! returns a read-only view of a CPU tensor's memory (the view keeps the tensor alive).
//! What writing to a shared array means is in docs/interop.md.

use super::errors::{guard, DTypeError};
use super::tensor::{readable, PyTensor};
use crate::backend::cpu::host_buf::{HostBuf, Owner};
use crate::storage::{CpuStorage, Storage};
use crate::strided::Strided;
use crate::Tensor;
use numpy::ndarray::{ArrayD, ArrayViewD, IxDyn, ShapeBuilder};
use numpy::{
    Element, IntoPyArray, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;

/// Keeps a Python object (the array a tensor borrows) alive; dropping it releases the object at
/// once. Plain `Py` drops made outside a PyO3 call (e.g. from a capsule destructor) would be
/// deferred to the next call into tlrs.
pub struct PyOwner(Option<Py<PyAny>>);

impl PyOwner {
    pub fn owner(obj: &Bound<'_, PyAny>) -> Owner {
        Arc::new(PyOwner(Some(obj.clone().unbind())))
    }
}

impl Drop for PyOwner {
    fn drop(&mut self) {
        if let Some(obj) = self.0.take() {
            Python::attach(|_| drop(obj));
        }
    }
}

/// The elements of `a` in row-major order: borrowed when `a` is C-contiguous and aligned (and
/// `copy` is false), else copied (Fortran order, strided views, unaligned or empty arrays).
fn host_buf<T: Element + Copy + Send + Sync>(
    obj: &Bound<'_, PyAny>,
    a: &Bound<'_, PyArrayDyn<T>>,
    copy: bool,
) -> HostBuf<T> {
    if !copy && a.is_c_contiguous() && a.is_aligned() && a.len() > 0 {
        let owner = PyOwner::owner(obj);
        // SAFETY: a C-contiguous aligned array holds `len` elements at `data()`, and the owner
        // (the array object) keeps them allocated while any tensor uses them.
        return unsafe { HostBuf::borrowed(a.data(), a.len(), owner) };
    }
    let r: PyReadonlyArrayDyn<'_, T> = a.readonly();
    // `as_slice` also accepts Fortran-ordered arrays, so check for C order explicitly; any
    // other layout is copied in logical (row-major) order by ndarray's iterator.
    match r.as_slice() {
        Ok(s) if r.is_c_contiguous() => s.to_vec().into(),
        _ => r.as_array().iter().copied().collect(),
    }
}

/// A Tensor from a float32/float64 NumPy array, sharing its memory unless `copy` or the layout
/// requires a copy; other dtypes are a DTypeError.
pub fn from_numpy_with(
    arr: &Bound<'_, PyAny>,
    requires_grad: bool,
    copy: bool,
) -> PyResult<Tensor> {
    // A broadcast view can name far more elements than it stores: size the copy first.
    if let Ok(shape) = arr.getattr("shape").and_then(|s| s.extract::<Vec<usize>>()) {
        guard(|| crate::storage::check_alloc("from_numpy", &crate::Shape(shape)))?;
    }
    let (storage, shape) = if let Ok(a) = arr.cast::<PyArrayDyn<f32>>() {
        (CpuStorage::F32(host_buf(arr, a, copy)), a.shape().to_vec())
    } else if let Ok(a) = arr.cast::<PyArrayDyn<f64>>() {
        (CpuStorage::F64(host_buf(arr, a, copy)), a.shape().to_vec())
    } else if let Ok(a) = arr.cast::<PyArrayDyn<i64>>() {
        (CpuStorage::I64(host_buf(arr, a, copy)), a.shape().to_vec())
    } else if let Ok(a) = arr.cast::<PyArrayDyn<bool>>() {
        (CpuStorage::Bool(host_buf(arr, a, copy)), a.shape().to_vec())
    } else {
        let dt = arr
            .getattr("dtype")
            .and_then(|d| d.str())
            .map(|s| s.to_string())
            .unwrap_or_else(|_| {
                arr.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            });
        return Err(DTypeError::new_err(format!(
            "expected a float32, float64, int64 or bool array, got {dt}"
        )));
    };
    let t = guard(|| Tensor::from_cpu(storage, shape))?;
    if requires_grad && !t.dtype().is_float() {
        return Err(DTypeError::new_err(format!(
            "requires_grad: only float tensors can require gradients, got {}",
            t.dtype()
        )));
    }
    Ok(if requires_grad {
        t.detach_with_grad(true)
    } else {
        t
    })
}

fn read_only<'py>(a: Bound<'py, PyAny>) -> Bound<'py, PyAny> {
    if let Ok(arr) = a.cast::<numpy::PyUntypedArray>() {
        // SAFETY: clearing a flag bit of a live array object; NumPy reads it on every write.
        unsafe {
            (*numpy::npyffi::_PyArray_GET_ITEM_DATA(arr.as_array_ptr())).flags &=
                !numpy::npyffi::flags::NPY_ARRAY_WRITEABLE
        };
    }
    a
}

/// A read-only array over `data` (a CPU tensor's elements, row-major, or for a view the
/// storage it reads, through its strides) that keeps `t` alive as its base.
fn view<'py, T: Element>(
    py: Python<'py>,
    t: &Tensor,
    data: &[T],
    layout: Option<&Strided>,
) -> PyResult<Bound<'py, PyAny>> {
    let v = match layout {
        None => ArrayViewD::from_shape(IxDyn(t.dims()), data),
        Some(l) => {
            let shape = IxDyn(t.dims()).strides(IxDyn(&l.strides));
            ArrayViewD::from_shape(shape, &data[l.offset.min(data.len())..])
        }
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let base = Bound::new(py, PyTensor::new(t.clone()))?.into_any();
    // SAFETY: tensors never write or reallocate their storage, and `base` holds it.
    let a = unsafe { PyArrayDyn::<T>::borrow_from_array(&v, base) };
    Ok(read_only(a.into_any()))
}

fn owned<'py, T: Element>(py: Python<'py>, t: &Tensor, v: Vec<T>) -> PyResult<Bound<'py, PyAny>> {
    let a = ArrayD::from_shape_vec(IxDyn(t.dims()), v)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py).into_any())
}

/// `Tensor.numpy()`: a read-only view of a CPU tensor's memory (no copy; a permuted or sliced
/// tensor comes out as a strided array over the memory it reads); a CUDA tensor's
/// values are copied to the host (also read-only, so both behave alike).
pub fn to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    readable(t, "Tensor.numpy()")?;
    // A permuted or sliced view is read through its strides, in place; a broadcast one (whose
    // repeated elements NumPy would see as one, writable or not) is made row-major first.
    let layout = (!t.is_contiguous())
        .then(|| t.strided())
        .filter(|l| !l.strides.contains(&0));
    let values = if layout.is_some() {
        t.base_storage()
    } else {
        t.storage()
    };
    match values {
        Storage::Cpu(CpuStorage::F32(v)) => view(py, t, v, layout.as_ref()),
        Storage::Cpu(CpuStorage::F64(v)) => view(py, t, v, layout.as_ref()),
        Storage::Cpu(CpuStorage::I64(v)) => view(py, t, v, layout.as_ref()),
        Storage::Cpu(CpuStorage::Bool(v)) => view(py, t, v, layout.as_ref()),
        Storage::Cuda(_) => {
            let a = match guard(|| t.host().map(|h| h.into_owned()))? {
                CpuStorage::F32(v) => owned(py, t, v.into_vec())?,
                CpuStorage::F64(v) => owned(py, t, v.into_vec())?,
                CpuStorage::I64(v) => owned(py, t, v.into_vec())?,
                CpuStorage::Bool(v) => owned(py, t, v.into_vec())?,
            };
            Ok(read_only(a))
        }
    }
}

/// NumPy's `__array__(dtype, copy)` protocol: copy=None copies only for a dtype change or a
/// device copy, copy=True always gives a new writable array, copy=False refuses any copy.
pub fn array_protocol<'py>(
    py: Python<'py>,
    t: &Tensor,
    dtype: Option<Bound<'py, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    let a = to_numpy(py, t)?;
    let want = match dtype {
        Some(d) if !d.is_none() => Some(py.import("numpy")?.getattr("dtype")?.call1((d,))?),
        _ => None,
    };
    // The dtype to convert to, when it differs from the tensor's.
    let cast = match want {
        Some(w) if !a.getattr("dtype")?.eq(&w)? => Some(w),
        _ => None,
    };
    if copy == Some(false) && (cast.is_some() || !t.on_host()) {
        let why = match &cast {
            Some(w) => format!("a conversion from {} to {w}", t.dtype()),
            None => format!("a copy from {} to the host", t.device()),
        };
        return Err(PyValueError::new_err(format!(
            "Tensor.__array__: copy=False was given, but the array needs {why}"
        )));
    }
    match (cast, copy) {
        (Some(w), _) => a.call_method1("astype", (w,)),
        (None, Some(true)) => a.call_method0("copy"),
        (None, _) => Ok(a),
    }
}
