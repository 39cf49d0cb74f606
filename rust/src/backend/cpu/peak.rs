//! The machine's measured f32 FMA ceiling, for benchmarks to report kernels as a share of it:
//! every tlrs thread runs a loop of independent vector fused multiply-adds (24 accumulator
//! chains, enough to cover the FMA latency on both FMA ports) at the widest width the CPU has.
//! Also the ceiling of the reference kernels' arithmetic, a rounded multiply then a rounded add
//! per term: the same loop with the two as separate instructions (on CPUs whose multiplies and
//! adds share the FMA ports, half the FMA ceiling; with separate pipes, near all of it).

use std::time::Instant;

/// Accumulator chains per thread: more than latency x ports, fewer than the 32 registers.
const CHAINS: usize = 24;

/// f32 GFLOP/s (an FMA counts as two) of all `parallel::num_threads()` threads running FMA
/// loops side by side for `iters` steps each; None where the CPU has no vector FMA.
pub fn fma_peak_gflops(iters: usize) -> Option<f64> {
    Some(peak(iters, widest_loop(true)?))
}

/// As `fma_peak_gflops` with each FMA replaced by a multiply and a separate add (still two
/// flops per term): the ceiling of the reference kernels' fold.
pub fn mul_add_peak_gflops(iters: usize) -> Option<f64> {
    Some(peak(iters, widest_loop(false)?))
}

/// GFLOP/s of `fma_loop` (two flops per chain step, `lanes` lanes) on every thread at once.
fn peak(iters: usize, (lanes, fma_loop): (usize, unsafe fn(usize))) -> f64 {
    let threads = super::parallel::num_threads();
    // SAFETY: `widest_loop` returns a loop only for features it detected on this CPU.
    let run = |iters| unsafe { fma_loop(iters) };
    // A short first round wakes the helpers, so the timed one runs on every thread at once.
    super::parallel::team_for(threads, usize::MAX, |_| run(iters / 16));
    let t0 = Instant::now();
    super::parallel::team_for(threads, usize::MAX, |_| run(iters));
    let secs = t0.elapsed().as_secs_f64();
    let flops = (threads * iters * CHAINS * lanes * 2) as f64;
    flops / secs.max(1e-9) / 1e9
}

/// The widest vector loop this CPU has, of FMAs (`fused`) or of multiplies then adds: its f32
/// lanes and the loop (None without vector FMA).
fn widest_loop(fused: bool) -> Option<(usize, unsafe fn(usize))> {
    #[cfg(target_arch = "x86_64")]
    {
        let pick =
            |fma: unsafe fn(usize), mul_add: unsafe fn(usize)| if fused { fma } else { mul_add };
        if super::simd::has_avx512() {
            return Some((16, pick(x86::fma512, x86::mul_add512)));
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Some((8, pick(x86::fma256, x86::mul_add256)));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = fused;
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::CHAINS;
    use std::arch::x86_64::*;
    use std::hint::black_box;

    /// `iters` steps of CHAINS independent FMAs (or multiply-then-adds) at one vector width.
    /// The operands and the result pass through `black_box`: with constants the compiler folded
    /// the chains away.
    macro_rules! fma_loop {
        ($name:ident, $feat:literal, $set1:ident, $fmadd:expr) => {
            #[target_feature(enable = $feat)]
            pub unsafe fn $name(iters: usize) {
                let (x, y) = black_box(($set1(0.5), $set1(1e-7)));
                let mut acc = black_box([$set1(0.0); CHAINS]);
                for _ in 0..iters {
                    for a in acc.iter_mut() {
                        *a = $fmadd(x, y, *a);
                    }
                }
                black_box(acc);
            }
        };
    }

    fma_loop!(fma512, "avx512f", _mm512_set1_ps, _mm512_fmadd_ps);
    fma_loop!(fma256, "avx2,fma", _mm256_set1_ps, _mm256_fmadd_ps);
    // a·x + y as two instructions: the product depends on the chain, so it is not hoisted.
    fma_loop!(mul_add512, "avx512f", _mm512_set1_ps, |x, y, a| {
        _mm512_add_ps(_mm512_mul_ps(a, x), y)
    });
    fma_loop!(mul_add256, "avx2,fma", _mm256_set1_ps, |x, y, a| {
        _mm256_add_ps(_mm256_mul_ps(a, x), y)
    });
}
