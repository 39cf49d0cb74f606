//! The compiled backend's IR: a list of nodes in SSA form (each node's inputs come earlier),
//! with static shapes and dtypes, built by tracing one evaluation of a loss.

use crate::autograd::Op;
use crate::{DType, Device, Error, Result, Shape, Tensor};
use std::collections::HashMap;
use std::fmt::Write;

/// Where a leaf's value comes from on each replay.
#[derive(Clone)]
pub enum Source {
    Param(usize),
    Input(usize),
    /// A value fixed at trace time (a literal, or a tensor made without parameters or inputs).
    Const(Tensor),
}

#[derive(Clone)]
pub enum NodeKind {
    Leaf(Source),
    /// A recorded op and the node indices of its inputs, in argument order.
    Op {
        op: Op,
        inputs: Vec<usize>,
    },
}

#[derive(Clone)]
pub struct Node {
    pub kind: NodeKind,
    pub shape: Shape,
    pub dtype: DType,
}

#[derive(Clone)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub output: usize,
    pub n_params: usize,
    pub n_inputs: usize,
}

impl Graph {
    /// Builds the graph of `root` from a trace in which every parameter and input was a leaf
    /// requiring grad (so every op depending on them was recorded).
    pub fn trace(root: &Tensor, params: &[Tensor], inputs: &[Tensor]) -> Result<Graph> {
        if let Some(how) = super::take_traced_read() {
            return Err(Error::arg(
                "trace",
                format!(
                    "cannot compile the loss: it reads tensor values in Python ({how}) while being \
                     traced; the compiled graph would replay the trace's values for every batch"
                ),
            ));
        }
        let mut leaf_of: HashMap<usize, Source> = HashMap::new();
        for (i, p) in params.iter().enumerate() {
            leaf_of.insert(p.id(), Source::Param(i));
        }
        for (i, x) in inputs.iter().enumerate() {
            if leaf_of.insert(x.id(), Source::Input(i)).is_some() {
                return Err(Error::arg(
                    "trace",
                    "the same tensor was passed as two leaves",
                ));
            }
        }
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut nodes: Vec<Node> = Vec::new();
        // Post-order DFS with an explicit stack: inputs before their consumers.
        let mut stack: Vec<(Tensor, bool)> = vec![(root.clone(), false)];
        while let Some((t, expanded)) = stack.pop() {
            if index.contains_key(&t.id()) {
                continue;
            }
            let op = if leaf_of.contains_key(&t.id()) {
                None
            } else {
                t.op().cloned()
            };
            match op {
                Some(op) if !expanded => {
                    stack.push((t.clone(), true));
                    for x in op.inputs().into_iter().rev() {
                        if !index.contains_key(&x.id()) {
                            stack.push((x.clone(), false));
                        }
                    }
                }
                Some(op) => {
                    let inputs = op.inputs().iter().map(|x| index[&x.id()]).collect();
                    index.insert(t.id(), nodes.len());
                    nodes.push(Node {
                        kind: NodeKind::Op { op, inputs },
                        shape: t.shape().clone(),
                        dtype: t.dtype(),
                    });
                }
                None => {
                    let src = match leaf_of.get(&t.id()) {
                        Some(src) => src.clone(),
                        None if t.traced() => {
                            return Err(Error::arg(
                                "trace",
                                format!(
                                    "cannot compile the loss: node %{} ({} {}) is computed from the \
                                     parameters or inputs but reaches the loss without autograd \
                                     (detach(), no_grad(), or a gradient taken inside the loss); \
                                     the compiled graph would keep the trace's value for every batch",
                                    nodes.len(),
                                    t.dtype(),
                                    t.shape()
                                ),
                            ))
                        }
                        None => Source::Const(t.detach()),
                    };
                    index.insert(t.id(), nodes.len());
                    nodes.push(Node {
                        kind: NodeKind::Leaf(src),
                        shape: t.shape().clone(),
                        dtype: t.dtype(),
                    });
                }
            }
        }
        let output = index[&root.id()];
        Ok(Graph {
            nodes,
            output,
            n_params: params.len(),
            n_inputs: inputs.len(),
        })
    }

    /// This graph with its constants on `device`, so that replays there copy them once
    /// (`exec::evaluate` moves any it meets on another device, on every replay).
    pub fn constants_on(&self, device: Option<Device>) -> Result<Graph> {
        let mut g = self.clone();
        for n in &mut g.nodes {
            if let NodeKind::Leaf(Source::Const(c)) = &mut n.kind {
                *c = const_on(c, device)?;
            }
        }
        Ok(g)
    }

