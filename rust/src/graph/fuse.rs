//! The compiled graph's fusion pass: runs of elementwise table ops on one running value become
//! one `fused_chain` op (ops/fused.rs), computed in one pass with no intermediate tensors, and
//! differentiated in one more. A run is fused only where the result stays bit-identical to the
//! traced ops one by one, forward and backward:
//! - each interior value has the run as its only consumer (nothing else reads it);
//! - the other operands have the running value's shape, or repeat over its trailing axes (a
//!   bias, a scalar), in its dtype, and no input of the run is read twice;
//! - every input that can receive a gradient has at most two consumers in the graph, so
//!   summing its gradient contributions (which now arrive together) cannot change order in a
//!   way that changes bits: two terms add the same either way round (for two NaNs the sum is
//!   NaN either way, though x86 keeps the first one's sign and payload);
//! - the fused node takes its inputs in the order the backward's depth-first walk met them
//!   through the run, so every other node keeps its place in the backward order.

use super::ir::{Graph, Node, NodeKind, Source};
use crate::autograd::Op;
use crate::op_table::ChainStep;
use crate::ops::fused::{repeats_over, Chain};
use crate::Tensor;
use std::sync::Arc;

/// One step candidate: the node, and which input carries the running value (0 or 1).
#[derive(Clone, Copy)]
struct Link {
    node: usize,
    value_at: usize,
}

/// The graph with every fusable run replaced by a `fused_chain` node.
pub fn fuse_chains(g: &Graph) -> Graph {
    let uses = g.reader_counts();
    let mut replaced: Vec<Option<(Op, Vec<usize>)>> = vec![None; g.nodes.len()];
    let mut absorbed = vec![false; g.nodes.len()];
    for tail in (0..g.nodes.len()).rev() {
        if absorbed[tail] {
            continue;
        }
        let mut links = run_ending_at(g, tail, &uses, &absorbed);
        // Shorten from the front until the run passes every check (or is too short to help).
        while links.len() >= 2 {
            if let Some((op, inputs)) = chain_op(g, &links, &uses) {
                links[1..].iter().for_each(|l| absorbed[l.node] = true);
                replaced[tail] = Some((op, inputs));
                break;
            }
            links.pop();
        }
    }
    rebuild(g, replaced, &absorbed)
}

/// Whether node `i` can be a step, and which input positions may carry the running value.
fn value_positions(g: &Graph, i: usize) -> Vec<usize> {
    let n = &g.nodes[i];
    let NodeKind::Op { op, inputs } = &n.kind else {
        return vec![];
    };
    let same = |j: usize| g.nodes[j].shape == n.shape && g.nodes[j].dtype == n.dtype;
    match op {
        Op::Unary(..) if same(inputs[0]) => vec![0],
        Op::Binary(b) if ChainStep::fusable_binary(b.op) => (0..2)
            .filter(|&p| {
                let other = &g.nodes[inputs[1 - p]];
                same(inputs[p]) && other.dtype == n.dtype && repeats_over(&other.shape, &n.shape)
            })
            .collect(),
        _ => vec![],
    }
}

/// The longest run of steps ending at `tail`, tail first: each earlier step is the running
/// value's producer, read by nothing else.
fn run_ending_at(g: &Graph, tail: usize, uses: &[usize], absorbed: &[bool]) -> Vec<Link> {
    let mut links = Vec::new();
    let mut cur = tail;
    loop {
        let positions = value_positions(g, cur);
        let Some(&first) = positions.first() else {
            break;
        };
        let NodeKind::Op { inputs, .. } = &g.nodes[cur].kind else {
            break;
        };
        let interior = |j: usize| {
            uses[j] == 1
                && !absorbed[j]
                && j != g.output
                && !value_positions(g, j).is_empty()
                && g.nodes[j].shape == g.nodes[tail].shape
        };
        // Prefer the position whose producer can join the run.
        let next = positions.iter().copied().find(|&p| interior(inputs[p]));
        links.push(Link {
            node: cur,
            value_at: next.unwrap_or(first),
        });
        match next {
            Some(p) => cur = inputs[p],
            None => break,
        }
    }
    links
}

