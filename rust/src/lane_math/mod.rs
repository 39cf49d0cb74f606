//! libm's f32 routines rewritten without branches ("select form"): each computes every branch of
//! the scalar routine and picks one with selects, so a loop of it vectorises while every lane runs
//! the scalar call's IEEE operations in the same order, giving `libm`'s bits (each file's tests,
//! or the kernel file that uses it, compare the two bit for bit). `dtype.rs` makes them f32's
//! `Float` methods, so the op table's formulas vectorise through `backend/cpu/lanewise.rs`.
//! Pure math: nothing here knows tensors, devices or threads.

pub mod atan2f;
pub mod erff;
pub mod expf;
pub mod expm1f;
pub mod log1pf;
pub mod logf;
pub mod powf;
pub mod sincosf;
pub mod tanhf;
#[cfg(test)]
mod test_support;

/// Whether the CPU has the AVX-512 subsets the 16-lane kernels here are compiled for.
#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512dq")
}
