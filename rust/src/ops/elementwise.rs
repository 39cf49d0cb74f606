//! Elementwise ops: unary maps, scalar-parameter maps (pow, clamp) and broadcast binary ops.
//! Each element is one correctly rounded operation (or a libm call) in the tensor's dtype.

use crate::autograd::Op;
use crate::backend::cpu::elementwise as k;
use crate::backend::cuda::ops as cu;
use crate::dtype::Float;
use crate::shape::{broadcast_shapes, broadcast_strides};
use crate::storage::{CpuStorage, Storage};
use crate::{map_cpu, map_cpu2, Device, Result, Tensor};

pub(crate) use super::device::{dev, on_dev};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Exp,
    Log,
    Sqrt,
    Abs,
    Relu,
    Tanh,
    Sigmoid,
    Gelu,
    Softplus,
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Relu => "relu",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Gelu => "gelu",
            UnaryOp::Softplus => "softplus",
        }
    }
}

// Softplus returns x itself above this, as PyTorch does (beta = 1, threshold = 20).
const SOFTPLUS_THRESHOLD: f64 = 20.0;

fn unary_kernel<T: Float>(op: UnaryOp, x: &[T]) -> Vec<T> {
    let half = T::from_f64(0.5);
    let inv_sqrt2 = T::from_f64(std::f64::consts::FRAC_1_SQRT_2);
    let thr = T::from_f64(SOFTPLUS_THRESHOLD);
    match op {
        UnaryOp::Neg => k::map(x, |v| -v),
        UnaryOp::Exp => k::map(x, |v| v.exp()),
        UnaryOp::Log => k::map(x, |v| v.ln()),
        UnaryOp::Sqrt => k::map(x, |v| v.sqrt()),
        UnaryOp::Abs => k::map(x, |v| v.abs()),
        // NaN propagates (it is not > 0, but it is kept).
        UnaryOp::Relu => k::map(x, |v| {
            if v > T::ZERO || v.is_nan() {
                v
            } else {
                T::ZERO
            }
        }),
        UnaryOp::Tanh => k::map(x, |v| v.tanh()),
        UnaryOp::Sigmoid => k::map(x, |v| T::ONE / (T::ONE + (-v).exp())),
        UnaryOp::Gelu => k::map(x, |v| half * v * (T::ONE + (v * inv_sqrt2).erf())),
        UnaryOp::Softplus => k::map(x, |v| if v > thr { v } else { v.exp().log1p() }),
    }
}

/// d(op)/dx times g, from the input `x` and the output `y`.
fn unary_grad_kernel<T: Float>(op: UnaryOp, x: &[T], y: &[T], g: &[T]) -> Vec<T> {
    let half = T::from_f64(0.5);
    let two = T::from_f64(2.0);
    let inv_sqrt2 = T::from_f64(std::f64::consts::FRAC_1_SQRT_2);
    let inv_sqrt_2pi = T::from_f64(0.398_942_280_401_432_7);
    let thr = T::from_f64(SOFTPLUS_THRESHOLD);
    match op {
        UnaryOp::Neg => k::map(g, |g| -g),
        UnaryOp::Exp => k::zip_map(g, y, |g, y| g * y),
        UnaryOp::Log => k::zip_map(g, x, |g, x| g / x),
        UnaryOp::Sqrt => k::zip_map(g, y, |g, y| g / (two * y)),
        UnaryOp::Abs => k::zip_map(g, x, |g, x| {
            if x > T::ZERO {
                g
            } else if x < T::ZERO {
                -g
            } else {
                T::ZERO
            }
        }),
        UnaryOp::Relu => k::zip_map(g, x, |g, x| if x > T::ZERO { g } else { T::ZERO }),
        UnaryOp::Tanh => k::zip_map(g, y, |g, y| g * (T::ONE - y * y)),
        UnaryOp::Sigmoid => k::zip_map(g, y, |g, y| g * (y * (T::ONE - y))),
        UnaryOp::Gelu => k::zip_map(g, x, |g, x| {
            let cdf = half * (T::ONE + (x * inv_sqrt2).erf());
            let pdf = inv_sqrt_2pi * (-(half * x * x)).exp();
            g * (cdf + x * pdf)
        }),
        UnaryOp::Softplus => k::zip_map(g, x, |g, x| {
            if x > thr {
                g
            } else {
                g * (T::ONE / (T::ONE + (-x).exp()))
            }
        }),
    }
}

pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let s: Storage = match x.storage() {
        Storage::Cpu(c) => map_cpu!(c, |v| unary_kernel(op, v)).into(),
        Storage::Cuda(c) => cu::unary(op.name(), &c.0)?.into(),
    };
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        Op::Unary(op, x.clone()),
    ))
}

pub(crate) fn unary_grad(op: UnaryOp, x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    if let Some(xb) = dev(x) {
        check_same_dtype(op.name(), &[x, y, g])?;
        let s = cu::unary_grad(
            op.name(),
            xb,
            on_dev(op.name(), x, y)?,
            on_dev(op.name(), x, g)?,
        )?;
        return Tensor::from_storage(s, x.shape().clone());
    }
    let s = match (x.cpu()?, y.cpu()?, g.cpu()?) {
        (CpuStorage::F32(x), CpuStorage::F32(y), CpuStorage::F32(g)) => {
            CpuStorage::F32(unary_grad_kernel(op, x, y, g))
        }
        (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(g)) => {
            CpuStorage::F64(unary_grad_kernel(op, x, y, g))
        }
        _ => {
            return Err(crate::storage::dtype_mismatch(
                op.name(),
                x.dtype(),
                g.dtype(),
            ))
        }
    };
    Tensor::from_cpu(s, x.shape().clone())
}

pub fn neg(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Neg, x)
}
pub fn exp(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Exp, x)
}
pub fn log(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Log, x)
}
pub fn sqrt(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Sqrt, x)
}
pub fn abs(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Abs, x)
}
pub fn relu(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Relu, x)
}
pub fn tanh(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Tanh, x)
}
pub fn sigmoid(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Sigmoid, x)
}
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Gelu, x)
}
pub fn softplus(x: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Softplus, x)
}

/// x ** exponent (a scalar exponent; libm `pow`).
pub fn pow(x: &Tensor, exponent: f64) -> Result<Tensor> {
    let s: Storage = match x.storage() {
        Storage::Cuda(c) => cu::pow(&c.0, exponent)?.into(),
        Storage::Cpu(c) => map_cpu!(c, |v| {
            let e = crate::dtype::lit(v, exponent);
            k::map(v, |x| x.powf(e))
        })
        .into(),
    };
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        Op::Pow(x.clone(), exponent),
    ))
}

pub(crate) fn pow_grad(x: &Tensor, exponent: f64, g: &Tensor) -> Result<Tensor> {
    if let Some(xb) = dev(x) {
        check_same_dtype("pow", &[x, g])?;
        let s = cu::pow_grad(xb, on_dev("pow", x, g)?, exponent)?;
        return Tensor::from_storage(s, x.shape().clone());
    }
    let s = map_cpu2!("pow", x.cpu()?, g.cpu()?, |x, g| {
        let e = crate::dtype::lit(x, exponent);
        let em1 = crate::dtype::lit(x, exponent - 1.0);
        k::zip_map(g, x, |g, x| g * (e * x.powf(em1)))
    })?;
    Tensor::from_cpu(s, x.shape().clone())
}