    /// How many times each node is read: by each op input naming it, and once more for the
    /// graph's output (what the fusion passes check before removing a value).
    pub fn reader_counts(&self) -> Vec<usize> {
        let mut uses = vec![0usize; self.nodes.len()];
        for n in &self.nodes {
            if let NodeKind::Op { inputs, .. } = &n.kind {
                inputs.iter().for_each(|&j| uses[j] += 1);
            }
        }
        uses[self.output] += 1;
        uses
    }

    pub fn op_count(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Op { .. }))
            .count()
    }

    /// Bytes of all node values of one evaluation (what a forward pass keeps for backward).
    pub fn activation_bytes(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| n.shape.numel() * n.dtype.size_in_bytes())
            .sum()
    }

    /// A readable listing: one line per node.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let what = match &n.kind {
                NodeKind::Leaf(Source::Param(p)) => format!("param {p}"),
                NodeKind::Leaf(Source::Input(x)) => format!("input {x}"),
                NodeKind::Leaf(Source::Const(_)) => "const".to_string(),
                NodeKind::Op { op, inputs } => {
                    let args: Vec<String> = inputs.iter().map(|j| format!("%{j}")).collect();
                    let name = match op {
                        // The steps, operands numbered by argument (#k), `_` the running value.
                        Op::Chain(chain) => {
                            let steps: Vec<String> =
                                chain.steps.iter().map(|s| s.to_string()).collect();
                            format!("fused_chain[{}]", steps.join(" "))
                        }
                        op => op.name().to_string(),
                    };
                    format!("{name}({})", args.join(", "))
                }
            };
            let _ = writeln!(s, "%{i} = {what} : {} {}", n.dtype, n.shape);
        }
        let _ = write!(s, "return %{}", self.output);
        s
    }

    /// Where two traces of the same loss differ, if they do: a different structure means
    /// data-dependent Python control flow; a different constant means a value left the graph.
    pub fn first_difference(&self, other: &Graph) -> Option<String> {
        if self.nodes.len() != other.nodes.len() || self.output != other.output {
            return Some(format!(
                "two traces with different input values produced different graphs ({} and {} nodes): \
                 the loss uses data-dependent Python control flow",
                self.nodes.len(),
                other.nodes.len()
            ));
        }
        for (i, (a, b)) in self.nodes.iter().zip(&other.nodes).enumerate() {
            let same = match (&a.kind, &b.kind) {
                (NodeKind::Op { op: x, inputs: xi }, NodeKind::Op { op: y, inputs: yi })
                    if x.name() == y.name() && xi == yi && a.dtype == b.dtype =>
                {
                    if let Some((attr, va, vb)) = super::attrs::first_changed(x, y) {
                        return Some(format!(
                            "node %{i} ({}): its attribute `{attr}` differs between two traces \
                             with different input values ({va} vs {vb}), so it depends on the \
                             data (computed in Python from tensor values) or on random numbers; \
                             the compiled graph would replay one value for every batch. Compute \
                             it with tlrs ops or use the eager backend",
                            x.name()
                        ));
                    }
                    true
                }
                (NodeKind::Leaf(Source::Param(x)), NodeKind::Leaf(Source::Param(y))) => x == y,
                (NodeKind::Leaf(Source::Input(x)), NodeKind::Leaf(Source::Input(y))) => x == y,
                (NodeKind::Leaf(Source::Const(x)), NodeKind::Leaf(Source::Const(y))) => {
                    if x.dtype() != y.dtype() || x.cpu().ok() != y.cpu().ok() {
                        return Some(format!(
                            "node %{i} is a constant that changed with the inputs: the loss reads tensor \
                             values in Python (.item(), .numpy(), float()) or draws random numbers (dropout); \
                             build it from tlrs ops only"
                        ));
                    }
                    true
                }
                _ => false,
            };
            if !same || a.shape != b.shape {
                let name = match &a.kind {
                    NodeKind::Op { op, .. } => op.name(),
                    NodeKind::Leaf(_) => "leaf",
                };
                return Some(format!(
                    "two traces differ at node %{i} ({name}): the loss uses data-dependent Python control flow"
                ));
            }
        }
        None
    }
}

/// The device a replay runs on: the first parameter's, else the first input's (None: a graph
/// without leaves, which runs where its constants are).
pub fn leaf_device(params: &[Tensor], inputs: &[Tensor]) -> Option<Device> {
    params.first().or(inputs.first()).map(Tensor::device)
}

/// A constant as a replay on `device` reads it: there, as eager ops on that device made it.
pub fn const_on(c: &Tensor, device: Option<Device>) -> Result<Tensor> {
    let Some(device) = device.filter(|&d| d != c.device()) else {
        return Ok(c.clone());
    };
    Ok(c.to_device(device)?.detach())
}
