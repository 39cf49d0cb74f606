//! How the op layer reaches device storage: the buffer of a CUDA tensor, and the check that a
//! second operand lives on the same device as the first.

use crate::backend::cuda::DeviceBuffer;
use crate::{Error, Result, Tensor};

/// The device buffer of `t`, or None for a CPU tensor.
pub(crate) fn dev(t: &Tensor) -> Option<&DeviceBuffer> {
    t.cuda().map(|c| &*c.0)
}

/// The device buffer of `other`, which must live on `first`'s device.
pub(crate) fn on_dev<'a>(
    op: &'static str,
    first: &Tensor,
    other: &'a Tensor,
) -> Result<&'a DeviceBuffer> {
    match dev(other) {
        Some(b) if other.device() == first.device() => Ok(b),
        _ => Err(Error::Device {
            op,
            expected: format!("one device ({})", first.device()),
            got: format!("{} and {}", first.device(), other.device()),
        }),
    }
}
