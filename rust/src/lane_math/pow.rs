//! x^y for f64 values at vector speed with the `libm` crate's bits. `pow_main` is the main path
//! of libm's `pow` (FreeBSD's e_pow.c: log2|x| in two parts t1 + t2 from s = (x-bp)/(x+bp) with
//! |x| reduced to [1, 1.5) or [1.5, 3) by its high word; y·log2|x| split into p_h + p_l; then
//! 2^(p_h+p_l) by rounding to an integer n, a rational approximation and exponent arithmetic)
//! written without branches, so a loop of it vectorises: each lane runs the scalar call's IEEE
//! operations in the same order (no FMA contraction). It answers the lanes that path answers in
//! libm, and says which those are: x finite, normal and not ±1, x > 0 or y an integer, y not one
//! of libm's special exponents (0, ±1, 2, 0.5, NaN, ±inf) with |y| < 2^31 + 2048, and a result
//! that neither overflows nor underflows to a subnormal. The other lanes (rare in practice:
//! zeros, infinities, NaNs, ±1, huge exponents) take libm's scalar call, a block at a time.

const BP1: f64 = 1.5;
const DP_H1: f64 = f64::from_bits(0x3fe2_b803_4000_0000); // 5.84962487220764160156e-01
const DP_L1: f64 = f64::from_bits(0x3e4c_fdeb_43cf_d006); // 1.35003920212974897128e-08
const L1: f64 = f64::from_bits(0x3fe3_3333_3333_3303); // 5.99999999999994648725e-01
const L2: f64 = f64::from_bits(0x3fdb_6db6_db6f_abff); // 4.28571428578550184252e-01
const L3: f64 = f64::from_bits(0x3fd5_5555_518f_264d); // 3.33333329818377432918e-01
const L4: f64 = f64::from_bits(0x3fd1_7460_a91d_4101); // 2.72728123808534006489e-01
const L5: f64 = f64::from_bits(0x3fcd_864a_93c9_db65); // 2.30660745775561754067e-01
const L6: f64 = f64::from_bits(0x3fca_7e28_4a45_4eef); // 2.06975017800338417784e-01
const P1: f64 = f64::from_bits(0x3fc5_5555_5555_553e); // 1.66666666666666019037e-01
const P2: f64 = f64::from_bits(0xbf66_c16c_16be_bd93); // -2.77777777770155933842e-03
const P3: f64 = f64::from_bits(0x3f11_566a_af25_de2c); // 6.61375632143793436117e-05
const P4: f64 = f64::from_bits(0xbebb_bd41_c5d2_6bf1); // -1.65339022054652515390e-06
const P5: f64 = f64::from_bits(0x3e66_3769_72be_a4d0); // 4.13813679705723846039e-08
const LG2: f64 = f64::from_bits(0x3fe6_2e42_fefa_39ef); // 6.93147180559945286227e-01
const LG2_H: f64 = f64::from_bits(0x3fe6_2e43_0000_0000); // 6.93147182464599609375e-01
const LG2_L: f64 = f64::from_bits(0xbe20_5c61_0ca8_6c39); // -1.90465429995776804525e-09
const CP: f64 = f64::from_bits(0x3fee_c709_dc3a_03fd); // 2/(3 ln2)
const CP_H: f64 = f64::from_bits(0x3fee_c709_e000_0000); // (float)cp
const CP_L: f64 = f64::from_bits(0xbe3e_2fe0_145b_01f5); // the tail of cp_h

/// f with its low word cleared (libm's `with_set_low_word(f, 0)`).
#[inline(always)]
fn high_part(f: f64) -> f64 {
    f64::from_bits(f.to_bits() & 0xffff_ffff_0000_0000)
}

/// f's high word as libm reads it.
#[inline(always)]
fn high_word(f: f64) -> i32 {
    (f.to_bits() >> 32) as i32
}

/// f with its high word replaced (libm's `with_set_high_word`).
#[inline(always)]
fn with_high_word(f: f64, hi: u32) -> f64 {
    f64::from_bits((hi as u64) << 32 | (f.to_bits() & 0xffff_ffff))
}

/// `i >> s` for a shift the caller keeps in 0..32 where its result is used; elsewhere (lanes
/// whose result a select drops) any in-range shift does.
#[inline(always)]
fn shr(i: i32, s: i32) -> i32 {
    i >> s.clamp(0, 31)
}

/// (`libm::pow(x, y)`, true) on the lanes libm's main path answers, bit for bit; (anything,
/// false) elsewhere. Written without branches.
#[inline(always)]
pub fn pow_main(x: f64, y: f64) -> (f64, bool) {
    let (t1, t2) = log2_parts(x);
    finish(x, y, t1, t2)
}

