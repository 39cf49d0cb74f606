//! A chain of table ops applied to one running value, as the compiled backend fuses them
//! (`graph/fuse.rs`): each step is a unary op, or a binary op between the running value and one
//! of the chain's other inputs. Every step still rounds its result, so a fused pass gives the
//! bits of the ops run one by one.

use super::{BinaryOp, UnaryOp};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ChainStep {
    Unary(UnaryOp),
    /// `op` between the running value and the chain's input `operand`; `value_left` when the
    /// running value is the left operand (`v - w`), else it is the right one (`w - v`).
    Binary {
        op: BinaryOp,
        operand: usize,
        value_left: bool,
    },
}

impl ChainStep {
    /// Whether a binary op can be a step: the ones whose gradient rules the fused kernel
    /// evaluates element by element (`backend/cpu/fused.rs`).
    pub fn fusable_binary(op: BinaryOp) -> bool {
        matches!(
            op,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        )
    }
}

/// One input's gradient from a fused chain's backward.
#[derive(Debug)]
pub enum ChainGrad<S> {
    /// Not asked for.
    Skip,
    Own(S),
    /// Bit for bit the head's gradient (an add whose value reaches the head unchanged), which
    /// is shared rather than written twice.
    SameAsHead,
}

impl<S> ChainGrad<S> {
    pub fn map<R>(self, f: impl FnOnce(S) -> R) -> ChainGrad<R> {
        match self {
            ChainGrad::Skip => ChainGrad::Skip,
            ChainGrad::Own(s) => ChainGrad::Own(f(s)),
            ChainGrad::SameAsHead => ChainGrad::SameAsHead,
        }
    }
}

impl ChainStep {
    /// Whether the running value's gradient passes through this step unchanged (`v + w`,
    /// `w + v`, `v - w`).
    pub fn passes_gradient(&self) -> bool {
        matches!(
            self,
            ChainStep::Binary {
                op: BinaryOp::Add,
                ..
            } | ChainStep::Binary {
                op: BinaryOp::Sub,
                value_left: true,
                ..
            }
        )
    }

    /// For each input of a chain with `n_inputs`, whether its gradient is the head's: the
    /// operand of an add reached from the head through steps that all pass the gradient on.
    pub fn same_as_head(steps: &[ChainStep], n_inputs: usize) -> Vec<bool> {
        let mut same = vec![false; n_inputs];
        for step in steps {
            if let ChainStep::Binary {
                op: BinaryOp::Add,
                operand,
                ..
            } = *step
            {
                same[operand] = true;
            }
            if !step.passes_gradient() {
                break;
            }
        }
        same
    }
}

impl fmt::Display for ChainStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainStep::Unary(u) => write!(f, "{}", u.name()),
            ChainStep::Binary {
                op,
                operand,
                value_left: true,
            } => write!(f, "{}(_, #{operand})", op.name()),
            ChainStep::Binary { op, operand, .. } => write!(f, "{}(#{operand}, _)", op.name()),
        }
    }
}
