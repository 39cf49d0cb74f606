//! Elementwise loops compiled for the widest vectors this CPU has, over formulas given as types
//! rather than closures. A closure called in a loop inlines only when LLVM's cost model says so,
//! and a formula with a branch-free transcendental (`lane_math`) is large enough that it often
//! does not: the loop then stays a scalar call per element. A formula type's `#[inline(always)]`
//! method always inlines into the `#[target_feature]` loops below, so every lane runs the same
//! IEEE operations as the scalar formula (Rust never contracts a multiply and an add), and the
//! results do not depend on the vector width or the thread count.

use super::uninit::filled;
use crate::dtype::Float;
use std::mem::MaybeUninit;

const CHUNK: usize = 1 << 13;

/// A function of one element. Implementations mark `at` `#[inline(always)]`.
pub trait Lanewise1<T>: Sync {
    fn at(&self, x: T) -> T;
}

/// A function of two elements (a gradient: the upstream value and the op's input or output).
/// Implementations mark `at` `#[inline(always)]`.
pub trait Lanewise2<T>: Sync {
    fn at(&self, a: T, b: T) -> T;
}

#[inline(always)]
fn map_loop<T: Copy, F: Lanewise1<T>>(x: &[T], out: &mut [MaybeUninit<T>], f: &F) {
    let n = out.len();
    let x = &x[..n];
    for i in 0..n {
        out[i].write(f.at(x[i]));
    }
}

#[inline(always)]
fn zip_loop<T: Copy, F: Lanewise2<T>>(a: &[T], b: &[T], out: &mut [MaybeUninit<T>], f: &F) {
    let n = out.len();
    let (a, b) = (&a[..n], &b[..n]);
    for i in 0..n {
        out[i].write(f.at(a[i], b[i]));
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
    pub unsafe fn map_avx512<T: Copy, F: Lanewise1<T>>(x: &[T], o: &mut [MaybeUninit<T>], f: &F) {
        map_loop(x, o, f)
    }

    #[target_feature(enable = "avx2,avx")]
    pub unsafe fn map_avx2<T: Copy, F: Lanewise1<T>>(x: &[T], o: &mut [MaybeUninit<T>], f: &F) {
        map_loop(x, o, f)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
    pub unsafe fn zip_avx512<T: Copy, F: Lanewise2<T>>(
        a: &[T],
        b: &[T],
        o: &mut [MaybeUninit<T>],
        f: &F,
    ) {
        zip_loop(a, b, o, f)
    }

    #[target_feature(enable = "avx2,avx")]
    pub unsafe fn zip_avx2<T: Copy, F: Lanewise2<T>>(
        a: &[T],
        b: &[T],
        o: &mut [MaybeUninit<T>],
        f: &F,
    ) {
        zip_loop(a, b, o, f)
    }
}

/// `out[i] = f(x[i])` on the widest vectors available.
pub fn map_into<T: Copy, F: Lanewise1<T>>(x: &[T], out: &mut [MaybeUninit<T>], f: &F) {
    #[cfg(target_arch = "x86_64")]
    {
        if super::simd::has_avx512() {
            // SAFETY: the features it is compiled for were just detected on this CPU.
            return unsafe { x86::map_avx512(x, out, f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { x86::map_avx2(x, out, f) };
        }
    }
    map_loop(x, out, f)
}

/// `out[i] = f(a[i], b[i])` on the widest vectors available.
pub fn zip_into<T: Copy, F: Lanewise2<T>>(a: &[T], b: &[T], out: &mut [MaybeUninit<T>], f: &F) {
    #[cfg(target_arch = "x86_64")]
    {
        if super::simd::has_avx512() {
            // SAFETY: the features it is compiled for were just detected on this CPU.
            return unsafe { x86::zip_avx512(a, b, out, f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { x86::zip_avx2(a, b, out, f) };
        }
    }
    zip_loop(a, b, out, f)
}

/// `f` of every element of `x`, threaded over chunks.
pub fn map<T: Float, F: Lanewise1<T>>(x: &[T], f: &F) -> Vec<T> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        map_into(&x[ci * CHUNK..], o, f)
    })
}

/// `f(a[i], b[i])` for every i, threaded over chunks.
pub fn zip<T: Float, F: Lanewise2<T>>(a: &[T], b: &[T], f: &F) -> Vec<T> {
    debug_assert_eq!(a.len(), b.len());
    filled(a.len(), CHUNK, a.len(), |ci, o| {
        zip_into(&a[ci * CHUNK..], &b[ci * CHUNK..], o, f)
    })
}

/// `f` of every element of `x` into `out` (one block of a fused chain; the caller threads).
pub fn map_block<T: Copy, F: Lanewise1<T>>(x: &[T], out: &mut [T], f: &F) {
    // SAFETY: `out` is initialised; writing T values keeps it so.
    let out = unsafe { &mut *(out as *mut [T] as *mut [MaybeUninit<T>]) };
    map_into(x, out, f)
}

/// `f(a[i], b[i])` into `out` (one block of a fused chain).
pub fn zip_block<T: Copy, F: Lanewise2<T>>(a: &[T], b: &[T], out: &mut [T], f: &F) {
    // SAFETY: as in `map_block`.
    let out = unsafe { &mut *(out as *mut [T] as *mut [MaybeUninit<T>]) };
    zip_into(a, b, out, f)
}
