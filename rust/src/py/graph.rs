//! Bindings for the compiled backend: tracing a loss into a graph and replaying it, including
//! whole native training loops with the GIL released.

use super::errors::{guard, interruptible_parts};
use super::tensor::PyTensor;
use crate::autograd::Attr;
use crate::backend::cpu::parallel::with_fast_kernels;
use crate::graph::fuse::fuse_chains;
use crate::graph::fuse_conv::fuse_conv_relu;
use crate::graph::ir::{leaf_device, NodeKind, Source};
use crate::graph::{exec, Graph};
use crate::optim::OptimKind;
use crate::{Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Every name a recorded op can have (what `Graph.nodes()` may show; the ONNX export maps
/// or refuses each).
#[pyfunction]
pub fn _recorded_ops() -> Vec<&'static str> {
    crate::autograd::recorded_op_names()
}

/// One op attribute as a Python value (None, float, int, bool, list, or a dtype name).
fn attr_value(py: Python<'_>, a: Attr) -> PyResult<Py<PyAny>> {
    match a {
        Attr::Float(v) => v.into_py_any(py),
        Attr::Count(v) => v.into_py_any(py),
        Attr::Int(v) => v.into_py_any(py),
        Attr::Flag(b) => b.into_py_any(py),
        Attr::List(v) => v.into_py_any(py),
        Attr::Mask(v) => v.into_py_any(py),
        Attr::DType(d) => d.name().into_py_any(py),
    }
}

fn inner(ts: &[PyRef<'_, PyTensor>]) -> Vec<Tensor> {
    ts.iter().map(|t| t.inner.clone()).collect()
}

fn wrap(ts: Vec<Tensor>) -> Vec<PyTensor> {
    ts.into_iter().map(PyTensor::new).collect()
}

/// A traced graph (what `nodes` and exporters read, and traces are compared on) and the plan
/// that runs: the same graph after the fusion passes (`graph/fuse_conv.rs`, `graph/fuse.rs`),
/// or the traced graph itself when made `without_fusion`; and the plan with its constants on
/// each device it has replayed on, so their copies there are made once.
#[pyclass(name = "Graph", module = "tlrs._core", frozen)]
pub struct PyGraph {
    traced: Graph,
    plan: Graph,
    on_devices: Mutex<Vec<(Option<Device>, Arc<Graph>)>>,
}

impl PyGraph {
    fn new(traced: Graph) -> PyGraph {
        // Convolution epilogues first: a ReLU taken into its convolution is no chain step.
        let plan = fuse_chains(&fuse_conv_relu(&traced));
        PyGraph::with_plan(traced, plan)
    }

    fn with_plan(traced: Graph, plan: Graph) -> PyGraph {
        PyGraph {
            traced,
            plan,
            on_devices: Mutex::new(Vec::new()),
        }
    }

    /// The plan for leaves on `params`' (else `inputs'`) device: its constants there.
    fn plan_for(&self, params: &[Tensor], inputs: &[Tensor]) -> PyResult<Arc<Graph>> {
        let device = leaf_device(params, inputs);
        let mut cache = self.on_devices.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, g)) = cache.iter().find(|(d, _)| *d == device) {
            return Ok(g.clone());
        }
        let g = Arc::new(guard(|| self.plan.constants_on(device))?);
        cache.push((device, g.clone()));
        Ok(g)
    }
}

/// (pre-update losses, params, slots, step count, the interrupt that ended the loop early).
type Trained = (
    Vec<f64>,
    Vec<PyTensor>,
    Vec<Vec<PyTensor>>,
    u64,
    Option<Py<pyo3::exceptions::PyBaseException>>,
);

