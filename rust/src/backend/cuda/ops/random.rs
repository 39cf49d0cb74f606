//! Device samplers: dropout masks and uniform parameter init from the counter-based generator
//! of rng.rs (the same values the CPU makes for the same key).

use crate::backend::cuda::{Arg, DeviceBuffer, Gpu};
use crate::{DType, Result};
use std::sync::Arc;

// The sampler kernels are compiled with the elementwise family (cu/elementwise.cu).
const FAMILY: &str = "elementwise";

/// Inverted-dropout scales for `n` elements: `1/keep` (in binary64, then rounded to `dtype`)
/// where `keep > uniform_at(key, i)`, else 0; the same values as random.rs makes on the CPU.
pub fn dropout_mask(
    gpu: &Arc<Gpu>,
    dtype: DType,
    n: usize,
    key: u64,
    keep: f64,
) -> Result<DeviceBuffer> {
    sample(
        gpu,
        "dropout_mask",
        dtype,
        n,
        key,
        [Arg::F64(keep), Arg::F64(1.0 / keep)],
    )
}

/// `lo + u(i) * width` with the RuntimeInit sampler of `key` (= key_of(seed, 0)); `lo` and
/// `width` are rounded to `dtype` first, as init.rs does for binary32.
pub fn init_uniform(
    gpu: &Arc<Gpu>,
    dtype: DType,
    n: usize,
    key: u64,
    lo: f64,
    width: f64,
) -> Result<DeviceBuffer> {
    sample(
        gpu,
        "init_uniform",
        dtype,
        n,
        key,
        [Arg::Scalar(lo), Arg::Scalar(width)],
    )
}

/// A new buffer filled by `kernel(y, n, key, params...)`, a counter-based sampler.
fn sample(
    gpu: &Arc<Gpu>,
    kernel: &str,
    dtype: DType,
    n: usize,
    key: u64,
    params: [Arg<'_>; 2],
) -> Result<DeviceBuffer> {
    let y = gpu.alloc(dtype, n)?;
    let mut args = vec![Arg::Buf(&y), Arg::U64(n as u64), Arg::U64(key)];
    args.extend(params);
    gpu.launch(FAMILY, kernel, dtype, n, &args)?;
    Ok(y)
}
