//! The sine and cosine of f64 values at vector speed with the `libm` crate's bits.
//! `sin_select` and `cos_select` are libm's `sin` and `cos` (FreeBSD's s_sin.c and s_cos.c: x or
//! 1 below 2^-26 or 2^-27·√2, the kernels unreduced below π/4, else rem_pio2's y0 + y1 =
//! x - n·π/2: by the small multiples n·pio2_1 and n·pio2_1t below 9π/4, by its medium path of
//! one to three Cody-Waite rounds above, and the kernel k_sin or k_cos on (y0, y1), the sign
//! chosen by n mod 4) with every branch computed and chosen by a select, so a loop of them
//! vectorises: each lane runs the scalar call's IEEE operations in the same order (no FMA
//! contraction). The rest of rem_pio2 (finite |x| from 2^20·π/2, rem_pio2_large's
//! multi-precision path) does not vectorise: `sincos_needs_scalar` flags those lanes and the
//! slice functions recompute them with scalar libm.

const TOINT: f64 = 1.5 / f64::EPSILON;
const INV_PIO2: f64 = f64::from_bits(0x3fe4_5f30_6dc9_c883); // 53 bits of 2/π
const PIO2_1: f64 = f64::from_bits(0x3ff9_21fb_5440_0000); // first 33 bits of π/2
const PIO2_1T: f64 = f64::from_bits(0x3dd0_b461_1a62_6331); // π/2 - PIO2_1
const PIO2_2: f64 = f64::from_bits(0x3dd0_b461_1a60_0000); // second 33 bits of π/2
const PIO2_2T: f64 = f64::from_bits(0x3ba3_198a_2e03_7073); // π/2 - (PIO2_1 + PIO2_2)
const PIO2_3: f64 = f64::from_bits(0x3ba3_198a_2e00_0000); // third 33 bits of π/2
const PIO2_3T: f64 = f64::from_bits(0x397b_839a_2520_49c1); // π/2 - (PIO2_1 + PIO2_2 + PIO2_3)
const S1: f64 = f64::from_bits(0xbfc5_5555_5555_5549); // -1.66666666666666324348e-01
const S2: f64 = f64::from_bits(0x3f81_1111_1110_f8a6); // 8.33333333332248946124e-03
const S3: f64 = f64::from_bits(0xbf2a_01a0_19c1_61d5); // -1.98412698298579493134e-04
const S4: f64 = f64::from_bits(0x3ec7_1de3_57b1_fe7d); // 2.75573137070700676789e-06
const S5: f64 = f64::from_bits(0xbe5a_e5e6_8a2b_9ceb); // -2.50507602534068634195e-08
const S6: f64 = f64::from_bits(0x3de5_d93a_5acf_d57c); // 1.58969099521155010221e-10
const C1: f64 = f64::from_bits(0x3fa5_5555_5555_554c); // 4.16666666666666019037e-02
const C2: f64 = f64::from_bits(0xbf56_c16c_16c1_5177); // -1.38888888888741095749e-03
const C3: f64 = f64::from_bits(0x3efa_01a0_19cb_1590); // 2.48015872894767294178e-05
const C4: f64 = f64::from_bits(0xbe92_7e4f_809c_52ad); // -2.75573143513906633035e-07
const C5: f64 = f64::from_bits(0x3e21_ee9e_bdb4_b1c4); // 2.08757232129817482790e-09
const C6: f64 = f64::from_bits(0xbda8_fae9_be88_38d4); // -1.13596475577881948265e-11

/// Whether `x` needs rem_pio2's multi-precision path (finite |x| from 2^20·π/2 on by the high
/// word, about 1.65e6), which the select forms do not compute: the slice functions redo such
/// lanes with scalar libm.
#[inline(always)]
pub fn sincos_needs_scalar(x: f64) -> bool {
    const LARGE: u64 = 0x4139_21fb_0000_0000;
    (x.to_bits() & 0x7fff_ffff_ffff_ffff).wrapping_sub(LARGE) < 0x7ff0_0000_0000_0000 - LARGE
}

