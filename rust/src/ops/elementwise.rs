//! Elementwise ops: the unary and binary ops of the op table (`op_table/`), the scalar-parameter
//! maps pow and clamp, and broadcasting.
//! Each function checks its arguments, asks the storage to run the op on its device (the one
//! dispatch point, storage.rs) and records the op for autograd.

use crate::autograd::record::{first, need, Attr, Record};
use crate::ops::reduce::sum_to_shape;
use crate::shape::broadcast_shapes;
use crate::storage::Storage;
use crate::{Result, Shape, Tensor};

pub use crate::op_table::{BinaryOp, UnaryOp};

pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    float_only(op.name(), &[x])?;
    op.check()
        .map_err(|msg| crate::Error::arg(op.name(), msg))?;
    // The intermediate the gradient reuses, kept only where a gradient will be taken.
    if op.keeps_intermediate() && x.requires_grad() && crate::autograd::grad_enabled() {
        if let Some((s, kept)) = x.storage().unary_keeping(op)? {
            let kept = Tensor::from_storage(kept, x.shape().clone())?;
            let record = Unary {
                op,
                x: x.clone(),
                kept: Some(kept),
            };
            return Ok(Tensor::from_op(s, x.shape().clone(), record));
        }
    }
    let s = x.storage().unary(op)?;
    let record = Unary {
        op,
        x: x.clone(),
        kept: None,
    };
    Ok(Tensor::from_op(s, x.shape().clone(), record))
}

pub(crate) fn unary_grad(op: UnaryOp, x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    check_same_dtype(op.name(), &[x, y, g])?;
    let s = x.storage().unary_grad(op, y.storage(), g.storage())?;
    Tensor::from_storage(s, x.shape().clone())
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
    float_only("pow", &[x])?;
    let s = x.storage().pow(exponent)?;
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        Pow {
            x: x.clone(),
            exponent,
        },
    ))
}

pub(crate) fn pow_grad(x: &Tensor, exponent: f64, g: &Tensor) -> Result<Tensor> {
    check_same_dtype("pow", &[x, g])?;
    let s = x.storage().pow_grad(exponent, g.storage())?;
    Tensor::from_storage(s, x.shape().clone())
}

/// Clamps to [min, max]; either bound may be absent. NaN stays NaN.
pub fn clamp(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    float_only("clamp", &[x])?;
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(crate::Error::arg(
                "clamp",
                format!("expected min <= max, got min={lo}, max={hi}"),
            ));
        }
    }
    let s = x.storage().clamp(min, max)?;
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        Clamp {
            x: x.clone(),
            min,
            max,
        },
    ))
}

pub(crate) fn clamp_grad(
    x: &Tensor,
    min: Option<f64>,
    max: Option<f64>,
    g: &Tensor,
) -> Result<Tensor> {
    check_same_dtype("clamp", &[x, g])?;
    let s = x.storage().clamp_grad(min, max, g.storage())?;
    Tensor::from_storage(s, x.shape().clone())
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
/// Refuses integer and bool operands of an op that computes in floating point, naming it.
pub(crate) fn float_only(op: &'static str, ts: &[&Tensor]) -> Result<()> {
    match ts.iter().find(|t| !t.dtype().is_float()) {
        Some(t) => Err(crate::error::not_float(op, t.dtype())),
        None => Ok(()),
    }
}

pub(crate) fn check_same_dtype(op: &'static str, ts: &[&Tensor]) -> Result<()> {
    if let Some(first) = ts.first() {
        if let Some(t) = ts.iter().find(|t| t.dtype() != first.dtype()) {
            return Err(crate::storage::dtype_mismatch(op, first.dtype(), t.dtype()));
        }
    }
    Ok(())
}

/// Whether `t` is a host scalar (rank 0) that may meet a tensor on another device: it moves to
/// that device, as PyTorch allows.
fn host_scalar(t: &Tensor) -> bool {
    t.on_host() && t.rank() == 0
}

/// A CPU scalar (rank 0) meeting a device tensor moves to that device, as PyTorch allows;
/// any other device mismatch is an error.
fn align_scalar(op: &'static str, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    if a.device() == b.device() {
        Ok((a.clone(), b.clone()))
    } else if host_scalar(a) {
        Ok((a.to_device(b.device())?, b.clone()))
    } else if host_scalar(b) {
        Ok((a.clone(), b.to_device(a.device())?))
    } else {
        check_same_device(op, a, b).map(|_| (a.clone(), b.clone()))
    }
}

/// A device tensor with a CPU scalar of its dtype: the scalar goes to the kernel by value
/// (no copy to the device).
fn scalar_by_value(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Option<Storage>> {
    if a.dtype() != b.dtype() || a.device() == b.device() {
        return Ok(None);
    }
    // The devices differ, so the other operand of a host scalar is on a device.
    let (x, s, left) = if host_scalar(b) {
        (a, b, false)
    } else if host_scalar(a) {
        (b, a, true)
    } else {
        return Ok(None);
    };
    Ok(Some(x.storage().binary_scalar(op, s.item()?, left)?))
}

pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    float_only(op.name(), &[a, b])?;
    let record = || Binary {
        op,
        a: a.clone(),
        b: b.clone(),
    };
    if let Some(s) = scalar_by_value(op, a, b)? {
        let shape = if a.rank() == 0 { b.shape() } else { a.shape() };
        return Ok(Tensor::from_op(s, shape.clone(), record()));
    }
    let (da, db) = align_scalar(op.name(), a, b)?;
    let out = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    check_same_dtype(op.name(), &[a, b])?;
    let s = da
        .storage()
        .binary(op, a.shape(), db.storage(), b.shape(), &out)?;
    Ok(Tensor::from_op(s, out, record()))
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
    let (da, db) = align_scalar(op.name(), a, b)?;
    check_same_dtype(op.name(), &[a, b])?;
    let max = op == BinaryOp::Maximum;
    let s = da
        .storage()
        .select_weight(max, a.shape(), db.storage(), b.shape(), &out)?;
    Tensor::from_storage(s, out)
}

