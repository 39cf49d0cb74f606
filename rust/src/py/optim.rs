//! Binding for the one optimizer implementation (`crate::optim`): `tlrs.optim` calls it for
//! every parameter, on the CPU and on CUDA devices.

use super::errors::guard;
use super::tensor::PyTensor;
use crate::optim::{update, update_in_place, OptimKind};
use crate::Tensor;
use pyo3::prelude::*;
use std::collections::HashMap;

fn parse(kind: &str, hyper: &HashMap<String, f64>) -> PyResult<OptimKind> {
    guard(|| OptimKind::parse(kind, &|k| hyper.get(k).copied()))
}

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
    let okind = parse(kind, &hyper)?;
    let (p, g) = (param.inner.clone(), grad.inner.clone());
    let s: Vec<Tensor> = slots.iter().map(|t| t.inner.clone()).collect();
    let (np, ns) = py.detach(|| guard(|| update(okind, t, p, &g, s)))?;
    Ok((
        PyTensor::new(np),
        ns.into_iter().map(PyTensor::new).collect(),
    ))
}

/// As `optim_update`, replacing `param`'s and the slots' values with the results (the Python
/// objects keep their identity). Their buffers are written in place when no other tensor
/// shares them, else replaced by updated copies; on error nothing changes.
#[pyfunction]
pub fn optim_update_(
    py: Python<'_>,
    kind: &str,
    hyper: HashMap<String, f64>,
    t: u64,
    mut param: PyRefMut<'_, PyTensor>,
    grad: PyRef<'_, PyTensor>,
    mut slots: Vec<PyRefMut<'_, PyTensor>>,
) -> PyResult<()> {
    let okind = parse(kind, &hyper)?;
    let g = grad.inner.clone();
    // The slots move out for the call (a placeholder stands in) and come back either way.
    let mut s: Vec<Tensor> = slots
        .iter_mut()
        .map(|t| std::mem::replace(&mut t.inner, Tensor::scalar(0.0, g.dtype())))
        .collect();
    let p = &mut param.inner;
    let done = py.detach(|| guard(|| update_in_place(okind, t, p, &g, &mut s)));
    slots.iter_mut().zip(s).for_each(|(t, v)| t.inner = v);
    done
}
