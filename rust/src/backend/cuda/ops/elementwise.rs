//! Device elementwise ops: unary maps and their gradients, broadcast binary ops, scalar-parameter
//! maps, fills and masks. Casts are in convert.rs, the samplers in random.rs.

use crate::backend::cuda::{Arg, DeviceBuffer, Gather};
use crate::shape::broadcast_strides;
use crate::{DType, Result, Shape};

const FAMILY: &str = "elementwise";

/// A new buffer like `x` filled by `kernel(args..., y, n, extra...)`; `inputs` come first.
fn run(
    kernel: &str,
    inputs: &[&DeviceBuffer],
    n: usize,
    extra: Vec<Arg<'_>>,
) -> Result<DeviceBuffer> {
    let first = inputs[0];
    let gpu = first.gpu();
    let y = gpu.alloc(first.dtype(), n)?;
    let mut args: Vec<Arg<'_>> = inputs.iter().map(|&b| Arg::Buf(b)).collect();
    args.push(Arg::Buf(&y));
    args.push(Arg::U64(n as u64));
    args.extend(extra);
    gpu.launch(FAMILY, kernel, first.dtype(), n, &args)?;
    Ok(y)
}

/// A unary op by its name (`UnaryOp::name`), e.g. "exp", with its scalar parameters in table
/// order (they follow `n` in the kernel's signature).
pub fn unary(op: &str, x: &DeviceBuffer, params: &[f64]) -> Result<DeviceBuffer> {
    run(op, &[x], x.len(), scalars(params))
}

/// The gradient of a unary op times `g`, from its input `x` and output `y`.
pub fn unary_grad(
    op: &str,
    x: &DeviceBuffer,
    y: &DeviceBuffer,
    g: &DeviceBuffer,
    params: &[f64],
) -> Result<DeviceBuffer> {
    run(&format!("{op}_grad"), &[x, y, g], x.len(), scalars(params))
}

fn scalars(params: &[f64]) -> Vec<Arg<'static>> {
    params.iter().map(|&v| Arg::Scalar(v)).collect()
}

/// Drops size-1 dimensions and merges neighbours that are contiguous in every view, so most
/// kernels index with one division per element instead of one per dimension.
pub fn collapse(dims: &[usize], strides: &[&[usize]]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut out_dims: Vec<usize> = Vec::new();
    let mut out_strides: Vec<Vec<usize>> = vec![Vec::new(); strides.len()];
    for d in 0..dims.len() {
        if dims[d] == 1 {
            continue;
        }
        let mergeable = !out_dims.is_empty()
            && strides.iter().enumerate().all(|(k, s)| {
                let last = out_strides[k][out_strides[k].len() - 1];
                last == s[d] * dims[d]
            });
        if mergeable {
            let n = out_dims.len() - 1;
            out_dims[n] *= dims[d];
            for (k, s) in strides.iter().enumerate() {
                let m = out_strides[k].len() - 1;
                out_strides[k][m] = s[d];
            }
        } else {
            out_dims.push(dims[d]);
            for (k, s) in strides.iter().enumerate() {
                out_strides[k].push(s[d]);
            }
        }
    }
    (out_dims, out_strides)
}

/// The broadcast views of `a` and `b` over `out`, collapsed.
fn views(op: &'static str, a: &Shape, b: &Shape, out: &Shape) -> Result<(Gather, Gather)> {
    let (sa, sb) = (broadcast_strides(a, out), broadcast_strides(b, out));
    let (dims, s) = collapse(out.dims(), &[&sa, &sb]);
    Ok((
        Gather::new(op, &dims, &s[0], 0)?,
        Gather::new(op, &dims, &s[1], 0)?,
    ))
}

/// A binary op by name ("add", "maximum", ...) over NumPy broadcasting to `out`.
pub fn binary(
    op: &'static str,
    a: &DeviceBuffer,
    a_shape: &Shape,
    b: &DeviceBuffer,
    b_shape: &Shape,
    out: &Shape,
) -> Result<DeviceBuffer> {
    let (ga, gb) = views(op, a_shape, b_shape, out)?;
    run(
        op,
        &[a, b],
        out.numel(),
        vec![Arg::Gather(ga), Arg::Gather(gb)],
    )
}

/// `x op s` (or `s op x` when `scalar_left`) for a scalar `s` passed by value.
pub fn binary_scalar(
    op: &'static str,
    x: &DeviceBuffer,
    s: f64,
    scalar_left: bool,
) -> Result<DeviceBuffer> {
    run(
        &format!("{op}_scalar"),
        &[x],
        x.len(),
        vec![Arg::Scalar(s), Arg::U64(scalar_left as u64)],
    )
}

