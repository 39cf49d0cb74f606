//! Fallible host allocation: sizes are checked and reserved before use, so a request too large
//! for this machine is an out-of-memory error naming the bytes, never an abort. Used by the
//! storage and the backends alike (it depends on nothing but the error type).

use crate::{Error, Result};

/// Refuses an op output of `shape` that cannot be addressed or allocated here (a MemoryError
/// naming the bytes rather than an abort inside a kernel). Large requests are probed with a
/// fallible reservation, released at once: the kernel's own allocation then succeeds.
pub fn check_alloc(op: &'static str, shape: &crate::Shape) -> Result<()> {
    let n = shape.checked_numel().map_err(|_| {
        Error::shape(
            op,
            format!("the result shape {shape} has too many elements to address"),
        )
    })?;
    let bytes = n.saturating_mul(8);
    // The description is formatted only for a request large enough to probe: this check runs
    // on every op, and formatting it each time was ~2% of a batch-1 MLP's compiled step.
    if bytes < PROBE_BYTES {
        return Ok(());
    }
    check_bytes(op, &format!("the result of shape {shape}"), bytes)
}

/// Requests from this size up are probed with a reservation.
const PROBE_BYTES: usize = 1 << 30;

/// Refuses to go on when `bytes` (for `what`) cannot be reserved here.
pub fn check_bytes(op: &'static str, what: &str, bytes: usize) -> Result<()> {
    if bytes >= PROBE_BYTES {
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(bytes).map_err(|_| {
            Error::OutOfMemory(format!("{op}: cannot allocate {what} ({bytes} bytes)"))
        })?;
    }
    Ok(())
}

/// An empty vector with room for `n` elements, or an out-of-memory error (never an abort).
pub fn try_alloc<T>(n: usize) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| {
        Error::OutOfMemory(format!(
            "cannot allocate {n} elements ({} bytes)",
            n.saturating_mul(std::mem::size_of::<T>())
        ))
    })?;
    Ok(out)
}
