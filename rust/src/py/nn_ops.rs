//! Bindings for the layer ops: convolution, pooling, normalisation, attention, dropout and the
//! indexed ops (gather, scatter_add, embedding, masked_fill).

use super::errors::guard;
use super::int_args::{self, named_int_args};
use super::tensor::PyTensor;
use crate::geometry::AvgDivisor;
use crate::{ops, Tensor};
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

type T = PyTensor;

fn run(py: Python<'_>, f: impl FnOnce() -> crate::Result<Tensor> + Send) -> PyResult<T> {
    py.detach(|| guard(f)).map(PyTensor::new)
}

fn opt(t: &Option<PyRef<'_, T>>) -> Option<Tensor> {
    t.as_ref().map(|t| t.inner.clone())
}

#[pyfunction]
#[pyo3(signature = (x, weight, bias=None, stride=1, padding=0))]
pub fn conv2d(
    py: Python<'_>,
    x: PyRef<'_, T>,
    weight: PyRef<'_, T>,
    bias: Option<PyRef<'_, T>>,
    stride: usize,
    padding: usize,
) -> PyResult<T> {
    let (x, w, b) = (x.inner.clone(), weight.inner.clone(), opt(&bias));
    run(py, move || ops::conv2d(&x, &w, b.as_ref(), stride, padding))
}

named_int_args! {
    kernel_pair: pair("kernel_size") -> (usize, usize),
    padding_pair: pair("padding") -> (usize, usize),
    dilation_pair: pair("dilation") -> (usize, usize),
}

/// A pooling stride: None or an empty sequence for the kernel size (PyTorch's default).
fn stride_pair(v: &Bound<'_, PyAny>) -> PyResult<Option<(usize, usize)>> {
    if v.is_none() || v.len().ok() == Some(0) {
        return Ok(None);
    }
    int_args::pair("stride", v).map(Some)
}

#[pyfunction]
#[pyo3(signature = (x, kernel_size, stride=None, padding=(0, 0), dilation=(1, 1), ceil_mode=false, return_indices=false))]
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d<'py>(
    py: Python<'py>,
    x: PyRef<'_, T>,
    #[pyo3(from_py_with = kernel_pair)] kernel_size: (usize, usize),
    #[pyo3(from_py_with = stride_pair)] stride: Option<(usize, usize)>,
    #[pyo3(from_py_with = padding_pair)] padding: (usize, usize),
    #[pyo3(from_py_with = dilation_pair)] dilation: (usize, usize),
    ceil_mode: bool,
    return_indices: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let x = x.inner.clone();
    let spec = ops::PoolSpec {
        kernel: kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
        divisor: AvgDivisor::Padded,
    };
    let (y, winners) =
        py.detach(|| guard(|| ops::max_pool2d_indices(&x, &spec, return_indices)))?;
    let y = Bound::new(py, PyTensor::new(y))?.into_any();
    match winners {
        None => Ok(y),
        Some(w) => (y, w.into_pyarray(py)).into_bound_py_any(py),
    }
}

#[pyfunction]
#[pyo3(signature = (x, kernel_size, stride=None, padding=(0, 0), ceil_mode=false, count_include_pad=true, divisor_override=None))]
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    py: Python<'_>,
    x: PyRef<'_, T>,
    #[pyo3(from_py_with = kernel_pair)] kernel_size: (usize, usize),
    #[pyo3(from_py_with = stride_pair)] stride: Option<(usize, usize)>,
    #[pyo3(from_py_with = padding_pair)] padding: (usize, usize),
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<T> {
    let x = x.inner.clone();
    let divisor = match (divisor_override, count_include_pad) {
        (Some(d), _) => AvgDivisor::Fixed(d),
        (None, true) => AvgDivisor::Padded,
        (None, false) => AvgDivisor::Valid,
    };
    let spec = ops::PoolSpec {
        kernel: kernel_size,
        stride,
        padding,
        dilation: (1, 1),
        ceil_mode,
        divisor,
    };
    run(py, move || ops::avg_pool2d_with(&x, &spec))
}

