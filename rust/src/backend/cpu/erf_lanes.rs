//! The error function of f32 values at vector speed with the `libm` crate's bits, and GELU
//! (forward and gradient) built on it. The lanes are sorted by erf's range first (AVX-512
//! compress and expand), so each range's formula runs only on its own lanes; elsewhere every
//! lane runs `lane_math::erff::erff_select`, all ranges computed and one selected. Either way
//! each lane runs the scalar call's IEEE operations in the same order, and the tests compare the
//! two bit for bit. f64 keeps the scalar `libm::erf`.

use super::gelu_f32::{erf_arg, gelu_from_erf, gelu_grad_from_erf};
use super::uninit::filled;
use crate::lane_math::erff::{erff_fast, erff_select};
use std::mem::MaybeUninit;

/// erf for GELU: libm's bits (`erff_select`), or the fast kernels' approximation.
#[inline(always)]
fn erf_of<const FAST: bool>(x: f32) -> f32 {
    if FAST {
        erff_fast(x)
    } else {
        erff_select(x)
    }
}

/// The GELU table entry's f32 formula (op_table/unary.rs) with `erff_select`.
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    gelu_with::<false>(x)
}

#[inline(always)]
fn gelu_with<const FAST: bool>(x: f32) -> f32 {
    gelu_from_erf(x, erf_of::<FAST>(erf_arg(x)))
}

/// The GELU table entry's f32 gradient times `g`.
#[inline(always)]
pub fn gelu_grad_f32(g: f32, x: f32) -> f32 {
    gelu_grad_with::<false>(g, x)
}

#[inline(always)]
fn gelu_grad_with<const FAST: bool>(g: f32, x: f32) -> f32 {
    gelu_grad_from_erf(g, x, erf_of::<FAST>(erf_arg(x)))
}

const CHUNK: usize = 1 << 13;

/// GELU of one chunk into `out`, by index loop (a closure or function pointer passed in stays a
/// call at the baseline width and nothing vectorises; named calls inline).
#[inline(always)]
fn gelu_chunk<const FAST: bool>(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    let n = out.len();
    let x = &x[..n];
    for i in 0..n {
        out[i].write(gelu_with::<FAST>(x[i]));
    }
}

#[inline(always)]
fn gelu_grad_chunk<const FAST: bool>(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    let n = out.len();
    let (x, g) = (&x[..n], &g[..n]);
    for i in 0..n {
        out[i].write(gelu_grad_with::<FAST>(g[i], x[i]));
    }
}

/// `gelu_chunk` compiled for AVX-512 (with FMA, which only the fast erf's `mul_add` uses: Rust
/// never contracts a separate multiply and add): 16 lanes of every select.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,fma,popcnt")]
unsafe fn gelu_avx512<const FAST: bool>(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    if FAST {
        gelu_chunk::<FAST>(x, out)
    } else {
        // SAFETY: this function's features include erf_sorted's.
        unsafe { super::erf_sorted::gelu(x, out) }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,fma,popcnt")]
unsafe fn gelu_grad_avx512<const FAST: bool>(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    if FAST {
        gelu_grad_chunk::<FAST>(x, g, out)
    } else {
        // SAFETY: as in `gelu_avx512`.
        unsafe { super::erf_sorted::gelu_grad(x, g, out) }
    }
}

/// GELU of one stretch, on the widest vectors this CPU has.
fn gelu_run<const FAST: bool>(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::has_avx512() && std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { gelu_avx512::<FAST>(x, out) };
    }
    gelu_chunk::<FAST>(x, out)
}

fn gelu_grad_run<const FAST: bool>(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::has_avx512() && std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: as in `gelu_run`.
        return unsafe { gelu_grad_avx512::<FAST>(x, g, out) };
    }
    gelu_grad_chunk::<FAST>(x, g, out)
}

