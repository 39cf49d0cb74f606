//! The Python `Tensor` class: attributes, NumPy conversion both ways, operators. Semantics live
//! in the core; this file converts and maps errors only.

use super::errors::{guard, DTypeError};
use super::int_args::named_int_args;
use super::numpy_conv::to_numpy;
use crate::{ops, DType, Device, Tensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

#[pyclass(name = "Tensor", module = "tlrs._core")]
pub struct PyTensor {
    pub inner: Tensor,
}

impl PyTensor {
    pub fn new(t: Tensor) -> Self {
        PyTensor { inner: t }
    }
}

pub fn parse_dtype(s: &str) -> PyResult<DType> {
    DType::parse(s).ok_or_else(|| {
        DTypeError::new_err(format!("expected dtype 'float32' or 'float64', got '{s}'"))
    })
}

/// Any tensor dtype, integer and bool included (`dtype::INT_SPELLINGS`).
pub fn parse_any_dtype(s: &str) -> PyResult<DType> {
    DType::parse_any(s).ok_or_else(|| {
        DTypeError::new_err(format!(
            "expected dtype 'float32', 'float64', 'int64' or 'bool', got '{s}'"
        ))
    })
}

/// The dtype spelling table (`dtype::SPELLINGS`): spelling -> canonical name.
#[pyfunction]
pub fn dtype_spellings() -> Vec<(&'static str, &'static str)> {
    crate::dtype::SPELLINGS
        .iter()
        .map(|&(s, d)| (s, d.name()))
        .collect()
}

pub fn parse_device(s: &str) -> PyResult<Device> {
    guard(|| Device::parse(s))
}

/// Refuses Python reads of a value computed from a compiled trace's leaves: the trace's values
/// are placeholders, and a value read in Python would be baked into the graph for every batch.
pub fn readable(t: &Tensor, how: &str) -> PyResult<()> {
    if t.traced() {
        crate::graph::note_traced_read(how);
        return Err(crate::py::errors::trace_read_error(how));
    }
    Ok(())
}

named_int_args! {
    start_dim: signed("start_dim") -> isize,
    end_dim: signed("end_dim") -> isize,
}

/// An integer argument: out of the index range is a ValueError naming it (not OverflowError).
fn int_arg(name: &str, v: &Bound<'_, PyAny>) -> PyResult<isize> {
    v.extract::<isize>().map_err(|e| {
        if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(v.py()) {
            PyValueError::new_err(format!(
                "{name} must be an integer in the index range, got {v}"
            ))
        } else {
            e
        }
    })
}

fn opt_int_arg(name: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<isize>> {
    match v {
        Some(v) if !v.is_none() => int_arg(name, v).map(Some),
        _ => Ok(None),
    }
}

/// A reduction over `dim` (all elements when None), off the GIL.
fn reduce(
    py: Python<'_>,
    t: &Tensor,
    dim: Option<Bound<'_, PyAny>>,
    keepdim: bool,
    op: fn(&Tensor, Option<isize>, bool) -> crate::Result<Tensor>,
) -> PyResult<PyTensor> {
    let dim = opt_int_arg("dim", dim.as_ref())?;
    let t = t.clone();
    py.detach(|| guard(|| op(&t, dim, keepdim)))
        .map(PyTensor::new)
}

/// `pow(t, e, m)`: tensors have no modular power.
fn refuse_modulo(modulo: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match modulo {
        Some(m) if !m.is_none() => Err(pyo3::exceptions::PyTypeError::new_err(
            "pow() with a modulus (3 arguments) is not supported for tensors",
        )),
        _ => Ok(()),
    }
}

/// Another operand of an arithmetic operator: a Tensor, or a Python number taken in `like`'s
/// dtype; None for anything else.
fn operand(like: &Tensor, other: &Bound<'_, PyAny>) -> Option<Tensor> {
    if let Ok(t) = other.cast::<PyTensor>() {
        return Some(t.borrow().inner.clone());
    }
    other
        .extract::<f64>()
        .ok()
        .map(|v| Tensor::scalar(v, like.dtype()))
}

/// `x op other` (`other op x` when `reflected`); NotImplemented for an operand that is neither a
/// Tensor nor a number, so Python asks the other operand (a complex tensor takes a real one).
fn arithmetic(
    py: Python<'_>,
    x: &Tensor,
    other: &Bound<'_, PyAny>,
    op: ops::BinaryOp,
    reflected: bool,
) -> PyResult<Py<PyAny>> {
    let Some(o) = operand(x, other) else {
        return Ok(py.NotImplemented().into_any());
    };
    let (a, b) = if reflected {
        (o, x.clone())
    } else {
        (x.clone(), o)
    };
    binary(py, a, b, op)?.into_py_any(py)
}

fn binary(py: Python<'_>, a: Tensor, b: Tensor, op: ops::BinaryOp) -> PyResult<PyTensor> {
    py.detach(|| guard(|| ops::binary(op, &a, &b)))
        .map(PyTensor::new)
}

#[pymethods]
impl PyTensor {
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.inner.dims().to_vec()
    }
    #[getter]
    fn dtype(&self) -> &'static str {
        self.inner.dtype().name()
    }
    #[getter]
    fn device(&self) -> String {
        self.inner.device().to_string()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.rank()
    }
    /// Whether the values come from a compiled trace's leaves (placeholders Python must not read):
    /// lets a function choose a path without reading them.
    #[getter]
    fn _is_traced(&self) -> bool {
        self.inner.traced()
    }
    #[getter]
    fn requires_grad(&self) -> bool {
        // An integer or bool result may keep its record (a compiled graph replays it), but it
        // never has a gradient.
        self.inner.requires_grad() && self.inner.dtype().is_float()
    }
    #[setter]
    fn set_requires_grad(&mut self, on: bool) -> PyResult<()> {
        if !self.inner.is_leaf() {
            return Err(PyValueError::new_err(
                "requires_grad can only be changed on a leaf tensor (one not computed from others); use detach() first",
            ));
        }
        if on && !self.inner.dtype().is_float() {
            return Err(DTypeError::new_err(format!(
                "requires_grad: only float tensors can require gradients, got {}",
                self.inner.dtype()
            )));
        }
        self.inner = self.inner.detach_with_grad(on);
        Ok(())
    }
    #[getter]
    fn grad(&self) -> Option<PyTensor> {
        self.inner.grad().map(PyTensor::new)
    }
    #[setter(grad)]
    fn set_grad(&self, g: Option<PyRef<'_, PyTensor>>) {
        self.inner.set_grad(g.map(|g| g.inner.clone()));
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        self.inner.is_leaf()
    }
    fn numel(&self) -> usize {
        self.inner.numel()
    }
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_numpy(py, &self.inner)
    }
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        super::numpy_conv::array_protocol(py, &self.inner, dtype, copy)
    }
    /// A DLPack capsule over this tensor's memory (see py/dlpack.rs).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        super::dlpack::dlpack(
            py,
            &self.inner,
            stream.as_ref(),
            max_version.as_ref(),
            dl_device.as_ref(),
            copy,
        )
    }
    /// (DLPack device type, device id): (1, 0) on the CPU, (2, N) on cuda:N.
    fn __dlpack_device__(&self) -> (i32, i32) {
        super::dlpack::dl_device_tuple(&self.inner)
    }
    /// The address of the first element (host memory, or device memory on CUDA).
    fn data_ptr(&self) -> u64 {
        super::dlpack::data_address(&self.inner)
    }
    /// The one element as a Python float, int (int64) or bool.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        readable(&self.inner, "Tensor.item()")?;
        let v = guard(|| self.inner.item())?;
        match self.inner.dtype() {
            DType::I64 => {
                let host = guard(|| self.inner.host().map(|h| h.into_owned()))?;
                let ints = guard(|| host.ints("item").map(|v| v[0]))?;
                Ok(ints.into_pyobject(py)?.into_any())
            }
            DType::Bool => Ok(pyo3::types::PyBool::new(py, v != 0.0).to_owned().into_any()),
            _ => Ok(v.into_pyobject(py)?.into_any()),
        }
    }
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_numpy(py, &self.inner)?.call_method0("tolist")
    }
    fn detach(&self) -> PyTensor {
        PyTensor::new(self.inner.detach())
    }
    /// Converts to a dtype ('float32'/'float64') or moves to a device ('cpu', 'cuda', 'cuda:N').
    fn to(&self, target: &str) -> PyResult<PyTensor> {
        if let Ok(d) = parse_any_dtype(target) {
            return guard(|| self.inner.to_dtype(d)).map(PyTensor::new);
        }
        let dev = parse_device(target).map_err(|_| {
            PyValueError::new_err(format!(
                "expected a dtype ('float32', 'float64', 'int64', 'bool') or a device ('cpu', 'cuda', 'cuda:N'), got '{target}'"
            ))
        })?;
        guard(|| self.inner.to_device(dev)).map(PyTensor::new)
    }
    /// A copy on the CPU (this tensor when it is already there).
    fn cpu(&self) -> PyResult<PyTensor> {
        guard(|| self.inner.to_device(Device::Cpu)).map(PyTensor::new)
    }
    /// A copy on CUDA device `device` (default 0).
    #[pyo3(signature = (device=None))]
    fn cuda(&self, device: Option<Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let device = usize::try_from(opt_int_arg("device", device.as_ref())?.unwrap_or(0))
            .map_err(|_| PyValueError::new_err("device must be a CUDA ordinal >= 0"))?;
        guard(|| self.inner.to_device(Device::Cuda(device))).map(PyTensor::new)
    }
    fn backward(&self, py: Python<'_>) -> PyResult<()> {
        let t = self.inner.clone();
        super::errors::interruptible(py, || crate::autograd::backward(&t))
    }
    fn __len__(&self) -> PyResult<usize> {
        self.inner
            .dims()
            .first()
            .copied()
            .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("len() of a 0-d tensor"))
    }
    fn __float__(&self) -> PyResult<f64> {
        readable(&self.inner, "float(Tensor)")?;
        guard(|| self.inner.item())
    }
    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Add, false)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Add, true)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Sub, false)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Sub, true)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Mul, false)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Mul, true)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Div, false)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arithmetic(py, &self.inner, o, ops::BinaryOp::Div, true)
    }
    fn __matmul__(&self, py: Python<'_>, o: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner.clone(), o.inner.clone());
        py.detach(|| guard(|| ops::matmul(&a, &b)))
            .map(PyTensor::new)
    }
    fn __neg__(&self) -> PyResult<PyTensor> {
        guard(|| ops::neg(&self.inner)).map(PyTensor::new)
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        if self.inner.traced() {
            // Its values are a compiled trace's placeholders: show what is known, not them.
            let (t, d) = (&self.inner, self.inner.dtype());
            return Ok(format!("tensor(<traced>, shape={}, dtype={d})", t.shape()));
        }
        let arr = to_numpy(py, &self.inner)?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("precision", 4)?;
        kwargs.set_item("separator", ", ")?;
        kwargs.set_item("prefix", "tensor(")?;
        let body: String = py
            .import("numpy")?
            .call_method("array2string", (arr,), Some(&kwargs))?
            .extract()?;
        let mut extra = String::new();
        if self.inner.device() != Device::Cpu {
            extra.push_str(&format!(", device='{}'", self.inner.device()));
        }
        if self.inner.dtype() != DType::F64 {
            extra.push_str(&format!(", dtype={}", self.inner.dtype()));
        }
        if self.inner.requires_grad() {
            extra.push_str(", requires_grad=True");
        }
        Ok(format!("tensor({body}{extra})"))
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        reduce(py, &self.inner, dim, keepdim, ops::sum)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        reduce(py, &self.inner, dim, keepdim, ops::mean)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        reduce(py, &self.inner, dim, keepdim, ops::max)
    }
    #[pyo3(signature = (*shape))]
    fn reshape(&self, shape: Vec<Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let out_of_range = |e: PyErr| {
            PyValueError::new_err(format!(
                "reshape: expected a shape of integers in the index range, got {shape:?} ({e})"
            ))
        };
        let dims: Vec<isize> = if shape.len() == 1 && shape[0].extract::<isize>().is_err() {
            shape[0].extract().map_err(out_of_range)?
        } else {
            shape
                .iter()
                .map(|d| d.extract())
                .collect::<PyResult<_>>()
                .map_err(out_of_range)?
        };
        guard(|| ops::reshape(&self.inner, &dims)).map(PyTensor::new)
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(
        &self,
        #[pyo3(from_py_with = start_dim)] start_dim: isize,
        #[pyo3(from_py_with = end_dim)] end_dim: isize,
    ) -> PyResult<PyTensor> {
        guard(|| ops::flatten(&self.inner, start_dim, end_dim)).map(PyTensor::new)
    }
    /// Whether it reads memory holding exactly its elements in row-major order (false for most
    /// views: a CPU permute, transpose, slice or broadcast reads its input's memory).
    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }
    /// The same values in row-major memory of their own (this tensor when they already are).
    fn contiguous(&self) -> PyTensor {
        PyTensor::new(ops::contiguous(&self.inner))
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<PyTensor> {
        let dims = super::int_args::signed_list("dims", dims.as_any())?;
        guard(|| ops::permute(&self.inner, &dims)).map(PyTensor::new)
    }
    fn transpose(&self, dim0: Bound<'_, PyAny>, dim1: Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (dim0, dim1) = (int_arg("dim0", &dim0)?, int_arg("dim1", &dim1)?);
        guard(|| ops::transpose(&self.inner, dim0, dim1)).map(PyTensor::new)
    }
    /// The transpose of a matrix (the last two axes swapped).
    #[getter(T)]
    fn t_(&self) -> PyResult<PyTensor> {
        guard(|| ops::transpose(&self.inner, -2, -1)).map(PyTensor::new)
    }
    fn softmax(&self, dim: Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let dim = int_arg("dim", &dim)?;
        guard(|| ops::softmax(&self.inner, dim)).map(PyTensor::new)
    }
    fn log_softmax(&self, dim: Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let dim = int_arg("dim", &dim)?;
        guard(|| ops::log_softmax(&self.inner, dim)).map(PyTensor::new)
    }
    fn matmul(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.__matmul__(py, other)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(&self, min: Option<f64>, max: Option<f64>) -> PyResult<PyTensor> {
        guard(|| ops::clamp(&self.inner, min, max)).map(PyTensor::new)
    }
    fn pow(&self, exponent: f64) -> PyResult<PyTensor> {
        guard(|| ops::pow(&self.inner, exponent)).map(PyTensor::new)
    }
    fn __rpow__(&self, base: f64, modulo: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        refuse_modulo(modulo)?;
        // base ** x by IEEE pow, as a recorded op so x gets a gradient.
        let t = &self.inner;
        guard(|| ops::binary(ops::BinaryOp::Pow, &Tensor::scalar(base, t.dtype()), t))
            .map(PyTensor::new)
    }
    fn __pow__(
        &self,
        e: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        refuse_modulo(modulo)?;
        let py = e.py();
        let y = if let Ok(t) = e.cast::<PyTensor>() {
            // A tensor exponent, broadcast: IEEE pow elementwise, with its gradient. A 0-d one
            // takes the base's dtype (PyTorch's promotion: the dimensioned operand's dtype).
            let t = t.borrow().inner.clone();
            guard(|| {
                let t = if t.rank() == 0 && self.inner.rank() > 0 {
                    t.to_dtype(self.inner.dtype())?
                } else {
                    t
                };
                ops::binary(ops::BinaryOp::Pow, &self.inner, &t)
            })
        } else if let Ok(e) = e.extract::<f64>() {
            guard(|| ops::pow(&self.inner, e))
        } else {
            return Ok(py.NotImplemented().into_any());
        }?;
        PyTensor::new(y).into_py_any(py)
    }
}
