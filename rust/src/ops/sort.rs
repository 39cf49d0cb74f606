//! `sort` and `topk` along an axis: positions found on the host (a device tensor's values are
//! copied back), the values then taken with `gather`, a recorded op, so they carry gradients as
//! PyTorch's do. Stable: ties keep their order, NaN sorts above every number, -0 ties +0.

use crate::ops::index::gather;
use crate::storage::Storage;
use crate::{Error, Result, Shape, Tensor};

/// The first `k` (all when None) values of each lane along `axis` in sorted order (descending
/// when asked), and their positions as an int64 tensor of the same shape.
pub fn sort(
    x: &Tensor,
    axis: isize,
    descending: bool,
    k: Option<usize>,
) -> Result<(Tensor, Tensor)> {
    let op = if k.is_some() { "topk" } else { "sort" };
    if x.rank() == 0 {
        return Err(Error::shape(
            op,
            "expected a tensor of at least one dimension, got a 0-d one",
        ));
    }
    let ax = x.shape().axis(op, axis)?;
    let (outer, n, inner) = x.shape().split_at_axis(ax);
    let k = k.unwrap_or(n);
    if k > n {
        return Err(Error::arg(
            op,
            format!("expected k in [0, {n}] (the size of dim {axis}), got {k}"),
        ));
    }
    if u32::try_from(n).is_err() {
        return Err(Error::shape(
            op,
            format!("an axis of {n} values is longer than tlrs sorts (2^32 - 1)"),
        ));
    }
    let positions = x
        .storage()
        .sorted_positions(op, [outer, n, inner], descending, k)?;
    let mut out_dims = x.dims().to_vec();
    out_dims[ax] = k;
    let values = gather(x, ax as isize, &positions, &out_dims)?;
    let indices = Tensor::from_storage(Storage::host_ints(positions), Shape(out_dims))?;
    Ok((values, indices))
}