/// n mod 4 and (y0, y1), as libm's rem_pio2 reduces x beyond π/4 (and n = 0, y0 = x, y1 = 0
/// below, the unreduced kernels' arguments). Its small multiples (below 9π/4, but for the high
/// words of π/2, π, 3π/2 and 2π) are its medium path's first round with n picked from the high
/// word: x - n·pio2_1 is libm's x ∓ n·pio2_1 and n·pio2_1t its ±n·pio2_1t, so one formula does
/// both. The medium path's second and third rounds are computed on every lane and taken where
/// its exponent tests would have run them.
#[inline(always)]
fn reduce(x: f64) -> (u64, f64, f64) {
    let bits = x.to_bits();
    let ix = (bits >> 32) & 0x7fff_ffff;
    let one = |c: bool| if c { 1.0f64 } else { 0.0 };
    let k = one(ix > 0x3fe9_21fb) // π/4
        + one(ix > 0x4002_d97c) // 3π/4
        + one(ix > 0x400f_6a7a) // 5π/4
        + one(ix > 0x4015_fdbc); // 7π/4
    let medium = ix > 0x401c_463b // 9π/4
        || ix == 0x3ff9_21fb // π/2
        || ix == 0x4009_21fb // π
        || ix == 0x4012_d97c // 3π/2
        || ix == 0x4019_21fb; // 2π

    // rem_pio2's rint: tmp - TOINT is the integer n, exactly. No float-to-int conversion (out
    // of range on flagged lanes): n mod 4 comes from the bits of n + TOINT below.
    let tmp = x * INV_PIO2 + TOINT;
    let pick = std::hint::select_unpredictable::<f64>;
    let nf = pick(medium, tmp - TOINT, k.copysign(x));
    let q = (nf + TOINT).to_bits() & 3;
    // 1st round, good to 85 bits (x - 0 and 0·pio2_1t leave x as it is where n = 0).
    let r1 = x - nf * PIO2_1;
    let w1 = nf * PIO2_1T;
    let y0_1 = r1 - w1;
    // 2nd round, good to 118 bits.
    let w = nf * PIO2_2;
    let r2 = r1 - w;
    let w2 = nf * PIO2_2T - ((r1 - r2) - w);
    let y0_2 = r2 - w2;
    // 3rd round, good to 151 bits.
    let w = nf * PIO2_3;
    let r3 = r2 - w;
    let w3 = nf * PIO2_3T - ((r2 - r3) - w);
    let y0_3 = r3 - w3;
    // libm's ex - ey > 16 and > 49 on the biased exponents of x and of each round's y0.
    let ex = bits >> 52 & 0x7ff;
    let exp = |y: f64| y.to_bits() >> 52 & 0x7ff;
    let second = medium && ex > exp(y0_1) + 16;
    let third = second && ex > exp(y0_2) + 49;
    let (r, w, y0) = if third {
        (r3, w3, y0_3)
    } else if second {
        (r2, w2, y0_2)
    } else {
        (r1, w1, y0_1)
    };
    (q, y0, (r - y0) - w)
}

/// libm's k_sin(x, y, 1), its k_sin(x, 0, 0) (`unreduced`) or k_cos(x, y) (`cos`), each lane's
/// pick of the three.
#[inline(always)]
fn kernel(x: f64, y: f64, cos: bool, unreduced: bool) -> f64 {
    let z = x * x;
    let w = z * z;
    // k_sin
    let r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
    let v = z * x;
    let sin0 = x + v * (S1 + z * r);
    let sin1 = x - ((z * (0.5 * y - v * r) - y) - v * S1);
    // k_cos
    let r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let cos_v = w + (((1.0 - w) - hz) + (z * r - x * y));
    let pick = std::hint::select_unpredictable::<f64>;
    pick(cos, cos_v, pick(unreduced, sin0, sin1))
}

/// libm's sin quadrants for q = n mod 4: k_sin, k_cos, -k_sin, -k_cos, on (y0, y1); cos's are
/// the same with q = (n + 1) mod 4. The unreduced case is q = 0 for sin (k_sin(x, 0, 0)) and
/// q = 1 for cos (k_cos(x, 0), which is k_cos(y0, y1) with y0 = x, y1 = 0).
#[inline(always)]
fn quadrant(q: u64, y0: f64, y1: f64, unreduced: bool) -> f64 {
    let v = kernel(y0, y1, q & 1 != 0, unreduced);
    // Negation by the sign bit: -k(y0, y1), as libm.
    f64::from_bits(v.to_bits() ^ (q >> 1) << 63)
}

