//! Module-level functions of `tlrs._core`: constructors, the op set, autograd and runtime
//! switches. Each converts arguments, releases the GIL around core work and maps errors.

use super::errors::{guard, interruptible};
use super::int_args::named_int_args;
use super::tensor::PyTensor;
use crate::backend::cpu::parallel;
use crate::{autograd, ops, Tensor};
use pyo3::prelude::*;

type T = PyTensor;

fn run(py: Python<'_>, f: impl FnOnce() -> crate::Result<Tensor> + Send) -> PyResult<T> {
    py.detach(|| guard(f)).map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (array, requires_grad=false, copy=false))]
pub fn tensor_from_numpy(array: &Bound<'_, PyAny>, requires_grad: bool, copy: bool) -> PyResult<T> {
    super::numpy_conv::from_numpy_with(array, requires_grad, copy).map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (shape, value, dtype="float64", requires_grad=false, device="cpu"))]
pub fn full(
    shape: Vec<usize>,
    value: f64,
    dtype: &str,
    requires_grad: bool,
    device: &str,
) -> PyResult<T> {
    let dt = super::tensor::parse_any_dtype(dtype)?;
    if requires_grad && !dt.is_float() {
        return Err(super::errors::DTypeError::new_err(format!(
            "requires_grad: only float tensors can require gradients, got {dt}"
        )));
    }
    if !dt.is_float() && value.fract() != 0.0 && dt == crate::DType::I64 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "full: an int64 tensor cannot hold {value}"
        )));
    }
    let dev = super::tensor::parse_device(device)?;
    let t = guard(|| Tensor::full_on(shape, value, dt, dev))?;
    Ok(PyTensor::new(if requires_grad {
        t.detach_with_grad(true)
    } else {
        t
    }))
}

macro_rules! binary_fns {
    ($($name:ident),*) => {$(
        #[pyfunction]
        pub fn $name(py: Python<'_>, a: PyRef<'_, T>, b: PyRef<'_, T>) -> PyResult<T> {
            let (a, b) = (a.inner.clone(), b.inner.clone());
            run(py, move || ops::$name(&a, &b))
        }
    )*};
}
binary_fns!(matmul, mse_loss, l1_loss, binary_cross_entropy_with_logits);

macro_rules! pointwise_loss_fns {
    ($($name:ident($param:ident)),*) => {$(
        #[pyfunction]
        pub fn $name(py: Python<'_>, a: PyRef<'_, T>, b: PyRef<'_, T>, $param: f64) -> PyResult<T> {
            let (a, b) = (a.inner.clone(), b.inner.clone());
            run(py, move || ops::$name(&a, &b, $param))
        }
    )*};
}
pointwise_loss_fns!(smooth_l1_loss(beta), huber_loss(delta));

#[pyfunction]
pub fn pow(py: Python<'_>, x: PyRef<'_, T>, exponent: f64) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::pow(&x, exponent))
}

#[pyfunction]
#[pyo3(signature = (x, min=None, max=None))]
pub fn clamp(py: Python<'_>, x: PyRef<'_, T>, min: Option<f64>, max: Option<f64>) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::clamp(&x, min, max))
}

macro_rules! reduce_fns {
    ($($name:ident),*) => {$(
        #[pyfunction]
        #[pyo3(signature = (x, dim=None, keepdim=false))]
        pub fn $name(py: Python<'_>, x: PyRef<'_, T>, dim: Option<isize>, keepdim: bool) -> PyResult<T> {
            let x = x.inner.clone();
            run(py, move || ops::$name(&x, dim, keepdim))
        }
    )*};
}
reduce_fns!(sum, mean, max);

#[pyfunction]
pub fn reshape(x: PyRef<'_, T>, shape: Vec<isize>) -> PyResult<T> {
    guard(|| ops::reshape(&x.inner, &shape)).map(PyTensor::new)
}

named_int_args! {
    target_shape: sizes("shape") -> Vec<usize>,
}

/// `x` repeated along broadcast axes to `shape` (NumPy rules; a view on the CPU).
#[pyfunction]
pub fn broadcast_to(
    x: PyRef<'_, T>,
    #[pyo3(from_py_with = target_shape)] shape: Vec<usize>,
) -> PyResult<T> {
    guard(|| ops::broadcast_to(&x.inner, &crate::Shape(shape.clone()))).map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (x, start_dim=0, end_dim=-1))]
pub fn flatten(x: PyRef<'_, T>, start_dim: isize, end_dim: isize) -> PyResult<T> {
    guard(|| ops::flatten(&x.inner, start_dim, end_dim)).map(PyTensor::new)
}

#[pyfunction]
pub fn permute(py: Python<'_>, x: PyRef<'_, T>, dims: Vec<isize>) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::permute(&x, &dims))
}

#[pyfunction]
pub fn transpose(py: Python<'_>, x: PyRef<'_, T>, dim0: isize, dim1: isize) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::transpose(&x, dim0, dim1))
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
pub fn concat(py: Python<'_>, tensors: Vec<PyRef<'_, T>>, dim: isize) -> PyResult<T> {
    let xs: Vec<Tensor> = tensors.iter().map(|t| t.inner.clone()).collect();
    run(py, move || ops::concat(&xs, dim))
}

