//! The CUDA backend. cudarc loads the driver, cuBLAS and NVRTC at run time (dynamic loading), so
//! every build compiles this module without a CUDA toolkit; whether CUDA can be used is decided
//! by `probe`, never by a panic (DESIGN principle 4).

pub mod blas;
pub mod kernels;
pub mod probe;

pub use probe::{device_count, diagnostics, probe, CudaInfo, CudaUnavailable, MissingLibrary};