/// Clamps to [min, max]; either bound may be absent. NaN stays NaN.
pub fn clamp(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(crate::Error::arg(
                "clamp",
                format!("expected min <= max, got min={lo}, max={hi}"),
            ));
        }
    }
    if let Some(xb) = dev(x) {
        let s = cu::clamp(xb, min, max)?;
        return Ok(Tensor::from_op(
            s,
            x.shape().clone(),
            Op::Clamp(x.clone(), min, max),
        ));
    }
    let s = map_cpu!(x.cpu()?, |v| {
        let lo = min.map(|m| crate::dtype::lit(v, m));
        let hi = max.map(|m| crate::dtype::lit(v, m));
        k::map(v, |x| {
            let x = match lo {
                Some(lo) if x < lo => lo,
                _ => x,
            };
            match hi {
                Some(hi) if x > hi => hi,
                _ => x,
            }
        })
    });
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        Op::Clamp(x.clone(), min, max),
    ))
}

pub(crate) fn clamp_grad(
    x: &Tensor,
    min: Option<f64>,
    max: Option<f64>,
    g: &Tensor,
) -> Result<Tensor> {
    if let Some(xb) = dev(x) {
        check_same_dtype("clamp", &[x, g])?;
        let s = cu::clamp_grad(xb, on_dev("clamp", x, g)?, min, max)?;
        return Tensor::from_storage(s, x.shape().clone());
    }
    let s = map_cpu2!("clamp", x.cpu()?, g.cpu()?, |x, g| {
        let lo = min.map(|m| crate::dtype::lit(x, m));
        let hi = max.map(|m| crate::dtype::lit(x, m));
        let zero = crate::dtype::lit(x, 0.0);
        k::zip_map(g, x, |g, x| {
            let inside = lo.is_none_or(|lo| x >= lo) && hi.is_none_or(|hi| x <= hi);
            if inside {
                g
            } else {
                zero
            }
        })
    })?;
    Tensor::from_cpu(s, x.shape().clone())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Maximum,
    Minimum,
    /// a ** b elementwise (IEEE `pow`, from libm), for tensor exponents and `number ** tensor`.
    Pow,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Pow => "tensor_pow",
        }
    }
}

fn binary_kernel<T: Float>(
    op: BinaryOp,
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    out: &crate::Shape,
    same: bool,
) -> Vec<T> {
    macro_rules! go {
        ($f:expr) => {
            if same {
                k::zip_map(a, b, $f)
            } else {
                k::broadcast_map(a, sa, b, sb, out, $f)
            }
        };
    }
    match op {
        BinaryOp::Add => go!(|x, y| x + y),
        BinaryOp::Sub => go!(|x, y| x - y),
        BinaryOp::Mul => go!(|x, y| x * y),
        BinaryOp::Div => go!(|x, y| x / y),
        BinaryOp::Pow => go!(|x: T, y: T| x.powf(y)),
        BinaryOp::Maximum => go!(|x: T, y: T| if x.is_nan() || x > y {
            x
        } else if y.is_nan() || y > x {
            y
        } else {
            x
        }),
        BinaryOp::Minimum => go!(|x: T, y: T| if x.is_nan() || x < y {
            x
        } else if y.is_nan() || y < x {
            y
        } else {
            x
        }),
    }
}

pub(crate) fn check_same_device(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.device() != b.device() {
        return Err(crate::Error::Device {
            op,
            expected: format!("one device ({})", a.device()),
            got: format!("{} and {}", a.device(), b.device()),
        });
    }
    Ok(())
}

/// Fails naming `op` when the tensors do not all share the first one's dtype.
pub(crate) fn check_same_dtype(op: &'static str, ts: &[&Tensor]) -> Result<()> {
    if let Some(first) = ts.first() {
        if let Some(t) = ts.iter().find(|t| t.dtype() != first.dtype()) {
            return Err(crate::storage::dtype_mismatch(op, first.dtype(), t.dtype()));
        }
    }
    Ok(())
}