#[pyfunction]
pub fn slice(py: Python<'_>, x: PyRef<'_, T>, dim: isize, start: isize, end: isize) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::slice(&x, dim, start, end))
}

#[pyfunction]
pub fn index_select(py: Python<'_>, x: PyRef<'_, T>, dim: isize, index: Vec<i64>) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::index_select(&x, dim, &index))
}

/// `index_select` with an int64 index tensor (kept as the record's input).
#[pyfunction]
pub fn index_select_t(
    py: Python<'_>,
    x: PyRef<'_, T>,
    dim: isize,
    index: PyRef<'_, T>,
) -> PyResult<T> {
    let (x, i) = (x.inner.clone(), index.inner.clone());
    run(py, move || ops::layout::index_select_t(&x, dim, &i))
}

/// `a op b` elementwise (`op` one of eq, ne, lt, le, gt, ge): a bool tensor.
#[pyfunction]
pub fn compare(py: Python<'_>, op: &str, a: PyRef<'_, T>, b: PyRef<'_, T>) -> PyResult<T> {
    let op = ops::compare::CompareOp::parse(op).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "expected a comparison ('eq', 'ne', 'lt', 'le', 'gt', 'ge'), got {op:?}"
        ))
    })?;
    let (a, b) = (a.inner.clone(), b.inner.clone());
    run(py, move || ops::compare::compare(op, &a, &b))
}

#[pyfunction]
pub fn softmax(py: Python<'_>, x: PyRef<'_, T>, dim: isize) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::softmax(&x, dim))
}

/// logsumexp along the axes `dims` as one op (they must not be empty).
#[pyfunction]
#[pyo3(signature = (x, dims, keepdim=false))]
pub fn logsumexp(py: Python<'_>, x: PyRef<'_, T>, dims: Vec<isize>, keepdim: bool) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::logsumexp(&x, &dims, keepdim))
}

/// The variance along the axes `dims` as one op, divided by max(0, N - correction).
#[pyfunction]
#[pyo3(signature = (x, dims, correction, keepdim=false))]
pub fn var(
    py: Python<'_>,
    x: PyRef<'_, T>,
    dims: Vec<isize>,
    correction: f64,
    keepdim: bool,
) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::var(&x, &dims, correction, keepdim))
}

/// The product along `dim` (None: over every element) by halving, as one op.
#[pyfunction]
#[pyo3(signature = (x, dim, keepdim=false))]
pub fn prod(py: Python<'_>, x: PyRef<'_, T>, dim: Option<isize>, keepdim: bool) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::prod(&x, dim, keepdim))
}

#[pyfunction]
pub fn cumsum(py: Python<'_>, x: PyRef<'_, T>, dim: isize) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::reduce::cumsum(&x, dim))
}

#[pyfunction]
pub fn log_softmax(py: Python<'_>, x: PyRef<'_, T>, dim: isize) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::log_softmax(&x, dim))
}

/// Cross-entropy against class indices; a label equal to `ignore_index` counts for nothing.
#[pyfunction]
#[pyo3(signature = (x, target, ignore_index=None))]
pub fn cross_entropy_indices(
    py: Python<'_>,
    x: PyRef<'_, T>,
    target: Vec<i64>,
    ignore_index: Option<i64>,
) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || {
        ops::cross_entropy_ignoring(&x, ops::Target::Indices(&target), ignore_index)
    })
}

/// Cross-entropy against class indices given as an int64 tensor (kept as the record's input);
/// a label equal to `ignore_index` counts for nothing.
#[pyfunction]
#[pyo3(signature = (x, target, ignore_index=None))]
pub fn cross_entropy_index_tensor(
    py: Python<'_>,
    x: PyRef<'_, T>,
    target: PyRef<'_, T>,
    ignore_index: Option<i64>,
) -> PyResult<T> {
    let (x, t) = (x.inner.clone(), target.inner.clone());
    run(py, move || {
        ops::cross_entropy_ignoring(&x, ops::Target::IndexTensor(&t), ignore_index)
    })
}

/// The negative log-likelihood of log-probabilities at class indices given as an int64 tensor
/// (kept as the record's input), averaged over the counted rows.
#[pyfunction]
#[pyo3(signature = (logp, target, ignore_index=None))]
pub fn nll_loss_index_tensor(
    py: Python<'_>,
    logp: PyRef<'_, T>,
    target: PyRef<'_, T>,
    ignore_index: Option<i64>,
) -> PyResult<T> {
    let (x, t) = (logp.inner.clone(), target.inner.clone());
    run(py, move || {
        ops::nll_loss_ignoring(&x, ops::Target::IndexTensor(&t), ignore_index)
    })
}

