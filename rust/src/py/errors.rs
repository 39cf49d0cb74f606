//! Maps the core's `Error` to Python exceptions, and turns any panic into an exception rather
//! than letting `PanicException` (a BaseException) or an abort reach the user.

use crate::Error;
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::{create_exception, PyErr, PyResult, Python};

create_exception!(
    tlrs._core,
    CheckpointError,
    PyValueError,
    "A checkpoint file is missing, corrupt or cannot be written."
);

create_exception!(
    tlrs._core,
    ShapeError,
    PyValueError,
    "Operand shapes do not fit the operation."
);
create_exception!(
    tlrs._core,
    DTypeError,
    PyTypeError,
    "Operand dtypes differ or are not supported."
);
create_exception!(
    tlrs._core,
    DeviceError,
    PyValueError,
    "Operands live on different devices."
);
create_exception!(
    tlrs._core,
    CudaUnavailableError,
    PyRuntimeError,
    "CUDA cannot be used here."
);
create_exception!(
    tlrs._core,
    AutogradError,
    PyRuntimeError,
    "Autograd was used in a way it cannot serve."
);

create_exception!(
    tlrs._core,
    TraceError,
    PyValueError,
    "The loss cannot be compiled: the message names the reason and, where known, the op."
);

/// The error for a Python read of a value computed from a compiled trace's leaves.
pub fn trace_read_error(how: &str) -> PyErr {
    TraceError::new_err(format!(
        "cannot compile the loss: it reads tensor values in Python ({how}) while being traced; the \
         compiled graph would replay the trace's values for every batch. Compute it with tlrs ops \
         (labels as one-hot tensors, masks as 0/1 tensors), or use the eager backend"
    ))
}

pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Shape { .. } => ShapeError::new_err(msg),
        Error::DType { .. } => DTypeError::new_err(msg),
        Error::Device { .. } => DeviceError::new_err(msg),
        Error::Index { .. } => PyIndexError::new_err(msg),
        Error::Arg { .. } => PyValueError::new_err(msg),
        Error::CudaUnavailable(_) => CudaUnavailableError::new_err(msg),
        Error::Cuda(_) => PyRuntimeError::new_err(msg),
        Error::Autograd(_) => AutogradError::new_err(msg),
        Error::OutOfMemory(_) => PyMemoryError::new_err(msg),
        Error::Io(_) => CheckpointError::new_err(msg),
        Error::Interrupted => pyo3::exceptions::PyKeyboardInterrupt::new_err(msg),
    }
}

/// Runs `f` off the GIL with Python's signal handlers as its stop check (`interrupt.rs`):
/// when a handler raises (Ctrl-C: KeyboardInterrupt) the call ends between two pieces of
/// work and that exception is what comes back.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    let (r, raised) = interruptible_parts(py, f);
    match raised {
        Some(e) => Err(e),
        None => r,
    }
}

/// As `interruptible`, returning the call's own result beside the exception a signal handler
/// raised (for a loop that returns the steps it completed).
pub fn interruptible_parts<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> (PyResult<T>, Option<PyErr>) {
    let mut raised: Option<PyErr> = None;
    let r = {
        // Taking the GIL costs about a microsecond: ask Python at most once a millisecond (a
        // compiled step asks before each of its hundreds of nodes), which keeps the stop prompt.
        let mut last: Option<std::time::Instant> = None;
        let mut check = || {
            let now = std::time::Instant::now();
            if last.is_some_and(|t| now.duration_since(t) < std::time::Duration::from_millis(1)) {
                return false;
            }
            last = Some(now);
            match Python::attach(|py| py.check_signals()) {
                Ok(()) => false,
                Err(e) => {
                    raised = Some(e);
                    true
                }
            }
        };
        py.detach(|| crate::interrupt::with_check(&mut check, || guard(f)))
    };
    (r, raised)
}

/// Runs core work, mapping its error and catching a panic as a RuntimeError (a bug in tlrs, but
/// never a crash of the user's program).
pub fn guard<T>(f: impl FnOnce() -> crate::Result<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(to_py),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in tlrs (please report it): {what}"
            )))
        }
    }
}
