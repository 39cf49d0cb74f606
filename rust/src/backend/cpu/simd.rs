//! Runs a kernel body compiled for the widest vector instructions this CPU has (AVX-512, else
//! AVX2, else the build's baseline SSE2), chosen once per call at run time, so one wheel runs
//! everywhere and still uses full-width registers where they exist.
//!
//! Results never change with the choice: the compiler vectorises only where the vector code
//! computes exactly what the scalar code does (no reassociated sums, no fused multiply-adds
//! without an explicit `mul_add`), so each element is the same IEEE operation at any width.

/// `body()`, compiled for the widest instruction set available.
#[inline(always)]
pub fn widest<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            // SAFETY: the features it is compiled for were just detected on this CPU.
            return unsafe { x86::avx512(body) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { x86::avx2(body) };
        }
    }
    body()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
    pub unsafe fn avx512<R>(body: impl FnOnce() -> R) -> R {
        body()
    }

    #[target_feature(enable = "avx2,avx")]
    pub unsafe fn avx2<R>(body: impl FnOnce() -> R) -> R {
        body()
    }
}
