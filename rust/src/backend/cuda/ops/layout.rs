//! Device data movement: strided copies (permute, broadcast, slice), concatenation, gathers
//! with offsets planned on the host, and scatter-adds inverted on the host into per-output lists.

use super::elementwise::{collapse, full_like};
use crate::backend::cuda::{Arg, DeviceBuffer, Gather};
use crate::shape::broadcast_strides;
use crate::{Result, Shape};

const FAMILY: &str = "layout";

/// y[i] = x[g.offset_of(i)] for every i below the product of g's dims.
pub fn gather_buffer(x: &DeviceBuffer, g: Gather) -> Result<DeviceBuffer> {
    let n: u64 = g.dims[..g.rank as usize].iter().product();
    let n = n as usize;
    let gpu = x.gpu();
    let y = gpu.alloc(x.dtype(), n)?;
    gpu.launch(
        FAMILY,
        "gather",
        x.dtype(),
        n,
        &[
            Arg::Buf(x),
            Arg::Buf(&y),
            Arg::U64(n as u64),
            Arg::Gather(g),
        ],
    )?;
    Ok(y)
}

fn strided(
    op: &'static str,
    x: &DeviceBuffer,
    dims: &[usize],
    strides: &[usize],
    offset: usize,
) -> Result<DeviceBuffer> {
    let (d, s) = collapse(dims, &[strides]);
    gather_buffer(x, Gather::new(op, &d, &s[0], offset)?)
}

fn row_major_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![0; dims.len()];
    let mut acc = 1;
    for d in (0..dims.len()).rev() {
        s[d] = acc;
        acc *= dims[d];
    }
    s
}

/// A fresh copy of `x`.
pub fn copy(x: &DeviceBuffer) -> Result<DeviceBuffer> {
    strided("copy", x, &[x.len()], &[1], 0)
}

/// `x` of shape `dims` with its axes reordered by `perm`.
pub fn permute(x: &DeviceBuffer, dims: &[usize], perm: &[usize]) -> Result<DeviceBuffer> {
    let s = row_major_strides(dims);
    let od: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let os: Vec<usize> = perm.iter().map(|&p| s[p]).collect();
    strided("permute", x, &od, &os, 0)
}

/// `x` of shape `from` repeated along broadcast axes to `to`.
pub fn broadcast_to(x: &DeviceBuffer, from: &Shape, to: &Shape) -> Result<DeviceBuffer> {
    strided(
        "broadcast_to",
        x,
        to.dims(),
        &broadcast_strides(from, to),
        0,
    )
}

/// Rows [start, end) of the middle axis of x viewed as [outer, len, inner].
pub fn slice(
    x: &DeviceBuffer,
    outer: usize,
    len: usize,
    inner: usize,
    start: usize,
    end: usize,
) -> Result<DeviceBuffer> {
    strided(
        "slice",
        x,
        &[outer, end - start, inner],
        &[len * inner, inner, 1],
        start * inner,
    )
}

/// Copies x ([outer, len, inner]) into y ([outer, ylen, inner]) at row `yoff` of the middle axis.
fn copy_block(
    x: &DeviceBuffer,
    y: &DeviceBuffer,
    len: usize,
    inner: usize,
    ylen: usize,
    yoff: usize,
) -> Result<()> {
    let n = x.len();
    let args = [
        Arg::Buf(x),
        Arg::Buf(y),
        Arg::U64(n as u64),
        Arg::U64(len as u64),
        Arg::U64(inner as u64),
        Arg::U64(ylen as u64),
        Arg::U64(yoff as u64),
    ];
    x.gpu().launch(FAMILY, "copy_block", x.dtype(), n, &args)
}

/// The gradient of a slice: `g` placed at rows [start, end) of zeros shaped [outer, len, inner].
pub fn unslice(
    g: &DeviceBuffer,
    outer: usize,
    len: usize,
    inner: usize,
    start: usize,
    end: usize,
) -> Result<DeviceBuffer> {
    let y = full_like(g, g.dtype(), outer * len * inner, 0.0)?;
    copy_block(g, &y, end - start, inner, len, start)?;
    Ok(y)
}

