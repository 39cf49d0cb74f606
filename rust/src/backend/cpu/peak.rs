//! The machine's measured f32 FMA ceiling, for benchmarks to report kernels as a share of it:
//! every tlrs thread runs a loop of independent vector fused multiply-adds (24 accumulator
//! chains, enough to cover the FMA latency on both FMA ports) at the widest width the CPU has.

use std::time::Instant;

/// Accumulator chains per thread: more than latency x ports, fewer than the 32 registers.
const CHAINS: usize = 24;

/// f32 GFLOP/s (an FMA counts as two) of all `parallel::num_threads()` threads running FMA
/// loops side by side for `iters` steps each; None where the CPU has no vector FMA.
pub fn fma_peak_gflops(iters: usize) -> Option<f64> {
    let lanes = lanes()?;
    let threads = super::parallel::num_threads();
    // A short first round wakes the helpers, so the timed one runs on every thread at once.
    super::parallel::team_for(threads, usize::MAX, |_| {
        std::hint::black_box(run(iters / 16));
    });
    let t0 = Instant::now();
    super::parallel::team_for(threads, usize::MAX, |_| {
        std::hint::black_box(run(iters));
    });
    let secs = t0.elapsed().as_secs_f64();
    let flops = (threads * iters * CHAINS * lanes * 2) as f64;
    Some(flops / secs.max(1e-9) / 1e9)
}

/// f32 lanes of the widest vector FMA (None without one).
fn lanes() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if super::simd::has_avx512() {
            return Some(16);
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Some(8);
        }
    }
    None
}

/// One thread's loop at the width `lanes` reports; the sum keeps the work observable.
fn run(iters: usize) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if super::simd::has_avx512() {
            // SAFETY: the features it is compiled for were just detected on this CPU.
            return unsafe { x86::fma512(iters) };
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { x86::fma256(iters) };
        }
    }
    let _ = iters;
    0.0
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::CHAINS;
    use std::arch::x86_64::*;
    use std::hint::black_box;

    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma512(iters: usize) -> f32 {
        // Opaque operands: constants would let the compiler fold the chains away.
        let (x, y) = black_box((_mm512_set1_ps(0.5), _mm512_set1_ps(1e-7)));
        let mut acc: [__m512; CHAINS] = black_box([_mm512_setzero_ps(); CHAINS]);
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm512_fmadd_ps(x, y, *a);
            }
        }
        acc.iter().map(|&a| _mm512_reduce_add_ps(a)).sum()
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma256(iters: usize) -> f32 {
        let (x, y) = black_box((_mm256_set1_ps(0.5), _mm256_set1_ps(1e-7)));
        let mut acc: [__m256; CHAINS] = black_box([_mm256_setzero_ps(); CHAINS]);
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(x, y, *a);
            }
        }
        let mut lanes = [0f32; 8];
        acc.iter()
            .map(|&a| {
                _mm256_storeu_ps(lanes.as_mut_ptr(), a);
                lanes.iter().sum::<f32>()
            })
            .sum()
    }
}