#[pyfunction]
pub fn global_avg_pool2d(py: Python<'_>, x: PyRef<'_, T>) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::global_avg_pool2d(&x))
}

#[pyfunction]
#[pyo3(signature = (x, weight=None, bias=None, eps=1e-6))]
pub fn batch_norm_per_image(
    py: Python<'_>,
    x: PyRef<'_, T>,
    weight: Option<PyRef<'_, T>>,
    bias: Option<PyRef<'_, T>>,
    eps: f64,
) -> PyResult<T> {
    let (x, w, b) = (x.inner.clone(), opt(&weight), opt(&bias));
    run(py, move || {
        ops::batch_norm_per_image(&x, w.as_ref(), b.as_ref(), eps)
    })
}

/// (output, batch mean, biased batch variance) with statistics over (N, H, W).
#[pyfunction]
#[pyo3(signature = (x, weight=None, bias=None, eps=1e-5))]
pub fn batch_norm_train(
    py: Python<'_>,
    x: PyRef<'_, T>,
    weight: Option<PyRef<'_, T>>,
    bias: Option<PyRef<'_, T>>,
    eps: f64,
) -> PyResult<(T, T, T)> {
    let (x, w, b) = (x.inner.clone(), opt(&weight), opt(&bias));
    let (y, m, v) =
        py.detach(|| guard(|| ops::batch_norm_batch_stats(&x, w.as_ref(), b.as_ref(), eps)))?;
    Ok((PyTensor::new(y), PyTensor::new(m), PyTensor::new(v)))
}

#[pyfunction]
#[pyo3(signature = (x, running_mean, running_var, weight=None, bias=None, eps=1e-5))]
pub fn batch_norm_eval(
    py: Python<'_>,
    x: PyRef<'_, T>,
    running_mean: PyRef<'_, T>,
    running_var: PyRef<'_, T>,
    weight: Option<PyRef<'_, T>>,
    bias: Option<PyRef<'_, T>>,
    eps: f64,
) -> PyResult<T> {
    let (x, m, v, w, b) = (
        x.inner.clone(),
        running_mean.inner.clone(),
        running_var.inner.clone(),
        opt(&weight),
        opt(&bias),
    );
    run(py, move || {
        ops::batch_norm_eval(&x, &m, &v, w.as_ref(), b.as_ref(), eps)
    })
}

/// Attention's weights from scores [..., queries, keys]: softmax over keys of the scores times
/// `scale`, with later keys hidden from each query when `causal`.
#[pyfunction]
pub fn attention_softmax(py: Python<'_>, x: PyRef<'_, T>, scale: f64, causal: bool) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || {
        ops::attention_softmax::attention_softmax(&x, scale, causal)
    })
}

#[pyfunction]
#[pyo3(signature = (x, normalized_shape, weight=None, bias=None, eps=1e-5))]
pub fn layer_norm(
    py: Python<'_>,
    x: PyRef<'_, T>,
    normalized_shape: Vec<usize>,
    weight: Option<PyRef<'_, T>>,
    bias: Option<PyRef<'_, T>>,
    eps: f64,
) -> PyResult<T> {
    let (x, w, b) = (x.inner.clone(), opt(&weight), opt(&bias));
    run(py, move || {
        ops::layer_norm(&x, &normalized_shape, w.as_ref(), b.as_ref(), eps)
    })
}

#[pyfunction]
#[pyo3(signature = (x, wq, wk, wv, wo, num_heads, mask=None))]
#[allow(clippy::too_many_arguments)]
pub fn multi_head_attention(
    py: Python<'_>,
    x: PyRef<'_, T>,
    wq: PyRef<'_, T>,
    wk: PyRef<'_, T>,
    wv: PyRef<'_, T>,
    wo: PyRef<'_, T>,
    num_heads: usize,
    mask: Option<Vec<bool>>,
) -> PyResult<T> {
    let ts = [&x, &wq, &wk, &wv, &wo].map(|t| t.inner.clone());
    run(py, move || {
        ops::multi_head_attention(
            &ts[0],
            &ts[1],
            &ts[2],
            &ts[3],
            &ts[4],
            num_heads,
            mask.as_deref(),
        )
    })
}

