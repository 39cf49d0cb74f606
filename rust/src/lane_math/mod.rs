//! libm's routines rewritten without branches ("select form"): each computes every branch of the
//! scalar routine and picks one with selects, so a loop of it vectorises while every lane runs
//! the scalar call's IEEE operations in the same order, giving `libm`'s bits (each file's tests,
//! or the kernel file that uses it, compare the two bit for bit). f32's files end in `f`
//! (`expf.rs`), f64's do not (`exp.rs`). `dtype.rs` makes them the `Float` methods, so the op
//! table's formulas vectorise through `backend/cpu/lanewise.rs`.
//! Pure math: nothing here knows tensors, devices or threads.

pub mod atan2;
pub mod atan2f;
// f64 erf in select form, bit-exact, not f64's `Float::erf` (a loop of it computes all four
// ranges in every lane: five divisions, two exponentials, 1.3x slower than libm's branches on
// GELU's inputs). `erf_slice` packs the lanes from 1.25 on first and is what f64's erf and GELU
// run (`backend/cpu/f64_lane_ops.rs`).
pub mod erf;
pub mod erff;
pub mod exp;
pub mod expf;
pub mod expm1;
pub mod expm1f;
pub mod fmod;
pub mod log;
pub mod log1p;
pub mod log1pf;
pub mod logf;
pub mod pow;
pub mod powf;
pub mod sincos;
pub mod sincosf;
pub mod tanh;
pub mod tanhf;
#[cfg(test)]
mod test_support;

/// Makes the slice function of a select form: `$slice(x, out)` sets `out[i] = $select(x[i])`
/// (panicking if the lengths differ), the loop compiled for AVX-512 where the CPU has it, else
/// the baseline loop; and that plain loop as `run`, which the tests compare too. The loop is
/// `#[inline(always)]`, so the AVX-512 entry holds a copy compiled for its own width.
/// `avx512 = path` names the AVX-512 loop instead (an unsafe fn with those features, taking
/// `x` and `out`), such as intrinsics for the common lanes that fall back on `run`.
macro_rules! lane_slice {
    ($(#[$doc:meta])* $slice:ident = $select:ident, $t:ty) => {
        $crate::lane_math::lane_slice!($(#[$doc])* $slice = $select, $t, avx512 = run);
    };
    ($(#[$doc:meta])* $slice:ident = $select:ident, $t:ty, avx512 = $fast:path) => {
        /// The loop both entry points compile: named calls inline, so it vectorises.
        #[inline(always)]
        fn run(x: &[$t], out: &mut [$t]) {
            let n = out.len();
            let x = &x[..n];
            for i in 0..n {
                out[i] = $select(x[i]);
            }
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
        unsafe fn run_avx512(x: &[$t], out: &mut [$t]) {
            #[allow(unused_unsafe)]
            // SAFETY: this function's features, which `$fast` is compiled for.
            unsafe {
                $fast(x, out)
            }
        }

        $(#[$doc])*
        pub fn $slice(x: &[$t], out: &mut [$t]) {
            assert_eq!(x.len(), out.len(), concat!(stringify!($slice), ": lengths differ"));
            #[cfg(target_arch = "x86_64")]
            if super::has_avx512() {
                // SAFETY: the features it is compiled for were just detected on this CPU.
                return unsafe { run_avx512(x, out) };
            }
            run(x, out)
        }
    };
}
pub(crate) use lane_slice;

/// `[expr for k in 0..n]`: an intrinsics kernel's step on `n` vectors side by side, each
/// vector's operation next to the others' (one vector's steps are a chain of dependent
/// operations; side by side the core overlaps them).
macro_rules! each {
    ($n:ident, $k:ident => $e:expr) => {
        std::array::from_fn::<_, $n, _>(|$k| $e)
    };
}
pub(crate) use each;

/// `o[l] = call(l)` for each lane l of a vector of 16 that `ok` leaves out: an intrinsics
/// kernel's uncommon lanes, by libm's call (the select form's bits).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn by_call_where_not(ok: u16, o: &mut [f32], call: impl Fn(usize) -> f32) {
    let mut rest = !ok;
    while rest != 0 {
        let l = rest.trailing_zeros() as usize;
        o[l] = call(l);
        rest &= rest - 1;
    }
}

/// Whether the CPU has the AVX-512 subsets the 16-lane kernels here are compiled for.
#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512dq")
}

/// Whether the CPU has AVX2 and FMA (the 8-lane fallback of kernels that need a fused
/// multiply-add to be fast).
#[cfg(target_arch = "x86_64")]
fn has_avx2_fma() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}
