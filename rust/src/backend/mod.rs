//! Compute backends. Only the CPU backend exists so far; CUDA arrives with its own issue.

pub mod cpu;