#[pyfunction]
#[pyo3(signature = (x, p, key=None))]
pub fn dropout(py: Python<'_>, x: PyRef<'_, T>, p: f64, key: Option<u64>) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || crate::random::dropout(&x, p, key))
}

#[pyfunction]
pub fn embedding(
    py: Python<'_>,
    indices: Vec<i64>,
    indices_shape: Vec<usize>,
    weight: PyRef<'_, T>,
) -> PyResult<T> {
    let w = weight.inner.clone();
    run(py, move || ops::embedding(&indices, &indices_shape, &w))
}

/// `embedding` with an int64 index tensor of any shape (kept as the record's input).
#[pyfunction]
pub fn embedding_t(py: Python<'_>, indices: PyRef<'_, T>, weight: PyRef<'_, T>) -> PyResult<T> {
    let (i, w) = (indices.inner.clone(), weight.inner.clone());
    run(py, move || ops::index::embedding_t(&i, &w))
}

/// `sort` (k None) or `topk` along `dim`: (values, int64 positions); see `ops::sort`.
#[pyfunction]
#[pyo3(signature = (x, dim, descending, k=None))]
pub fn sort_along(
    py: Python<'_>,
    x: PyRef<'_, T>,
    dim: isize,
    descending: bool,
    k: Option<usize>,
) -> PyResult<(T, T)> {
    let x = x.inner.clone();
    let (values, indices) = py.detach(|| guard(move || ops::sort::sort(&x, dim, descending, k)))?;
    Ok((PyTensor::new(values), PyTensor::new(indices)))
}

#[pyfunction]
pub fn gather(
    py: Python<'_>,
    x: PyRef<'_, T>,
    dim: isize,
    index: Vec<i64>,
    index_shape: Vec<usize>,
) -> PyResult<T> {
    let x = x.inner.clone();
    run(py, move || ops::gather(&x, dim, &index, &index_shape))
}

#[pyfunction]
pub fn scatter_add(
    py: Python<'_>,
    x: PyRef<'_, T>,
    dim: isize,
    index: Vec<i64>,
    src: PyRef<'_, T>,
) -> PyResult<T> {
    let (x, s) = (x.inner.clone(), src.inner.clone());
    run(py, move || ops::scatter_add(&x, dim, &index, &s))
}

#[pyfunction]
pub fn masked_fill(
    py: Python<'_>,
    x: PyRef<'_, T>,
    mask: &Bound<'_, PyAny>,
    mask_shape: Vec<usize>,
    value: f64,
) -> PyResult<T> {
    let x = x.inner.clone();
    // A NumPy mask comes as its bytes (one per bool, row-major): a list of half a million
    // bools costs more to build and read than the fill itself.
    let mask: Vec<bool> = match mask.cast::<pyo3::types::PyBytes>() {
        Ok(b) => b.as_bytes().iter().map(|&v| v != 0).collect(),
        Err(_) => mask.extract()?,
    };
    run(py, move || ops::masked_fill(&x, &mask, &mask_shape, value))
}

/// Makes `dst` refer to `src`'s value (an in-place update as seen from Python), e.g. for
/// running statistics. Shapes and dtypes must match.
#[pyfunction]
pub fn assign_(mut dst: PyRefMut<'_, T>, src: PyRef<'_, T>) -> PyResult<()> {
    let (d, s) = (&dst.inner, &src.inner);
    if d.shape() != s.shape() || d.dtype() != s.dtype() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "assign_: expected a {} tensor of shape {}, got {} of shape {}",
            d.dtype(),
            d.shape(),
            s.dtype(),
            s.shape()
        )));
    }
    dst.inner = s.detach_with_grad(d.requires_grad());
    Ok(())
}
