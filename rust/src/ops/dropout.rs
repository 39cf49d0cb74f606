//! Dropout inside a training step: a fresh counter-based mask every step, the same bits in the
//! eager and the compiled backend. A step scope (`with_step`, opened by the training loops
//! around each step's forward and backward) fixes the step's key, `key_of(key_of(seed, step),
//! n)` for the n-th dropout of the step, where `seed` is the global stream's seed
//! (`manual_seed`) and `step` the optimizer's step count. The record keeps n, so a compiled
//! graph replays each dropout with the current step's key, not the trace's mask.

use crate::autograd::record::{first, Attr, Record};
use crate::rng::{key_of, uniform_at};
use crate::storage::{CpuStorage, Storage};
use crate::{Error, Result, Shape, Tensor};
use std::cell::Cell;

thread_local! {
    /// The open step: (the step's key, dropouts drawn so far in it).
    static STEP: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// `f()` as training step `step`: each dropout without a key draws the step's next mask.
pub fn with_step<R>(step: u64, f: impl FnOnce() -> R) -> R {
    let (seed, _) = crate::random::stream_state();
    let before = STEP.with(|s| s.replace(Some((key_of(seed, step), 0))));
    let out = f();
    STEP.with(|s| s.set(before));
    out
}

/// Opens (`Some(step)`) or closes (`None`) a step scope; returns the scope it replaced, for the
/// bindings' enter/exit pair.
pub fn set_step(step: Option<u64>) -> Option<(u64, u64)> {
    let (seed, _) = crate::random::stream_state();
    STEP.with(|s| s.replace(step.map(|st| (key_of(seed, st), 0))))
}

/// Puts back a scope `set_step` returned.
pub fn restore_step(scope: Option<(u64, u64)>) {
    STEP.with(|s| s.set(scope));
}

/// The n-th dropout of the open step takes its index, if a step is open.
pub(crate) fn next_call() -> Option<u64> {
    STEP.with(|s| {
        let (key, n) = s.get()?;
        s.set(Some((key, n + 1)));
        Some(n)
    })
}

fn key_of_call(call: u64) -> Result<u64> {
    let (key, _) = STEP.with(|s| s.get()).ok_or_else(|| {
        Error::arg(
            "dropout",
            "a compiled graph with dropout runs inside a training step (Module.train_* open \
             one per step, tlrs.random.training_step(n) opens one); outside, pass key=",
        )
    })?;
    Ok(key_of(key, call))
}

/// `x` times the inverted-dropout scale of the open step's mask number `call`.
pub(crate) fn step_dropout(x: &Tensor, keep: f64, call: u64) -> Result<Tensor> {
    let key = key_of_call(call)?;
    let scale = scale(x, keep, key)?;
    let s = crate::ops::mul(&x.detach(), &scale)?.storage().clone();
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        StepDropout {
            x: x.clone(),
            keep,
            call,
            scale,
        },
    ))
}

/// The scale tensor 1 / keep where keep > u(key, i), else 0, on `x`'s device.
pub(crate) fn scale(x: &Tensor, keep: f64, key: u64) -> Result<Tensor> {
    let n = x.numel();
    let host = || {
        let scale: Vec<f64> = (0..n as u64)
            .map(|i| {
                if keep > uniform_at(key, i) {
                    1.0 / keep
                } else {
                    0.0
                }
            })
            .collect();
        CpuStorage::from_f64(x.dtype(), &scale)
    };
    // On a device the same mask is drawn there (storage.rs picks), with the same bits.
    let m = Storage::dropout_scale(x.device(), x.dtype(), n, (key, keep), host)?;
    Tensor::from_storage(m, x.shape().clone())
}

/// Dropout in a step scope: the mask's number in the step (the key comes from the step).
#[derive(Clone)]
pub struct StepDropout {
    pub x: Tensor,
    pub keep: f64,
    pub call: u64,
    pub scale: Tensor,
}

impl Record for StepDropout {
    crate::autograd::record::named!("dropout");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("keep", Attr::Float(Some(self.keep))),
            ("call", Attr::Count(Some(self.call as usize))),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(crate::ops::mul(g, &self.scale)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        step_dropout(first("dropout", xs)?, self.keep, self.call)
    }
}
