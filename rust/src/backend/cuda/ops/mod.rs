//! Device implementations of the ops: each takes device storage and sizes the op layer already
//! checked, launches kernels (or cuBLAS) on the buffers' GPU, and returns new device storage.

pub mod chain;
pub mod convert;
pub mod elementwise;
pub mod layout;
pub mod matmul;
pub mod nn;
pub mod random;
pub mod reduce;

pub use chain::*;
pub use convert::*;
pub use elementwise::*;
pub use layout::*;
pub use matmul::*;
pub use nn::*;
pub use random::*;
pub use reduce::*;
