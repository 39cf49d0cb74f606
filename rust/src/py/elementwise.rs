//! The Python face of the elementwise op table (`op_table/`): one function per op with the
//! table's parameters and defaults (`tlrs._core.leaky_relu(input, negative_slope=0.01)`), a
//! `Tensor` method where the table names one, and `_elementwise_table()`, from which
//! `scripts/gen_stub.py` writes the ops' entries in `_core.pyi`.

use super::errors::guard;
use super::tensor::PyTensor;
use crate::op_table::{
    binary_ops, unary_ops, BinaryOp, GradSource, PyExposure, UnaryOp, BINARY_INFO, UNARY_INFO,
};
use crate::{ops, Tensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn run(py: Python<'_>, f: impl FnOnce() -> crate::Result<Tensor> + Send) -> PyResult<PyTensor> {
    py.detach(|| guard(f)).map(PyTensor::new)
}

// A `Tensor` method for the ops whose table entry names one.
macro_rules! tensor_method {
    ($V:ident, [], [$($p:ident)*]) => {};
    ($V:ident, [$method:ident], [$($p:ident)*]) => {
        #[pymethods]
        impl PyTensor {
            fn $method(&self, py: Python<'_>) -> PyResult<PyTensor> {
                let x = self.inner.clone();
                run(py, move || ops::unary(UnaryOp::$V {}, &x))
            }
        }
    };
}

/// Table ops whose Python function is written by hand (below) rather than generated, for a
/// keyword the table's numeric parameters cannot express; `scripts/gen_stub.py` knows their
/// extra keywords (`HAND_WRITTEN`), and tests/test_op_table.py checks the two lists agree.
const HAND_WRITTEN: &[&str] = &["gelu"];

/// Elementwise GELU as PyTorch's `gelu(input, approximate='none')`: 'none' is the exact erf
/// form (`gelu`), 'tanh' the tanh approximation (`gelu_tanh`).
#[pyfunction]
#[pyo3(name = "gelu", signature = (input, approximate = "none"))]
pub fn gelu_approximate(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    approximate: &str,
) -> PyResult<PyTensor> {
    let op = match approximate {
        "none" => UnaryOp::Gelu,
        "tanh" => UnaryOp::GeluTanh,
        other => {
            return Err(PyValueError::new_err(format!(
                "gelu: expected approximate to be 'none' or 'tanh', got '{other}'"
            )))
        }
    };
    let x = input.inner.clone();
    run(py, move || ops::unary(op, &x))
}

macro_rules! unary_bindings {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        method: [$($method:ident)?],
        params: [$($p:ident = $d:literal),*],
        require: [$($req:expr => $msg:literal),*],
        f: $f:expr,
        df: $src:ident $df:expr,
        cuda: $cuda:literal,
        cuda_df: $cuda_df:literal $(,)?
    } )*) => {
        $(
            #[pyfunction]
            #[pyo3(signature = (input $(, $p = $d)*))]
            #[doc = $doc]
            pub fn $name(py: Python<'_>, input: PyRef<'_, PyTensor> $(, $p: f64)*) -> PyResult<PyTensor> {
                let x = input.inner.clone();
                run(py, move || ops::unary(UnaryOp::$V { $($p),* }, &x))
            }
            tensor_method!($V, [$($method)?], [$($p)*]);
        )*

        fn register_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( if !HAND_WRITTEN.contains(&stringify!($name)) {
                m.add_function(wrap_pyfunction!($name, m)?)?;
            } )*
            m.add_function(wrap_pyfunction!(gelu_approximate, m)?)
        }
    };
}
unary_ops!(unary_bindings);

macro_rules! binary_bindings {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        py: $py:ident,
        f: $f:expr,
        cuda: $cuda:literal,
        da: $da:expr,
        db: $db:expr $(,)?
    } )*) => {
        $(
            #[pyfunction]
            #[doc = $doc]
            pub fn $name(py: Python<'_>, input: PyRef<'_, PyTensor>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
                let (a, b) = (input.inner.clone(), other.inner.clone());
                run(py, move || ops::binary(BinaryOp::$V, &a, &b))
            }
        )*

        fn register_binary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( if BINARY_INFO[BinaryOp::$V as usize].py != PyExposure::None {
                m.add_function(wrap_pyfunction!($name, m)?)?;
            } )*
            Ok(())
        }
    };
}
binary_ops!(binary_bindings);

/// One row per table op: (name, kind, params [(name, default)], doc, method or None, grad
/// source, how Python reaches it).
type Row = (
    &'static str,
    &'static str,
    Vec<(&'static str, f64)>,
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static str,
);

/// The op table as plain data, for the stub generator and the tests.
#[pyfunction]
pub fn _elementwise_table() -> Vec<Row> {
    let unary = UNARY_INFO.iter().map(|u| {
        let from = match u.grad_from {
            GradSource::Input => "input",
            GradSource::Output => "output",
        };
        (
            u.name,
            "unary",
            u.params.to_vec(),
            u.doc,
            u.method,
            from,
            "export",
        )
    });
    let binary = BINARY_INFO.iter().map(|b| {
        let py = match b.py {
            PyExposure::Export => "export",
            PyExposure::Wrapped => "wrapped",
            PyExposure::None => "none",
        };
        (b.name, "binary", vec![], b.doc, None, "", py)
    });
    unary.chain(binary).collect()
}

/// Adds the table's functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_unary(m)?;
    register_binary(m)?;
    m.add_function(wrap_pyfunction!(_elementwise_table, m)?)
}

/// Sets `__all__` to the table ops Python re-exports as they are, so `from ._core import *` in
/// ops.py takes exactly those. Called last: PyO3 appends every name added to `__all__`.
pub fn set_star_exports(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let exported: Vec<&str> = UNARY_INFO
        .iter()
        .map(|u| u.name)
        .chain(
            BINARY_INFO
                .iter()
                .filter(|b| b.py == PyExposure::Export)
                .map(|b| b.name),
        )
        .collect();
    m.add("__all__", exported)
}
