//! What every recorded op declares, once, beside its forward function: its inputs, the
//! attributes replay takes from the record, its gradient rule and its replay. The `Op` enum
//! (autograd/op.rs) lists the records; the backward walk, the compiled backend's trace
//! comparison and replay, graph printing and the ONNX export reach each op only through this
//! trait, so a new op is one record here and one line there.

use crate::{DType, Result, Shape, Tensor};
use std::fmt;

/// One recorded op: made by the op's forward function, kept by its result.
pub trait Record {
    /// The op's name in graphs, errors and the ONNX export (`softmax`, `conv2d_relu`, ...).
    fn name(&self) -> &'static str;

    /// Every name `name` can give for this kind of record.
    fn names() -> Vec<&'static str>
    where
        Self: Sized;

    /// The inputs, in argument order (the order backward visits them and replay passes them).
    fn inputs(&self) -> Vec<&Tensor>;

    /// Every attribute replay takes from the record, by name: two traces of a loss must agree
    /// on each, or the compiled graph would replay the first trace's value for every batch.
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![]
    }

    /// The gradient for each input given `g`, the gradient of `out` (this op's result); `None`
    /// for an input that needs none. Written with tensor ops (run under no_grad).
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>>;

    /// For a one-input op whose input already holds a gradient `prev` from elsewhere:
    /// `prev + (this op's gradient for it)` in one pass, where the op can do that without
    /// building its own gradient first (a slice adds `g` into its stretch of `prev`); the same
    /// bits as the add it replaces. None where the op cannot (the default).
    fn accumulate_input_grad(&self, _prev: &Tensor, _g: &Tensor) -> Option<Result<Tensor>> {
        None
    }

    /// The op run again on `xs` (new values of its inputs, in argument order) with the recorded
    /// attributes; `out` is the traced output shape. The same function eager runs, so the bits
    /// are the same.
    fn replay(&self, xs: &[Tensor], out: &Shape) -> Result<Tensor>;
}

/// `name` and `names` of a record whose op has one name: `named!("softmax");` in its impl.
macro_rules! named {
    ($name:literal) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn names() -> Vec<&'static str> {
            vec![$name]
        }
    };
}
pub(crate) use named;

/// Whether `t` wants a gradient (rules skip the work for inputs that do not).
pub(crate) fn need(t: &Tensor) -> bool {
    t.requires_grad()
}

/// The first of `xs` (a one-input op's replay argument), or an error naming the op.
pub(crate) fn first<'a>(op: &'static str, xs: &'a [Tensor]) -> Result<&'a Tensor> {
    xs.first()
        .ok_or_else(|| crate::Error::arg("graph", format!("{op} has no input")))
}

/// One attribute value; floats compare by their bits (so NaN equals NaN and 0.0 differs from -0.0).
#[derive(Clone)]
pub enum Attr {
    Float(Option<f64>),
    Count(Option<usize>),
    /// A signed integer option (cross-entropy's `ignore_index`); None: not set.
    Int(Option<i64>),
    Flag(bool),
    List(Vec<usize>),
    Mask(Vec<bool>),
    DType(DType),
}

impl PartialEq for Attr {
    fn eq(&self, other: &Attr) -> bool {
        match (self, other) {
            (Attr::Float(a), Attr::Float(b)) => a.map(f64::to_bits) == b.map(f64::to_bits),
            (Attr::Count(a), Attr::Count(b)) => a == b,
            (Attr::Int(a), Attr::Int(b)) => a == b,
            (Attr::Flag(a), Attr::Flag(b)) => a == b,
            (Attr::List(a), Attr::List(b)) => a == b,
            (Attr::Mask(a), Attr::Mask(b)) => a == b,
            (Attr::DType(a), Attr::DType(b)) => a == b,
            _ => false,
        }
    }
}

fn short<T: fmt::Debug>(v: &[T]) -> String {
    if v.len() <= 8 {
        format!("{v:?}")
    } else {
        format!("{:?}... ({} values)", &v[..8], v.len())
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attr::Float(None) | Attr::Count(None) | Attr::Int(None) => write!(f, "none"),
            Attr::Float(Some(x)) => write!(f, "{x:?}"),
            Attr::Count(Some(n)) => write!(f, "{n}"),
            Attr::Int(Some(n)) => write!(f, "{n}"),
            Attr::Flag(b) => write!(f, "{b}"),
            Attr::List(v) => write!(f, "{}", short(v)),
            Attr::Mask(v) => write!(f, "{}", short(v)),
            Attr::DType(d) => write!(f, "{d}"),
        }
    }
}

/// An axis attribute (`Count(None)`: all axes).
pub(crate) fn axis(a: Option<usize>) -> (&'static str, Attr) {
    ("axis", Attr::Count(a))
}