/// A scalar of `like`'s dtype.
pub fn scalar_like(v: f64, like: &Tensor) -> Tensor {
    Tensor::scalar(v, like.dtype())
}

/// An op of the unary table on `x`, with the intermediate its forward pass kept for the
/// gradient (`UnaryOp::keeps_intermediate`), if any.
#[derive(Clone)]
pub struct Unary {
    pub op: UnaryOp,
    pub x: Tensor,
    pub kept: Option<Tensor>,
}

impl Record for Unary {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn names() -> Vec<&'static str> {
        crate::op_table::UNARY_INFO.iter().map(|u| u.name).collect()
    }
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    /// The table op's scalar parameters (leaky_relu's slope, hardtanh's bounds).
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        self.op
            .params()
            .into_iter()
            .map(|(name, v)| (name, Attr::Float(Some(v))))
            .collect()
    }
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let gx = match &self.kept {
            Some(kept) => {
                check_same_dtype(self.op.name(), &[&self.x, kept, g])?;
                let s = (self.x.storage()).unary_grad_kept(self.op, kept.storage(), g.storage())?;
                Tensor::from_storage(s, self.x.shape().clone())?
            }
            None => unary_grad(self.op, &self.x, out, g)?,
        };
        Ok(vec![Some(gx)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        unary(self.op, first(self.op.name(), xs)?)
    }
}

/// x ** a scalar exponent.
#[derive(Clone)]
pub struct Pow {
    pub x: Tensor,
    pub exponent: f64,
}

impl Record for Pow {
    crate::autograd::record::named!("pow");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![("exponent", Attr::Float(Some(self.exponent)))]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(pow_grad(&self.x, self.exponent, g)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        pow(first("pow", xs)?, self.exponent)
    }
}

/// x clamped to [min, max] (either bound may be absent).
#[derive(Clone)]
pub struct Clamp {
    pub x: Tensor,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl Record for Clamp {
    crate::autograd::record::named!("clamp");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("min", Attr::Float(self.min)),
            ("max", Attr::Float(self.max)),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(clamp_grad(&self.x, self.min, self.max, g)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        clamp(first("clamp", xs)?, self.min, self.max)
    }
}

/// An op of the binary table on `a` and `b` (broadcast).
#[derive(Clone)]
pub struct Binary {
    pub op: BinaryOp,
    pub a: Tensor,
    pub b: Tensor,
}

impl Record for Binary {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn names() -> Vec<&'static str> {
        crate::op_table::BINARY_INFO
            .iter()
            .map(|b| b.name)
            .collect()
    }
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.a, &self.b]
    }
    /// Each input's table rule, summed back over the axes it was broadcast along.
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (a, b) = (&self.a, &self.b);
        let (ga, gb) = binary_grads(self.op, a, b, out, g)?;
        Ok(vec![
            ga.map(|t| sum_to_shape(&t, a.shape())).transpose()?,
            gb.map(|t| sum_to_shape(&t, b.shape())).transpose()?,
        ])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        match xs {
            [a, b, ..] => binary(self.op, a, b),
            _ => Err(crate::Error::arg(
                "graph",
                format!("{} needs two inputs", self.op.name()),
            )),
        }
    }
}

/// The refusal of ops that are themselves gradients (tensor_pow's and atan2's partial
/// derivatives), naming the op whose second derivative it would be.
fn no_second_derivative(op: &'static str) -> crate::Error {
    crate::Error::arg(op, "its second derivative is not supported")
}

/// Zeros shaped like `g`, on its device: the gradient of an op that is flat almost everywhere
/// (PyTorch's `zeros_like(grad)`, so a NaN or infinite `g` still gives 0).
fn zeros_like(g: &Tensor) -> Result<Tensor> {
    Tensor::full_on(g.shape().clone(), 0.0, g.dtype(), g.device())
}

/// A rule of the binary table: (g, a, b, out) to the gradient for one input.
fn rule<F>(f: F, g: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Tensor>
where
    F: FnOnce(&Tensor, &Tensor, &Tensor, &Tensor) -> Result<Tensor>,
{
    f(g, a, b, out)
}

// The gradients of a binary op from its table entry (op_table/binary.rs), each computed only
// for an input that requires one; shaped like the broadcast output.
macro_rules! binary_grad_rules {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        py: $py:ident,
        f: $f:expr,
        cuda: $cuda:literal,
        da: $da:expr,
        db: $db:expr $(,)?
    } )*) => {
        type Grads = (Option<Tensor>, Option<Tensor>);

        fn binary_grads(op: BinaryOp, a: &Tensor, b: &Tensor, out: &Tensor, g: &Tensor) -> Result<Grads> {
            Ok(match op {
                $( BinaryOp::$V => (
                    need(a).then(|| rule($da, g, a, b, out)).transpose()?,
                    need(b).then(|| rule($db, g, a, b, out)).transpose()?,
                ), )*
            })
        }
    };
}
crate::op_table::binary_ops!(binary_grad_rules);
