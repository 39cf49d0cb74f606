//! Output buffers that kernels write once, never zeroed first: a zeroing pass costs as much as a
//! light kernel and pushes its inputs out of cache. Every function here relies on its caller's
//! kernel writing every element it is handed; only initialised values are ever written.

use super::parallel::for_chunks;
use std::mem::MaybeUninit;

/// A vector of `n` elements, each written once by `fill(chunk index, chunk)` over chunks of
/// `per` (in parallel when `work` is large).
pub fn filled<T: Send>(
    n: usize,
    per: usize,
    work: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) -> Vec<T> {
    written(n, |out| for_chunks(out, per, work, fill))
}

/// A vector of `n` elements, all written by `fill`.
pub fn written<T>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    fill(&mut out.spare_capacity_mut()[..n]);
    // SAFETY: the callers' kernels write each of the n elements (see the module comment).
    unsafe { out.set_len(n) };
    out
}

/// `c` after a kernel has written every element.
///
/// # Safety
/// Every element of `c` is initialised.
pub unsafe fn assume_init<T>(c: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: as the caller promises, every element is initialised.
    unsafe { &mut *(c as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// Writes `v` to every element.
pub fn fill_with<T: Copy>(c: &mut [MaybeUninit<T>], v: T) -> &mut [T] {
    c.iter_mut().for_each(|e| _ = e.write(v));
    // SAFETY: every element was just written.
    unsafe { assume_init(c) }
}
