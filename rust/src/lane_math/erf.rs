//! libm's f64 `erf` (FreeBSD's s_erf.c: x + x·P/Q on |x| < 0.84375, the tiny form below 2^-28,
//! erf(1) + P/Q on |x| - 1 below 1.25, then 1 - erfc with erfc = exp(-z² - 0.5625)·exp((z - |x|)
//! (z + |x|) + R/S)/|x| below 1/0.35 and below 6, z being |x| with its low word cleared, and
//! 1 - 2^-1022 beyond) without branches, so a loop of it vectorises: `erf_select` computes every
//! range's formula and picks one by selects, each lane running the scalar call's IEEE operations
//! in the same order (no FMA contraction), exp through `exp_select`. The ranges share one
//! division for their rational approximation (P/Q or R/S) and one for erfc's final /|x| (which
//! also gives the special values' 1/x), on operands chosen per lane, special values included.
//! `erf_slice` runs `erf_inner` (the ranges below 1.25 alone, by the same operations: one
//! division, no exponential) on every lane and `erf_select` only on the lanes beyond, packed.
//! Tested bit for bit against `libm::erf` below.

use super::exp::exp_select;

const ERX: f64 = f64::from_bits(0x3feb_0ac1_6000_0000); // 8.45062911510467529297e-01
const EFX8: f64 = f64::from_bits(0x3ff0_6eba_8214_db69); // 1.02703333676410069053e+00
/// erf on [0, 0.84375]: x + x·PP(x²)/(1 + x²·QQ(x²)).
const PP: [f64; 5] = f64s([
    0x3fc0_6eba_8214_db68,
    0xbfd4_cd7d_691c_b913,
    0xbf9d_2a51_dbd7_194f,
    0xbf77_a291_2366_68e4,
    0xbef8_ead6_1200_16ac,
]);
const QQ: [f64; 5] = f64s([
    0x3fd9_7779_cdda_dc09,
    0x3fb0_a54c_5536_ceba,
    0x3f74_d022_c4d3_6b0f,
    0x3f21_5dc9_221c_1a10,
    0xbed0_9c43_42a2_6120,
]);
/// erf on [0.84375, 1.25]: erx + PA(s)/(1 + s·QA(s)), s = |x| - 1.
const PA: [f64; 7] = f64s([
    0xbf63_59b8_bef7_7538,
    0x3fda_8d00_ad92_b34d,
    0xbfd7_d240_fbb8_c3f1,
    0x3fd4_5fca_8051_20e4,
    0xbfbc_6398_3d3e_28ec,
    0x3fa2_2a36_5997_95eb,
    0xbf61_bf38_0a96_073f,
]);
const QA: [f64; 6] = f64s([
    0x3fbb_3e66_18ee_e323,
    0x3fe1_4af0_92eb_6f33,
    0x3fb2_635c_d99f_e9a7,
    0x3fc0_2660_e763_351f,
    0x3f8b_edc2_6b51_dd1c,
    0x3f88_8b54_5735_151d,
]);
/// erfc on [1.25, 1/0.35]: RA(s)/(1 + s·SA(s)), s = 1/x².
const RA: [f64; 8] = f64s([
    0xbf84_3412_600d_6435,
    0xbfe6_3416_e4ba_7360,
    0xc025_1e04_41b0_e726,
    0xc04f_300a_e4cb_a38d,
    0xc064_4cb1_8428_2266,
    0xc067_135c_ebcc_abb2,
    0xc054_5265_57e4_d2f2,
    0xc023_a0ef_c69a_c25c,
]);
const SA: [f64; 8] = f64s([
    0x4033_a6b9_bd70_7687,
    0x4061_350c_526a_e721,
    0x407b_290d_d58a_1a71,
    0x4084_2b19_21ec_2868,
    0x407a_d021_5770_0314,
    0x405b_28a3_ee48_ae2c,
    0x401a_47ef_8e48_4a93,
    0xbfae_eff2_ee74_9a62,
]);
/// erfc on [1/0.35, 6]: RB(s)/(1 + s·SB(s)), s = 1/x².
const RB: [f64; 7] = f64s([
    0xbf84_3412_39e8_6f4a,
    0xbfe9_93ba_70c2_85de,
    0xc031_c209_555f_995a,
    0xc064_145d_43c5_ed98,
    0xc083_ec88_1375_f228,
    0xc090_0461_6a2e_5992,
    0xc07e_384e_9bdc_383f,
]);
const SB: [f64; 7] = f64s([
    0x403e_568b_261d_5190,
    0x4074_5cae_221b_9f0a,
    0x4098_02eb_189d_5118,
    0x40a8_ffb7_688c_246a,
    0x40a3_f219_cedf_3be6,
    0x407d_a874_e79f_e763,
    0xc036_70e2_4271_2d62,
]);

const fn f64s<const N: usize>(bits: [u64; N]) -> [f64; N] {
    let mut out = [0.0; N];
    let mut i = 0;
    while i < N {
        out[i] = f64::from_bits(bits[i]);
        i += 1;
    }
    out
}

