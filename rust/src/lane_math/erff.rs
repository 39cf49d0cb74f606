//! libm's `erff` (FreeBSD's s_erff.c: rational approximations on |x| < 0.84375, < 1.25, < 1/0.35
//! and < 6, the last two through two `expf` calls) without branches, so a loop of it vectorises:
//! `erff_select` computes every range's formula and picks one by selects, each lane running the
//! scalar call's IEEE operations in the same order (no FMA contraction). `erff_small` and
//! `erff_near` are its first two ranges alone, for callers that sort lanes by range first
//! (`backend/cpu/erf_lanes.rs`). Tested bit for bit against `libm::erff` there.

use super::expf::expf_select;

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

/// erff on |x| < 0.84375 alone (below 2^-28, its underflow-safe form).
#[inline(always)]
pub fn erff_small(x: f32) -> f32 {
    let ix = x.to_bits() & 0x7fff_ffff;
    let z = x * x;
    let small = x + x * (horner(&PP, z) / one_plus(&QQ, z));
    let tiny = 0.125 * (8.0 * x + EFX8 * x);
    if ix < 0x3180_0000 {
        tiny
    } else {
        small
    }
}

/// erff on 0.84375 <= |x| < 1.25 alone: 1 - erfc, erfc from libm's `erfc1`.
#[inline(always)]
pub fn erff_near(x: f32) -> f32 {
    let bits = x.to_bits();
    let s = f32::from_bits(bits & 0x7fff_ffff) - 1.0;
    let y = 1.0 - (1.0 - ERX - horner(&PA, s) / one_plus(&QA, s));
    if bits >> 31 != 0 {
        -y
    } else {
        y
    }
}

/// erff on 1.25 <= |x| < 6 alone: 1 - erfc, erfc from libm's `erfc2` (two `expf` calls).
#[inline(always)]
pub fn erff_far(x: f32) -> f32 {
    let (a, b) = erff_far_args(x);
    erff_far_from(x, expf_select(a), expf_select(b))
}

/// The arguments of `erff_far`'s two exponentials, exp(-z z - 0.5625) and
/// exp((z - |x|)(z + |x|) + R/S), for a caller that takes them on its own exponential path.
#[inline(always)]
pub fn erff_far_args(x: f32) -> (f32, f32) {
    let ix = x.to_bits() & 0x7fff_ffff;
    let ax = f32::from_bits(ix);
    let s = 1.0 / (ax * ax);
    let (r, big_s) = if ix < 0x4036_db6d {
        (horner(&RA, s), one_plus(&SA, s))
    } else {
        (horner(&RB, s), one_plus(&SB, s))
    };
    let z = f32::from_bits(ix & 0xffff_e000);
    (-z * z - 0.5625, (z - ax) * (z + ax) + r / big_s)
}

/// `erff_far` from the exponentials `ea`, `eb` of `erff_far_args(x)`.
#[inline(always)]
pub fn erff_far_from(x: f32, ea: f32, eb: f32) -> f32 {
    let bits = x.to_bits();
    let ax = f32::from_bits(bits & 0x7fff_ffff);
    let erfc = ea * eb / ax;
    let y = 1.0 - erfc;
    if bits >> 31 != 0 {
        -y
    } else {
        y
    }
}

/// erff on |x| >= 1.25 alone (the far range, the saturated one from 6 on, infinities and NaN):
/// `erff_select`'s choice among those, without the two nearer ranges' formulas and divisions.
#[inline(always)]
pub fn erff_rest(x: f32) -> f32 {
    erff_rest_with(x, erff_far(x))
}

/// `erff_rest` given `far`, erff_far(x) however computed.
#[inline(always)]
pub fn erff_rest_with(x: f32, far: f32) -> f32 {
    let bits = x.to_bits();
    let negative = bits >> 31 != 0;
    let ix = bits & 0x7fff_ffff;
    let one = 1.0 - f32::from_bits(0x0380_0000); // |x| >= 6: 1 - 2^-120
    if ix >= 0x7f80_0000 {
        1.0 - 2.0 * (negative as u32 as f32) + 1.0 / x
    } else if ix < 0x40c0_0000 {
        far
    } else if negative {
        -one
    } else {
        one
    }
}

/// `libm::erff(x)`, bit for bit, written without branches: every range's formula, one chosen.
#[inline(always)]
pub fn erff_select(x: f32) -> f32 {
    let ix = x.to_bits() & 0x7fff_ffff;
    let (small, near, rest) = (erff_small(x), erff_near(x), erff_rest(x));
    if ix < 0x3f58_0000 {
        small
    } else if ix < 0x3fa0_0000 {
        near
    } else {
        rest
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
