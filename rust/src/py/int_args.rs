//! Integer arguments read by hand: a Python int outside an argument's range is a ValueError
//! naming the argument and the range (pyo3's own extraction raises OverflowError, unnamed).
//! Used through `#[pyo3(from_py_with = ...)]` with a function per argument name
//! (`named_int_args!`).

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;

/// `named_int_args! { seed: word("seed") -> u64, ... }` defines `fn seed(v) -> PyResult<u64>`
/// reading `v` with `word` under the name "seed", for `#[pyo3(from_py_with = seed)]`.
macro_rules! named_int_args {
    ($($f:ident: $read:ident($name:literal) -> $t:ty),* $(,)?) => {
        $(fn $f(v: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<$t> {
            $crate::py::int_args::$read($name, v)
        })*
    };
}
pub(crate) use named_int_args;

fn out_of_range(name: &str, range: &str, v: &Bound<'_, PyAny>) -> PyErr {
    PyValueError::new_err(format!(
        "{name}={v} is out of range (expected an integer in {range})"
    ))
}

/// A 64-bit word (seeds, keys): [0, 2**64).
pub fn word(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    v.extract::<u64>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(v.py()) {
            out_of_range(name, "[0, 2**64)", v)
        } else {
            e
        }
    })
}

/// A size, count or fan: [0, 2**63).
pub fn size(name: &str, v: &Bound<'_, PyAny>) -> PyResult<usize> {
    match v.extract::<i64>() {
        Ok(n) if n >= 0 => usize::try_from(n).map_err(|_| out_of_range(name, "[0, 2**63)", v)),
        Ok(_) => Err(out_of_range(name, "[0, 2**63)", v)),
        Err(e) if e.is_instance_of::<PyOverflowError>(v.py()) => {
            Err(out_of_range(name, "[0, 2**63)", v))
        }
        Err(e) => Err(e),
    }
}

/// Each item of a sequence read by `read`, named `name[i]` in errors.
fn each<T>(
    name: &str,
    v: &Bound<'_, PyAny>,
    read: impl Fn(&str, &Bound<'_, PyAny>) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    let items: Vec<Bound<'_, PyAny>> = v.extract()?;
    items
        .iter()
        .enumerate()
        .map(|(i, d)| read(&format!("{name}[{i}]"), d))
        .collect()
}

/// A shape: a sequence of sizes.
pub fn sizes(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    each(name, v, size)
}

/// A list of shapes.
pub fn shape_list(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<usize>>> {
    each(name, v, sizes)
}

/// An axis or position (negative counts from the end): [-2**63, 2**63).
pub fn signed(name: &str, v: &Bound<'_, PyAny>) -> PyResult<isize> {
    v.extract::<isize>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(v.py()) {
            out_of_range(name, "[-2**63, 2**63)", v)
        } else {
            e
        }
    })
}

/// A window size along two axes (rows, columns): an int for both, or a sequence of one or two
/// sizes (PyTorch's pooling and convolution arguments).
pub fn pair(name: &str, v: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    if v.extract::<i64>().is_ok() && !v.is_instance_of::<pyo3::types::PyBool>() {
        let n = size(name, v)?;
        return Ok((n, n));
    }
    let items = each(name, v, size).map_err(|e| {
        if e.is_instance_of::<pyo3::exceptions::PyTypeError>(v.py()) {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{name}: expected an int or a sequence of two ints, got {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        } else {
            e
        }
    })?;
    match items[..] {
        [n] => Ok((n, n)),
        [a, b] => Ok((a, b)),
        _ => Err(PyValueError::new_err(format!(
            "{name}: expected an int or a sequence of two ints, got {} values",
            items.len()
        ))),
    }
}

/// A list of axes.
pub fn signed_list(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Vec<isize>> {
    each(name, v, signed)
}