/// `libm::sin(x)`, bit for bit, written without branches, for every x that
/// `sincos_needs_scalar` does not flag.
#[inline(always)]
pub fn sin_select(x: f64) -> f64 {
    let ix = (x.to_bits() >> 32) & 0x7fff_ffff;
    let (q, y0, y1) = reduce(x);
    let v = quadrant(q, y0, y1, ix <= 0x3fe9_21fb);
    #[allow(clippy::eq_op)] // libm's x - x: NaN for ±inf, a NaN argument's payload kept
    let nan = x - x;
    if ix < 0x3e50_0000 {
        x // |x| < 2^-26
    } else if ix >= 0x7ff0_0000 {
        nan
    } else {
        v
    }
}

/// `libm::cos(x)`, bit for bit, written without branches, for every x that
/// `sincos_needs_scalar` does not flag.
#[inline(always)]
pub fn cos_select(x: f64) -> f64 {
    let ix = (x.to_bits() >> 32) & 0x7fff_ffff;
    let (q, y0, y1) = reduce(x);
    let v = quadrant((q + 1) & 3, y0, y1, false);
    #[allow(clippy::eq_op)] // libm's x - x: NaN for ±inf, a NaN argument's payload kept
    let nan = x - x;
    if ix < 0x3e46_a09e {
        1. // |x| < 2^-27·√2
    } else if ix >= 0x7ff0_0000 {
        nan
    } else {
        v
    }
}

