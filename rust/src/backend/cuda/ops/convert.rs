//! Device dtype conversion: the `cast` kernel (rounding to nearest when narrowing).

use super::layout::copy;
use crate::backend::cuda::{Arg, DeviceBuffer};
use crate::{DType, Result};

/// The same values in `dtype` (a copy when it is already that dtype).
pub fn cast_buffer(x: &DeviceBuffer, dtype: DType) -> Result<DeviceBuffer> {
    if dtype == x.dtype() {
        return copy(x);
    }
    let gpu = x.gpu();
    let y = gpu.alloc(dtype, x.len())?;
    let n = x.len();
    gpu.launch(
        "elementwise",
        "cast",
        x.dtype(),
        n,
        &[Arg::Buf(x), Arg::Buf(&y), Arg::U64(n as u64)],
    )?;
    Ok(y)
}
