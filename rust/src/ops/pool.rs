//! Max and average pooling on [N, C, H, W] (or a single [C, H, W] image) with PyTorch's
//! options: a kernel, stride, padding and dilation per axis, `ceil_mode`, and average pooling's
//! `count_include_pad` and `divisor_override`.

use super::conv::{as_batch, unbatch};
use crate::autograd::record::{first, Attr, Record};
use crate::autograd::Argmax;
use crate::geometry::{AvgDivisor, PoolDims};
use crate::ops::elementwise::check_same_dtype;
use crate::{Error, Result, Shape, Tensor};

/// A pooling op's arguments, (rows, columns) each, with PyTorch's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSpec {
    pub kernel: (usize, usize),
    /// `None`: the kernel size (PyTorch's default).
    pub stride: Option<(usize, usize)>,
    pub padding: (usize, usize),
    pub dilation: (usize, usize),
    /// Output sizes rounded up: a last window may start in the right/bottom padding's reach.
    pub ceil_mode: bool,
    pub divisor: AvgDivisor,
}

impl PoolSpec {
    /// A square kernel, stride and padding; no dilation, floor mode, padding counted.
    pub fn square(kernel: usize, stride: Option<usize>, padding: usize) -> Self {
        PoolSpec {
            kernel: (kernel, kernel),
            stride: stride.map(|s| (s, s)),
            padding: (padding, padding),
            dilation: (1, 1),
            ceil_mode: false,
            divisor: AvgDivisor::Padded,
        }
    }

    /// The spec that gives `d` back (the compiled backend's replay).
    pub fn of(d: &PoolDims, ceil_mode: bool) -> Self {
        PoolSpec {
            kernel: (d.kh, d.kw),
            stride: Some((d.sh, d.sw)),
            padding: (d.ph, d.pw),
            dilation: (d.dh, d.dw),
            ceil_mode,
            divisor: d.divisor,
        }
    }
}

/// Outputs along one axis, as PyTorch's `pooling_output_shape`: floor (or ceil) of
/// (n + 2p - dil·(k - 1) - 1) / s, plus one; in ceil mode a last window that would start past
/// the input and its left padding is dropped.
#[allow(clippy::too_many_arguments)]
fn out_len(
    op: &'static str,
    axis: &str,
    n: usize,
    k: usize,
    s: usize,
    p: usize,
    dil: usize,
    ceil: bool,
) -> Result<usize> {
    let reach = (k - 1)
        .checked_mul(dil)
        .and_then(|r| r.checked_add(1))
        .ok_or_else(|| {
            Error::arg(
                op,
                format!("{axis}: dilation {dil} x kernel {k} is too large"),
            )
        })?;
    let padded = p
        .checked_mul(2)
        .and_then(|pp| pp.checked_add(n))
        .ok_or_else(|| Error::arg(op, format!("{axis}: padding {p} is too large")))?;
    if padded < reach {
        return Err(Error::shape(
            op,
            format!(
                "{axis}: the window ({reach} cells with dilation {dil}) is larger than the padded input {padded} (size {n}, padding {p})"
            ),
        ));
    }
    let span = padded - reach;
    let mut out = if ceil { span.div_ceil(s) } else { span / s } + 1;
    if ceil && (out - 1) * s >= n + p {
        out -= 1;
    }
    Ok(out)
}

fn pair_positive(op: &'static str, what: &str, (a, b): (usize, usize)) -> Result<()> {
    if a == 0 || b == 0 {
        return Err(Error::arg(
            op,
            format!("expected {what} >= 1 along both axes, got ({a}, {b})"),
        ));
    }
    Ok(())
}

fn pool_dims(op: &'static str, x: &Tensor, spec: &PoolSpec) -> Result<PoolDims> {
    let [n, c, h, w] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    let (kh, kw) = spec.kernel;
    let (sh, sw) = spec.stride.unwrap_or(spec.kernel);
    let (ph, pw) = spec.padding;
    let (dh, dw) = spec.dilation;
    pair_positive(op, "a kernel size", spec.kernel)?;
    pair_positive(op, "a stride", (sh, sw))?;
    pair_positive(op, "a dilation", spec.dilation)?;
    if 2 * ph > kh || 2 * pw > kw {
        return Err(Error::arg(
            op,
            format!("padding ({ph}, {pw}) must be at most half the kernel size ({kh}, {kw})"),
        ));
    }
    if spec.divisor == AvgDivisor::Fixed(0) {
        return Err(Error::arg(
            op,
            "expected a divisor_override other than 0, got 0",
        ));
    }
    let oh = out_len(op, "rows", h, kh, sh, ph, dh, spec.ceil_mode)?;
    let ow = out_len(op, "columns", w, kw, sw, pw, dw, spec.ceil_mode)?;
    crate::storage::check_alloc(op, &Shape(vec![n, c, oh, ow]))?;
    Ok(PoolDims {
        planes: n * c,
        h,
        w,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
        oh,
        ow,
        divisor: spec.divisor,
    })
}

/// Max pooling over square windows; padding cells never win (PyTorch `max_pool2d`).
pub fn max_pool2d(
    input: &Tensor,
    kernel_size: usize,
    stride: Option<usize>,
    padding: usize,
) -> Result<Tensor> {
    max_pool2d_with(input, &PoolSpec::square(kernel_size, stride, padding))
}