/// The fused op for `links` (tail first) and its input nodes, or None where a check fails.
fn chain_op(g: &Graph, links: &[Link], uses: &[usize]) -> Option<(Op, Vec<usize>)> {
    let in_run = |j: usize| links.iter().any(|l| l.node == j);
    let mut order: Vec<(usize, Tensor)> = Vec::new();
    let mut duplicate = false;
    walk(g, links[0].node, &in_run, &mut order, &mut duplicate);
    if duplicate {
        return None;
    }
    let may_need_grad = |j: usize| {
        !matches!(
            g.nodes[j].kind,
            NodeKind::Leaf(Source::Const(_)) | NodeKind::Leaf(Source::Input(_))
        )
    };
    if order.iter().any(|(j, _)| may_need_grad(*j) && uses[*j] > 2) {
        return None;
    }
    let at = |j: usize| order.iter().position(|(o, _)| *o == j).expect("an input");
    let mut steps = Vec::with_capacity(links.len());
    for l in links.iter().rev() {
        let NodeKind::Op { op, inputs } = &g.nodes[l.node].kind else {
            return None;
        };
        steps.push(match op {
            Op::Unary(u) => ChainStep::Unary(u.op),
            Op::Binary(b) => ChainStep::Binary {
                op: b.op,
                operand: at(inputs[1 - l.value_at]),
                value_left: l.value_at == 0,
            },
            _ => return None,
        });
    }
    let first = links.last().expect("a run");
    let NodeKind::Op { inputs, .. } = &g.nodes[first.node].kind else {
        return None;
    };
    let head = at(inputs[first.value_at]);
    let (nodes, tensors): (Vec<usize>, Vec<Tensor>) = order.into_iter().unzip();
    let op = Op::Chain(Chain {
        steps: Arc::from(steps),
        inputs: tensors,
        head,
    });
    Some((op, nodes))
}

/// Records the run's inputs below node `i` in the order a depth-first walk in argument order
/// meets them (the backward's walk); `duplicate` when one is met twice.
fn walk(
    g: &Graph,
    i: usize,
    in_run: &dyn Fn(usize) -> bool,
    order: &mut Vec<(usize, Tensor)>,
    duplicate: &mut bool,
) {
    let NodeKind::Op { op, inputs } = &g.nodes[i].kind else {
        return;
    };
    let traced = op.inputs();
    for (k, &j) in inputs.iter().enumerate() {
        if in_run(j) {
            walk(g, j, in_run, order, duplicate);
        } else if order.iter().any(|(o, _)| *o == j) {
            *duplicate = true;
        } else {
            order.push((j, traced[k].clone()));
        }
    }
}

/// `g` without the absorbed nodes, each run's tail replaced by its fused op (indices renumbered).
pub(super) fn rebuild(
    g: &Graph,
    mut replaced: Vec<Option<(Op, Vec<usize>)>>,
    absorbed: &[bool],
) -> Graph {
    let mut new_index = vec![usize::MAX; g.nodes.len()];
    let mut nodes = Vec::with_capacity(g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        if absorbed[i] {
            continue;
        }
        let kind = match (replaced[i].take(), &n.kind) {
            (Some((op, inputs)), _) => NodeKind::Op {
                op,
                inputs: inputs.iter().map(|&j| new_index[j]).collect(),
            },
            (None, NodeKind::Op { op, inputs }) => NodeKind::Op {
                op: op.clone(),
                inputs: inputs.iter().map(|&j| new_index[j]).collect(),
            },
            (None, leaf) => leaf.clone(),
        };
        new_index[i] = nodes.len();
        nodes.push(Node {
            kind,
            shape: n.shape.clone(),
            dtype: n.dtype,
        });
    }
    Graph {
        nodes,
        output: new_index[g.output],
        n_params: g.n_params,
        n_inputs: g.n_inputs,
    }
}
