//! Device softmax, losses, convolution and pooling. Every kernel (cu/nn.cu) follows the CPU
//! reference's fold order, gathering where the CPU scatters, so only the convolution GEMMs
//! (cuBLAS) may round differently from the CPU. Sizes come from the op layer; they are checked
//! against the buffers here anyway so that a wrong size is an error, never a stray access.

use std::sync::Arc;

use crate::backend::cuda::blas::RowMajorMatmul;
use crate::backend::cuda::gpu::Gpu;
use crate::backend::cuda::{Arg, DeviceBuffer, IndexBuffer};
use crate::geometry::{AvgDivisor, ConvDims, PoolDims, IGNORED_ROW};
use crate::{DType, Error, Result};

use super::matmul::gemm;

const FAMILY: &str = "nn";

fn launch(gpu: &Gpu, kernel: &str, dtype: DType, n: usize, args: &[Arg<'_>]) -> Result<()> {
    gpu.launch(FAMILY, kernel, dtype, n, args)
}

/// The product of `dims`, or an error when it overflows (a kernel would index past it).
fn numel(op: &'static str, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::shape(op, format!("sizes {dims:?} overflow the address space")))
}

fn check_len(op: &'static str, what: &str, buf: &DeviceBuffer, want: usize) -> Result<()> {
    if buf.len() != want {
        return Err(Error::shape(
            op,
            format!(
                "expected {what} of {want} elements, got a buffer of {}",
                buf.len()
            ),
        ));
    }
    Ok(())
}

/// `b` has `a`'s dtype and lives on `a`'s GPU.
fn check_same(op: &'static str, a: &DeviceBuffer, b: &DeviceBuffer) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::DType {
            op,
            expected: a.dtype().to_string(),
            got: b.dtype().to_string(),
        });
    }
    if !Arc::ptr_eq(a.gpu(), b.gpu()) {
        return Err(Error::Device {
            op,
            expected: format!("cuda:{}", a.gpu().ordinal()),
            got: format!("cuda:{}", b.gpu().ordinal()),
        });
    }
    Ok(())
}

fn check_stride(op: &'static str, stride: usize) -> Result<()> {
    if stride == 0 {
        return Err(Error::arg(op, "expected a stride >= 1, got 0"));
    }
    Ok(())
}

fn flag(b: bool) -> Arg<'static> {
    Arg::U64(b as u64)
}

/// Softmax (or log-softmax) over the middle axis of x viewed as [outer, len, inner]
/// (backend/cpu/softmax.rs `softmax`).
pub fn softmax(
    x: &DeviceBuffer,
    outer: usize,
    len: usize,
    inner: usize,
    log: bool,
) -> Result<DeviceBuffer> {
    let op = if log { "log_softmax" } else { "softmax" };
    let n = numel(op, &[outer, len, inner])?;
    check_len(op, "an input", x, n)?;
    let (gpu, dtype) = (x.gpu(), x.dtype());
    let y = gpu.alloc(dtype, n)?;
    // Nothing to compute (and with len == 0 the lanes would have no first element to read).
    if n == 0 {
        return Ok(y);
    }
    let lanes = outer * inner;
    let stats = gpu.alloc(dtype, 2 * lanes)?;
    launch(
        gpu,
        "softmax_stats",
        dtype,
        lanes,
        &[
            x.into(),
            (&stats).into(),
            lanes.into(),
            len.into(),
            inner.into(),
            flag(log),
        ],
    )?;
    launch(
        gpu,
        "softmax_apply",
        dtype,
        n,
        &[
            x.into(),
            (&stats).into(),
            (&y).into(),
            n.into(),
            len.into(),
            inner.into(),
            lanes.into(),
            flag(log),
        ],
    )?;
    Ok(y)
}

