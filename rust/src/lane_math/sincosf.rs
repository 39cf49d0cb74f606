//! The sine and cosine of f32 values at vector speed with the `libm` crate's bits.
//! `sinf_select` and `cosf_select` are libm's `sinf` and `cosf` (FreeBSD's s_sinf.c and
//! s_cosf.c: x or 1 below 2^-12, else a reduction to y = x - n·π/2 in f64, by the nearest
//! small multiple of π/2 below 9π/4 and by rem_pio2f's medium path above, then the f64 sine or
//! cosine kernel on ±y, the sign chosen by n mod 4) with every branch computed and chosen by a
//! select, so a loop of them vectorises: each lane runs the scalar call's IEEE operations in the
//! same order (no FMA contraction). Both kernels share one set of operations, their constants
//! and operands picked per lane. The rest of rem_pio2f (finite |x| from 2^28·π/2, multi-precision)
//! does not vectorise: `sincosf_needs_scalar` flags those lanes and the slice functions
//! recompute them with scalar libm.

use std::f64::consts::FRAC_PI_2;

const TOINT: f64 = 1.5 / f64::EPSILON;
const INV_PIO2: f64 = f64::from_bits(0x3fe4_5f30_6dc9_c883); // 53 bits of 2/π
const PIO2_1: f64 = f64::from_bits(0x3ff9_21fb_5000_0000); // first 25 bits of π/2
const PIO2_1T: f64 = f64::from_bits(0x3e51_10b4_611a_6263); // π/2 - PIO2_1
const S1: f64 = f64::from_bits(0xbfc5_5555_54cb_ac77); // -0x15555554cbac77.0p-55
const S2: f64 = f64::from_bits(0x3f81_1110_896e_fbb2); // 0x111110896efbb2.0p-59
const S3: f64 = f64::from_bits(0xbf2a_00f9_e2ca_e774); // -0x1a00f9e2cae774.0p-65
const S4: f64 = f64::from_bits(0x3ec6_cd87_8c3b_46a7); // 0x16cd878c3b46a7.0p-71
const C0: f64 = f64::from_bits(0xbfdf_ffff_fd0c_5e81); // -0x1ffffffd0c5e81.0p-54
const C1: f64 = f64::from_bits(0x3fa5_5553_e105_3a42); // 0x155553e1053a42.0p-57
const C2: f64 = f64::from_bits(0xbf56_c087_e80f_1e27); // -0x16c087e80f1e27.0p-62
const C3: f64 = f64::from_bits(0x3ef9_9342_e0ee_5069); // 0x199342e0ee5069.0p-68

/// Whether `x` needs rem_pio2f's multi-precision path (finite |x| ≥ 2^28·π/2, about 4.2e8),
/// which the select forms do not compute: the slice functions redo such lanes with scalar libm.
#[inline(always)]
pub fn sincosf_needs_scalar(x: f32) -> bool {
    (x.to_bits() & 0x7fff_ffff).wrapping_sub(0x4dc9_0fdb) < 0x7f80_0000 - 0x4dc9_0fdb
}

/// n mod 4 and y = x - n·π/2 (f64), as libm's sinf/cosf reduce x beyond π/4: below 9π/4 by
/// n·π/2 with n the nearest multiple's index (x - n·FRAC_PI_2 is libm's x ∓ s{n}pio2, 3·π/2
/// rounded the same way), above by rem_pio2f's n·pio2_1 and n·pio2_1t. One formula does both:
/// the small multiples' second term is n·0, which leaves y as it is (y ≠ 0 there).
#[inline(always)]
fn reduce(x: f32) -> (u32, f64) {
    let bits = x.to_bits();
    let ix = bits & 0x7fff_ffff;
    let x64 = x as f64;
    let k = (ix > 0x3f49_0fda) as i32 // π/4
        + (ix > 0x4016_cbe3) as i32 // 3π/4
        + (ix > 0x407b_53d1) as i32 // 5π/4
        + (ix > 0x40af_eddf) as i32; // 7π/4
    let n_small = if bits >> 31 != 0 { -k } else { k };
    // rem_pio2f's rint: below 2^51 the integer n sits in tmp's low significand bits, so n mod 4
    // comes from its bits, with no float-to-int conversion (out of range on flagged lanes).
    let tmp = x64 * INV_PIO2 + TOINT;
    let medium = ix > 0x40e2_31d5; // 9π/4
    let pick = std::hint::select_unpredictable::<f64>;
    let nf = pick(medium, tmp - TOINT, n_small as f64);
    let y = x64 - nf * pick(medium, PIO2_1, FRAC_PI_2) - nf * pick(medium, PIO2_1T, 0.);
    let n = if medium {
        tmp.to_bits() as u32
    } else {
        n_small as u32
    };
    (n & 3, y)
}

