//! The compiled graph's convolution epilogue pass: a ReLU whose input is a convolution read by
//! nothing else becomes that convolution's activation (`Op::Conv2d { act: Relu }`), applied by
//! the conv kernels to each output as they write it, so the separate pass over the output and
//! its buffer go away.
//!
//! Bits stay those of the two ops: the kernels apply the `relu` op's formula to the value the
//! convolution alone would have stored, and the gradient masks by the output (y > 0 exactly
//! where the pre-activation was > 0). The fused node takes the ReLU's place and the
//! convolution's inputs in their order, so the backward's depth-first walk meets every other
//! node in the same order as before and gradient sums keep their order.

use super::fuse::rebuild;
use super::ir::{Graph, NodeKind};
use crate::autograd::Op;
use crate::geometry::Activation;
use crate::ops::UnaryOp;

/// `g` with every ReLU that is its convolution's only reader folded into that convolution.
pub fn fuse_conv_relu(g: &Graph) -> Graph {
    let uses = g.reader_counts();
    let mut replaced = vec![None; g.nodes.len()];
    let mut absorbed = vec![false; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        let NodeKind::Op {
            op: Op::Unary(relu),
            inputs,
        } = &n.kind
        else {
            continue;
        };
        let j = inputs[0];
        if relu.op != UnaryOp::Relu || uses[j] != 1 {
            continue;
        }
        if let NodeKind::Op {
            op: Op::Conv2d(conv),
            inputs: conv_inputs,
        } = &g.nodes[j].kind
        {
            if conv.act != Activation::None {
                continue;
            }
            let mut fused = conv.clone();
            fused.act = Activation::Relu;
            replaced[i] = Some((Op::Conv2d(fused), conv_inputs.clone()));
            absorbed[j] = true;
        }
    }
    rebuild(g, replaced, &absorbed)
}