/// maximum/minimum gradient weights of `a` (1 wins, 0.5 ties, 0 loses), over the broadcast shape.
pub fn select_weight(
    max: bool,
    a: &DeviceBuffer,
    a_shape: &Shape,
    b: &DeviceBuffer,
    b_shape: &Shape,
    out: &Shape,
) -> Result<DeviceBuffer> {
    let (ga, gb) = views("select_weight", a_shape, b_shape, out)?;
    let k = if max {
        "select_weight_max"
    } else {
        "select_weight_min"
    };
    run(
        k,
        &[a, b],
        out.numel(),
        vec![Arg::Gather(ga), Arg::Gather(gb)],
    )
}

pub fn pow(x: &DeviceBuffer, e: f64) -> Result<DeviceBuffer> {
    run("pow", &[x], x.len(), vec![Arg::Scalar(e)])
}

pub fn pow_grad(x: &DeviceBuffer, g: &DeviceBuffer, e: f64) -> Result<DeviceBuffer> {
    run(
        "pow_grad",
        &[x, g],
        x.len(),
        vec![Arg::Scalar(e), Arg::Scalar(e - 1.0)],
    )
}

fn bounds<'a>(lo: Option<f64>, hi: Option<f64>) -> Vec<Arg<'a>> {
    vec![
        Arg::Scalar(lo.unwrap_or(0.0)),
        Arg::Scalar(hi.unwrap_or(0.0)),
        Arg::U64(lo.is_some() as u64),
        Arg::U64(hi.is_some() as u64),
    ]
}

pub fn clamp(x: &DeviceBuffer, lo: Option<f64>, hi: Option<f64>) -> Result<DeviceBuffer> {
    run("clamp", &[x], x.len(), bounds(lo, hi))
}

pub fn clamp_grad(
    x: &DeviceBuffer,
    g: &DeviceBuffer,
    lo: Option<f64>,
    hi: Option<f64>,
) -> Result<DeviceBuffer> {
    run("clamp_grad", &[x, g], x.len(), bounds(lo, hi))
}

/// Writes `v` into every element of `y` (used on fresh buffers only: storage is immutable
/// once a tensor holds it).
pub fn fill_into(y: &DeviceBuffer, v: f64) -> Result<()> {
    let n = y.len();
    y.gpu().launch(
        FAMILY,
        "fill",
        y.dtype(),
        n,
        &[Arg::Buf(y), Arg::U64(n as u64), Arg::Scalar(v)],
    )
}

/// A new buffer of `len` elements of `dtype` on `like`'s device, all equal to `v`.
pub fn full_like(like: &DeviceBuffer, dtype: DType, len: usize, v: f64) -> Result<DeviceBuffer> {
    let y = like.gpu().alloc(dtype, len)?;
    fill_into(&y, v)?;
    Ok(y)
}

/// `value` where `mask` (one flag per element of x, broadcast on the host) is set, else x.
pub fn masked_fill(x: &DeviceBuffer, mask: &[bool], value: f64) -> Result<DeviceBuffer> {
    let flags: Vec<usize> = mask.iter().map(|&m| m as usize).collect();
    let m = x.gpu().upload_indices(&flags)?;
    let (gpu, n) = (x.gpu(), x.len());
    let y = gpu.alloc(x.dtype(), n)?;
    let args = [
        Arg::Buf(x),
        Arg::Index(&m),
        Arg::Buf(&y),
        Arg::U64(n as u64),
        Arg::Scalar(value),
    ];
    gpu.launch(FAMILY, "masked_fill", x.dtype(), n, &args)?;
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::collapse;

    #[test]
    fn collapse_merges_contiguous_dims_and_drops_ones() {
        // Same-shape contiguous operands become one flat dimension.
        let (d, s) = collapse(&[2, 3, 4], &[&[12, 4, 1], &[12, 4, 1]]);
        assert_eq!((d, s), (vec![24], vec![vec![1], vec![1]]));
        // A row vector broadcast over rows keeps two dimensions.
        let (d, s) = collapse(&[2, 1, 3, 4], &[&[12, 12, 4, 1], &[0, 0, 0, 1]]);
        assert_eq!((d, s), (vec![6, 4], vec![vec![4, 1], vec![0, 1]]));
        // Broadcast leading dims merge with each other.
        let (d, s) = collapse(&[2, 3, 4], &[&[12, 4, 1], &[0, 0, 1]]);
        assert_eq!((d, s), (vec![6, 4], vec![vec![4, 1], vec![0, 1]]));
        // A scalar: no dimensions at all.
        let (d, s) = collapse(&[1, 1], &[&[0, 0]]);
        assert_eq!((d, s), (vec![], vec![vec![]]));
    }
}
