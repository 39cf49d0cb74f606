//! The comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=`): their names and IEEE meaning, shared by
//! the op (ops/compare.rs) and the kernels (backend/cpu/compare.rs).

/// Which comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }
    pub fn parse(s: &str) -> Option<CompareOp> {
        [
            CompareOp::Eq,
            CompareOp::Ne,
            CompareOp::Lt,
            CompareOp::Le,
            CompareOp::Gt,
            CompareOp::Ge,
        ]
        .into_iter()
        .find(|op| op.name() == s)
    }
    /// The comparison with its operands swapped: `a op b` is `b op.flipped() a`.
    pub fn flipped(self) -> CompareOp {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::Le => CompareOp::Ge,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::Ge => CompareOp::Le,
            same => same,
        }
    }
    /// IEEE comparisons: every one with a NaN is false except `!=`.
    pub fn apply<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CompareOp::Eq => a == b,
            CompareOp::Ne => a != b,
            CompareOp::Lt => a < b,
            CompareOp::Le => a <= b,
            CompareOp::Gt => a > b,
            CompareOp::Ge => a >= b,
        }
    }
}