/// libm's erf of every element, threaded over chunks (sorted lanes where AVX-512 is there).
pub fn erf(x: &[f32]) -> Vec<f32> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        let x = &x[ci * CHUNK..][..o.len()];
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_avx512() && std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the features it is compiled for were just detected on this CPU.
            return unsafe { super::erf_sorted::erf(x, o) };
        }
        for (o, &v) in o.iter_mut().zip(x) {
            o.write(erff_select(v));
        }
    })
}

/// GELU of every element, threaded over chunks: libm's erf bits, or with `fast` the fast
/// kernels' erf (each element still a function of its value alone, so any thread count agrees).
pub fn gelu(x: &[f32], fast: bool) -> Vec<f32> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        if fast {
            gelu_run::<true>(&x[ci * CHUNK..], o)
        } else {
            gelu_run::<false>(&x[ci * CHUNK..], o)
        }
    })
}

/// `g` times GELU's derivative at `x`, element by element.
pub fn gelu_grad(x: &[f32], g: &[f32], fast: bool) -> Vec<f32> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        let (x, g) = (&x[ci * CHUNK..], &g[ci * CHUNK..]);
        if fast {
            gelu_grad_run::<true>(x, g, o)
        } else {
            gelu_grad_run::<false>(x, g, o)
        }
    })
}

/// GELU of one block into `out` (a step of a fused chain).
pub fn gelu_into(x: &[f32], out: &mut [f32], fast: bool) {
    // SAFETY: every element of `out` is initialised; writing f32 values keeps it so.
    let out = unsafe { &mut *(out as *mut [f32] as *mut [MaybeUninit<f32>]) };
    if fast {
        gelu_run::<true>(x, out)
    } else {
        gelu_run::<false>(x, out)
    }
}

