//! Bindings for runtime parameter initialisation (`tlrs.init`) and the reference's generators
//! (`tlrs.rand`). Values are materialised in Rust, in the target dtype.

use super::errors::guard;
use super::int_args::named_int_args;
use super::tensor::{parse_dtype, PyTensor};
use crate::init::{self, FloatInit, InitError, Plan};
use crate::storage::CpuStorage;
use crate::{rng, DType, Tensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

// The integer arguments by name (see int_args.rs).
named_int_args! {
    seed: word("seed") -> u64,
    counter: word("counter") -> u64,
    index: word("index") -> u64,
    word_x: word("x") -> u64,
    fan_in: size("fan_in") -> usize,
    fan_out: size("fan_out") -> usize,
    out_dim: size("out_dim") -> usize,
    in_dim: size("in_dim") -> usize,
    shape: sizes("shape") -> Vec<usize>,
    param_shapes: shape_list("param_shapes") -> Vec<Vec<usize>>,
}

fn init_err(e: InitError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn materialise(init: &FloatInit, shape: &[usize], dtype: DType, device: &str) -> PyResult<Tensor> {
    if let Err(e) = init::numel(shape).and_then(|n| init.check_len(n)) {
        return Err(init_err(e));
    }
    guard(|| crate::storage::check_alloc("init", &crate::Shape(shape.to_vec())))?;
    let device = guard(|| crate::Device::parse(device))?;
    guard(|| init.tensor_on(shape, dtype, device))
}

/// One parameter's initialiser (the reference's `RuntimeInit.FloatInit`).
#[pyclass(name = "FloatInit", module = "tlrs._core", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyFloatInit(pub FloatInit);

#[pymethods]
impl PyFloatInit {
    #[staticmethod]
    fn zeros() -> Self {
        PyFloatInit(FloatInit::Zeros)
    }
    #[staticmethod]
    fn ones() -> Self {
        PyFloatInit(FloatInit::Ones)
    }
    #[staticmethod]
    #[pyo3(signature = (lo, hi, seed=0))]
    fn uniform(lo: f64, hi: f64, #[pyo3(from_py_with = seed)] seed: u64) -> Self {
        PyFloatInit(FloatInit::Uniform { lo, hi, seed })
    }
    #[staticmethod]
    #[pyo3(signature = (fan_in, fan_out, seed=0))]
    fn xavier_uniform(
        #[pyo3(from_py_with = fan_in)] fan_in: usize,
        #[pyo3(from_py_with = fan_out)] fan_out: usize,
        #[pyo3(from_py_with = seed)] seed: u64,
    ) -> Self {
        PyFloatInit(FloatInit::XavierUniform {
            fan_in,
            fan_out,
            seed,
        })
    }
    #[staticmethod]
    #[pyo3(signature = (fan_in, seed=0))]
    fn kaiming_uniform(
        #[pyo3(from_py_with = fan_in)] fan_in: usize,
        #[pyo3(from_py_with = seed)] seed: u64,
    ) -> Self {
        PyFloatInit(FloatInit::KaimingUniform { fan_in, seed })
    }
    #[staticmethod]
    fn flat(values: Vec<f64>) -> Self {
        PyFloatInit(FloatInit::Flat(values))
    }
    /// The values for a tensor of `shape` in `dtype`, as a Tensor.
    #[pyo3(signature = (shape, dtype="float64", device="cpu"))]
    fn values(
        &self,
        #[pyo3(from_py_with = shape)] shape: Vec<usize>,
        dtype: &str,
        device: &str,
    ) -> PyResult<PyTensor> {
        materialise(&self.0, &shape, parse_dtype(dtype)?, device).map(PyTensor::new)
    }
    fn __repr__(&self) -> String {
        match &self.0 {
            FloatInit::Zeros => "FloatInit.zeros()".into(),
            FloatInit::Ones => "FloatInit.ones()".into(),
            FloatInit::Uniform { lo, hi, seed } => {
                format!("FloatInit.uniform({lo}, {hi}, seed={seed})")
            }
            FloatInit::XavierUniform {
                fan_in,
                fan_out,
                seed,
            } => {
                format!("FloatInit.xavier_uniform({fan_in}, {fan_out}, seed={seed})")
            }
            FloatInit::KaimingUniform { fan_in, seed } => {
                format!("FloatInit.kaiming_uniform({fan_in}, seed={seed})")
            }
            FloatInit::Flat(v) => format!("FloatInit.flat(<{} values>)", v.len()),
        }
    }
}

/// A plan: one initialiser per parameter shape, checked when built (the reference's `Plan`).
#[pyclass(name = "Plan", module = "tlrs._core", frozen)]
pub struct PyPlan(pub Plan);

#[pymethods]
impl PyPlan {
    #[new]
    fn new(
        #[pyo3(from_py_with = param_shapes)] param_shapes: Vec<Vec<usize>>,
        inits: Vec<PyRef<'_, PyFloatInit>>,
    ) -> PyResult<Self> {
        let inits = inits.iter().map(|i| i.0.clone()).collect();
        Plan::new(&param_shapes, inits)
            .map(PyPlan)
            .map_err(init_err)
    }
    fn __len__(&self) -> usize {
        self.0.len()
    }
    #[getter]
    fn param_shapes(&self) -> Vec<Vec<usize>> {
        self.0.shapes().to_vec()
    }
    #[getter]
    fn inits(&self) -> Vec<PyFloatInit> {
        self.0.inits().iter().cloned().map(PyFloatInit).collect()
    }
    /// One tensor per parameter, in order, in `dtype`.
    #[pyo3(signature = (dtype="float64", device="cpu"))]
    fn materialise(&self, dtype: &str, device: &str) -> PyResult<Vec<PyTensor>> {
        let dt = parse_dtype(dtype)?;
        self.0
            .inits()
            .iter()
            .zip(self.0.shapes())
            .map(|(i, s)| materialise(i, s, dt, device).map(PyTensor::new))
            .collect()
    }
}

#[pyfunction]
pub fn fan_in_out(#[pyo3(from_py_with = shape)] shape: Vec<usize>) -> PyResult<(usize, usize)> {
    init::fan_in_out(&shape).map_err(init_err)
}

#[pyfunction]
#[pyo3(signature = (shape, seed=0))]
pub fn xavier_uniform_for_shape(
    #[pyo3(from_py_with = shape)] shape: Vec<usize>,
    #[pyo3(from_py_with = seed)] seed: u64,
) -> PyResult<PyFloatInit> {
    init::xavier_uniform_for_shape(&shape, seed)
        .map(PyFloatInit)
        .map_err(init_err)
}

#[pyfunction]
#[pyo3(signature = (shape, seed=0))]
pub fn kaiming_uniform_for_shape(
    #[pyo3(from_py_with = shape)] shape: Vec<usize>,
    #[pyo3(from_py_with = seed)] seed: u64,
) -> PyResult<PyFloatInit> {
    init::kaiming_uniform_for_shape(&shape, seed)
        .map(PyFloatInit)
        .map_err(init_err)
}

#[pyfunction]
#[pyo3(signature = (out_dim, in_dim, seed=0))]
pub fn xavier_linear_weight(
    #[pyo3(from_py_with = out_dim)] out_dim: usize,
    #[pyo3(from_py_with = in_dim)] in_dim: usize,
    #[pyo3(from_py_with = seed)] seed: u64,
) -> PyFloatInit {
    PyFloatInit(init::xavier_linear_weight(out_dim, in_dim, seed))
}

#[pyfunction]
#[pyo3(signature = (out_dim, in_dim, seed=0))]
pub fn kaiming_linear_weight(
    #[pyo3(from_py_with = out_dim)] out_dim: usize,
    #[pyo3(from_py_with = in_dim)] in_dim: usize,
    #[pyo3(from_py_with = seed)] seed: u64,
) -> PyFloatInit {
    PyFloatInit(init::kaiming_linear_weight(out_dim, in_dim, seed))
}

#[pyfunction]
pub fn splitmix64(#[pyo3(from_py_with = word_x)] x: u64) -> u64 {
    rng::splitmix64(x)
}

#[pyfunction]
pub fn next_seed(
    #[pyo3(from_py_with = seed)] seed: u64,
    #[pyo3(from_py_with = counter)] counter: u64,
) -> u64 {
    rng::next_seed(seed, counter)
}

#[pyfunction]
pub fn key_of(
    #[pyo3(from_py_with = seed)] seed: u64,
    #[pyo3(from_py_with = counter)] counter: u64,
) -> u64 {
    rng::key_of(seed, counter)
}

#[pyfunction]
pub fn runtime_init_unit(
    #[pyo3(from_py_with = seed)] seed: u64,
    #[pyo3(from_py_with = index)] index: u64,
) -> f64 {
    rng::runtime_init_unit(seed, index)
}

/// The layer-initialiser LCG's first `n` unit values for `seed` (one O(n) sweep).
#[pyfunction]
pub fn lcg_units(seed: u64, n: usize) -> PyResult<Vec<f64>> {
    // The Python list costs far more than the Rust buffer: about 48 bytes an item in all.
    let bytes = n.saturating_mul(48);
    guard(|| crate::storage::check_bytes("lcg_units", &format!("a list of {n} items"), bytes))?;
    Ok(rng::lcg_units(seed, n))
}

/// The dataset-shuffle LCG: the permutation of `n` items for `seed`, and the next seed.
#[pyfunction]
pub fn shuffle_permutation(seed: u64, n: usize) -> PyResult<(Vec<usize>, u64)> {
    // The Python list costs far more than the Rust buffer: about 48 bytes an item in all.
    let bytes = n.saturating_mul(48);
    guard(|| {
        crate::storage::check_bytes(
            "shuffle_permutation",
            &format!("a list of {n} items"),
            bytes,
        )
    })?;
    Ok(rng::shuffle_permutation(seed, n))
}

/// The global seed stream's (seed, counter), for `with_model` and tests.
#[pyfunction]
pub fn seed_stream_state() -> (u64, u64) {
    crate::random::stream_state()
}

/// Puts the global seed stream at (seed, counter), as `seed_stream_state` read it.
#[pyfunction]
pub fn set_seed_stream_state(
    #[pyo3(from_py_with = seed)] seed: u64,
    #[pyo3(from_py_with = counter)] counter: u64,
) {
    crate::random::set_stream_state(seed, counter)
}

/// A layer initialiser's values (`Torch.Init`, the 32-bit LCG) for `shape`, computed in binary64
/// and stored in `dtype`. `scheme` is "zeros", "ones", "uniform" (lo, hi), "xavier_uniform"
/// (fan_in, fan_out) or "kaiming_uniform" (fan_in).
#[pyfunction]
#[pyo3(signature = (scheme, shape, seed=0, lo=0.0, hi=1.0, fan_in=0, fan_out=0, dtype="float64"))]
#[allow(clippy::too_many_arguments)]
pub fn layer_init(
    scheme: &str,
    shape: Vec<usize>,
    seed: u64,
    lo: f64,
    hi: f64,
    fan_in: usize,
    fan_out: usize,
    dtype: &str,
) -> PyResult<PyTensor> {
    use crate::init::LayerInit;
    let s = match scheme {
        "zeros" => LayerInit::Zeros,
        "ones" => LayerInit::Ones,
        "uniform" => LayerInit::Uniform { lo, hi },
        "xavier_uniform" => LayerInit::XavierUniform { fan_in, fan_out },
        "kaiming_uniform" => LayerInit::KaimingUniform { fan_in },
        other => {
            return Err(PyValueError::new_err(format!(
                "expected a scheme 'zeros', 'ones', 'uniform', 'xavier_uniform' or 'kaiming_uniform', got '{other}'"
            )))
        }
    };
    let n = init::numel(&shape).map_err(init_err)?;
    guard(|| crate::storage::check_alloc("layer_init", &crate::Shape(shape.clone())))?;
    let values = s.values(n, seed);
    let storage = CpuStorage::from_f64(parse_dtype(dtype)?, &values);
    guard(|| Tensor::from_cpu(storage, shape)).map(PyTensor::new)
}
