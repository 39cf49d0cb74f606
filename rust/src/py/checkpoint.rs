//! Bindings for safetensors checkpoints.

use super::errors::guard;
use super::tensor::PyTensor;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;

type Loaded = (Vec<String>, Vec<PyTensor>, HashMap<String, String>);
type LoadedWithComplex = (
    Vec<String>,
    Vec<PyTensor>,
    Vec<bool>,
    HashMap<String, String>,
);

/// Writes named tensors and string metadata to `path` atomically; a tensor flagged in `complex`
/// is complex64 as float32 [..., 2] (re, im), written as C64.
#[pyfunction]
#[pyo3(signature = (path, names, tensors, metadata, complex=None))]
pub fn save_safetensors(
    py: Python<'_>,
    path: PathBuf,
    names: Vec<String>,
    tensors: Vec<PyRef<'_, PyTensor>>,
    metadata: HashMap<String, String>,
    complex: Option<Vec<bool>>,
) -> PyResult<()> {
    let ts: Vec<crate::Tensor> = tensors.iter().map(|t| t.inner.clone()).collect();
    let complex = complex.unwrap_or_else(|| vec![false; ts.len()]);
    py.detach(|| {
        guard(|| crate::checkpoint::save_with_complex(&path, &names, &ts, &complex, metadata))
    })
}

/// Reads (names, tensors, metadata) from `path`; a corrupt file raises CheckpointError.
#[pyfunction]
pub fn load_safetensors(py: Python<'_>, path: PathBuf) -> PyResult<Loaded> {
    let (pairs, meta) = py.detach(|| guard(|| crate::checkpoint::load(&path)))?;
    let (names, tensors) = pairs
        .into_iter()
        .map(|(n, t)| (n, PyTensor::new(t)))
        .unzip();
    Ok((names, tensors, meta))
}

/// Reads (names, tensors, complex flags, metadata) from `path`: a complex64 (C64) tensor comes
/// as float32 [..., 2] (re, im), flagged.
#[pyfunction]
pub fn load_safetensors_complex(py: Python<'_>, path: PathBuf) -> PyResult<LoadedWithComplex> {
    let (items, meta) = py.detach(|| guard(|| crate::checkpoint::load_with_complex(&path)))?;
    let mut names = Vec::with_capacity(items.len());
    let mut tensors = Vec::with_capacity(items.len());
    let mut complex = Vec::with_capacity(items.len());
    for (n, t, c) in items {
        names.push(n);
        tensors.push(PyTensor::new(t));
        complex.push(c);
    }
    Ok((names, tensors, complex, meta))
}
