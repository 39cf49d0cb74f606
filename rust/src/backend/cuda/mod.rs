//! The CUDA backend. cudarc loads the driver, cuBLAS and NVRTC at run time (dynamic loading), so
//! every build compiles this module without a CUDA toolkit; whether CUDA can be used is decided
//! by `probe`, never by a panic (docs/runtime.md, Errors). `TLRS_CUDA_EMULATOR=1` serves `cuda:0`
//! from the host emulator instead, to test the backend where there is no GPU.

pub mod blas;
pub mod buffer;
pub mod cache;
pub mod emu;
pub mod gpu;
pub mod kernels;
pub mod nccl;
mod nccl_lib;
pub mod ops;
pub mod probe;
pub mod storage;
pub mod storage_ops;

pub use buffer::{Arg, DeviceBuffer, Gather, IndexBuffer, MAX_RANK};
pub use gpu::{emulated, gpu, set_tf32, synchronize_all, tf32_allowed, Gpu, EMULATOR_ENV};
pub use probe::{device_count, diagnostics, probe, CudaInfo, CudaUnavailable, MissingLibrary};
pub use storage::CudaStorage;
