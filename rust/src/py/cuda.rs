//! Bindings for CUDA availability and diagnostics (`tlrs.cuda`); none of them raises.

use crate::backend::cuda;
use pyo3::prelude::*;

/// (usable, reason or description): whether tlrs can run tensors on cuda:0 here, and why not.
#[pyfunction]
pub fn cuda_status() -> (bool, String) {
    match cuda::gpu(0) {
        Ok(g) => (true, g.describe()),
        Err(e) => (false, e.to_string()),
    }
}

#[pyfunction]
pub fn cuda_device_count() -> usize {
    if cuda::emulated() {
        1
    } else {
        cuda::device_count()
    }
}

#[pyfunction]
pub fn cuda_diagnostics() -> Vec<(String, String)> {
    let mut d = cuda::diagnostics();
    if cuda::emulated() {
        d.push((
            "emulator".into(),
            format!(
                "on ({}=1): cuda:0 runs the CUDA kernels on the host CPU, for testing",
                cuda::EMULATOR_ENV
            ),
        ));
    }
    d.push((
        "device tensors".into(),
        "f32 and f64 (NVRTC kernels, cuBLAS GEMM)".into(),
    ));
    d
}

/// Waits until every queued kernel and copy on the opened devices has finished.
#[pyfunction]
pub fn cuda_synchronize(py: Python<'_>) -> PyResult<()> {
    py.detach(|| super::errors::guard(cuda::synchronize_all))
}

#[pyfunction]
pub fn cuda_set_tf32(on: bool) {
    cuda::set_tf32(on);
}

/// Selects SGEMM ("fp32") or DGEMM ("fp64") for every later GPU matmul, whatever the dtype.
#[pyfunction]
pub fn cuda_set_matmul_precision(precision: &str) -> PyResult<()> {
    use crate::backend::cuda::blas::GpuMatmulPrecision;
    let p = match precision {
        "fp32" => GpuMatmulPrecision::Fp32,
        "fp64" => GpuMatmulPrecision::Fp64,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "expected a GPU matmul precision 'fp32' or 'fp64', got '{other}'"
            )))
        }
    };
    cuda::ops::set_matmul_precision(p);
    Ok(())
}

#[pyfunction]
pub fn build_features() -> Vec<&'static str> {
    vec!["cpu", "cuda", "nccl"]
}
