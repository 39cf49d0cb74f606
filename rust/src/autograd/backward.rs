//! Graph traversal for reverse mode: a deterministic topological order, one rule per node, and
//! gradient accumulation in that fixed order (so `x + x` gives 2 and results repeat bit for bit).

use super::no_grad;
use crate::ops::add;
use crate::{Error, Result, Tensor};
use std::collections::{HashMap, HashSet};

/// Nodes reachable from `roots` that need a gradient, in a topological order (consumers
/// before their inputs): the reverse post-order of one DFS forest, roots in order, inputs in
/// argument order.
fn topo_order(roots: &[Tensor]) -> Vec<Tensor> {
    let mut post = Vec::new();
    let mut seen = HashSet::new();
    for root in roots {
        if !seen.insert(root.id()) {
            continue;
        }
        // An explicit stack: deep graphs (long training loops unrolled) must not overflow.
        let mut stack: Vec<(Tensor, usize)> = vec![(root.clone(), 0)];
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
    }
    post.reverse();
    post
}

/// Gradients of the `roots` (each seeded with its seed) for every leaf that requires one and
/// for every node whose id is in `keep`, keyed by id. A node's gradient is complete when it is
/// reached, since every consumer comes before it in the order.
fn run(roots: &[(Tensor, Tensor)], keep: &HashSet<usize>) -> Result<HashMap<usize, Tensor>> {
    no_grad(|| {
        let order = topo_order(&roots.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>());
        let mut grads: HashMap<usize, Tensor> = HashMap::new();
        for (root, seed) in roots {
            let acc = match grads.remove(&root.id()) {
                Some(prev) => add(&prev, seed)?,
                None => seed.clone(),
            };
            grads.insert(root.id(), acc);
        }
        let mut found = HashMap::new();
        for node in &order {
            crate::interrupt::check()?; // a signal ends a long backward pass between two nodes
            let Some(op) = node.op() else {
                if let Some(g) = grads.get(&node.id()) {
                    found.insert(node.id(), g.clone());
                }
                continue;
            };
            // Interior gradients are dropped once used to keep peak memory down.
            let Some(g) = grads.remove(&node.id()) else {
                continue;
            };
            if keep.contains(&node.id()) {
                found.insert(node.id(), g.clone());
            }
            // A one-input op whose input already has a gradient may add its own into it in one
            // pass (a slice of a split: no zero-filled full-size gradient, no separate add).
            let single = match op.inputs()[..] {
                [input] => Some(input.clone()),
                _ => None,
            };
            if let Some(input) = single {
                if input.requires_grad() {
                    if let Some(prev) = grads.get(&input.id()) {
                        if let Some(acc) = op.accumulate_input_grad(prev, &g) {
                            let acc = acc?;
                            grads.insert(input.id(), acc);
                            continue;
                        }
                    }
                }
            }
            let input_grads = op.input_grads(node, &g)?;
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
        Ok(found)
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
    let grads = run(&[(root.clone(), seed)], &HashSet::new())?;
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
    for node in topo_order(std::slice::from_ref(root)) {
        if node.is_leaf() && node.requires_grad() {
            out.push((node.id(), node));
        }
    }
}

/// d(root)/d(w) for each tensor in `wrt` without touching `.grad`; a tensor the root does not
/// depend on gets zeros (on its device).
pub fn grad(root: &Tensor, wrt: &[Tensor]) -> Result<Vec<Tensor>> {
    check_scalar(root)?;
    let seed = Tensor::full_on(root.shape().clone(), 1.0, root.dtype(), root.device())?;
    // A tensor that does not require grad gets zeros too (this is the module API's rule).
    let tracked: Vec<Tensor> = wrt.iter().filter(|w| w.requires_grad()).cloned().collect();
    let mut found = grad_of(std::slice::from_ref(root), &[Some(seed)], &tracked)?.into_iter();
    wrt.iter()
        .map(|w| {
            match if w.requires_grad() {
                found.next().flatten()
            } else {
                None
            } {
                Some(g) => Ok(g),
                None => Tensor::full_on(w.shape().clone(), 0.0, w.dtype(), w.device()),
            }
        })
        .collect()
}

/// The vector-Jacobian product sum_k seed_k . d(output_k)/d(w) for each `w` in `wrt`, leaves
/// and interior tensors alike (`torch.autograd.grad`): `None` where no output depends on `w`.
/// A missing seed means ones, which needs a one-element output.
pub fn grad_of(
    outputs: &[Tensor],
    seeds: &[Option<Tensor>],
    wrt: &[Tensor],
) -> Result<Vec<Option<Tensor>>> {
    if outputs.len() != seeds.len() {
        return Err(Error::Autograd(format!(
            "grad: got {} outputs but {} grad_outputs",
            outputs.len(),
            seeds.len()
        )));
    }
    let mut roots = Vec::new();
    for (i, (out, seed)) in outputs.iter().zip(seeds).enumerate() {
        if !out.requires_grad() {
            return Err(Error::Autograd(format!(
                "grad: output {i} does not require grad (no input had requires_grad=True, or it was computed under no_grad)"
            )));
        }
        let seed = match seed {
            Some(s) => {
                if s.shape() != out.shape()
                    || s.dtype() != out.dtype()
                    || s.device() != out.device()
                {
                    return Err(Error::Autograd(format!(
                        "grad: grad_outputs {i} must match output {i} ({} {} on {}), got {} {} on {}",
                        out.dtype(), out.shape(), out.device(), s.dtype(), s.shape(), s.device()
                    )));
                }
                s.detach()
            }
            None => {
                if out.numel() != 1 {
                    return Err(Error::Autograd(format!(
                        "grad: output {i} has shape {}; a non-scalar output needs grad_outputs",
                        out.shape()
                    )));
                }
                Tensor::full_on(out.shape().clone(), 1.0, out.dtype(), out.device())?
            }
        };
        roots.push((out.clone(), seed));
    }
    for (i, w) in wrt.iter().enumerate() {
        if !w.requires_grad() {
            return Err(Error::Autograd(format!(
                "grad: input {i} does not require grad, so no gradient flows to it"
            )));
        }
    }
    let keep: HashSet<usize> = wrt.iter().map(|w| w.id()).collect();
    let found = run(&roots, &keep)?;
    let traced = outputs.iter().any(|o| o.traced());
    Ok(wrt
        .iter()
        .map(|w| found.get(&w.id()).cloned().map(|g| g.with_traced(traced)))
        .collect())
}
