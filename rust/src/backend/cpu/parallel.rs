//! The CPU thread pool and the kernel-kind switch (reference or fast). Kernels run inside this
//! pool so `set_num_threads` takes effect without touching rayon's global pool.

use crate::backend::settings;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, OnceLock, RwLock};

static POOL: OnceLock<RwLock<Arc<ThreadPool>>> = OnceLock::new();

/// Work below this many elements runs on the calling thread: spawning costs more than it saves.
pub const PAR_MIN_ELEMS: usize = 1 << 15;

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn build_pool(n: usize) -> Option<ThreadPool> {
    ThreadPoolBuilder::new().num_threads(n).build().ok()
}

fn pool_cell() -> &'static RwLock<Arc<ThreadPool>> {
    POOL.get_or_init(|| {
        // Building a pool only fails when the OS refuses threads; one thread is the fallback.
        let pool = build_pool(default_threads())
            .or_else(|| build_pool(1))
            .expect("the OS refused to start even one worker thread");
        RwLock::new(Arc::new(pool))
    })
}

fn pool() -> Arc<ThreadPool> {
    match pool_cell().read() {
        Ok(p) => p.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Sets the number of CPU threads kernels use (n >= 1).
pub fn set_num_threads(n: usize) -> crate::Result<()> {
    if n == 0 {
        return Err(crate::Error::arg(
            "set_num_threads",
            "expected a thread count >= 1, got 0",
        ));
    }
    let new = build_pool(n).ok_or_else(|| {
        crate::Error::arg(
            "set_num_threads",
            format!("could not start {n} worker threads"),
        )
    })?;
    match pool_cell().write() {
        Ok(mut p) => *p = Arc::new(new),
        Err(poisoned) => *poisoned.into_inner() = Arc::new(new),
    }
    Ok(())
}

pub fn num_threads() -> usize {
    pool().current_num_threads()
}

/// Whether `work` items are worth spreading over threads: enough of them, and more than one
/// thread to spread over (a one-thread pool would only add a hand-off to another OS thread).
pub fn worth_threads(work: usize, min: usize) -> bool {
    work >= min && num_threads() > 1
}

/// Runs `f` inside the tlrs pool (nested calls from a worker run inline).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    pool().install(f)
}

/// Runs `f(i, chunk)` over `out` split into chunks of `per` elements, in order: across the
/// pool when `work` (elements touched) is worth it, else on the calling thread. Each chunk is
/// written by one call, so the result does not depend on the thread count.
pub fn for_chunks<A: Send>(
    out: &mut [A],
    per: usize,
    work: usize,
    f: impl Fn(usize, &mut [A]) + Sync,
) {
    use rayon::prelude::*;
    if per == 0 {
        return;
    }
    if worth_threads(work, PAR_MIN_ELEMS) {
        install(|| {
            out.par_chunks_mut(per)
                .enumerate()
                .for_each(|(i, o)| f(i, o))
        });
    } else {
        out.chunks_mut(per).enumerate().for_each(|(i, o)| f(i, o));
    }
}

/// Whether this thread runs fast kernels (see `backend::settings`).
pub fn fast_kernels() -> bool {
    settings::current().fast
}

/// Selects fast or reference kernels for this thread.
pub fn set_fast_kernels(on: bool) {
    settings::update(|s| s.fast = on);
}

/// Runs `f` with the kernel kind fixed to `on` on this thread, then restores it.
pub fn with_fast_kernels<R>(on: bool, f: impl FnOnce() -> R) -> R {
    settings::with_settings(
        settings::KernelSettings {
            fast: on,
            ..settings::current()
        },
        f,
    )
}