/// c[0] + s·(c[1] + s·(c[2] + ...)), libm's nesting (Horner from the last coefficient).
#[inline(always)]
fn horner<const N: usize>(c: &[f64; N], s: f64) -> f64 {
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
fn one_plus<const N: usize>(c: &[f64; N], s: f64) -> f64 {
    1.0 + s * horner(c, s)
}

/// `libm::erf(x)`, bit for bit, written without branches: every range's formula, one chosen.
#[inline(always)]
pub fn erf_select(x: f64) -> f64 {
    let bits = x.to_bits();
    let negative = bits >> 63 != 0;
    let ax = f64::from_bits(bits & 0x7fff_ffff_ffff_ffff);
    // The high word of |x|, which libm's branch bounds compare.
    let ix = (bits >> 32) as u32 & 0x7fff_ffff;
    let special = ix >= 0x7ff0_0000; // NaN or ±inf
    let small = ix < 0x3feb_0000; // |x| < 0.84375
    let near = ix < 0x3ff4_0000; // |x| < 1.25: libm's erfc1
    let mid = ix < 0x4006_db6d; // |x| < 1/0.35: RA/SA, else RB/SB
                                // Each range's rational approximation; their one division takes the lane's own operands.
    let z = x * x;
    let s_near = ax - 1.0;
    let s_far = 1.0 / (ax * ax);
    let pick = std::hint::select_unpredictable::<f64>;
    let (ra, sa) = (horner(&RA, s_far), one_plus(&SA, s_far));
    let (rb, sb) = (horner(&RB, s_far), one_plus(&SB, s_far));
    let num = pick(
        small,
        horner(&PP, z),
        pick(near, horner(&PA, s_near), pick(mid, ra, rb)),
    );
    let den = pick(
        small,
        one_plus(&QQ, z),
        pick(near, one_plus(&QA, s_near), pick(mid, sa, sb)),
    );
    let ratio = num / den;
    // erfc2 from 1.25 on: z is |x| with its low word cleared (libm's SET_LOW_WORD(z, 0)).
    let zf = f64::from_bits(bits & 0x7fff_ffff_0000_0000);
    let e = exp_select(-zf * zf - 0.5625) * exp_select((zf - ax) * (zf + ax) + ratio);
    // Its final division, shared with the special values' 1/x.
    let q = pick(special, 1.0, e) / pick(special, x, ax);
    let erfc = if near { 1.0 - ERX - ratio } else { q };
    // 1 - erfc below 6, 1 - 2^-1022 (rounding to 1) from 6 on; the sign put back by a select.
    let y = if ix < 0x4018_0000 {
        1.0 - erfc
    } else {
        1.0 - f64::from_bits(0x0010_0000_0000_0000)
    };
    let big = if negative { -y } else { y };
    // libm's special cases and small ranges, in its order. The special sign term 1 - 2·sign
    // is ±1 exactly, so picked here as a value.
    if special {
        (if negative { -1.0 } else { 1.0 }) + q // erf(nan) = nan, erf(±inf) = ±1
    } else if ix < 0x3e30_0000 {
        0.125 * (8.0 * x + EFX8 * x) // |x| < 2^-28, in the form that avoids underflow
    } else if small {
        x + x * ratio
    } else {
        big
    }
}

/// libm's erf where |x| < 1.25 (`is_inner`): the tiny form, x + x·P/Q below 0.84375 and
/// 1 - (1 - erx - P/Q) above, their one division on the lane's own operands and no
/// exponential: `erf_select`'s choice among those ranges, by the same operations.
#[inline(always)]
pub fn erf_inner(x: f64) -> f64 {
    let bits = x.to_bits();
    let negative = bits >> 63 != 0;
    let ax = f64::from_bits(bits & 0x7fff_ffff_ffff_ffff);
    let ix = (bits >> 32) as u32 & 0x7fff_ffff;
    let small = ix < 0x3feb_0000; // |x| < 0.84375
    let (z, s) = (x * x, ax - 1.0);
    let pick = std::hint::select_unpredictable::<f64>;
    let num = pick(small, horner(&PP, z), horner(&PA, s));
    let den = pick(small, one_plus(&QQ, z), one_plus(&QA, s));
    let ratio = num / den;
    let y = 1.0 - (1.0 - ERX - ratio);
    if ix < 0x3e30_0000 {
        0.125 * (8.0 * x + EFX8 * x) // |x| < 2^-28
    } else if small {
        x + x * ratio
    } else if negative {
        -y
    } else {
        y
    }
}

/// Whether `erf_inner` covers x: |x| < 1.25 on libm's high word (NaN and infinities not).
#[inline(always)]
fn is_inner(x: f64) -> bool {
    ((x.to_bits() >> 32) as u32 & 0x7fff_ffff) < 0x3ff4_0000
}

/// Values per block of `split` (a multiple of 8): its indices and packed values stay in L1.
const BLOCK: usize = 256;

/// erf of every value, libm's bits: `erf_inner` on every lane of a block (cheap: one division,
/// no exponential), then the lanes from 1.25 on (erfc's ranges with their two exponentials,
/// the saturated range, infinities, NaN), packed, through `erf_select`. Normal data puts most
/// lanes below 1.25, where `erf_select` on every lane would take both exponentials and all
/// four ranges' polynomials.
#[inline(always)]
fn split(x: &[f64], out: &mut [f64]) {
    let x = &x[..out.len()];
    let (mut at, mut packed) = ([0u16; BLOCK], [0f64; BLOCK]);
    for (xb, ob) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        let ob = &mut ob[..xb.len()];
        for (o, &v) in ob.iter_mut().zip(xb) {
            *o = erf_inner(v);
        }
        // The outer lanes' indices: each index written, kept only by advancing the count.
        let mut m = 0;
        for (i, &v) in xb.iter().enumerate() {
            at[m] = i as u16;
            m += usize::from(!is_inner(v));
        }
        for (p, &i) in packed[..m].iter_mut().zip(&at[..m]) {
            *p = xb[i as usize];
        }
        // A loop of its own over contiguous values, so that it vectorises, in whole vectors of
        // 8: the lanes past m hold earlier values (or zeros), computed and never read, instead
        // of a scalar tail.
        for p in &mut packed[..m.next_multiple_of(8)] {
            *p = erf_select(*p);
        }
        for (&p, &i) in packed[..m].iter().zip(&at[..m]) {
            ob[i as usize] = p;
        }
    }
}

