//! Compute backends: the CPU kernels, and the CUDA probe, GEMM mapping and NVRTC kernels.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