/// `g` times GELU's derivative for one block into `out`.
pub fn gelu_grad_into(x: &[f32], g: &[f32], out: &mut [f32], fast: bool) {
    // SAFETY: as in `gelu_into`.
    let out = unsafe { &mut *(out as *mut [f32] as *mut [MaybeUninit<f32>]) };
    if fast {
        gelu_grad_run::<true>(x, g, out)
    } else {
        gelu_grad_run::<false>(x, g, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(values: impl Iterator<Item = u32>) -> usize {
        let xs: Vec<f32> = values.map(f32::from_bits).collect();
        let ys = gelu(&xs, false);
        let gs = gelu_grad(&xs, &vec![1.25; xs.len()], false);
        let es = erf(&xs);
        for (i, &x) in xs.iter().enumerate() {
            let want = libm::erff(x).to_bits();
            let got = erff_select(x).to_bits();
            assert_eq!(got, want, "erff at {x:e} ({:#x})", x.to_bits());
            assert_eq!(
                es[i].to_bits(),
                want,
                "erf lanes at {x:e} ({:#x})",
                x.to_bits()
            );
            // The table's own f32 formulas, scalar libm (dtype.rs Float), against the lanes.
            let gelu_want =
                0.5f32 * x * (1.0 + libm::erff(x * std::f64::consts::FRAC_1_SQRT_2 as f32));
            assert_eq!(ys[i].to_bits(), gelu_want.to_bits(), "gelu at {x:e}");
            let cdf = 0.5f32 * (1.0 + libm::erff(x * std::f64::consts::FRAC_1_SQRT_2 as f32));
            let pdf = 0.398_942_280_401_432_7_f64 as f32 * libm::expf(-(0.5 * x * x));
            let grad_want = 1.25f32 * (cdf + x * pdf);
            assert_eq!(
                gs[i].to_bits(),
                grad_want.to_bits(),
                "gelu gradient at {x:e}"
            );
        }
        xs.len()
    }

    #[test]
    fn every_f32_near_each_branch_boundary_matches_libm() {
        // Both signs of each bound of erff's ranges: 2^-28, 0.84375, 1.25, 1/0.35, 6, and where
        // the inputs of the expf calls cross its own ranges (|x| up to about 10).
        let mut n = 0;
        for (lo, hi) in [
            (0x3170_0000u32, 0x3190_0000u32),
            (0x3f50_0000, 0x3f60_0000),
            (0x3f98_0000, 0x3fa8_0000),
            (0x4030_0000, 0x403c_0000),
            (0x40b8_0000, 0x40c8_0000),
        ] {
            for sign in [0, 0x8000_0000u32] {
                n += check((lo..hi).map(|b| b | sign));
            }
        }
        assert!(n > 2_000_000);
    }

    #[test]
    fn a_sweep_of_all_f32_and_the_special_values_match_libm() {
        let sweep = (0..=u32::MAX).step_by(1009);
        let special = [
            0u32,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_0000,
            0xbf80_0000,
            0x40c0_0000,
            0xc0c0_0000,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0001,
            0x7fc1_2345,
        ];
        assert!(check(sweep.chain(special)) > 4_000_000);
    }

    #[test]
    fn mixed_ranges_in_every_vector_match_libm() {
        // Neighbouring lanes from different ranges of erf (the sorted AVX-512 path packs each
        // range apart and puts the results back), odd lengths for the scalar tails, and blocks
        // that hold one range only.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let specials = [
            0u32,
            0x8000_0000,
            1,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x40c0_0000,
        ];
        let mut n = 0;
        for len in [1usize, 15, 17, 511, 512, 513, 4099, 40_000] {
            let values = (0..len).map(|_| {
                let r = next();
                match r % 8 {
                    // Normal-ish activations: |x| up to about 12 (all of erf's ranges).
                    0..=5 => ((r >> 8) as u32 as f32 / u32::MAX as f32 - 0.5) * 24.0,
                    6 => f32::from_bits(specials[(r >> 8) as usize % specials.len()]),
                    _ => f32::from_bits((r >> 16) as u32),
                }
                .to_bits()
            });
            n += check(values);
        }
        n += check(std::iter::repeat_n(0x3f00_0000u32, 1024)); // all small
        n += check(std::iter::repeat_n(0x4000_0000u32, 1024)); // all far
        assert!(n > 40_000);
    }

    #[test]
    fn the_fast_erf_is_within_its_stated_tolerance_of_libm() {
        // Every 257th f32 of both signs up to |x| = 8, and all of [3.9, 3.95] where it saturates.
        let near = (0x4079_9999u32..0x407c_cccd).flat_map(|b| [b, b | 0x8000_0000]);
        let xs = (0..0x4100_0000u32)
            .step_by(257)
            .flat_map(|b| [b, b | 0x8000_0000])
            .chain(near)
            .map(f32::from_bits);
        let mut worst = 0.0f64;
        for x in xs {
            let err = (erff_fast(x) as f64 - libm::erff(x) as f64).abs();
            worst = worst.max(err);
        }
        assert!(worst <= 5e-7, "fast erf off by {worst:e}");
        assert_eq!(erff_fast(f32::INFINITY), 1.0);
        assert_eq!(erff_fast(f32::NEG_INFINITY), -1.0);
        assert!(erff_fast(f32::NAN).is_nan());
        // GELU through it: the same non-finite values, the rest within 3e-7 * max(1, |x|).
        let xs: Vec<f32> = (0..0x4140_0000u32)
            .step_by(4099)
            .flat_map(|b| [b, b | 0x8000_0000])
            .map(f32::from_bits)
            .chain([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 3e38, -3e38])
            .collect();
        let (fast, exact) = (gelu(&xs, true), gelu(&xs, false));
        let g = vec![1.0; xs.len()];
        let (gfast, gexact) = (gelu_grad(&xs, &g, true), gelu_grad(&xs, &g, false));
        for (i, &x) in xs.iter().enumerate() {
            for (a, b) in [(fast[i], exact[i]), (gfast[i], gexact[i])] {
                if !b.is_finite() {
                    assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "at {x:e}"
                    );
                } else {
                    let bound = 3e-7 * (x.abs() as f64).max(1.0);
                    assert!(
                        (a as f64 - b as f64).abs() <= bound,
                        "gelu at {x:e}: {a:e} vs {b:e}"
                    );
                }
            }
        }
    }
}