/// The loop every entry point compiles, in blocks that stay in L1 for the fix-up: the select
/// form of cos or of sin (`cos`, a constant once inlined), then scalar libm on the block's
/// flagged lanes. The select form is called by name: passed as a function value, LLVM left its
/// `Fn::call` shim out of line and the loop did not vectorise.
#[inline(always)]
fn run(x: &[f64], out: &mut [f64], cos: bool) {
    for (x, out) in x.chunks(1024).zip(out.chunks_mut(1024)) {
        let n = out.len();
        let x = &x[..n];
        let mut flagged = false;
        for i in 0..n {
            out[i] = if cos {
                cos_select(x[i])
            } else {
                sin_select(x[i])
            };
            flagged |= sincos_needs_scalar(x[i]);
        }
        if flagged {
            let scalar = if cos { libm::cos } else { libm::sin };
            for (o, &v) in out.iter_mut().zip(x) {
                if sincos_needs_scalar(v) {
                    *o = scalar(v);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn sin_avx512(x: &[f64], out: &mut [f64]) {
    run(x, out, false)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn cos_avx512(x: &[f64], out: &mut [f64]) {
    run(x, out, true)
}

/// `out[i] = libm::sin(x[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
/// Panics if the lengths differ.
pub fn sin_slice(x: &[f64], out: &mut [f64]) {
    assert_eq!(x.len(), out.len(), "sin_slice: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { sin_avx512(x, out) };
    }
    run(x, out, false)
}

/// `out[i] = libm::cos(x[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
/// Panics if the lengths differ.
pub fn cos_slice(x: &[f64], out: &mut [f64]) {
    assert_eq!(x.len(), out.len(), "cos_slice: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { cos_avx512(x, out) };
    }
    run(x, out, true)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        near64, shuffled_mix64, stream, uniform, windows64, with_exponent, SPECIAL64 as SPECIAL,
    };
    use super::*;

    /// Both select forms (on unflagged inputs), both slice functions and the plain loops
    /// against libm, bit for bit.
    fn check(xs: &[f64]) -> usize {
        let mut sin = vec![0.0; xs.len()];
        let mut cos = vec![0.0; xs.len()];
        sin_slice(xs, &mut sin);
        cos_slice(xs, &mut cos);
        let mut sin_plain = vec![0.0; xs.len()];
        let mut cos_plain = vec![0.0; xs.len()];
        run(xs, &mut sin_plain, false);
        run(xs, &mut cos_plain, true);
        for (i, &x) in xs.iter().enumerate() {
            let (want_sin, want_cos) = (libm::sin(x).to_bits(), libm::cos(x).to_bits());
            let at = format!("at {x:e} ({:#018x})", x.to_bits());
            if !sincos_needs_scalar(x) {
                assert_eq!(sin_select(x).to_bits(), want_sin, "sin_select {at}");
                assert_eq!(cos_select(x).to_bits(), want_cos, "cos_select {at}");
            }
            assert_eq!(sin[i].to_bits(), want_sin, "sin_slice {at}");
            assert_eq!(cos[i].to_bits(), want_cos, "cos_slice {at}");
            assert_eq!(sin_plain[i].to_bits(), want_sin, "sin plain loop {at}");
            assert_eq!(cos_plain[i].to_bits(), want_cos, "cos plain loop {at}");
        }
        xs.len()
    }

    /// The f64 nearest k·π/4 (within an ulp: k·pio2_1/2 is exact for k < 2^20, the rest is
    /// one rounding) and its `w` neighbours each side, the sign from `neg`.
    fn near_multiple(k: u64, w: u64, neg: bool) -> impl Iterator<Item = f64> {
        let kf = k as f64;
        let m = kf * (PIO2_1 * 0.5) + kf * (PIO2_1T * 0.5);
        let b = m.to_bits();
        let sign = (neg as u64) << 63;
        (b.saturating_sub(w)..=b + w).map(move |v| f64::from_bits(v | sign))
    }

    /// Every f64 within `w` bit steps of each boundary, both signs.
    // The subnormal bound, 2^-27·√2 (cos's 1 below it), 2^-26 (sin's x), π/4 (the unreduced
    // kernels), 3π/4, 5π/4, 7π/4 and 9π/4 (the small multiples of π/2), both ends of the high
    // words of π/2, π, 3π/2 and 2π (the medium path among them), 2^20·π/2 (the multi-precision
    // path) and infinity.
    const BOUNDS: [u64; 18] = [
        0x0010_0000_0000_0000,
        0x3e46_a09e_0000_0000,
        0x3e50_0000_0000_0000,
        0x3fe9_21fc_0000_0000,
        0x4002_d97d_0000_0000,
        0x400f_6a7b_0000_0000,
        0x4015_fdbd_0000_0000,
        0x401c_463c_0000_0000,
        0x3ff9_21fb_0000_0000,
        0x3ff9_21fc_0000_0000,
        0x4009_21fb_0000_0000,
        0x4009_21fc_0000_0000,
        0x4012_d97c_0000_0000,
        0x4012_d97d_0000_0000,
        0x4019_21fb_0000_0000,
        0x4019_21fc_0000_0000,
        0x4139_21fb_0000_0000,
        0x7ff0_0000_0000_0000,
    ];

    #[test]
    fn every_f64_near_each_branch_boundary_and_the_special_values_match_libm() {
        assert!(check(&windows64(&BOUNDS, 1 << 15)) > 2_000_000);
        check(&SPECIAL.map(f64::from_bits));
    }

    #[test]
    fn every_multiple_of_a_quarter_pi_matches_libm() {
        // k·π/4 (so k·π/2 too) for k up to 2·10^6, ±2 ulps, the sign alternating with k.
        let xs: Vec<f64> = (0..=2_000_000)
            .flat_map(|k| near_multiple(k, 2, k & 1 != 0))
            .collect();
        assert!(check(&xs) > 10_000_000);
        // Thousands of ulps around the first few hundred, both signs.
        let xs: Vec<f64> = (0..=400)
            .flat_map(|k| near_multiple(k, 2000, false).chain(near_multiple(k, 2000, true)))
            .collect();
        assert!(check(&xs) > 3_000_000);
    }

    #[test]
    fn random_values_in_the_main_ranges_match_libm() {
        let n = stream(10_000_000, 2, |r| uniform(r, 10.), check);
        assert!(n + stream(10_000_000, 3, |r| uniform(r, 1e6), check) >= 20_000_000);
    }

    #[test]
    fn random_bit_patterns_match_libm() {
        // Exponents from 2^-30 to 2^30 (either side of the multi-precision bound), then any.
        let n = stream(
            8_000_000,
            0,
            |r| with_exponent(r, 0x3ff - 30, 0x3ff + 30),
            check,
        );
        assert!(n + stream(1_000_000, 1, f64::from_bits, check) >= 9_000_000);
    }

    #[test]
    fn the_slice_functions_match_scalar_calls_on_a_shuffled_mix() {
        let xs = shuffled_mix64(&SPECIAL, &BOUNDS, near64, |next| {
            let mut xs: Vec<f64> = (0..20_000).map(|_| uniform(next(), 10.)).collect();
            xs.extend((0..20_000).map(|_| with_exponent(next(), 0x3ff, 0x3ff + 30)));
            xs.extend((0..2000).flat_map(|k| near_multiple(k, 1, k & 2 != 0)));
            xs
        });
        assert!(xs.len() % 2 == 1 && xs.iter().any(|&x| sincos_needs_scalar(x)));
        check(&xs);
    }
}
