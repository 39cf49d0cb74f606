//! The attributes an op record carries besides its inputs (exponents, bounds, axes, indices,
//! masks, geometry, cast targets): two traces of a loss must agree on every one, or the graph
//! would replay the first trace's value for every batch.

use crate::autograd::Op;
use crate::DType;
use std::fmt;

/// One attribute value; floats compare by their bits (so NaN equals NaN and 0.0 differs from -0.0).
#[derive(Clone)]
pub enum Attr {
    Float(Option<f64>),
    Count(Option<usize>),
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
            Attr::Float(None) | Attr::Count(None) => write!(f, "none"),
            Attr::Float(Some(x)) => write!(f, "{x:?}"),
            Attr::Count(Some(n)) => write!(f, "{n}"),
            Attr::Flag(b) => write!(f, "{b}"),
            Attr::List(v) => write!(f, "{}", short(v)),
            Attr::Mask(v) => write!(f, "{}", short(v)),
            Attr::DType(d) => write!(f, "{d}"),
        }
    }
}

fn geometry(stride: usize, pad: usize, kh: usize, kw: usize) -> Vec<(&'static str, Attr)> {
    vec![
        ("stride", Attr::Count(Some(stride))),
        ("padding", Attr::Count(Some(pad))),
        ("kernel_h", Attr::Count(Some(kh))),
        ("kernel_w", Attr::Count(Some(kw))),
    ]
}

/// A pooling op's window (kernel, stride, padding and dilation as [rows, columns]), rounding
/// and average pooling's divisor rule.
fn pool_geometry(d: &crate::geometry::PoolDims, ceil_mode: bool) -> Vec<(&'static str, Attr)> {
    use crate::geometry::AvgDivisor;
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

/// Every attribute of `op` that replay takes from the record, by name.
pub fn attributes(op: &Op) -> Vec<(&'static str, Attr)> {
    let axis = |a: &Option<usize>| ("axis", Attr::Count(*a));
    match op {
        Op::Cast(_, to) => vec![("dtype", Attr::DType(*to))],
        Op::Pow(_, e) => vec![("exponent", Attr::Float(Some(*e)))],
        Op::Clamp(_, lo, hi) => vec![("min", Attr::Float(*lo)), ("max", Attr::Float(*hi))],
        Op::Sum {
            axis: a, keepdim, ..
        }
        | Op::Mean {
            axis: a, keepdim, ..
        }
        | Op::Max {
            axis: a, keepdim, ..
        } => vec![axis(a), ("keepdim", Attr::Flag(*keepdim))],
        Op::Permute(_, p) => vec![("dims", Attr::List(p.clone()))],
        Op::Concat(_, a) => vec![("axis", Attr::Count(Some(*a)))],
        Op::Slice {
            axis: a,
            start,
            end,
            ..
        } => vec![
            ("axis", Attr::Count(Some(*a))),
            ("start", Attr::Count(Some(*start))),
            ("end", Attr::Count(Some(*end))),
        ],
        Op::IndexSelect { axis: a, index, .. } => vec![
            ("axis", Attr::Count(Some(*a))),
            ("index", Attr::List(index.to_vec())),
        ],
        Op::Matmul { ta, tb, .. } => {
            vec![
                ("transpose_a", Attr::Flag(*ta)),
                ("transpose_b", Attr::Flag(*tb)),
            ]
        }
        Op::Softmax { axis: a, .. } | Op::LogSoftmax { axis: a, .. } => {
            vec![("axis", Attr::Count(Some(*a)))]
        }
        Op::NllLoss { target, .. } => vec![("target", Attr::List(target.to_vec()))],
        Op::Conv2d { d, .. } => geometry(d.stride, d.pad, d.kh, d.kw),
        Op::MaxPool2d { d, ceil_mode, .. } | Op::AvgPool2d { d, ceil_mode, .. } => {
            pool_geometry(d, *ceil_mode)
        }
        Op::Gather {
            axis: a,
            index,
            index_shape,
            ..
        } => vec![
            ("axis", Attr::Count(Some(*a))),
            ("index", Attr::List(index.to_vec())),
            ("index_shape", Attr::List(index_shape.dims().to_vec())),
        ],
        Op::ScatterAdd { axis: a, index, .. } => vec![
            ("axis", Attr::Count(Some(*a))),
            ("index", Attr::List(index.to_vec())),
        ],
        Op::MaskedFill { mask, value, .. } => vec![
            ("mask", Attr::Mask(mask.to_vec())),
            ("value", Attr::Float(Some(*value))),
        ],
        Op::BatchNormPerImage { w, b, eps, .. } => vec![
            ("eps", Attr::Float(Some(*eps))),
            ("weight", Attr::Flag(w.is_some())),
            ("bias", Attr::Flag(b.is_some())),
        ],
        // Built by the fusion pass after the traces are compared; its steps say what it runs.
        Op::Chain { steps, head, .. } => vec![
            ("steps", Attr::Count(Some(steps.len()))),
            ("head", Attr::Count(Some(*head))),
        ],
        // A table op's scalar parameters (leaky_relu's slope, hardtanh's bounds).
        Op::Unary(u, _) => u
            .params()
            .into_iter()
            .map(|(name, v)| (name, Attr::Float(Some(v))))
            .collect(),
        // The rest carry nothing beyond their inputs and the node's (compared) output shape.
        Op::ToDevice(_) | Op::Binary(..) | Op::SumTo(_) | Op::BroadcastTo(_) | Op::Reshape(_) => {
            vec![]
        }
    }
}

/// The first attribute on which two records of the same op differ: (name, value a, value b).
pub fn first_changed(a: &Op, b: &Op) -> Option<(&'static str, String, String)> {
    attributes(a)
        .into_iter()
        .zip(attributes(b))
        .find(|((_, x), (_, y))| x != y)
        .map(|((name, x), (_, y))| (name, x.to_string(), y.to_string()))
}
