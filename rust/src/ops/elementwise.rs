//! Elementwise ops: the unary and binary ops of the op table (`op_table/`), the scalar-parameter
//! maps pow and clamp, and broadcasting.
//! Each element is one correctly rounded operation (or a libm call) in the tensor's dtype.

use crate::autograd::Op;
use crate::backend::cpu::elementwise as k;
use crate::backend::cpu::table_kernels as tk;
use crate::backend::cuda::ops as cu;
use crate::shape::{broadcast_shapes, broadcast_strides};
use crate::storage::{CpuStorage, Storage};
use crate::{map_cpu, map_cpu2, Device, Result, Tensor};

pub(crate) use super::device::{dev, on_dev};

pub use crate::op_table::{BinaryOp, UnaryOp};

pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    op.check()
        .map_err(|msg| crate::Error::arg(op.name(), msg))?;
    let s: Storage = match x.storage() {
        Storage::Cpu(c) => map_cpu!(c, |v| tk::unary(op, v)).into(),
        Storage::Cuda(c) => cu::unary(op.name(), &c.0, &param_values(op))?.into(),
    };
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        Op::Unary(op, x.clone()),
    ))
}

fn param_values(op: UnaryOp) -> Vec<f64> {
    op.params().into_iter().map(|(_, v)| v).collect()
}

pub(crate) fn unary_grad(op: UnaryOp, x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    if let Some(xb) = dev(x) {
        check_same_dtype(op.name(), &[x, y, g])?;
        let s = cu::unary_grad(
            op.name(),
            xb,
            on_dev(op.name(), x, y)?,
            on_dev(op.name(), x, g)?,
            &param_values(op),
        )?;
        return Tensor::from_storage(s, x.shape().clone());
    }
    let s = match (x.cpu()?, y.cpu()?, g.cpu()?) {
        (CpuStorage::F32(x), CpuStorage::F32(y), CpuStorage::F32(g)) => {
            CpuStorage::F32(tk::unary_grad(op, x, y, g))
        }
        (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(g)) => {
            CpuStorage::F64(tk::unary_grad(op, x, y, g))
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

// One public function per table entry: `neg(&x)`, `leaky_relu(&x, negative_slope)`, ...
macro_rules! unary_functions {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        method: [$($method:ident)?],
        params: [$($p:ident = $d:literal),*],
        require: [$($req:expr => $msg:literal),*],
        f: $f:expr,
        df: $src:ident $df:expr,
        cuda: $cuda:literal,
        cuda_df: $cuda_df:literal $(,)?
    } )*) => {$(
        #[doc = $doc]
        pub fn $name(x: &Tensor $(, $p: f64)*) -> Result<Tensor> {
            unary(UnaryOp::$V { $($p),* }, x)
        }
    )*};
}
crate::op_table::unary_ops!(unary_functions);

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
    let s = map_cpu2!(op.name(), a.cpu()?, b.cpu()?, |x, y| tk::binary(
        op, x, &sa, y, &sb, &out, same
    ))?;
    Ok(Tensor::from_op(
        s,
        out,
        Op::Binary(op, a.clone(), b.clone()),
    ))
}

// One public function per binary table entry: `add(&a, &b)`, ...
macro_rules! binary_functions {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        py: $py:ident,
        f: $f:expr,
        cuda: $cuda:literal,
        da: $da:expr,
        db: $db:expr $(,)?
    } )*) => {$(
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor> {
            binary(BinaryOp::$V, a, b)
        }
    )*};
}
crate::op_table::binary_ops!(binary_functions);

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
