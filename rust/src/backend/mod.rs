//! Compute backends: the CPU kernels, and the CUDA probe, GEMM mapping and NVRTC kernels.

pub mod cpu;
pub mod cuda;
pub mod settings;
pub mod storage_ops;

pub use storage_ops::BackendStorage;