/// libm's k_sinf(y) (`cos` false) or k_cosf(y) (`cos` true): both are (a + b·c) + (w·m)·r with
/// r and one more term of the form p + z·q, so one set of operations serves both, each lane's
/// constants and operands picked by selects (sin: (y + s·t) + (w·s)·r, w·s being libm's s·w).
#[inline(always)]
fn kernel(y: f64, cos: bool) -> f32 {
    let pick = std::hint::select_unpredictable::<f64>;
    let z = y * y;
    let w = z * z;
    let r = pick(cos, C2, S3) + z * pick(cos, C3, S4);
    let t = pick(cos, 1., S1) + z * pick(cos, C0, S2);
    let s = z * y;
    let head = pick(cos, t, y) + pick(cos, w, s) * pick(cos, C1, t);
    (head + w * pick(cos, z, s) * r) as f32
}

/// libm's sinf quadrants for q = n mod 4: k_sinf(y), k_cosf(y), k_sinf(-y), -k_cosf(y). Below
/// 9π/4 its cases are these with n = ±1..±4; cosf's are the same with q = (n + 1) mod 4.
#[inline(always)]
fn quadrant(q: u32, y: f64) -> f32 {
    // An eager select: with `if`, LLVM copies the kernel into a q == 2 branch of its own.
    let v = kernel(std::hint::select_unpredictable(q == 2, -y, y), q & 1 != 0);
    if q == 3 {
        -v
    } else {
        v
    }
}

/// `libm::sinf(x)`, bit for bit, written without branches, for every x that
/// `sincosf_needs_scalar` does not flag.
#[inline(always)]
pub fn sinf_select(x: f32) -> f32 {
    let ix = x.to_bits() & 0x7fff_ffff;
    let (q, y) = reduce(x);
    let v = quadrant(q, y);
    #[allow(clippy::eq_op)] // libm's x - x: NaN for ±inf, a NaN argument's payload kept
    let nan = x - x;
    if ix < 0x3980_0000 {
        x // |x| < 2^-12
    } else if ix >= 0x7f80_0000 {
        nan
    } else {
        v
    }
}

/// `libm::cosf(x)`, bit for bit, written without branches, for every x that
/// `sincosf_needs_scalar` does not flag.
#[inline(always)]
pub fn cosf_select(x: f32) -> f32 {
    let ix = x.to_bits() & 0x7fff_ffff;
    let (q, y) = reduce(x);
    let v = quadrant((q + 1) & 3, y);
    #[allow(clippy::eq_op)] // libm's x - x: NaN for ±inf, a NaN argument's payload kept
    let nan = x - x;
    if ix < 0x3980_0000 {
        1. // |x| < 2^-12
    } else if ix >= 0x7f80_0000 {
        nan
    } else {
        v
    }
}