/// The gradient through softmax from its output `y` and the upstream `g`
/// (backend/cpu/softmax.rs `softmax_grad`).
pub fn softmax_grad(
    y: &DeviceBuffer,
    g: &DeviceBuffer,
    outer: usize,
    len: usize,
    inner: usize,
    log: bool,
) -> Result<DeviceBuffer> {
    let op = if log { "log_softmax" } else { "softmax" };
    let n = numel(op, &[outer, len, inner])?;
    check_len(op, "an output", y, n)?;
    check_len(op, "a gradient", g, n)?;
    check_same(op, y, g)?;
    let (gpu, dtype) = (y.gpu(), y.dtype());
    let out = gpu.alloc(dtype, n)?;
    if n == 0 {
        return Ok(out);
    }
    let lanes = outer * inner;
    let stats = gpu.alloc(dtype, lanes)?;
    launch(
        gpu,
        "softmax_grad_stats",
        dtype,
        lanes,
        &[
            y.into(),
            g.into(),
            (&stats).into(),
            lanes.into(),
            len.into(),
            inner.into(),
            flag(log),
        ],
    )?;
    launch(
        gpu,
        "softmax_grad_apply",
        dtype,
        n,
        &[
            y.into(),
            g.into(),
            (&stats).into(),
            (&out).into(),
            n.into(),
            len.into(),
            inner.into(),
            flag(log),
        ],
    )?;
    Ok(out)
}

/// The rows `nll` counts (not `IGNORED_ROW`), as the mean's divisor.
fn kept_rows(target: &[usize]) -> f64 {
    target.iter().filter(|&&t| t != IGNORED_ROW).count() as f64
}

/// Targets checked and uploaded as u64 indices (`IGNORED_ROW` as u64::MAX, which no class is).
fn upload_targets(
    gpu: &Arc<Gpu>,
    rows: usize,
    classes: usize,
    target: &[usize],
) -> Result<IndexBuffer> {
    if target.len() != rows {
        return Err(Error::shape(
            "cross_entropy",
            format!("expected {rows} class indices, got {}", target.len()),
        ));
    }
    if let Some(&t) = target.iter().find(|&&t| t >= classes && t != IGNORED_ROW) {
        return Err(Error::Index {
            op: "cross_entropy",
            index: i64::try_from(t).unwrap_or(i64::MAX),
            bound: classes,
        });
    }
    gpu.upload_indices(target)
}

/// -mean over the counted rows of logp[r, target[r]], a 1-element buffer (cpu/loss.rs `nll`).
pub fn nll(
    logp: &DeviceBuffer,
    rows: usize,
    classes: usize,
    target: &[usize],
) -> Result<DeviceBuffer> {
    check_len(
        "cross_entropy",
        "log-probabilities",
        logp,
        numel("cross_entropy", &[rows, classes])?,
    )?;
    let (gpu, dtype) = (logp.gpu(), logp.dtype());
    let t = upload_targets(gpu, rows, classes, target)?;
    let y = gpu.alloc(dtype, 1)?;
    let div = Arg::Scalar(kept_rows(target));
    launch(
        gpu,
        "nll",
        dtype,
        1,
        &[
            logp.into(),
            (&t).into(),
            (&y).into(),
            1usize.into(),
            rows.into(),
            classes.into(),
            div,
        ],
    )?;
    Ok(y)
}

/// The gradient of `nll` for the 1-element upstream `g`: -(g / rows) at each row's target,
/// 0 elsewhere (ops/loss.rs `nll_grad_typed`).
pub fn nll_grad(
    rows: usize,
    classes: usize,
    target: &[usize],
    g: &DeviceBuffer,
) -> Result<DeviceBuffer> {
    check_len("cross_entropy", "an upstream gradient", g, 1)?;
    let n = numel("cross_entropy", &[rows, classes])?;
    let (gpu, dtype) = (g.gpu(), g.dtype());
    let t = upload_targets(gpu, rows, classes, target)?;
    let out = gpu.alloc(dtype, n)?;
    let div = Arg::Scalar(kept_rows(target));
    launch(
        gpu,
        "nll_grad",
        dtype,
        n,
        &[
            g.into(),
            (&t).into(),
            (&out).into(),
            n.into(),
            classes.into(),
            div,
        ],
    )?;
    Ok(out)
}

/// Sizes used by the convolution kernels, checked once.
struct ConvSizes {
    /// C·KH·KW, the GEMMs' inner size for the forward.
    kk: usize,
    /// OH·OW.
    plane: usize,
    /// N·OH·OW.
    np: usize,
}

