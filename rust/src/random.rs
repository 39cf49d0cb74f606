//! Random tensors from the global seed stream: each call draws one key from the SplitMix64
//! stream, and element i is a pure function of (key, i), so values do not depend on the device
//! or the thread count (docs/numerics.md).

use crate::rng::{uniform_at, SeedStream};
use crate::storage::{try_alloc, CpuStorage};
use crate::{DType, Result, Shape, Tensor};
use std::sync::Mutex;

static GLOBAL: Mutex<SeedStream> = Mutex::new(SeedStream::new());

fn with_stream<R>(f: impl FnOnce(&mut SeedStream) -> R) -> R {
    match GLOBAL.lock() {
        Ok(mut s) => f(&mut s),
        Err(poisoned) => f(&mut poisoned.into_inner()),
    }
}

/// Restarts the global stream at `seed` (the reference's `manualSeed`).
pub fn manual_seed(seed: u64) {
    with_stream(|s| s.manual_seed(seed));
}

/// The next seed of the global stream (the reference's `freshSeed`).
pub fn fresh_seed() -> u64 {
    with_stream(|s| s.fresh_seed())
}

/// `n` values `f(i)`, written once each across threads (each a pure function of its index, so
/// the tensor is the same on every thread count) into a fallibly allocated buffer.
fn fill<T: Send>(n: usize, f: impl Fn(u64) -> T + Sync) -> Result<Vec<T>> {
    const PER: usize = 1 << 14;
    let mut v: Vec<T> = try_alloc(n)?;
    let spare = &mut v.spare_capacity_mut()[..n];
    crate::backend::cpu::parallel::for_chunks(spare, PER, n.saturating_mul(32), |c, chunk| {
        let base = (c * PER) as u64;
        for (j, x) in chunk.iter_mut().enumerate() {
            x.write(f(base + j as u64));
        }
    });
    // SAFETY: the chunks cover 0..n and each of their elements was written above.
    unsafe { v.set_len(n) };
    Ok(v)
}

/// A tensor of `shape` whose element i is `f(i)` rounded once to `dtype`.
fn build_with(shape: Shape, dtype: DType, f: impl Fn(u64) -> f64 + Sync) -> Result<Tensor> {
    let n = shape.checked_numel()?;
    let storage = match dtype {
        DType::F32 => CpuStorage::F32(fill(n, |i| f(i) as f32)?.into()),
        DType::F64 => CpuStorage::F64(fill(n, f)?.into()),
        other => return Err(crate::error::not_float("random", other)),
    };
    Tensor::from_cpu(storage, shape)
}

/// Uniform values in [0, 1).
pub fn rand(shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
    let shape = shape.into();
    crate::storage::check_alloc("rand", &shape)?; // before the draw: a refusal uses no seed
    let key = fresh_seed();
    build_with(shape, dtype, |i| uniform_at(key, i))
}

/// Standard normal values by Box–Muller over the pair (2i, 2i + 1) of the key's uniforms.
pub fn randn(shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
    let shape = shape.into();
    crate::storage::check_alloc("randn", &shape)?;
    let key = fresh_seed();
    build_with(shape, dtype, |i| {
        let u1 = 1.0 - uniform_at(key, 2 * i); // in (0, 1], so the log is finite
        let u2 = uniform_at(key, 2 * i + 1);
        libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(std::f64::consts::TAU * u2)
    })
}

/// The global stream's (seed, counter).
pub fn stream_state() -> (u64, u64) {
    with_stream(|s| (s.seed(), s.counter()))
}

/// Puts the global stream at `(seed, counter)`, as `stream_state` read it (a resumed run).
pub fn set_stream_state(seed: u64, counter: u64) {
    with_stream(|s| *s = SeedStream::at(seed, counter));
}

/// Inverted dropout with the reference's counter-based sampler: element i is kept when
/// `keep_prob > u(key, i)` and then scaled by 1 / keep_prob; `key` comes from the global stream
/// unless given.
pub fn dropout(x: &Tensor, p: f64, key: Option<u64>) -> Result<Tensor> {
    if !(0.0..1.0).contains(&p) {
        return Err(crate::Error::arg(
            "dropout",
            format!("expected a drop probability in [0, 1), got {p}"),
        ));
    }
    if p == 0.0 {
        return Ok(x.clone());
    }
    let keep = 1.0 - p;
    if key.is_none() {
        // Inside a training step: the step's next mask (ops/dropout.rs), replayed by compiled
        // graphs with each step's key.
        if let Some(call) = crate::ops::dropout::next_call() {
            return crate::ops::dropout::step_dropout(x, keep, call);
        }
    }
    if key.is_none() && x.traced() {
        return Err(crate::Error::arg(
            "dropout",
            "cannot compile the loss: dropout without a key outside a training step draws a \
             fresh mask on every call, but a compiled graph would replay the trace's mask; \
             train through Module.train_* (each step draws its own mask), pass key= (the same \
             mask each call), or use the eager backend",
        ));
    }
    let key = key.unwrap_or_else(fresh_seed);
    let m = crate::ops::dropout::scale(x, keep, key)?;
    crate::ops::mul(x, &m)
}