#[pymethods]
impl PyGraph {
    /// Traces `root` (computed from leaves `params` and `inputs` that all required grad).
    #[staticmethod]
    fn trace(
        root: PyRef<'_, PyTensor>,
        params: Vec<PyRef<'_, PyTensor>>,
        inputs: Vec<PyRef<'_, PyTensor>>,
    ) -> PyResult<Self> {
        let (ps, xs) = (inner(&params), inner(&inputs));
        guard(|| Graph::trace(&root.inner, &ps, &xs)).map(PyGraph::new)
    }
    /// Leaves for one trace: each tensor's values, requiring grad, marked so that everything
    /// computed from them is known to be traced (Python reads of it are refused). Starts a trace.
    #[staticmethod]
    fn leaves(ts: Vec<PyRef<'_, PyTensor>>) -> Vec<PyTensor> {
        let _ = crate::graph::take_traced_read();
        ts.iter()
            .map(|t| PyTensor::new(t.inner.trace_leaf()))
            .collect()
    }
    #[getter]
    fn node_count(&self) -> usize {
        self.traced.nodes.len()
    }
    #[getter]
    fn op_count(&self) -> usize {
        self.traced.op_count()
    }
    /// Ops the plan runs (fused chains count once).
    #[getter]
    fn plan_op_count(&self) -> usize {
        self.plan.op_count()
    }
    #[getter]
    fn activation_bytes(&self) -> usize {
        self.traced.activation_bytes()
    }
    /// The plan that runs, one line per node.
    fn describe(&self) -> String {
        self.plan.describe()
    }
    /// This graph with a plan that runs the traced ops one by one (no fusion).
    fn without_fusion(&self) -> PyGraph {
        PyGraph::with_plan(self.traced.clone(), self.traced.clone())
    }
    /// The graph's structure, one dict per node in SSA order (what an exporter reads):
    /// `kind` ("param", "input", "const" or "op"), `shape`, `dtype`, and for leaves `index`
    /// (param/input) or `value` (const); for ops `op` (its name), `inputs` (node indices, in
    /// argument order) and `attrs` (every attribute replay takes from the record).
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.traced
            .nodes
            .iter()
            .map(|n| {
                let d = PyDict::new(py);
                d.set_item("shape", n.shape.dims().to_vec())?;
                d.set_item("dtype", n.dtype.name())?;
                match &n.kind {
                    NodeKind::Leaf(Source::Param(i)) => {
                        d.set_item("kind", "param")?;
                        d.set_item("index", *i)?;
                    }
                    NodeKind::Leaf(Source::Input(i)) => {
                        d.set_item("kind", "input")?;
                        d.set_item("index", *i)?;
                    }
                    NodeKind::Leaf(Source::Const(t)) => {
                        d.set_item("kind", "const")?;
                        d.set_item("value", PyTensor::new(t.clone()))?;
                    }
                    NodeKind::Op { op, inputs } => {
                        d.set_item("kind", "op")?;
                        d.set_item("op", op.name())?;
                        d.set_item("inputs", inputs.clone())?;
                        let attrs = PyDict::new(py);
                        for (name, a) in op.attributes() {
                            attrs.set_item(name, attr_value(py, a)?)?;
                        }
                        d.set_item("attrs", attrs)?;
                    }
                }
                Ok(d)
            })
            .collect()
    }
    /// The node index of the graph's result.
    #[getter]
    fn output(&self) -> usize {
        self.traced.output
    }
    /// None when `other` (a second trace) matches this one, else why not.
    fn first_difference(&self, other: PyRef<'_, PyGraph>) -> Option<String> {
        self.traced.first_difference(&other.traced)
    }
    #[pyo3(signature = (params, inputs, fast=false))]
    fn evaluate(
        &self,
        py: Python<'_>,
        params: Vec<PyRef<'_, PyTensor>>,
        inputs: Vec<PyRef<'_, PyTensor>>,
        fast: bool,
    ) -> PyResult<PyTensor> {
        let (ps, xs) = (inner(&params), inner(&inputs));
        let plan = self.plan_for(&ps, &xs)?;
        let g = &*plan;
        py.detach(|| {
            guard(|| {
                with_fast_kernels(fast, || {
                    crate::autograd::no_grad(|| exec::evaluate(g, &ps, &xs))
                })
            })
        })
        .map(PyTensor::new)
    }
    #[pyo3(signature = (params, flags, inputs, fast=false))]
    fn loss_and_grads(
        &self,
        py: Python<'_>,
        params: Vec<PyRef<'_, PyTensor>>,
        flags: Vec<bool>,
        inputs: Vec<PyRef<'_, PyTensor>>,
        fast: bool,
    ) -> PyResult<(PyTensor, Vec<PyTensor>)> {
        let (ps, xs) = (inner(&params), inner(&inputs));
        let plan = self.plan_for(&ps, &xs)?;
        let g = &*plan;
        let (l, gs) = py.detach(|| {
            guard(|| with_fast_kernels(fast, || exec::loss_and_grads(g, &ps, &flags, &xs)))
        })?;
        Ok((PyTensor::new(l), wrap(gs)))
    }
    /// What one forward + backward of the plan allocates, measured: `peak_bytes` (the most it
    /// held at once above what was live before, gradients included), `large_buffers` (buffers
    /// of 256 KiB or more) and `fresh_large_buffers` (those the buffer cache could not serve
    /// from buffers freed earlier: after a first step, 0 means the step allocated nothing new).
    #[pyo3(signature = (params, flags, inputs, fast=false))]
    fn step_memory<'py>(
        &self,
        py: Python<'py>,
        params: Vec<PyRef<'_, PyTensor>>,
        flags: Vec<bool>,
        inputs: Vec<PyRef<'_, PyTensor>>,
        fast: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (ps, xs) = (inner(&params), inner(&inputs));
        let plan = self.plan_for(&ps, &xs)?;
        let g = &*plan;
        let (r, m) = py.detach(|| {
            crate::buffer_cache::measure(|| {
                guard(|| with_fast_kernels(fast, || exec::loss_and_grads(g, &ps, &flags, &xs)))
                    .map(drop)
            })
        });
        r?;
        let d = PyDict::new(py);
        d.set_item("peak_bytes", m.peak_bytes)?;
        d.set_item("large_buffers", m.large_buffers)?;
        d.set_item("fresh_large_buffers", m.fresh_large_buffers)?;
        Ok(d)
    }
    /// Runs `steps` updates natively; returns (pre-update losses, params, slots, step count,
    /// the exception of an interrupt that ended the loop early, or None).
    /// `lrs`: one learning rate per step (a schedule), else `hyper`'s throughout; `clip`: the
    /// max 2-norm of the trainable gradients (`tlrs.nn.clip_grad_norm`'s formula), each step.
    /// `accumulate`: samples per step, their losses and gradients averaged.
    #[pyo3(signature = (params, flags, samples, steps, kind, hyper, slots, step, fast=false, lrs=None, clip=None, accumulate=1))]
    #[allow(clippy::too_many_arguments)]
    fn train(
        &self,
        py: Python<'_>,
        params: Vec<PyRef<'_, PyTensor>>,
        flags: Vec<bool>,
        samples: Vec<Vec<PyRef<'_, PyTensor>>>,
        steps: usize,
        kind: &str,
        hyper: HashMap<String, f64>,
        slots: Vec<Vec<PyRef<'_, PyTensor>>>,
        step: u64,
        fast: bool,
        lrs: Option<Vec<f64>>,
        clip: Option<f64>,
        accumulate: usize,
    ) -> PyResult<Trained> {
        if lrs.is_some() && !hyper.contains_key("lr") {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "train: a learning-rate schedule needs an optimizer with an lr, got {kind}"
            )));
        }
        if lrs.as_ref().is_some_and(|l| l.len() < steps) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "train: expected a learning rate for each of the {steps} steps"
            )));
        }
        if clip.is_some_and(|c| c.is_nan() || c <= 0.0) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "train: clip must be a positive max norm, got {clip:?}"
            )));
        }
        let kinds = match &lrs {
            None => vec![guard(|| {
                OptimKind::parse(kind, &|k| hyper.get(k).copied())
            })?],
            Some(lrs) => lrs
                .iter()
                .map(|&lr| {
                    guard(|| {
                        OptimKind::parse(kind, &|k| {
                            if k == "lr" {
                                Some(lr)
                            } else {
                                hyper.get(k).copied()
                            }
                        })
                    })
                })
                .collect::<PyResult<Vec<_>>>()?,
        };
        let ps = inner(&params);
        let samples: Vec<Vec<Tensor>> = samples.iter().map(|s| inner(s)).collect();
        let slots: Vec<Vec<Tensor>> = slots.iter().map(|s| inner(s)).collect();
        let plan = self.plan_for(&ps, samples.first().map_or(&[][..], |s| &s[..]))?;
        let g = &*plan;
        // Between steps and between the nodes of a step's backward pass the loop takes the
        // GIL for a moment to run Python's signal handlers: Ctrl-C or SIGTERM ends it between
        // two whole steps, and the steps done come back with the exception, so the caller
        // keeps a consistent state.
        let (r, interrupt) = interruptible_parts(py, || {
            with_fast_kernels(fast, || {
                exec::train(
                    g,
                    ps,
                    &flags,
                    &samples,
                    steps,
                    &kinds,
                    (clip, accumulate),
                    slots,
                    step,
                )
            })
        });
        let r = r?;
        Ok((
            r.losses,
            wrap(r.params),
            r.slots.into_iter().map(wrap).collect(),
            r.step,
            interrupt.map(|e| e.into_value(py)),
        ))
    }
}
