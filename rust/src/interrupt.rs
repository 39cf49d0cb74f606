//! A stop check a caller installs around a long native call (the autograd walk, the compiled
//! training loop): between two pieces of work the call asks `requested()`, and on true ends
//! with `Error::Interrupted`. The bindings answer from Python's signal handlers, so Ctrl-C and
//! SIGTERM stop a long backward pass between two nodes. This module knows nothing of Python.
//! The check belongs to the calling thread; worker threads see none.

use std::cell::Cell;

type Check = *mut (dyn FnMut() -> bool + 'static);

thread_local! {
    static CHECK: Cell<Option<Check>> = const { Cell::new(None) };
}

/// Runs `f` with `check` as this thread's stop check (the previous one comes back after).
pub fn with_check<R>(check: &mut dyn FnMut() -> bool, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Check>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CHECK.with(|c| c.set(self.0));
        }
    }
    let ptr: *mut (dyn FnMut() -> bool + '_) = check;
    // SAFETY: only the lifetime is erased; the pointer is reachable through CHECK during `f`
    // alone (Restore puts the previous value back on return and on unwind), while `check` is
    // borrowed for this whole call.
    let ptr: Check = unsafe { std::mem::transmute(ptr) };
    let _restore = Restore(CHECK.with(|c| c.replace(Some(ptr))));
    f()
}

/// Whether this thread's stop check asks to stop (false when none is installed).
pub fn requested() -> bool {
    match CHECK.with(|c| c.take()) {
        None => false,
        Some(p) => {
            // Taken out while it runs, so a check that reaches `requested` again sees none.
            // SAFETY: `p` was installed by `with_check`, whose borrow outlives this call.
            let stop = unsafe { (*p)() };
            CHECK.with(|c| c.set(Some(p)));
            stop
        }
    }
}

/// `Err(Error::Interrupted)` when the stop check asks to stop.
pub fn check() -> crate::Result<()> {
    if requested() {
        Err(crate::Error::Interrupted)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_runs_inside_and_is_gone_after() {
        assert!(!requested());
        let mut calls = 0;
        let mut stop = || {
            calls += 1;
            calls >= 2
        };
        let seen = with_check(&mut stop, || [requested(), requested(), requested()]);
        assert_eq!(seen, [false, true, true]);
        assert_eq!(calls, 3);
        assert!(!requested());
        assert!(matches!(
            with_check(&mut || true, super::check),
            Err(crate::Error::Interrupted)
        ));
    }
}
