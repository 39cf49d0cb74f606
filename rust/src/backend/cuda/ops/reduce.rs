//! Device reductions: sums (all, one axis, back to a broadcast source shape) as left folds in
//! index order, and max with its argmax.

use super::elementwise::collapse;
use crate::backend::cuda::{Arg, DeviceBuffer, Gather, IndexBuffer};
use crate::{Result, Shape};

const FAMILY: &str = "reduce";

/// With fast kernels, reductions longer than this fold chunks of this size in parallel, then
/// the chunks; with reference kernels every reduction is one left fold per output, as on the
/// CPU (bit for bit equal), however long.
pub const SUM_CHUNK: usize = 4096;

/// y[o] = Σ_r x[out(o) + red(r)], r row-major over `red_dims` (increasing source index).
pub fn sum_strided(
    x: &DeviceBuffer,
    out_dims: &[usize],
    out_strides: &[usize],
    red_dims: &[usize],
    red_strides: &[usize],
) -> Result<DeviceBuffer> {
    sum_views(x, out_dims, out_strides, red_dims, red_strides)
}

fn sum_views(
    x: &DeviceBuffer,
    out_dims: &[usize],
    out_strides: &[usize],
    red_dims: &[usize],
    red_strides: &[usize],
) -> Result<DeviceBuffer> {
    let (od, os) = collapse(out_dims, &[out_strides]);
    let (rd, rs) = collapse(red_dims, &[red_strides]);
    let n: usize = od.iter().product();
    let rn: usize = rd.iter().product();
    let gpu = x.gpu();
    if rn > SUM_CHUNK && crate::backend::settings::current().fast {
        let chunks = rn.div_ceil(SUM_CHUNK);
        let partial = gpu.alloc(x.dtype(), n * chunks)?;
        let args = [
            Arg::Buf(x),
            Arg::Buf(&partial),
            Arg::U64((n * chunks) as u64),
            Arg::Gather(Gather::new("sum", &od, &os[0], 0)?),
            Arg::Gather(Gather::new("sum", &rd, &rs[0], 0)?),
            Arg::U64(rn as u64),
            Arg::U64(SUM_CHUNK as u64),
            Arg::U64(chunks as u64),
        ];
        gpu.launch(FAMILY, "sum_chunks", x.dtype(), n * chunks, &args)?;
        return sum_views(&partial, &[n], &[chunks], &[chunks], &[1]);
    }
    let y = gpu.alloc(x.dtype(), n)?;
    let args = [
        Arg::Buf(x),
        Arg::Buf(&y),
        Arg::U64(n as u64),
        Arg::Gather(Gather::new("sum", &od, &os[0], 0)?),
        Arg::Gather(Gather::new("sum", &rd, &rs[0], 0)?),
        Arg::U64(rn as u64),
    ];
    gpu.launch(FAMILY, "sum", x.dtype(), n, &args)?;
    Ok(y)
}

/// The sum of all elements (one element).
pub fn sum_all(x: &DeviceBuffer) -> Result<DeviceBuffer> {
    sum_views(x, &[], &[], &[x.len()], &[1])
}

/// x viewed as [outer, len, inner] summed over the middle axis: [outer, inner].
pub fn sum_axis(x: &DeviceBuffer, outer: usize, len: usize, inner: usize) -> Result<DeviceBuffer> {
    sum_views(x, &[outer, inner], &[len * inner, 1], &[len], &[inner])
}

/// `x` of shape `from` summed over the axes that broadcasting `to` → `from` expanded.
pub fn sum_to_shape(x: &DeviceBuffer, from: &Shape, to: &Shape) -> Result<DeviceBuffer> {
    let fd = from.dims();
    let lead = fd.len() - to.rank();
    let mut strides = vec![0; fd.len()];
    let mut acc = 1;
    for d in (0..fd.len()).rev() {
        strides[d] = acc;
        acc *= fd[d];
    }
    let (mut od, mut os, mut rd, mut rs) = (vec![], vec![], vec![], vec![]);
    for d in 0..fd.len() {
        let kept = d >= lead && to.dims()[d - lead] == fd[d];
        if kept {
            od.push(fd[d]);
            os.push(strides[d]);
        } else {
            rd.push(fd[d]);
            rs.push(strides[d]);
        }
    }
    sum_views(x, &od, &os, &rd, &rs)
}

/// Running sums along the middle axis of [outer, len, inner]: one thread per lane, folding in
/// index order (from the far end when `reverse`), as the CPU does.
pub fn cumsum(
    x: &DeviceBuffer,
    outer: usize,
    len: usize,
    inner: usize,
    reverse: bool,
) -> Result<DeviceBuffer> {
    let gpu = x.gpu();
    let y = gpu.alloc(x.dtype(), outer * len * inner)?;
    let n = outer * inner;
    let args = [
        Arg::Buf(x),
        Arg::Buf(&y),
        Arg::U64(n as u64),
        Arg::U64(len as u64),
        Arg::U64(inner as u64),
        Arg::U64(reverse as u64),
    ];
    gpu.launch(FAMILY, "cumsum", x.dtype(), n, &args)?;
    Ok(y)
}

/// Max over the middle axis of [outer, len, inner] (len >= 1) and the index of the first
/// maximum along it, left on the device (u64 per output) for the gradient.
pub fn max_axis(
    x: &DeviceBuffer,
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<(DeviceBuffer, IndexBuffer)> {
    let gpu = x.gpu();
    let n = outer * inner;
    let y = gpu.alloc(x.dtype(), n)?;
    let arg = gpu.alloc_indices(n)?;
    let args = [
        Arg::Buf(x),
        Arg::Buf(&y),
        Arg::Index(&arg),
        Arg::U64(n as u64),
        Arg::U64(len as u64),
        Arg::U64(inner as u64),
    ];
    gpu.launch(FAMILY, "max_axis", x.dtype(), n, &args)?;
    Ok((y, arg))
}

/// The gradient of max: `g` placed at the winners `arg` (from `max_axis`) of zeros shaped
/// [outer, len, inner].
pub fn max_grad(
    g: &DeviceBuffer,
    arg: &IndexBuffer,
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<DeviceBuffer> {
    let y = super::elementwise::full_like(g, g.dtype(), outer * len * inner, 0.0)?;
    let n = outer * inner;
    let args = [
        Arg::Buf(g),
        Arg::Index(arg),
        Arg::Buf(&y),
        Arg::U64(n as u64),
        Arg::U64(len as u64),
        Arg::U64(inner as u64),
    ];
    g.gpu()
        .launch(FAMILY, "max_axis_grad", g.dtype(), n, &args)?;
    Ok(y)
}