/// The plain loop of the select form (the tests compare it too).
#[cfg(test)]
fn run(x: &[f64], out: &mut [f64]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = erf_select(v);
    }
}

/// `split` compiled for AVX-512 (8 lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn split_avx512(x: &[f64], out: &mut [f64]) {
    split(x, out)
}

/// `out[i] = libm::erf(x[i])` for every i, bit for bit (`split`), on 8 lanes where AVX-512
/// exists. Panics if the lengths differ.
pub fn erf_slice(x: &[f64], out: &mut [f64]) {
    assert_eq!(x.len(), out.len(), "erf_slice: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { split_avx512(x, out) };
    }
    split(x, out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        check_unary, near64, shuffled_mix64, slice_matches_select, stream, uniform, windows64,
        with_exponent, SPECIAL64 as SPECIAL,
    };
    use super::*;

    /// The select form, the slice function and the plain loop against libm, bit for bit.
    fn check(xs: &[f64]) -> usize {
        check_unary(xs, libm::erf, erf_select, erf_slice, run)
    }

    // The subnormal bound, 2^-28 (the tiny form), 0.84375, 1.25, 1/0.35 and 6 as libm tests
    // them on the high word (each also at the high word's last value, where the low word
    // carries into the next), 1/0.35 as a value, the largest finite value and infinity.
    const BOUNDS: [u64; 14] = [
        0x0010_0000_0000_0000,
        0x3e30_0000_0000_0000,
        0x3e30_0001_0000_0000,
        0x3feb_0000_0000_0000,
        0x3feb_0001_0000_0000,
        0x3ff4_0000_0000_0000,
        0x3ff4_0001_0000_0000,
        0x4006_db6d_0000_0000,
        0x4006_db6d_b6db_6db7,
        0x4006_db6e_0000_0000,
        0x4018_0000_0000_0000,
        0x4018_0001_0000_0000,
        0x7fef_ffff_ffff_ffff,
        0x7ff0_0000_0000_0000,
    ];

    #[test]
    fn every_f64_near_each_branch_boundary_and_the_special_values_match_libm() {
        assert!(check(&windows64(&BOUNDS, 1 << 14)) > 800_000);
        check(&SPECIAL.map(f64::from_bits));
    }

    #[test]
    fn random_bit_patterns_match_libm() {
        // Exponents from 2^-40 to 2^4 (every range but the saturated one), then any.
        let n = stream(
            20_000_000,
            0,
            |r| with_exponent(r, 0x3ff - 40, 0x3ff + 4),
            check,
        );
        assert!(n + stream(1_000_000, 1, f64::from_bits, check) > 20_000_000);
    }

    #[test]
    fn random_values_in_the_main_ranges_match_libm() {
        let n = stream(20_000_000, 2, |r| uniform(r, 7.), check);
        assert!(n + stream(10_000_000, 3, |r| uniform(r, 1.), check) > 29_000_000);
    }

    #[test]
    fn the_slice_function_matches_scalar_calls_on_a_shuffled_mix() {
        let xs = shuffled_mix64(&SPECIAL, &BOUNDS, near64, |next| {
            (0..20_001).map(|_| uniform(next(), 7.)).collect()
        });
        assert!(!xs.len().is_multiple_of(2));
        slice_matches_select(&xs, erf_select, erf_slice);
        check(&xs);
    }
}
