//! Runs a kernel body compiled for the widest vector instructions this CPU has (AVX-512, else
//! AVX2, else the build's baseline SSE2), chosen once per call at run time, so one wheel runs
//! everywhere and still uses full-width registers where they exist.
//!
//! Results never change with the choice: the compiler vectorises only where the vector code
//! computes exactly what the scalar code does (no reassociated sums, no fused multiply-adds
//! without an explicit `mul_add`), so each element is the same IEEE operation at any width.

/// Whether the CPU has the AVX-512 subsets `widest` compiles for (x86-64 only).
#[inline(always)]
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `body()`, compiled for the widest instruction set available. The body is compiled for it
/// only where the compiler inlines it into the wrapper (small closures; a closure calling a
/// large generic function may stay out of line, at the baseline width).
#[inline(always)]
pub fn widest<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
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

/// Defines `fn $name<T>(args)` (the type parameter optional) that runs `$body(args)` compiled
/// for AVX-512, else AVX2, else the baseline, picked at run time. `$body` must be `#[inline(always)]`: it then compiles
/// inside each `#[target_feature]` copy for certain, where a closure handed to `widest`
/// inlines only when LLVM's cost model says so (a large body stays a baseline-width call).
macro_rules! wide_fn {
    ($(#[$doc:meta])* $vis:vis fn $name:ident$(<$T:ident: $bound:path>)?($($arg:ident: $ty:ty),* $(,)?) = $body:path) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name$(<$T: $bound>)?($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx512$(<$T: $bound>)?($($arg: $ty),*) {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,avx")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx2$(<$T: $bound>)?($($arg: $ty),*) {
                    $body($($arg),*)
                }
                if $crate::backend::cpu::simd::has_avx512() {
                    // SAFETY: the features it is compiled for were just detected on this CPU.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use wide_fn;
