//! One error type for everything the core can report. Each variant carries what a user needs
//! to act on it; the Python layer maps variants to exception classes.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// Shapes that do not fit together: "matmul: inner dimensions differ: [2, 3] @ [4, 5]".
    #[error("{op}: {msg}")]
    Shape { op: &'static str, msg: String },
    /// Operands of different dtypes (tlrs never promotes silently).
    #[error("{op}: expected {expected}, got {got}")]
    DType {
        op: &'static str,
        expected: String,
        got: String,
    },
    /// Operands on different devices.
    #[error("{op}: expected tensors on {expected}, got {got}")]
    Device {
        op: &'static str,
        expected: String,
        got: String,
    },
    /// An index out of its bound.
    #[error("{op}: index {index} is out of range for size {bound}")]
    Index {
        op: &'static str,
        index: i64,
        bound: usize,
    },
    /// An argument outside its domain (a negative axis too small, a bad permutation...).
    #[error("{op}: {msg}")]
    Arg { op: &'static str, msg: String },
    /// CUDA cannot be used on this machine or build.
    #[error("{0}")]
    CudaUnavailable(String),
    /// A CUDA call failed at run time (a launch, a copy, a kernel build).
    #[error("{0}")]
    Cuda(String),
    /// An allocation the machine cannot satisfy.
    #[error("{0}")]
    OutOfMemory(String),
    /// A file could not be read or written, or its contents are corrupt.
    #[error("{0}")]
    Io(String),
    /// Autograd misuse: backward on a non-scalar, grad of a tensor that does not require it.
    #[error("{0}")]
    Autograd(String),
    /// The caller's stop check asked a long call to end (`interrupt.rs`).
    #[error("interrupted")]
    Interrupted,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape {
            op,
            msg: msg.into(),
        }
    }
    pub fn arg(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Arg {
            op,
            msg: msg.into(),
        }
    }
}

/// An integer or bool tensor given to an operation that computes in floating point.
pub fn not_float(op: &'static str, got: crate::DType) -> Error {
    Error::DType {
        op,
        expected: "a float32 or float64 tensor (integer and bool tensors take indexing, \
                   comparisons and data movement only; convert with .to('float32'))"
            .into(),
        got: format!("{got}"),
    }
}

/// Operands of two dtypes where one was expected (tlrs never promotes).
pub fn dtype_mismatch(op: &'static str, a: crate::DType, b: crate::DType) -> Error {
    Error::DType {
        op,
        expected: "operands of one dtype (tlrs never promotes; convert with .to())".into(),
        got: format!("{a} and {b}"),
    }
}
