//! The compiled backend: trace a loss once into an SSA graph with static shapes, then replay it
//! natively, forward, backward (the eager gradient rules) and optimizer updates, with no Python
//! per op.

pub mod exec;
pub mod ir;
pub mod replay;

pub use ir::Graph;