#[pyfunction]
pub fn cross_entropy_probs(py: Python<'_>, x: PyRef<'_, T>, target: PyRef<'_, T>) -> PyResult<T> {
    let (x, t) = (x.inner.clone(), target.inner.clone());
    run(py, move || ops::cross_entropy(&x, ops::Target::Probs(&t)))
}

/// Cross-entropy with label smoothing at class indices (none ignored; a 1-d int64 array),
/// averaged.
#[pyfunction]
pub fn cross_entropy_smoothed(
    py: Python<'_>,
    x: PyRef<'_, T>,
    target: numpy::PyReadonlyArray1<'_, i64>,
    label_smoothing: f64,
) -> PyResult<T> {
    // Copied before the interpreter lock is released (Python may write the array meanwhile).
    let (x, labels) = (x.inner.clone(), target.as_slice()?.to_vec());
    run(py, move || {
        crate::ops::cross_entropy_probs::cross_entropy_smoothed(&x, &labels, label_smoothing)
    })
}

#[pyfunction]
#[pyo3(signature = (x, weight, bias=None))]
pub fn linear(
    py: Python<'_>,
    x: PyRef<'_, T>,
    weight: PyRef<'_, T>,
    bias: Option<PyRef<'_, T>>,
) -> PyResult<T> {
    let (x, w, b) = (
        x.inner.clone(),
        weight.inner.clone(),
        bias.map(|b| b.inner.clone()),
    );
    run(py, move || ops::linear(&x, &w, b.as_ref()))
}

/// `torch.autograd.grad`: one gradient per input (None where no output depends on it).
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs))]
pub fn grad(
    py: Python<'_>,
    outputs: Vec<PyRef<'_, T>>,
    inputs: Vec<PyRef<'_, T>>,
    grad_outputs: Vec<Option<PyRef<'_, T>>>,
) -> PyResult<Vec<Option<T>>> {
    let outs: Vec<Tensor> = outputs.iter().map(|t| t.inner.clone()).collect();
    let xs: Vec<Tensor> = inputs.iter().map(|t| t.inner.clone()).collect();
    let seeds: Vec<Option<Tensor>> = grad_outputs
        .iter()
        .map(|g| g.as_ref().map(|g| g.inner.clone()))
        .collect();
    let gs = interruptible(py, || autograd::grad_of(&outs, &seeds, &xs))?;
    Ok(gs.into_iter().map(|g| g.map(PyTensor::new)).collect())
}

/// Opens training step `step` (dropout draws the step's masks); returns the scope it replaced,
/// for `exit_step`.
#[pyfunction]
pub fn enter_step(step: u64) -> Option<(u64, u64)> {
    ops::dropout::set_step(Some(step))
}

/// Puts back the scope `enter_step` replaced.
#[pyfunction]
pub fn exit_step(previous: Option<(u64, u64)>) {
    ops::dropout::restore_step(previous)
}

#[pyfunction]
pub fn enter_no_grad() {
    autograd::enter_no_grad();
}

#[pyfunction]
pub fn exit_no_grad() {
    autograd::exit_no_grad();
}

#[pyfunction]
pub fn is_grad_enabled() -> bool {
    autograd::grad_enabled()
}

#[pyfunction]
pub fn set_num_threads(n: usize) -> PyResult<()> {
    guard(|| parallel::set_num_threads(n))
}

#[pyfunction]
pub fn get_num_threads() -> usize {
    parallel::num_threads()
}

/// f32 GFLOP/s of vector FMA loops on every tlrs thread (`iters` steps each), the ceiling
/// benchmarks report kernels against; None where the CPU has no vector FMA.
#[pyfunction]
pub fn fma_peak_gflops(iters: usize) -> Option<f64> {
    crate::backend::cpu::peak::fma_peak_gflops(iters)
}

/// As `fma_peak_gflops` with a multiply and a separate add per term: the ceiling of the
/// reference kernels' arithmetic.
#[pyfunction]
pub fn mul_add_peak_gflops(iters: usize) -> Option<f64> {
    crate::backend::cpu::peak::mul_add_peak_gflops(iters)
}

#[pyfunction]
pub fn cached_memory() -> usize {
    crate::buffer_cache::cached_bytes()
}

#[pyfunction]
pub fn release_cached_memory() -> usize {
    crate::buffer_cache::release_all()
}

#[pyfunction]
pub fn set_fast_kernels(on: bool) {
    parallel::set_fast_kernels(on);
}

#[pyfunction]
pub fn get_fast_kernels() -> bool {
    parallel::fast_kernels()
}

/// This thread's kernel settings: (fast CPU kernels, GPU matmuls in fp64, TF32).
#[pyfunction]
pub fn get_kernel_settings() -> (bool, bool, bool) {
    let s = crate::backend::settings::current();
    (s.fast, s.gpu_fp64, s.tf32)
}

/// Replaces this thread's kernel settings.
#[pyfunction]
pub fn set_kernel_settings(fast: bool, gpu_fp64: bool, tf32: bool) {
    crate::backend::settings::set(crate::backend::settings::KernelSettings {
        fast,
        gpu_fp64,
        tf32,
    });
}
