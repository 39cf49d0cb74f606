//! Binding for the one optimizer implementation (`crate::optim`): `tlrs.optim` calls it for
//! every parameter, on the CPU and on CUDA devices.

use super::errors::guard;
use super::tensor::PyTensor;
use crate::optim::{update, OptimKind};
use crate::Tensor;
use pyo3::prelude::*;
use std::collections::HashMap;

/// One update of one parameter at step `t` (1-based) by the optimizer `kind` with `hyper`:
/// (new parameter, new slots in slot order).
#[pyfunction]
pub fn optim_update(
    py: Python<'_>,
    kind: &str,
    hyper: HashMap<String, f64>,
    t: u64,
    param: PyRef<'_, PyTensor>,
    grad: PyRef<'_, PyTensor>,
    slots: Vec<PyRef<'_, PyTensor>>,
) -> PyResult<(PyTensor, Vec<PyTensor>)> {
    let okind = guard(|| OptimKind::parse(kind, &|k| hyper.get(k).copied()))?;
    let (p, g) = (param.inner.clone(), grad.inner.clone());
    let s: Vec<Tensor> = slots.iter().map(|t| t.inner.clone()).collect();
    let (np, ns) = py.detach(|| guard(|| update(okind, t, p, &g, s)))?;
    Ok((
        PyTensor::new(np),
        ns.into_iter().map(PyTensor::new).collect(),
    ))
}