/// Pieces ([outer, len_i, inner] each) joined along the middle axis.
pub fn concat(
    pieces: &[(&DeviceBuffer, usize)],
    outer: usize,
    inner: usize,
) -> Result<DeviceBuffer> {
    let total: usize = pieces.iter().map(|p| p.1).sum();
    let first = pieces[0].0;
    let y = first.gpu().alloc(first.dtype(), outer * total * inner)?;
    let mut at = 0;
    for &(p, len) in pieces {
        copy_block(p, &y, len, inner, total, at)?;
        at += len;
    }
    Ok(y)
}

/// y[i] = x[offsets[i]] (offsets planned on the host).
pub fn take(x: &DeviceBuffer, offsets: &[usize]) -> Result<DeviceBuffer> {
    let gpu = x.gpu();
    let idx = gpu.upload_indices(offsets)?;
    let n = offsets.len();
    let y = gpu.alloc(x.dtype(), n)?;
    gpu.launch(
        FAMILY,
        "take",
        x.dtype(),
        n,
        &[
            Arg::Buf(x),
            Arg::Index(&idx),
            Arg::Buf(&y),
            Arg::U64(n as u64),
        ],
    )?;
    Ok(y)
}

/// Per-output source lists (CSR) of a scatter whose source k goes to `targets[k]`, each list
/// in increasing k: the order the CPU's sequential `out[targets[k]] += src[k]` adds them.
pub fn invert(targets: &[usize], out_len: usize) -> (Vec<usize>, Vec<usize>) {
    let mut rowptr = vec![0usize; out_len + 1];
    for &t in targets {
        rowptr[t + 1] += 1;
    }
    for p in 0..out_len {
        rowptr[p + 1] += rowptr[p];
    }
    let mut next = rowptr.clone();
    let mut cols = vec![0usize; targets.len()];
    for (k, &t) in targets.iter().enumerate() {
        cols[next[t]] = k;
        next[t] += 1;
    }
    (rowptr, cols)
}

/// out[p] = base[p] (or 0) + Σ src[k] over k with targets[k] == p, in increasing k.
pub fn scatter_add(
    base: Option<&DeviceBuffer>,
    src: &DeviceBuffer,
    targets: &[usize],
    out_len: usize,
) -> Result<DeviceBuffer> {
    let gpu = src.gpu();
    let (rowptr, cols) = invert(targets, out_len);
    let (rp, cs) = (gpu.upload_indices(&rowptr)?, gpu.upload_indices(&cols)?);
    let y = gpu.alloc(src.dtype(), out_len)?;
    let args = [
        Arg::OptBuf(base),
        Arg::Buf(src),
        Arg::Index(&rp),
        Arg::Index(&cs),
        Arg::Buf(&y),
        Arg::U64(out_len as u64),
    ];
    gpu.launch(FAMILY, "scatter_csr", src.dtype(), out_len, &args)?;
    Ok(y)
}

/// Zeros of `out_len` with x[i] written at distinct positions `pos[i]`.
pub fn put_into_zeros(x: &DeviceBuffer, pos: &[usize], out_len: usize) -> Result<DeviceBuffer> {
    let gpu = x.gpu();
    let y = full_like(x, x.dtype(), out_len, 0.0)?;
    let p = gpu.upload_indices(pos)?;
    let n = pos.len();
    gpu.launch(
        FAMILY,
        "put",
        x.dtype(),
        n,
        &[
            Arg::Buf(x),
            Arg::Index(&p),
            Arg::Buf(&y),
            Arg::U64(n as u64),
        ],
    )?;
    Ok(y)
}

/// Where element (o, j, i) of an index_select result comes from in x viewed as [outer, l, inner].
pub fn select_offsets(outer: usize, l: usize, inner: usize, idx: &[usize]) -> Vec<usize> {
    let mut offs = Vec::with_capacity(outer * idx.len() * inner);
    for o in 0..outer {
        for &j in idx {
            offs.extend((0..inner).map(|i| (o * l + j) * inner + i));
        }
    }
    offs
}

#[cfg(test)]
mod tests {
    use super::invert;

    #[test]
    fn invert_lists_sources_per_target_in_order() {
        let (rowptr, cols) = invert(&[2, 0, 2, 1, 2], 4);
        assert_eq!(rowptr, vec![0, 1, 2, 5, 5]);
        assert_eq!(cols, vec![1, 3, 0, 2, 4]);
    }
}