/// The first half of the main path: log2|x| = t1 + t2 for a normal finite x.
#[inline(always)]
fn log2_parts(x: f64) -> (f64, f64) {
    let ix = high_word(x) & 0x7fff_ffff;
    // |x| = 2^n * ax with ax in [1, 1.5) (k0) or [1.5, 3) (k1).
    let j = ix & 0x000f_ffff;
    let k1 = j > 0x3_988e && j < 0xb_b67a;
    let up = j >= 0xb_b67a;
    let n = (ix >> 20) - 0x3ff + up as i32;
    let iax = (j | 0x3ff0_0000) - if up { 0x0010_0000 } else { 0 };
    let ax = with_high_word(
        f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff),
        iax as u32,
    );
    let (bp, dp_h, dp_l) = if k1 {
        (BP1, DP_H1, DP_L1)
    } else {
        (1.0, 0.0, 0.0)
    };
    let u = ax - bp;
    let v = 1.0 / (ax + bp);
    let ss = u * v;
    let s_h = high_part(ss);
    let t_h = with_high_word(
        0.0,
        ((iax as u32 >> 1) | 0x2000_0000) + 0x0008_0000 + ((k1 as u32) << 18),
    );
    let t_l = ax - (t_h - bp);
    let s_l = v * ((u - s_h * t_h) - s_h * t_l);
    let s2 = ss * ss;
    let r = s2 * s2 * (L1 + s2 * (L2 + s2 * (L3 + s2 * (L4 + s2 * (L5 + s2 * L6)))));
    let r = r + s_l * (s_h + ss);
    let s2 = s_h * s_h;
    let t_h = high_part(3.0 + s2 + r);
    let t_l = r - ((t_h - 3.0) - s2);
    let u = s_h * t_h;
    let v = s_l * t_h + t_l * ss;
    let p_h = high_part(u + v);
    let p_l = v - (p_h - u);
    let z_h = CP_H * p_h;
    let z_l = CP_L * p_h + p_l * CP + dp_l;
    let t = n as f64;
    let t1 = high_part(((z_h + z_l) + dp_h) + t);
    let t2 = z_l - (((t1 - t) - dp_h) - z_h);
    (t1, t2)
}

/// The second half: x^y from log2|x| = t1 + t2, and whether the main path answers (x, y).
#[inline(always)]
fn finish(x: f64, y: f64, t1: f64, t2: f64) -> (f64, bool) {
    let (hx, lx) = (high_word(x), x.to_bits() as u32);
    let (hy, ly) = (high_word(y), y.to_bits() as u32);
    let (ix, iy) = (hx & 0x7fff_ffff, hy & 0x7fff_ffff);
    // y an integer, and odd (the main path takes |y| up to 2^31 + 2047, where libm's bit test
    // says the same; larger values are clamped to the even 2^32, their lanes left to libm).
    let y_int = y == y.trunc();
    let y_odd = y_int & ((y.abs().min(4_294_967_296.0) as i64) & 1 == 1);
    let y_special = ly == 0 && (iy == 0x3ff0_0000 || hy == 0x4000_0000 || hy == 0x3fe0_0000);
    let ordinary = ((iy as u32 | ly) != 0)
        & (iy <= 0x41e0_0000)
        & !y_special
        & (0x0010_0000..0x7ff0_0000).contains(&ix)
        & !(ix == 0x3ff0_0000 && lx == 0)
        & (hx >= 0 || y_int);
    // y * log2|x| = p_h + p_l.
    let y1 = high_part(y);
    let p_l = (y - y1) * t1 + y * t2;
    let p_h = y1 * t1;
    let z = p_l + p_h;
    let j = high_word(z);
    // |z| >= 1024 or <= -1075: libm's overflow and underflow branches (its scalar call).
    let in_range = (j < 0x4090_0000) & ((j & 0x7fff_ffff) < 0x4090_cc00);
    // n = [z + 0.5] where |z| > 0.5, p_h less n; else n = 0.
    let i = j & 0x7fff_ffff;
    let k = (i >> 20) - 0x3ff;
    let rounds = i > 0x3fe0_0000;
    let m = j.wrapping_add(shr(0x0010_0000, k + 1));
    let k = ((m & 0x7fff_ffff) >> 20) - 0x3ff;
    let t = with_high_word(0.0, (m & !shr(0x000f_ffff, k)) as u32);
    let m = shr((m & 0x000f_ffff) | 0x0010_0000, 20 - k);
    let m = if j < 0 { m.wrapping_neg() } else { m };
    let (n, p_h) = if rounds { (m, p_h - t) } else { (0, p_h) };
    // 2^(p_h + p_l) = 2^n * exp((p_h + p_l) ln2).
    let t = high_part(p_l + p_h);
    let u = t * LG2_H;
    let v = (p_l - (t - p_h)) * LG2 + t * LG2_L;
    let z = u + v;
    let w = v - (z - u);
    let t = z * z;
    let t1 = z - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    let r = (z * t1) / (t1 - 2.0) - (w + z * w);
    let z = 1.0 - (r - z);
    let j = high_word(z).wrapping_add(n.wrapping_shl(20));
    // A subnormal result: libm's scalbn (its scalar call).
    let normal = (j >> 20) > 0;
    let z = with_high_word(z, j as u32);
    let s = if hx < 0 && y_odd { -1.0 } else { 1.0 };
    (s * z, ordinary & in_range & normal)
}

