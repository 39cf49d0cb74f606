//! Bindings for safetensors checkpoints.

use super::errors::guard;
use super::tensor::PyTensor;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;

type Loaded = (Vec<String>, Vec<PyTensor>, HashMap<String, String>);

/// Writes named tensors and string metadata to `path` atomically.
#[pyfunction]
pub fn save_safetensors(
    py: Python<'_>,
    path: PathBuf,
    names: Vec<String>,
    tensors: Vec<PyRef<'_, PyTensor>>,
    metadata: HashMap<String, String>,
) -> PyResult<()> {
    let ts: Vec<crate::Tensor> = tensors.iter().map(|t| t.inner.clone()).collect();
    py.detach(|| guard(|| crate::checkpoint::save(&path, &names, &ts, metadata)))
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