fn conv_sizes(x: &DeviceBuffer, w: &DeviceBuffer, d: &ConvDims) -> Result<ConvSizes> {
    let op = "conv2d";
    check_stride(op, d.stride)?;
    check_same(op, x, w)?;
    check_len(
        op,
        "an input [N, C, H, W]",
        x,
        numel(op, &[d.n, d.c, d.h, d.w])?,
    )?;
    check_len(
        op,
        "a weight [OC, C, KH, KW]",
        w,
        numel(op, &[d.oc, d.c, d.kh, d.kw])?,
    )?;
    let kk = numel(op, &[d.c, d.kh, d.kw])?;
    let plane = numel(op, &[d.oh, d.ow])?;
    let np = numel(op, &[d.n, plane])?;
    // The column buffer and the [OC, N·P] buffers must be addressable too.
    numel(op, &[kk, np])?;
    numel(op, &[d.oc, np])?;
    Ok(ConvSizes { kk, plane, np })
}

/// Every image's columns side by side, [C·KH·KW, N·OH·OW] (padding cells 0).
fn im2col(x: &DeviceBuffer, d: &ConvDims, s: &ConvSizes) -> Result<DeviceBuffer> {
    let (gpu, dtype) = (x.gpu(), x.dtype());
    let n = s.kk * s.np;
    let cols = gpu.alloc(dtype, n)?;
    let mut args = vec![x.into(), (&cols).into(), n.into()];
    args.extend(conv_args(d));
    launch(gpu, "im2col", dtype, n, &args)?;
    Ok(cols)
}

/// Cross-correlation of x [N, C, H, W] with w [OC, C, KH, KW] plus the bias [OC]; the output
/// is [N, OC, OH, OW]. One GEMM W·cols over all images, then a pass that lays the result out
/// per image and adds the bias after the product, as the CPU does.
pub fn conv2d(
    x: &DeviceBuffer,
    w: &DeviceBuffer,
    b: Option<&DeviceBuffer>,
    d: ConvDims,
) -> Result<DeviceBuffer> {
    let s = conv_sizes(x, w, &d)?;
    if let Some(b) = b {
        check_same("conv2d", x, b)?;
        check_len("conv2d", "a bias [OC]", b, d.oc)?;
    }
    let (gpu, dtype) = (x.gpu(), x.dtype());
    let cols = im2col(x, &d, &s)?;
    let t = gemm(
        w,
        &cols,
        RowMajorMatmul::new(d.oc, s.np, s.kk, false, false),
    )?;
    let n = d.oc * s.np;
    let y = gpu.alloc(dtype, n)?;
    launch(
        gpu,
        "conv_out",
        dtype,
        n,
        &[
            (&t).into(),
            Arg::OptBuf(b),
            (&y).into(),
            n.into(),
            d.n.into(),
            d.oc.into(),
            s.plane.into(),
        ],
    )?;
    Ok(y)
}

