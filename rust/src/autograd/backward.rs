//! Graph traversal for reverse mode: a deterministic topological order, one rule per node, and
//! gradient accumulation in that fixed order (so `x + x` gives 2 and results repeat bit for bit).

use super::{no_grad, rules};
use crate::ops::add;
use crate::{Error, Result, Tensor};
use std::collections::{HashMap, HashSet};

/// Nodes reachable from `root` that need a gradient, root first (reverse post-order of a DFS
/// that visits inputs in argument order).
fn topo_order(root: &Tensor) -> Vec<Tensor> {
    let mut post = Vec::new();
    let mut seen = HashSet::new();
    // An explicit stack: deep graphs (long training loops unrolled) must not overflow.
    let mut stack: Vec<(Tensor, usize)> = vec![(root.clone(), 0)];
    seen.insert(root.id());
    while let Some((node, next)) = stack.pop() {
        let inputs: Vec<Tensor> = node
            .op()
            .map(|op| op.inputs().into_iter().cloned().collect())
            .unwrap_or_default();
        if next < inputs.len() {
            let child = inputs[next].clone();
            stack.push((node, next + 1));
            if child.requires_grad() && seen.insert(child.id()) {
                stack.push((child, 0));
            }
        } else {
            post.push(node);
        }
    }
    post.reverse();
    post
}

/// Gradients of `root` (seeded with `seed`) for every leaf that requires one, keyed by id.
fn run(root: &Tensor, seed: Tensor) -> Result<HashMap<usize, Tensor>> {
    no_grad(|| {
        let order = topo_order(root);
        let mut grads: HashMap<usize, Tensor> = HashMap::new();
        grads.insert(root.id(), seed);
        let mut leaves = HashMap::new();
        for node in &order {
            let Some(op) = node.op() else {
                if let Some(g) = grads.get(&node.id()) {
                    leaves.insert(node.id(), g.clone());
                }
                continue;
            };
            // Interior gradients are dropped once used to keep peak memory down.
            let Some(g) = grads.remove(&node.id()) else {
                continue;
            };
            let input_grads = rules::input_grads(op, node, &g)?;
            for (input, ig) in op.inputs().into_iter().zip(input_grads) {
                let Some(ig) = ig else { continue };
                if !input.requires_grad() {
                    continue;
                }
                let acc = match grads.remove(&input.id()) {
                    Some(prev) => add(&prev, &ig)?,
                    None => ig,
                };
                grads.insert(input.id(), acc);
            }
        }
        Ok(leaves)
    })
}

fn check_scalar(root: &Tensor) -> Result<()> {
    if !root.requires_grad() {
        return Err(Error::Autograd(
            "backward: the tensor does not require grad (no input had requires_grad=True, or it was computed under no_grad)".into(),
        ));
    }
    if root.numel() != 1 {
        return Err(Error::Autograd(format!(
            "backward: expected a scalar (one-element) loss, got shape {}; reduce it first (sum or mean)",
            root.shape()
        )));
    }
    Ok(())
}

/// Accumulates d(root)/d(leaf) into `leaf.grad` for every leaf that requires grad.
pub fn backward(root: &Tensor) -> Result<()> {
    check_scalar(root)?;
    let seed = Tensor::full_on(root.shape().clone(), 1.0, root.dtype(), root.device())?;
    let grads = run(root, seed)?;
    let mut leaves: Vec<(usize, Tensor)> = Vec::new();
    collect_leaves(root, &mut leaves);
    no_grad(|| {
        for (id, leaf) in leaves {
            if let Some(g) = grads.get(&id) {
                let total = match leaf.grad() {
                    Some(prev) => add(&prev, g)?,
                    None => g.clone(),
                };
                leaf.set_grad(Some(total));
            }
        }
        Ok(())
    })
}

fn collect_leaves(root: &Tensor, out: &mut Vec<(usize, Tensor)>) {
    for node in topo_order(root) {
        if node.is_leaf() && node.requires_grad() {
            out.push((node.id(), node));
        }
    }
}

/// d(root)/d(w) for each tensor in `wrt` without touching `.grad`; a tensor the root does not
/// depend on gets zeros.
pub fn grad(root: &Tensor, wrt: &[Tensor]) -> Result<Vec<Tensor>> {
    check_scalar(root)?;
    let seed = Tensor::full_on(root.shape().clone(), 1.0, root.dtype(), root.device())?;
    let grads = run(root, seed)?;
    Ok(wrt
        .iter()
        .map(|w| {
            grads
                .get(&w.id())
                .cloned()
                .unwrap_or_else(|| Tensor::zeros(w.shape().clone(), w.dtype()))
        })
        .collect())
}
