//! Bindings for CUDA availability and diagnostics (`tlrs.cuda`); none of them raises.

use pyo3::prelude::*;

/// (usable, reason): whether tlrs can run tensors on CUDA here, and why not.
#[pyfunction]
pub fn cuda_status() -> (bool, String) {
    (false, crate::device::cuda_not_built().to_string())
}

#[pyfunction]
pub fn cuda_device_count() -> usize {
    #[cfg(feature = "cuda")]
    return crate::backend::cuda::device_count();
    #[cfg(not(feature = "cuda"))]
    0
}

#[pyfunction]
pub fn cuda_diagnostics() -> Vec<(String, String)> {
    #[cfg(feature = "cuda")]
    let mut d = crate::backend::cuda::diagnostics();
    #[cfg(not(feature = "cuda"))]
    let mut d = vec![(
        "binding".to_string(),
        "not compiled (built without the cuda feature)".to_string(),
    )];
    d.push(("device tensors".into(), "not built yet".into()));
    d
}

#[pyfunction]
pub fn build_features() -> Vec<&'static str> {
    let mut f = vec!["cpu"];
    if cfg!(feature = "cuda") {
        f.push("cuda-probe");
    }
    f
}
