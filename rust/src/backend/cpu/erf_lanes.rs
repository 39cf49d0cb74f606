//! The error function of f32 values at vector speed with the `libm` crate's bits, and GELU
//! (forward and gradient) built on it. `erff_select` is libm's `erff` (FreeBSD's s_erff.c:
//! rational approximations on |x| < 0.84375, < 1.25, < 1/0.35 and < 6, the last two through two
//! `expf` calls) with every branch computed and chosen by a select, so a loop of it vectorises:
//! each lane runs the scalar call's IEEE operations in the same order (no FMA contraction), and
//! the tests compare the two bit for bit. f64 keeps the scalar `libm::erf`.

use super::exp_lanes::expf_select;
use super::uninit::filled;
use std::mem::MaybeUninit;

const ERX: f32 = f32::from_bits(0x3f58_560b);
const EFX8: f32 = f32::from_bits(0x3f83_75d4);
const PP: [f32; 5] = f32s([
    0x3e03_75d4,
    0xbea6_6beb,
    0xbce9_528f,
    0xbbbd_1489,
    0xb7c7_56b1,
]);
const QQ: [f32; 5] = f32s([
    0x3ecb_bbce,
    0x3d85_2a63,
    0x3ba6_8116,
    0x390a_ee49,
    0xb684_e21a,
]);
const PA: [f32; 7] = f32s([
    0xbb1a_cdc6,
    0x3ed4_6805,
    0xbebe_9208,
    0x3ea2_fe54,
    0xbde3_1cc2,
    0x3d11_51b3,
    0xbb0d_f9c0,
]);
const QA: [f32; 6] = f32s([
    0x3dd9_f331,
    0x3f0a_5785,
    0x3d93_1ae7,
    0x3e01_3307,
    0x3c5f_6e13,
    0x3c44_5aa3,
]);
const RA: [f32; 8] = f32s([
    0xbc21_a093,
    0xbf31_a0b7,
    0xc128_f022,
    0xc279_8057,
    0xc322_658c,
    0xc338_9ae7,
    0xc2a2_932b,
    0xc11d_077e,
]);
const SA: [f32; 8] = f32s([
    0x419d_35ce,
    0x4309_a863,
    0x43d9_486f,
    0x4421_58c9,
    0x43d6_810b,
    0x42d9_451f,
    0x40d2_3f7c,
    0xbd77_7f97,
]);
const RB: [f32; 7] = f32s([
    0xbc21_a092,
    0xbf4c_9dd4,
    0xc18e_104b,
    0xc320_a2ea,
    0xc41f_6441,
    0xc480_230b,
    0xc3f1_c275,
]);
const SB: [f32; 7] = f32s([
    0x41f2_b459,
    0x43a2_e571,
    0x44c0_1759,
    0x4547_fdbb,
    0x451f_90ce,
    0x43ed_43a7,
    0xc1b3_8712,
]);

const fn f32s<const N: usize>(bits: [u32; N]) -> [f32; N] {
    let mut out = [0.0; N];
    let mut i = 0;
    while i < N {
        out[i] = f32::from_bits(bits[i]);
        i += 1;
    }
    out
}

/// c[0] + s·(c[1] + s·(c[2] + ...)), libm's nesting (Horner from the last coefficient).
#[inline(always)]
fn horner<const N: usize>(c: &[f32; N], s: f32) -> f32 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = c[i] + s * acc;
    }
    acc
}

/// 1 + s·(c[0] + s·(c[1] + ...)), the denominators' form.
#[inline(always)]
fn one_plus<const N: usize>(c: &[f32; N], s: f32) -> f32 {
    1.0 + s * horner(c, s)
}

