//! Replaying a traced graph: the loss for new parameters and inputs, its gradients through
//! the same autograd rules as eager, and whole training loops with native optimizer updates.

use super::ir::{const_on, leaf_device, Graph, NodeKind, Source};
use crate::optim::{update_spending, OptimKind};
use crate::{autograd, Error, Result, Tensor};

/// The graph's output for `params` and `inputs` (recording for autograd where leaves need it).
pub fn evaluate(g: &Graph, params: &[Tensor], inputs: &[Tensor]) -> Result<Tensor> {
    if params.len() != g.n_params || inputs.len() != g.n_inputs {
        return Err(Error::arg(
            "graph",
            format!(
                "expected {} parameters and {} inputs, got {} and {}",
                g.n_params,
                g.n_inputs,
                params.len(),
                inputs.len()
            ),
        ));
    }
    // Every value lives where the leaves do (constants follow them).
    let device = leaf_device(params, inputs);
    let mut vals: Vec<Option<Tensor>> = vec![None; g.nodes.len()];
    // Last use of each node, so values not needed later are released during the forward pass
    // (the autograd graph keeps what backward needs).
    let mut last_use = vec![0usize; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        if let NodeKind::Op { inputs, .. } = &n.kind {
            for &j in inputs {
                last_use[j] = i;
            }
        }
    }
    for (i, n) in g.nodes.iter().enumerate() {
        crate::interrupt::check()?; // a signal ends a long forward pass between two nodes
        let v = match &n.kind {
            NodeKind::Leaf(Source::Param(p)) => params[*p].clone(),
            NodeKind::Leaf(Source::Input(x)) => inputs[*x].clone(),
            NodeKind::Leaf(Source::Const(c)) => const_on(c, device)?,
            NodeKind::Op { op, inputs } => {
                let xs: Vec<Tensor> = inputs
                    .iter()
                    .map(|&j| {
                        vals[j]
                            .clone()
                            .ok_or_else(|| Error::arg("graph", "node used after release"))
                    })
                    .collect::<Result<_>>()?;
                let xs = on_device(xs, device)?;
                let y = op.replay(&xs, &n.shape)?;
                for &j in inputs {
                    if last_use[j] == i && j != g.output {
                        vals[j] = None;
                    }
                }
                y
            }
        };
        if matches!(
            n.kind,
            NodeKind::Leaf(Source::Param(_)) | NodeKind::Leaf(Source::Input(_))
        ) && (v.shape() != &n.shape || v.dtype() != n.dtype)
        {
            return Err(Error::shape(
                "graph",
                format!(
                    "expected a {} leaf of shape {}, got {} of shape {}",
                    n.dtype,
                    n.shape,
                    v.dtype(),
                    v.shape()
                ),
            ));
        }
        vals[i] = Some(v);
    }
    vals[g.output]
        .take()
        .ok_or_else(|| Error::arg("graph", "no output"))
}

/// An op's inputs as a replay on `device` gives them. A module traces its loss on its own
/// device, so its graph moves values where the loss did; a graph traced on the CPU and replayed
/// on a device (`Graph` used directly) has no such copy where the loss's `.to(device)` was a
/// no-op at trace time, so a float the host computed (the cast of a comparison's mask: integer
/// and bool ops run on the host) moves to the device here, as that `.to` moved it in eager mode.
fn on_device(xs: Vec<Tensor>, device: Option<crate::Device>) -> Result<Vec<Tensor>> {
    xs.into_iter()
        .map(|x| match device {
            Some(d) if x.device() != d && x.dtype().is_float() => x.to_device(d),
            _ => Ok(x),
        })
        .collect()
}

/// (loss, gradient per parameter); parameters whose flag is false get zeros.
pub fn loss_and_grads(
    g: &Graph,
    params: &[Tensor],
    flags: &[bool],
    inputs: &[Tensor],
) -> Result<(Tensor, Vec<Tensor>)> {
    let leaves: Vec<Tensor> = params
        .iter()
        .zip(flags)
        .map(|(p, &f)| p.detach_with_grad(f))
        .collect();
    let loss = evaluate(g, &leaves, inputs)?;
    let tracked: Vec<Tensor> = leaves
        .iter()
        .zip(flags)
        .filter(|(_, &f)| f)
        .map(|(t, _)| t.clone())
        .collect();
    let mut found = if !tracked.is_empty() && loss.requires_grad() {
        autograd::grad(&loss, &tracked)?
    } else {
        vec![]
    }
    .into_iter();
    // Frozen parameters get zeros where they live, as the eager backend gives them.
    let grads = params
        .iter()
        .zip(flags)
        .map(|(p, &f)| match if f { found.next() } else { None } {
            Some(g) => Ok(g),
            None => Tensor::full_on(p.shape().clone(), 0.0, p.dtype(), p.device()),
        })
        .collect::<Result<_>>()?;
    Ok((loss.detach(), grads))
}

pub struct TrainResult {
    pub losses: Vec<f64>,
    pub params: Vec<Tensor>,
    pub slots: Vec<Vec<Tensor>>,
    pub step: u64,
}

