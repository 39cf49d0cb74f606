//! The reference GEMM's x86 SIMD microkernels: `MR x NV` vector accumulators in registers, a
//! separate multiply then add per step (never FMA), so each equals the scalar fold exactly.

use std::arch::{asm, x86_64::*};

/// `b · a[0]` on every lane, the scalar read by the multiply itself (AVX-512's embedded
/// broadcast). A broadcast in its own instruction takes a slot of the adder pipes on Zen 4,
/// where the reference's separate adds run too: with one per row of the tile the 8 x 3 kernel
/// stayed near 75% of the FMA peak. A product is the exact product rounded either way round, so
/// `b · a` has the bits of `a · b` for every pair but two NaNs (whose payload x86 takes from the
/// first operand; NaN payloads are not part of the reference contract).
///
/// # Safety
/// The CPU has AVX-512F and `a` points to a readable f32 (as for each function below, with its
/// own instruction set and type).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn mul_bcast_f32(b: __m512, a: *const f32) -> __m512 {
    let p: __m512;
    asm!("vmulps {p}, {b}, dword ptr [{a}]{{1to16}}", p = lateout(zmm_reg) p, b = in(zmm_reg) b,
         a = in(reg) a, options(pure, readonly, nostack));
    p
}

/// `mul_bcast_f32` for f64 lanes.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn mul_bcast_f64(b: __m512d, a: *const f64) -> __m512d {
    let p: __m512d;
    asm!("vmulpd {p}, {b}, qword ptr [{a}]{{1to8}}", p = lateout(zmm_reg) p, b = in(zmm_reg) b,
         a = in(reg) a, options(pure, readonly, nostack));
    p
}

/// `b · a[0]` on every lane for AVX, which has no embedded broadcast (the compiler keeps one
/// broadcast per row of the tile).
#[inline]
#[target_feature(enable = "avx")]
unsafe fn mul_splat_f32(b: __m256, a: *const f32) -> __m256 {
    _mm256_mul_ps(_mm256_set1_ps(*a), b)
}

/// `mul_splat_f32` for f64 lanes.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn mul_splat_f64(b: __m256d, a: *const f64) -> __m256d {
    _mm256_mul_pd(_mm256_set1_pd(*a), b)
}

/// Declares an x86 SIMD microkernel with `MR x NV` vector accumulators held in registers.
macro_rules! simd_kernel {
    (
        $name:ident, $t:ty, $feat:literal, $lanes:literal,
        $zero:ident, $load:ident, $store:ident, $mul_scalar:ident, $add:ident
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
                    let ai = unsafe { ap.add(i * a_row) };
                    for v in 0..NV {
                        // Separate multiply then add, each rounded once: the scalar fold exactly.
                        // SAFETY: `ai` is A(i, p), read as one scalar.
                        acc[i][v] = $add(acc[i][v], unsafe { $mul_scalar(bv[v], ai) });
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
_mm512_storeu_ps, mul_bcast_f32, _mm512_add_ps }
simd_kernel! { f64_avx512, f64, "avx512f", 8, _mm512_setzero_pd, _mm512_loadu_pd,
_mm512_storeu_pd, mul_bcast_f64, _mm512_add_pd }
simd_kernel! { f32_avx, f32, "avx", 8, _mm256_setzero_ps, _mm256_loadu_ps,
_mm256_storeu_ps, mul_splat_f32, _mm256_add_ps }
simd_kernel! { f64_avx, f64, "avx", 4, _mm256_setzero_pd, _mm256_loadu_pd,
_mm256_storeu_pd, mul_splat_f64, _mm256_add_pd }