/// `libm::erff(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn erff_select(x: f32) -> f32 {
    let bits = x.to_bits();
    let negative = bits >> 31 != 0;
    let ix = bits & 0x7fff_ffff;
    let ax = f32::from_bits(ix);
    // |x| < 0.84375
    let z = x * x;
    let small = x + x * (horner(&PP, z) / one_plus(&QQ, z));
    let tiny = 0.125 * (8.0 * x + EFX8 * x);
    // erfc on 0.84375 <= |x| < 1.25
    let s1 = ax - 1.0;
    let erfc_near = 1.0 - ERX - horner(&PA, s1) / one_plus(&QA, s1);
    // erfc on 1.25 <= |x| < 6
    let s2 = 1.0 / (ax * ax);
    let (r, big_s) = if ix < 0x4036_db6d {
        (horner(&RA, s2), one_plus(&SA, s2))
    } else {
        (horner(&RB, s2), one_plus(&SB, s2))
    };
    let zt = f32::from_bits(ix & 0xffff_e000);
    let erfc_far =
        expf_select(-zt * zt - 0.5625) * expf_select((zt - ax) * (zt + ax) + r / big_s) / ax;
    let erfc = if ix < 0x3fa0_0000 {
        erfc_near
    } else {
        erfc_far
    };
    let y = if ix < 0x40c0_0000 {
        1.0 - erfc
    } else {
        1.0 - f32::from_bits(0x0380_0000)
    };
    let signed = if negative { -y } else { y };
    if ix >= 0x7f80_0000 {
        1.0 - 2.0 * (negative as u32 as f32) + 1.0 / x
    } else if ix < 0x3180_0000 {
        tiny
    } else if ix < 0x3f58_0000 {
        small
    } else {
        signed
    }
}

/// The fast kernels' erf (f32): the rational minimax approximation Eigen and XLA use for float,
/// an odd degree-13 numerator over an even degree-8 denominator on [-4, 4] (beyond, erf is ±1 in
/// float), with fused multiply-adds and one division instead of libm's branches and several
/// divisions. Within 5e-7 (4 ulps of 1) of libm's `erff` (the tests below; docs/numerics.md states it).
#[inline(always)]
pub fn erff_fast(x: f32) -> f32 {
    const A: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_600_1e-3,
        -1.609_603_3e-2,
    ];
    const B: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_474e-2,
    ];
    // Beyond ±4 erf is ±1 in float; a NaN stays NaN.
    let c = x.clamp(-4.0, 4.0);
    let x2 = c * c;
    let mut p = A[0];
    for &a in &A[1..] {
        p = x2.mul_add(p, a);
    }
    let mut q = B[0];
    for &b in &B[1..] {
        q = x2.mul_add(q, b);
    }
    // erf rounds to ±1 in float from |x| = 3.92 (erfc < 2^-25) on; the polynomial, just short
    // of it there, would leave 1 + erf(x) a few ulps off 0 and GELU of a large negative x far
    // from its -0.
    let r = c * p / q;
    if x.abs() >= 3.92 {
        1.0f32.copysign(x)
    } else {
        r
    }
}

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
    0.5 * x * (1.0 + erf_of::<FAST>(x * std::f64::consts::FRAC_1_SQRT_2 as f32))
}

/// The GELU table entry's f32 gradient times `g`.
#[inline(always)]
pub fn gelu_grad_f32(g: f32, x: f32) -> f32 {
    gelu_grad_with::<false>(g, x)
}

#[inline(always)]
fn gelu_grad_with<const FAST: bool>(g: f32, x: f32) -> f32 {
    let cdf = 0.5 * (1.0 + erf_of::<FAST>(x * std::f64::consts::FRAC_1_SQRT_2 as f32));
    let pdf = 0.398_942_280_401_432_7_f64 as f32 * expf_select(-(0.5 * x * x));
    g * (cdf + x * pdf)
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
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,fma")]
unsafe fn gelu_avx512<const FAST: bool>(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    gelu_chunk::<FAST>(x, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,fma")]
unsafe fn gelu_grad_avx512<const FAST: bool>(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    gelu_grad_chunk::<FAST>(x, g, out)
}

/// GELU of one stretch, on the widest vectors this CPU has.
fn gelu_run<const FAST: bool>(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { gelu_avx512::<FAST>(x, out) };
    }
    gelu_chunk::<FAST>(x, out)
}

fn gelu_grad_run<const FAST: bool>(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::has_avx512() {
        // SAFETY: as in `gelu_run`.
        return unsafe { gelu_grad_avx512::<FAST>(x, g, out) };
    }
    gelu_grad_chunk::<FAST>(x, g, out)
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
        for (i, &x) in xs.iter().enumerate() {
            let want = libm::erff(x).to_bits();
            let got = erff_select(x).to_bits();
            assert_eq!(got, want, "erff at {x:e} ({:#x})", x.to_bits());
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