/// The loop every entry point compiles, in blocks that stay in L1 for the fix-up: `f` (a select
/// form, inlined, so the loop vectorises), then scalar libm on the block's flagged lanes.
#[inline(always)]
fn run(x: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32, scalar: fn(f32) -> f32) {
    for (x, out) in x.chunks(1024).zip(out.chunks_mut(1024)) {
        let n = out.len();
        let x = &x[..n];
        let mut flagged = false;
        for i in 0..n {
            out[i] = f(x[i]);
            flagged |= sincosf_needs_scalar(x[i]);
        }
        if flagged {
            for (o, &v) in out.iter_mut().zip(x) {
                if sincosf_needs_scalar(v) {
                    *o = scalar(v);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn sinf_avx512(x: &[f32], out: &mut [f32]) {
    run(x, out, sinf_select, libm::sinf)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn cosf_avx512(x: &[f32], out: &mut [f32]) {
    run(x, out, cosf_select, libm::cosf)
}

/// `out[i] = libm::sinf(x[i])` for every i, bit for bit, on 16 lanes where AVX-512 exists.
/// Panics if the lengths differ.
pub fn sinf_slice(x: &[f32], out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "sinf_slice: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { sinf_avx512(x, out) };
    }
    run(x, out, sinf_select, libm::sinf)
}

/// `out[i] = libm::cosf(x[i])` for every i, bit for bit, on 16 lanes where AVX-512 exists.
/// Panics if the lengths differ.
pub fn cosf_slice(x: &[f32], out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "cosf_slice: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { cosf_avx512(x, out) };
    }
    run(x, out, cosf_select, libm::cosf)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{shuffled_mix, sweep, windows};
    use super::*;

    /// Both select forms (on unflagged inputs), both slice functions and the plain loops
    /// against libm, bit for bit.
    fn check(xs: &[f32]) -> usize {
        let mut sin = vec![0.0; xs.len()];
        let mut cos = vec![0.0; xs.len()];
        sinf_slice(xs, &mut sin);
        cosf_slice(xs, &mut cos);
        let mut sin_plain = vec![0.0; xs.len()];
        let mut cos_plain = vec![0.0; xs.len()];
        run(xs, &mut sin_plain, sinf_select, libm::sinf);
        run(xs, &mut cos_plain, cosf_select, libm::cosf);
        for (i, &x) in xs.iter().enumerate() {
            let (want_sin, want_cos) = (libm::sinf(x).to_bits(), libm::cosf(x).to_bits());
            let at = format!("at {x:e} ({:#010x})", x.to_bits());
            if !sincosf_needs_scalar(x) {
                assert_eq!(sinf_select(x).to_bits(), want_sin, "sinf_select {at}");
                assert_eq!(cosf_select(x).to_bits(), want_cos, "cosf_select {at}");
            }
            assert_eq!(sin[i].to_bits(), want_sin, "sinf_slice {at}");
            assert_eq!(cos[i].to_bits(), want_cos, "cosf_slice {at}");
            assert_eq!(sin_plain[i].to_bits(), want_sin, "sinf plain loop {at}");
            assert_eq!(cos_plain[i].to_bits(), want_cos, "cosf plain loop {at}");
        }
        xs.len()
    }

    /// Every f32 within `w` bit steps of each boundary, both signs.
    // The subnormal bound, 2^-12 (x or 1 below it), π/4, 3π/4, 5π/4, 7π/4 and 9π/4 (the
    // small multiples of π/2), 2^28·π/2 (the multi-precision path) and infinity.
    const BOUNDS: [u32; 9] = [
        0x0080_0000,
        0x3980_0000,
        0x3f49_0fda,
        0x4016_cbe3,
        0x407b_53d1,
        0x40af_eddf,
        0x40e2_31d5,
        0x4dc9_0fdb,
        0x7f80_0000,
    ];

    #[test]
    fn every_f32_near_each_branch_boundary_matches_libm() {
        assert!(check(&windows(&BOUNDS, 1 << 16)) > 2_000_000);
    }

    #[test]
    fn a_sweep_of_all_f32_and_the_special_values_match_libm() {
        let xs = sweep();
        assert!(check(&xs) > 4_000_000);
    }

    #[test]
    fn a_shuffled_mix_of_branches_matches_libm() {
        let xs = shuffled_mix(&BOUNDS, |next| {
            let mut xs = Vec::new();
            // Values in [-16, 16): every small multiple of π/2 and the first medium ones.
            xs.extend((0..20_000).map(|_| (next() >> 40) as f32 / (1u64 << 19) as f32 - 16.0));
            // Huge |x| from 2^20 to 2^127, either side of the multi-precision bound.
            xs.extend((0..5_000).map(|_| {
                let r = next();
                f32::from_bits(
                    (0x4980_0000 + (r as u32 % 0x3580_0000)) | (r >> 32) as u32 & 1 << 31,
                )
            }));
            xs
        });
        assert!(xs.iter().any(|&x| sincosf_needs_scalar(x)));
        check(&xs);
    }
}
