//! What the ops' bit-for-bit tests share: leaves of seeded uniform values, and a tensor's bits.

use crate::{DType, Tensor};

/// A leaf that wants a gradient: `dims` of `(u - 0.5) * scale`, u uniform from `seed`, in `dtype`.
pub fn leaf(dims: &[usize], seed: u64, scale: f64, dtype: DType) -> Tensor {
    let n: usize = dims.iter().product();
    let v = (0..n as u64)
        .map(|i| (crate::rng::uniform_at(seed, i) - 0.5) * scale)
        .collect();
    Tensor::from_vec_f64(v, dims.to_vec())
        .and_then(|t| t.to_dtype(dtype))
        .unwrap()
        .detach_with_grad(true)
}

/// The bit patterns of `t`'s values (as f64, which every f32 converts to exactly).
pub fn bits(t: &Tensor) -> Vec<u64> {
    t.to_f64_vec()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}
