//! The compiled backend: trace a loss once into an SSA graph with static shapes, then replay it
//! natively, forward, backward (the eager gradient rules) and optimizer updates, with no Python
//! per op.

pub mod attrs;
pub mod exec;
pub mod fuse;
pub mod fuse_conv;
pub mod ir;

pub use ir::Graph;

use std::cell::RefCell;

thread_local! {
    /// The first Python read of a traced value on this thread since the trace began (kept even
    /// if the loss caught the exception, so the trace is still refused).
    static TRACED_READ: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Records that Python read a traced value (`how` names the read).
pub fn note_traced_read(how: &str) {
    TRACED_READ.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_none() {
            *r = Some(how.to_string());
        }
    });
}

/// The read recorded since the last call, if any (clearing it).
pub fn take_traced_read() -> Option<String> {
    TRACED_READ.with(|r| r.borrow_mut().take())
}