/// A CPU scalar (rank 0) meeting a device tensor moves to that device, as PyTorch allows;
/// any other device mismatch is an error.
fn align_scalar(op: &'static str, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    match (a.device(), b.device()) {
        (da, db) if da == db => Ok((a.clone(), b.clone())),
        (Device::Cpu, d) if a.rank() == 0 => Ok((a.to_device(d)?, b.clone())),
        (d, Device::Cpu) if b.rank() == 0 => Ok((a.clone(), b.to_device(d)?)),
        _ => check_same_device(op, a, b).map(|_| (a.clone(), b.clone())),
    }
}

/// A device tensor with a CPU scalar of its dtype: the scalar goes to the kernel by value.
fn device_scalar(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Option<Storage>> {
    if a.dtype() != b.dtype() {
        return Ok(None);
    }
    let (x, s, left) = match (dev(a), dev(b)) {
        (Some(x), None) if b.rank() == 0 => (x, b, false),
        (None, Some(x)) if a.rank() == 0 => (x, a, true),
        _ => return Ok(None),
    };
    Ok(Some(
        cu::binary_scalar(op.name(), x, s.item()?, left)?.into(),
    ))
}

pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if let Some(s) = device_scalar(op, a, b)? {
        let shape = if a.rank() == 0 { b.shape() } else { a.shape() };
        return Ok(Tensor::from_op(
            s,
            shape.clone(),
            Op::Binary(op, a.clone(), b.clone()),
        ));
    }
    let (da, db) = align_scalar(op.name(), a, b)?;
    if let (Some(x), Some(y)) = (dev(&da), dev(&db)) {
        check_same_dtype(op.name(), &[a, b])?;
        let out = broadcast_shapes(op.name(), a.shape(), b.shape())?;
        let s = cu::binary(op.name(), x, a.shape(), y, b.shape(), &out)?;
        return Ok(Tensor::from_op(
            s,
            out,
            Op::Binary(op, a.clone(), b.clone()),
        ));
    }
    check_same_device(op.name(), a, b)?;
    let out = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let same = a.shape() == b.shape();
    let (sa, sb) = (
        broadcast_strides(a.shape(), &out),
        broadcast_strides(b.shape(), &out),
    );
    let s = map_cpu2!(op.name(), a.cpu()?, b.cpu()?, |x, y| binary_kernel(
        op, x, &sa, y, &sb, &out, same
    ))?;
    Ok(Tensor::from_op(
        s,
        out,
        Op::Binary(op, a.clone(), b.clone()),
    ))
}

pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Add, a, b)
}
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Sub, a, b)
}
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Mul, a, b)
}
pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Div, a, b)
}
pub fn maximum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Maximum, a, b)
}
pub fn minimum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Minimum, a, b)
}

/// Where `a` wins a maximum/minimum: 1, where it ties: 0.5, else 0 (ties split the gradient,
/// as PyTorch does).
pub(crate) fn select_weight(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let (sa, sb) = (
        broadcast_strides(a.shape(), &out),
        broadcast_strides(b.shape(), &out),
    );
    let max = op == BinaryOp::Maximum;
    let (da, db) = align_scalar(op.name(), a, b)?;
    if let (Some(x), Some(y)) = (dev(&da), dev(&db)) {
        check_same_dtype(op.name(), &[a, b])?;
        let s = cu::select_weight(max, x, a.shape(), y, b.shape(), &out)?;
        return Tensor::from_storage(s, out);
    }
    let s = map_cpu2!(op.name(), a.cpu()?, b.cpu()?, |x, y| {
        let (zero, half, one) = (
            crate::dtype::lit(x, 0.0),
            crate::dtype::lit(x, 0.5),
            crate::dtype::lit(x, 1.0),
        );
        k::broadcast_map(x, &sa, y, &sb, &out, |x, y| {
            let wins = if max { x > y } else { x < y };
            if x == y {
                half
            } else if wins || x.is_nan() {
                one
            } else {
                zero
            }
        })
    })?;
    Tensor::from_cpu(s, out)
}

/// A scalar of `like`'s dtype.
pub fn scalar_like(v: f64, like: &Tensor) -> Tensor {
    Tensor::scalar(v, like.dtype())
}