/// Max pooling (PyTorch `max_pool2d`): the first maximum of each window in row-major tap order
/// wins (IEEE 754-2019 `maximum`: NaN propagates, +0 beats -0); padding cells never win.
pub fn max_pool2d_with(input: &Tensor, spec: &PoolSpec) -> Result<Tensor> {
    Ok(max_pool2d_indices(input, spec, false)?.0)
}

/// Max pooling and, when `indices`, each output's winner as a flat index into its input plane
/// (H·W; PyTorch's `return_indices=True`), or -1 where a window holds no input cell.
pub fn max_pool2d_indices(
    input: &Tensor,
    spec: &PoolSpec,
    indices: bool,
) -> Result<(Tensor, Option<Vec<i64>>)> {
    let (x, squeeze) = as_batch("max_pool2d", input)?;
    let d = pool_dims("max_pool2d", &x, spec)?;
    let (s, arg) = x.storage().max_pool2d(d)?;
    let winners = if indices {
        Some(
            arg.to_host()?
                .iter()
                .map(|&a| i64::try_from(a).unwrap_or(-1))
                .collect(),
        )
    } else {
        None
    };
    let shape = Shape(vec![x.dims()[0], x.dims()[1], d.oh, d.ow]);
    let ceil_mode = spec.ceil_mode;
    let y = Tensor::from_op(
        s,
        shape,
        MaxPool2d {
            x,
            d,
            ceil_mode,
            argmax: arg,
        },
    );
    Ok((unbatch(y, squeeze), winners))
}

/// Average pooling over square windows; padding cells count in the divisor.
pub fn avg_pool2d(
    input: &Tensor,
    kernel_size: usize,
    stride: Option<usize>,
    padding: usize,
) -> Result<Tensor> {
    avg_pool2d_with(input, &PoolSpec::square(kernel_size, stride, padding))
}

/// Average pooling (PyTorch `avg_pool2d`): each window's sum in row-major order over the
/// divisor `spec.divisor` names. Dilation is max pooling's alone, as in PyTorch.
pub fn avg_pool2d_with(input: &Tensor, spec: &PoolSpec) -> Result<Tensor> {
    if spec.dilation != (1, 1) {
        return Err(Error::arg(
            "avg_pool2d",
            format!("takes no dilation, got {:?}", spec.dilation),
        ));
    }
    let (x, squeeze) = as_batch("avg_pool2d", input)?;
    let d = pool_dims("avg_pool2d", &x, spec)?;
    let s = x.storage().avg_pool2d(d)?;
    let shape = Shape(vec![x.dims()[0], x.dims()[1], d.oh, d.ow]);
    let ceil_mode = spec.ceil_mode;
    let y = Tensor::from_op(s, shape, AvgPool2d { x, d, ceil_mode });
    Ok(unbatch(y, squeeze))
}

pub(crate) fn max_pool2d_grad(x: &Tensor, d: PoolDims, arg: &Argmax, g: &Tensor) -> Result<Tensor> {
    check_same_dtype("max_pool2d", &[x, g])?;
    let s = g.storage().max_pool2d_grad(arg, d)?;
    Tensor::from_storage(s, x.shape().clone())
}

pub(crate) fn avg_pool2d_grad(x: &Tensor, d: PoolDims, g: &Tensor) -> Result<Tensor> {
    let s = g.storage().avg_pool2d_grad(d)?;
    Tensor::from_storage(s, x.shape().clone())
}

/// A pooling op's window (kernel, stride, padding and dilation as [rows, columns]), rounding
/// and average pooling's divisor rule.
fn pool_attributes(d: &PoolDims, ceil_mode: bool) -> Vec<(&'static str, Attr)> {
    vec![
        ("kernel", Attr::List(vec![d.kh, d.kw])),
        ("stride", Attr::List(vec![d.sh, d.sw])),
        ("padding", Attr::List(vec![d.ph, d.pw])),
        ("dilation", Attr::List(vec![d.dh, d.dw])),
        ("ceil_mode", Attr::Flag(ceil_mode)),
        (
            "count_include_pad",
            Attr::Flag(d.divisor != AvgDivisor::Valid),
        ),
        (
            "divisor_override",
            Attr::Float(match d.divisor {
                AvgDivisor::Fixed(v) => Some(v as f64),
                _ => None,
            }),
        ),
    ]
}

/// Max pooling of `x` [N, C, H, W], with each window's winner.
#[derive(Clone)]
pub struct MaxPool2d {
    pub x: Tensor,
    pub d: PoolDims,
    /// Whether output sizes were rounded up (what a replay on new sizes needs).
    pub ceil_mode: bool,
    pub argmax: Argmax,
}

impl Record for MaxPool2d {
    crate::autograd::record::named!("max_pool2d");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        pool_attributes(&self.d, self.ceil_mode)
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(max_pool2d_grad(
            &self.x,
            self.d,
            &self.argmax,
            g,
        )?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        max_pool2d_with(
            first("max_pool2d", xs)?,
            &PoolSpec::of(&self.d, self.ceil_mode),
        )
    }
}

/// Average pooling of `x` [N, C, H, W].
#[derive(Clone)]
pub struct AvgPool2d {
    pub x: Tensor,
    pub d: PoolDims,
    pub ceil_mode: bool,
}

impl Record for AvgPool2d {
    crate::autograd::record::named!("avg_pool2d");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        pool_attributes(&self.d, self.ceil_mode)
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(avg_pool2d_grad(&self.x, self.d, g)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        avg_pool2d_with(
            first("avg_pool2d", xs)?,
            &PoolSpec::of(&self.d, self.ceil_mode),
        )
    }
}
