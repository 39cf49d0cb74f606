//! Reverse-mode autograd. Each op result stores an `Op` naming its inputs; `backward` sorts the
//! graph (children in argument order, so the order is deterministic) and runs one rule per op.

mod backward;
pub mod gradcheck;
mod op;
pub mod record;

pub use backward::{backward, grad, grad_of};
pub use op::{recorded_op_names, Argmax, Op};
pub use record::{Attr, Record};

use std::cell::Cell;

thread_local! {
    static NO_GRAD_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Whether ops record their inputs for backward on this thread.
pub fn grad_enabled() -> bool {
    NO_GRAD_DEPTH.with(|d| d.get() == 0)
}

/// Runs `f` without recording (like `torch.no_grad`).
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _guard = NoGradGuard::new();
    f()
}

/// Enters a no-grad region on this thread; pair with `exit_no_grad` (the Python context manager).
pub fn enter_no_grad() {
    NO_GRAD_DEPTH.with(|d| d.set(d.get() + 1));
}

/// Leaves a region entered with `enter_no_grad`.
pub fn exit_no_grad() {
    NO_GRAD_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
}

/// While alive, ops on this thread do not record; used by the Python context manager.
pub struct NoGradGuard(());

impl NoGradGuard {
    pub fn new() -> Self {
        NO_GRAD_DEPTH.with(|d| d.set(d.get() + 1));
        NoGradGuard(())
    }
}

impl Default for NoGradGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        NO_GRAD_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}