/// Gradients of conv2d for input, weight and bias from the upstream g [N, OC, OH, OW]:
/// gW = gY·colsᵀ and gcols = Wᵀ·gY with gY laid out [OC, N·P] (one GEMM each over all images,
/// as the CPU's batched path), gx by a gathering col2im, gb a fold over (n, oy, ox).
pub fn conv2d_grads(
    x: &DeviceBuffer,
    w: &DeviceBuffer,
    g: &DeviceBuffer,
    d: ConvDims,
) -> Result<[DeviceBuffer; 3]> {
    let s = conv_sizes(x, w, &d)?;
    check_same("conv2d", x, g)?;
    check_len("conv2d", "a gradient [N, OC, OH, OW]", g, d.oc * s.np)?;
    let (gpu, dtype) = (x.gpu(), x.dtype());

    let n = d.oc * s.np;
    let gy = gpu.alloc(dtype, n)?;
    launch(
        gpu,
        "conv_gout_cnp",
        dtype,
        n,
        &[
            g.into(),
            (&gy).into(),
            n.into(),
            d.n.into(),
            d.oc.into(),
            s.plane.into(),
        ],
    )?;

    let cols = im2col(x, &d, &s)?;
    let gw = if s.plane >= crate::backend::cpu::conv::BATCH_BELOW
        && !crate::backend::settings::current().fast
    {
        // The CPU reference's order on such maps (cpu/conv_grad.rs `grads_per_image`): one
        // product per image, gW_n = gY_n · cols_nᵀ, then the images added in order from 0.
        let per_image = super::layout::permute(&cols, &[s.kk, d.n, s.plane], &[1, 0, 2])?;
        let parts = gemm(
            g,
            &per_image,
            RowMajorMatmul::new(d.oc, s.kk, s.plane, false, true).batched(
                d.n,
                d.oc * s.plane,
                s.kk * s.plane,
                d.oc * s.kk,
            ),
        )?;
        let len = d.oc * s.kk;
        super::reduce::sum_strided(&parts, &[len], &[1], &[d.n], &[len])?
    } else {
        gemm(
            &gy,
            &cols,
            RowMajorMatmul::new(d.oc, s.kk, s.np, false, true),
        )?
    };
    drop(cols);

    let gcols = gemm(w, &gy, RowMajorMatmul::new(s.kk, s.np, d.oc, true, false))?;
    let n = x.len();
    let gx = gpu.alloc(dtype, n)?;
    let mut args = vec![(&gcols).into(), (&gx).into(), n.into()];
    args.extend(conv_args(&d));
    launch(gpu, "col2im", dtype, n, &args)?;

    // gb[o] = Σ over (n, oy, ox) of gY[n, o, oy, ox] in that order (conv2d_grad_bias); long
    // folds are chunked like every device sum.
    let plane = s.plane;
    let gb = super::reduce::sum_strided(g, &[d.oc], &[plane], &[d.n, plane], &[d.oc * plane, 1])?;
    Ok([gx, gw, gb])
}

/// The convolution sizes im2col and col2im take, in their parameter order: n, c, then the
/// window geometry.
fn conv_args(d: &ConvDims) -> Vec<Arg<'static>> {
    let geometry = [d.h, d.w, d.kh, d.kw, d.stride, d.pad, d.oh, d.ow];
    [d.n, d.c]
        .into_iter()
        .chain(geometry)
        .map(Arg::from)
        .collect()
}

/// The pooling geometry as kernel arguments: h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow.
fn pool_args(d: &PoolDims) -> [Arg<'static>; 12] {
    [
        d.h, d.w, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.oh, d.ow,
    ]
    .map(Arg::from)
}

/// Input and output element counts, checked (the window size too: it is avg's divisor).
fn pool_sizes(op: &'static str, d: &PoolDims) -> Result<(usize, usize)> {
    check_stride(op, d.sh.min(d.sw))?;
    if d.kh == 0 || d.kw == 0 || d.dh == 0 || d.dw == 0 {
        return Err(Error::arg(op, "expected kernel sizes and dilations >= 1"));
    }
    numel(op, &[d.kh, d.kw])?;
    Ok((
        numel(op, &[d.planes, d.h, d.w])?,
        numel(op, &[d.planes, d.oh, d.ow])?,
    ))
}

/// Max over each window and, on the host, the winner's index within its plane (usize::MAX for
/// an empty window), as backend/cpu/pool.rs `max_pool`.
pub fn max_pool2d(x: &DeviceBuffer, d: PoolDims) -> Result<(DeviceBuffer, Vec<usize>)> {
    let (y, arg) = max_pool2d_on_device(x, d)?;
    let host: Vec<u64> = x.gpu().download_indices(&arg)?;
    let arg = host
        .into_iter()
        .map(|a| usize::try_from(a).unwrap_or(usize::MAX))
        .collect();
    Ok((y, arg))
}

/// Max pooling with the winners left on the device (the op layer's form: no host round trip).
pub fn max_pool2d_on_device(x: &DeviceBuffer, d: PoolDims) -> Result<(DeviceBuffer, IndexBuffer)> {
    let (xn, yn) = pool_sizes("max_pool2d", &d)?;
    check_len("max_pool2d", "an input [N, C, H, W]", x, xn)?;
    let (gpu, dtype) = (x.gpu(), x.dtype());
    let y = gpu.alloc(dtype, yn)?;
    let arg = gpu.alloc_indices(yn)?;
    let mut args = vec![x.into(), (&y).into(), (&arg).into(), yn.into()];
    args.extend(pool_args(&d));
    launch(gpu, "max_pool", dtype, yn, &args)?;
    Ok((y, arg))
}

