//! tlrs: tensors (f32, f64), autograd, ops and CPU kernels (reference and fast), RNGs and init
//! plans, exposed to Python through PyO3 when the `python` feature is on.

pub mod alloc;
pub mod autograd;
pub mod backend;
pub mod buffer_cache;
pub mod checkpoint;
pub mod device;
pub mod dtype;
pub mod error;
pub mod geometry;
pub mod graph;
pub mod init;
pub mod interrupt;
pub mod lane_math;
pub mod op_table;
pub mod ops;
pub mod optim;
pub mod random;
pub mod rng;
pub mod shape;
pub mod storage;
pub mod strided;
pub mod tensor;

#[cfg(feature = "python")]
mod py;

/// Large freed buffers are kept for reuse (buffer_cache.rs): a training step reallocates the
/// same sizes every step, and reused memory costs no page faults.
#[global_allocator]
static ALLOCATOR: buffer_cache::BufferCache = buffer_cache::BufferCache;

pub use device::Device;
pub use dtype::DType;
pub use error::{Error, Result};
pub use shape::Shape;
pub use tensor::Tensor;
