//! Seeding, random tensors and build/CPU facts for `tlrs info`.

use super::errors::guard;
use super::tensor::{parse_dtype, PyTensor};
use pyo3::prelude::*;

#[pyfunction]
pub fn manual_seed(seed: u64) {
    crate::random::manual_seed(seed);
}

#[pyfunction]
pub fn fresh_seed() -> u64 {
    crate::random::fresh_seed()
}

fn leaf(t: crate::Tensor, requires_grad: bool) -> PyTensor {
    PyTensor::new(if requires_grad {
        t.detach_with_grad(true)
    } else {
        t
    })
}

#[pyfunction]
#[pyo3(signature = (shape, dtype="float64", requires_grad=false))]
pub fn rand(shape: Vec<usize>, dtype: &str, requires_grad: bool) -> PyResult<PyTensor> {
    let dt = parse_dtype(dtype)?;
    Ok(leaf(
        guard(|| crate::random::rand(shape, dt))?,
        requires_grad,
    ))
}

#[pyfunction]
#[pyo3(signature = (shape, dtype="float64", requires_grad=false))]
pub fn randn(shape: Vec<usize>, dtype: &str, requires_grad: bool) -> PyResult<PyTensor> {
    let dt = parse_dtype(dtype)?;
    Ok(leaf(
        guard(|| crate::random::randn(shape, dt))?,
        requires_grad,
    ))
}

/// SIMD features the kernels can use on this CPU.
#[pyfunction]
pub fn cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut f = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        for (name, on) in [
            ("sse2", std::arch::is_x86_feature_detected!("sse2")),
            ("avx", std::arch::is_x86_feature_detected!("avx")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
        ] {
            if on {
                f.push(name);
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    f.push("neon");
    f
}