/// Gradient of max pooling: each input cell folds, in increasing output order, the gradients of
/// the outputs that chose it (backend/cpu/pool.rs `max_pool_grad`, gathered).
pub fn max_pool2d_grad(g: &DeviceBuffer, arg: &[usize], d: PoolDims) -> Result<DeviceBuffer> {
    let op = "max_pool2d";
    let (_, yn) = pool_sizes(op, &d)?;
    check_len(op, "a gradient [N, C, OH, OW]", g, yn)?;
    if arg.len() != yn {
        return Err(Error::shape(
            op,
            format!("expected {yn} argmax entries, got {}", arg.len()),
        ));
    }
    // The gather only visits outputs whose window covers a cell, so every winner must lie in its
    // own window (max_pool2d's always do); anything else would be silently dropped.
    let per = d.oh * d.ow;
    for (i, &a) in arg.iter().enumerate() {
        if a == usize::MAX {
            continue;
        }
        let (oy, ox) = ((i % per.max(1)) / d.ow.max(1), i % d.ow.max(1));
        let (r, c) = (a / d.w.max(1), a % d.w.max(1));
        if !d.covers(oy, ox, r, c) {
            return Err(Error::arg(
                op,
                format!("argmax {a} of output {i} is not inside its pooling window"),
            ));
        }
    }
    let idx = g.gpu().upload_indices(arg)?;
    max_pool2d_grad_on_device(g, &idx, d)
}

/// The gradient from winners that `max_pool2d_on_device` left on the device.
pub fn max_pool2d_grad_on_device(
    g: &DeviceBuffer,
    arg: &IndexBuffer,
    d: PoolDims,
) -> Result<DeviceBuffer> {
    let (xn, yn) = pool_sizes("max_pool2d", &d)?;
    check_len("max_pool2d", "a gradient [N, C, OH, OW]", g, yn)?;
    let (gpu, dtype) = (g.gpu(), g.dtype());
    let gx = gpu.alloc(dtype, xn)?;
    let mut args = vec![g.into(), arg.into(), (&gx).into(), xn.into()];
    args.extend(pool_args(&d));
    launch(gpu, "max_pool_grad", dtype, xn, &args)?;
    Ok(gx)
}

/// Mean over each window, over the divisor `d.divisor` names
/// (backend/cpu/pool.rs `avg_pool`).
pub fn avg_pool2d(x: &DeviceBuffer, d: PoolDims) -> Result<DeviceBuffer> {
    let (xn, yn) = pool_sizes("avg_pool2d", &d)?;
    avg_pool_kernel("avg_pool", x, "an input [N, C, H, W]", xn, yn, &d)
}

/// Gradient of average pooling, gathered in the CPU scatter's order (backend/cpu/pool.rs
/// `avg_pool_grad`).
pub fn avg_pool2d_grad(g: &DeviceBuffer, d: PoolDims) -> Result<DeviceBuffer> {
    let (xn, yn) = pool_sizes("avg_pool2d", &d)?;
    avg_pool_kernel("avg_pool_grad", g, "a gradient [N, C, OH, OW]", yn, xn, &d)
}

/// One thread per element of the `out_len` result of `kernel(src, out, out_len, pool dims, KH·KW)`.
fn avg_pool_kernel(
    kernel: &str,
    src: &DeviceBuffer,
    what: &str,
    src_len: usize,
    out_len: usize,
    d: &PoolDims,
) -> Result<DeviceBuffer> {
    check_len("avg_pool2d", what, src, src_len)?;
    let (gpu, dtype) = (src.gpu(), src.dtype());
    let out = gpu.alloc(dtype, out_len)?;
    let mut args = vec![src.into(), (&out).into(), out_len.into()];
    args.extend(pool_args(d));
    let (mode, fixed) = match d.divisor {
        AvgDivisor::Padded => (0usize, 0),
        AvgDivisor::Valid => (1, 0),
        AvgDivisor::Fixed(v) => (2, v as u64),
    };
    args.extend([Arg::from(mode), Arg::from(fixed)]);
    launch(gpu, kernel, dtype, out_len, &args)?;
    Ok(out)
}