/// Lanes per block: the main path's results and flags for a block stay in L1.
const BLOCK: usize = 256;

/// The exponents: one for every base, or one each.
#[derive(Clone, Copy)]
enum Exponents<'a> {
    One(f64),
    Each(&'a [f64]),
}

/// `out[i] = libm::pow(x[i], y_i)`: the main path over each block in a loop that vectorises
/// (zips: a loop that indexes through closures kept bounds checks and ran scalar), then libm's
/// call on the lanes it does not answer.
#[inline(always)]
fn blocks(out: &mut [f64], x: &[f64], y: Exponents) {
    for (bi, ob) in out.chunks_mut(BLOCK).enumerate() {
        let at = bi * BLOCK;
        let xb = &x[at..][..ob.len()];
        // Two loops, log2|x| and then the rest: the whole path in one loop is a chain of
        // dependent operations too long for the core to overlap vectors.
        let mut t2 = [0.0; BLOCK];
        let t2 = &mut t2[..ob.len()];
        for ((t1, t2), &x) in ob.iter_mut().zip(t2.iter_mut()).zip(xb) {
            (*t1, *t2) = log2_parts(x);
        }
        let mut fix = [false; BLOCK];
        let fix = &mut fix[..ob.len()];
        let set = |(o, f): (&mut f64, &mut bool), (p, ok): (f64, bool)| {
            *o = p;
            *f = !ok;
        };
        match y {
            Exponents::One(y) => {
                for ((of, &x), &t2) in ob.iter_mut().zip(fix.iter_mut()).zip(xb).zip(&*t2) {
                    let t1 = *of.0;
                    set(of, finish(x, y, t1, t2));
                }
            }
            Exponents::Each(ys) => {
                let ys = &ys[at..];
                for (((of, &x), &t2), &y) in
                    ob.iter_mut().zip(fix.iter_mut()).zip(xb).zip(&*t2).zip(ys)
                {
                    let t1 = *of.0;
                    set(of, finish(x, y, t1, t2));
                }
            }
        }
        if fix.iter().fold(false, |any, &f| any | f) {
            for (i, (o, &x)) in ob.iter_mut().zip(xb).enumerate() {
                if fix[i] {
                    let y = match y {
                        Exponents::One(y) => y,
                        Exponents::Each(ys) => ys[at + i],
                    };
                    *o = libm::pow(x, y);
                }
            }
        }
    }
}

#[inline(always)]
fn run_slice(x: &[f64], y: f64, out: &mut [f64]) {
    blocks(out, x, Exponents::One(y));
}

#[inline(always)]
fn run_zip(x: &[f64], y: &[f64], out: &mut [f64]) {
    blocks(out, x, Exponents::Each(y));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn run_slice_avx512(x: &[f64], y: f64, out: &mut [f64]) {
    run_slice(x, y, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn run_zip_avx512(x: &[f64], y: &[f64], out: &mut [f64]) {
    run_zip(x, y, out)
}

/// `out[i] = libm::pow(x[i], y)` for every i, bit for bit, on 8 lanes where AVX-512 exists.
/// Panics if the lengths differ.
pub fn pow_slice(x: &[f64], y: f64, out: &mut [f64]) {
    assert_eq!(x.len(), out.len(), "pow_slice: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { run_slice_avx512(x, y, out) };
    }
    run_slice(x, y, out)
}

/// `out[i] = libm::pow(x[i], y[i])` for every i, bit for bit, on 8 lanes where AVX-512 exists.
/// Panics if the lengths differ.
pub fn pow_zip(x: &[f64], y: &[f64], out: &mut [f64]) {
    assert_eq!(x.len(), out.len(), "pow_zip: lengths differ");
    assert_eq!(y.len(), out.len(), "pow_zip: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { run_zip_avx512(x, y, out) };
    }
    run_zip(x, y, out)
}

#[cfg(test)]
#[path = "pow_tests.rs"]
mod tests;
