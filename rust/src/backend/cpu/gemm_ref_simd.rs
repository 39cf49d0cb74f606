//! The reference GEMM's x86 SIMD microkernels: `MR x NV` vector accumulators in registers, a
//! separate multiply then add per step (never FMA), so each equals the scalar fold exactly.

use std::arch::x86_64::*;

/// Declares an x86 SIMD microkernel with `MR x NV` vector accumulators held in registers.
macro_rules! simd_kernel {
    (
        $name:ident, $t:ty, $feat:literal, $lanes:literal,
        $zero:ident, $load:ident, $store:ident, $splat:ident, $mul:ident, $add:ident
    ) => {
        /// # Safety
        /// The CPU supports the target feature, and the `KernelFn` contract holds with
        /// `NR = NV * lanes`.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn $name<const MR: usize, const NV: usize, const A_ROWS: bool>(
            kc: usize,
            a: *const $t,
            lda: usize,
            b: *const $t,
            c: *mut $t,
            ldc: usize,
            accumulate: bool,
        ) {
            let (a_row, a_step) = if A_ROWS { (lda, 1) } else { (1, lda) };
            let mut acc = [[$zero(); NV]; MR];
            if accumulate {
                for i in 0..MR {
                    for v in 0..NV {
                        // SAFETY: the tile's MR rows of NV*lanes elements are inside C.
                        acc[i][v] = unsafe { $load(c.add(i * ldc + v * $lanes)) };
                    }
                }
            }
            let (mut ap, mut bp) = (a, b);
            for _ in 0..kc {
                let mut bv = [$zero(); NV];
                for v in 0..NV {
                    // SAFETY: bp walks the kc rows of NV*lanes elements of the packed B panel.
                    bv[v] = unsafe { $load(bp.add(v * $lanes)) };
                }
                for i in 0..MR {
                    // SAFETY: A(i, p) of the panel, per the contract.
                    let ai = $splat(unsafe { *ap.add(i * a_row) });
                    for v in 0..NV {
                        // Separate multiply then add, each rounded once: the scalar fold exactly.
                        acc[i][v] = $add(acc[i][v], $mul(ai, bv[v]));
                    }
                }
                // Read in place, A's next column can lie past its end after the last step, so
                // the A pointer moves by address arithmetic alone (it is read only for p < kc).
                ap = ap.wrapping_add(a_step);
                // SAFETY: stays within (or one past) the packed B panel.
                bp = unsafe { bp.add(NV * $lanes) };
            }
            for i in 0..MR {
                for v in 0..NV {
                    // SAFETY: as for the loads.
                    unsafe { $store(c.add(i * ldc + v * $lanes), acc[i][v]) };
                }
            }
        }
    };
}

simd_kernel! { f32_avx512, f32, "avx512f", 16, _mm512_setzero_ps, _mm512_loadu_ps,
_mm512_storeu_ps, _mm512_set1_ps, _mm512_mul_ps, _mm512_add_ps }
simd_kernel! { f64_avx512, f64, "avx512f", 8, _mm512_setzero_pd, _mm512_loadu_pd,
_mm512_storeu_pd, _mm512_set1_pd, _mm512_mul_pd, _mm512_add_pd }
simd_kernel! { f32_avx, f32, "avx", 8, _mm256_setzero_ps, _mm256_loadu_ps,
_mm256_storeu_ps, _mm256_set1_ps, _mm256_mul_ps, _mm256_add_ps }
simd_kernel! { f64_avx, f64, "avx", 4, _mm256_setzero_pd, _mm256_loadu_pd,
_mm256_storeu_pd, _mm256_set1_pd, _mm256_mul_pd, _mm256_add_pd }