#[allow(clippy::too_many_arguments)]
/// `steps` updates cycling through `samples`: the pre-update loss of each step is recorded,
/// then every trainable parameter is updated by `kind` (step counts advance for all). When the
/// caller's stop check (`interrupt.rs`) asks, before a step or inside one, the loop ends and
/// the result holds the steps completed so far (an interrupt lands between whole steps).
pub fn train(
    g: &Graph,
    mut params: Vec<Tensor>,
    flags: &[bool],
    samples: &[Vec<Tensor>],
    steps: usize,
    kinds: &[OptimKind],
    (clip, accumulate): (Option<f64>, usize),
    mut slots: Vec<Vec<Tensor>>,
    mut step: u64,
) -> Result<TrainResult> {
    if kinds.is_empty() || accumulate == 0 {
        return Err(Error::arg(
            "train",
            "expected optimizer settings and accumulate >= 1",
        ));
    }
    if samples.is_empty() {
        return Err(Error::arg("train", "empty dataset"));
    }
    let mut losses = crate::storage::try_alloc(steps)?;
    for s in 0..steps {
        // The forward pass asks the stop check before its first node: a signal that came
        // between steps ends the loop here, before this step's update starts.
        // The step's dropout masks come from its step count, as in the eager loop.
        let (loss, grads) = match crate::ops::dropout::with_step(step, || {
            accumulated(g, &params, flags, samples, s * accumulate, accumulate)
        }) {
            Err(Error::Interrupted) => break, // this step's update never started
            r => r?,
        };
        losses.push(loss.item()?);
        let grads = match clip {
            Some(max_norm) => crate::autograd::no_grad(|| clip_by_norm(grads, flags, max_norm))?,
            None => grads,
        };
        // One setting for every step, or one per step (a learning-rate schedule).
        let kind = kinds[s.min(kinds.len() - 1)];
        step += 1;
        // Each parameter moves into its update, so after the first step (whose parameters the
        // caller still holds) the update writes into the loop's own buffers.
        // On the first step, whose parameters the caller still holds, the update writes into
        // the gradient's buffer (spent here) rather than into a copy of the parameter.
        let olds = std::mem::take(&mut params);
        for (i, (p, g)) in olds.into_iter().zip(grads).enumerate() {
            if !flags[i] {
                params.push(p);
                continue;
            }
            let (p, ns) = update_spending(kind, step, p, g, std::mem::take(&mut slots[i]))?;
            params.push(p);
            slots[i] = ns;
        }
    }
    Ok(TrainResult {
        losses,
        params,
        slots,
        step,
    })
}

/// The trainable gradients scaled so their joint 2-norm is at most `max_norm`, by
/// `tlrs.nn.clip_grad_norm`'s operations in its order (PyTorch's formula: the norm of the
/// per-tensor norms, then each gradient times min(max_norm / (norm + 1e-6), 1)), so the
/// compiled loop clips with the eager loop's bits. Frozen parameters' gradients pass as they are.
fn clip_by_norm(grads: Vec<Tensor>, flags: &[bool], max_norm: f64) -> Result<Vec<Tensor>> {
    use crate::ops;
    let norm = |t: &Tensor| -> Result<Tensor> {
        let a = ops::abs(t)?;
        ops::sqrt(&ops::sum(&ops::mul(&a, &a)?, None, false)?)
    };
    let trained: Vec<&Tensor> = grads
        .iter()
        .zip(flags)
        .filter(|(_, &f)| f)
        .map(|(g, _)| g)
        .collect();
    let Some(first) = trained.first() else {
        return Ok(grads);
    };
    let (dtype, device) = (first.dtype(), first.device());
    let norms = trained
        .iter()
        .map(|g| ops::reshape(&norm(g)?, &[1]))
        .collect::<Result<Vec<_>>>()?;
    let total = norm(&ops::concat(&norms, 0)?)?;
    let eps = Tensor::full_on(Vec::<usize>::new(), 1e-6, dtype, device)?;
    let max = Tensor::full_on(Vec::<usize>::new(), max_norm, dtype, device)?;
    let coef = ops::clamp(&ops::div(&max, &ops::add(&total, &eps)?)?, None, Some(1.0))?;
    grads
        .into_iter()
        .zip(flags)
        .map(|(g, &f)| if f { ops::mul(&g, &coef) } else { Ok(g) })
        .collect()
}

/// The loss and gradients of one step over `k` consecutive samples from `first` (wrapping): for
/// k > 1 their means, each a left fold in sample order divided by k once (what the eager loop's
/// `accumulate` computes with the same ops).
fn accumulated(
    g: &Graph,
    params: &[Tensor],
    flags: &[bool],
    samples: &[Vec<Tensor>],
    first: usize,
    k: usize,
) -> Result<(Tensor, Vec<Tensor>)> {
    let at = |j: usize| &samples[(first + j) % samples.len()];
    let (mut loss, mut grads) = loss_and_grads(g, params, flags, at(0))?;
    if k == 1 {
        return Ok((loss, grads));
    }
    for j in 1..k {
        // Each sample's forward records its own graph; only the sums run without one.
        let (l, gs) = loss_and_grads(g, params, flags, at(j))?;
        crate::autograd::no_grad(|| -> Result<()> {
            loss = crate::ops::add(&loss, &l)?;
            for (acc, g) in grads.iter_mut().zip(&gs) {
                *acc = crate::ops::add(acc, g)?;
            }
            Ok(())
        })?;
    }
    crate::autograd::no_grad(|| {
        let div = |t: &Tensor| {
            let n = Tensor::full_on(Vec::<usize>::new(), k as f64, t.dtype(), t.device())?;
            crate::ops::div(t, &n)
        };
        Ok((
            div(&loss)?,
            grads.iter().map(div).collect::<Result<Vec<_>>>()?,
        ))
    })
}
