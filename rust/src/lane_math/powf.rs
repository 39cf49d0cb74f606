//! x^y for f32 values at vector speed with the `libm` crate's bits. `powf_select` is libm's
//! `powf` (FreeBSD's e_powf.c: log2|x| in two parts from s = (x-bp)/(x+bp) with |x| reduced
//! to [1, 2) or [1.5, 3), or by a series near 1 when |y| > 2^27; y·log2|x| split into
//! p_h + p_l; then 2^(p_h+p_l) by rounding to an integer n, a rational approximation and
//! exponent arithmetic) with every branch computed and chosen by a select, so a loop of it
//! vectorises: each lane runs the scalar call's IEEE operations in the same order (no FMA
//! contraction). The special cases' divisions share the log's 1/(x+bp), operands picked per
//! lane. Every input, special values included, takes the select path: `powf_slice` and
//! `powf_zip` need no scalar fix-up. They run it as two halves, log2|x| then the rest, each a
//! loop over a block: the whole in one loop was a dependency chain too long for the core to
//! overlap vectors (three loops, passing more values between them, were 3x slower).
//! Where AVX-512 exists, vectors whose lanes are all ordinary (the usual case) run the same
//! operations written in intrinsics instead (`powf/lanes.rs`), 2.4x faster.

const TWO24: f32 = f32::from_bits(0x4b80_0000); // 2^24
const DP_H: f32 = f32::from_bits(0x3f15_c000); // 5.84960938e-01
const DP_L: f32 = f32::from_bits(0x35d1_cfdc); // 1.56322085e-06
const L1: f32 = f32::from_bits(0x3f19_999a); // 6.0000002384e-01
const L2: f32 = f32::from_bits(0x3edb_6db7); // 4.2857143283e-01
const L3: f32 = f32::from_bits(0x3eaa_aaab); // 3.3333334327e-01
const L4: f32 = f32::from_bits(0x3e8b_a305); // 2.7272811532e-01
const L5: f32 = f32::from_bits(0x3e6c_3255); // 2.3066075146e-01
const L6: f32 = f32::from_bits(0x3e53_f142); // 2.0697501302e-01
const P1: f32 = f32::from_bits(0x3e2a_aaab); // 1.6666667163e-01
const P2: f32 = f32::from_bits(0xbb36_0b61); // -2.7777778450e-03
const P3: f32 = f32::from_bits(0x388a_b355); // 6.6137559770e-05
const P4: f32 = f32::from_bits(0xb5dd_ea0e); // -1.6533901999e-06
const P5: f32 = f32::from_bits(0x3331_bb4c); // 4.1381369442e-08
const LG2: f32 = f32::from_bits(0x3f31_7218); // 6.9314718246e-01
const LG2_H: f32 = f32::from_bits(0x3f31_7200); // 6.93145752e-01
const LG2_L: f32 = f32::from_bits(0x35bf_be8c); // 1.42860654e-06
const OVT: f32 = f32::from_bits(0x3338_aa3c); // 4.2995665694e-08
const CP: f32 = f32::from_bits(0x3f76_384f); // 2/(3 ln2)
const CP_H: f32 = f32::from_bits(0x3f76_4000); // its top 12 bits
const CP_L: f32 = f32::from_bits(0xb8f6_23c6); // and the tail
const IVLN2: f32 = f32::from_bits(0x3fb8_aa3b); // 1/ln2
const IVLN2_H: f32 = f32::from_bits(0x3fb8_aa00); // its top 16 bits
const IVLN2_L: f32 = f32::from_bits(0x36ec_a570); // and the tail
const THIRD: f32 = f32::from_bits(0x3eaa_aaab); // libm's 0.333333333333
const X1P_102: f32 = f32::from_bits(0x0c80_0000); // 2^-102, scalbnf's pre-scale

/// f with its low bits cleared, as libm splits values into high and low parts.
#[inline(always)]
fn high(f: f32, mask: u32) -> f32 {
    f32::from_bits(f.to_bits() & mask)
}

/// `libm::powf(x, y)`, bit for bit, written without branches.
#[inline(always)]
pub fn powf_select(x: f32, y: f32) -> f32 {
    powf_select_for::<false>(x, y)
}

/// Whether `y` is an ordinary exponent: none of libm's special cases of y alone (0, ±1, 2,
/// 0.5, NaN, ±inf) and not past 2^27 (where log2|x| takes the series). For one such y, a loop
/// of `powf_select_for::<true>` leaves those branches out of every lane: the same operations
/// on the branches that remain, so the same bits.
pub fn ordinary_exponent(y: f32) -> bool {
    let iy = y.to_bits() & 0x7fff_ffff;
    iy != 0 && iy <= 0x4d00_0000 && iy != 0x3f80_0000 && y != 2.0 && y != 0.5
}

/// `powf_select`, where `ORDINARY` promises `ordinary_exponent(y)`: the two halves below
/// composed.
#[inline(always)]
fn powf_select_for<const ORDINARY: bool>(x: f32, y: f32) -> f32 {
    let (t1, t2, q) = log2_parts::<ORDINARY>(x, y);
    finish::<ORDINARY>(x, y, t1, t2, q)
}

/// What libm decides from the bits of x and y alone; both halves compute it (integer tests,
/// cheap beside either half's arithmetic).
struct Flags {
    hx: i32,
    hy: i32,
    ix: i32,
    iy: i32,
    ax: f32,
    x_neg: bool,
    odd: bool,
    sn: f32,
    x_spec: bool,
    y_pm1: bool,
    nan_div: bool,
    huge_y: bool,
}

#[inline(always)]
fn flags<const ORDINARY: bool>(x: f32, y: f32) -> Flags {
    let hx = x.to_bits() as i32;
    let hy = y.to_bits() as i32;
    let ix = hx & 0x7fff_ffff;
    let iy = hy & 0x7fff_ffff;
    let ax = f32::from_bits(ix as u32);
    let x_neg = hx < 0;

    // libm's yisint (0: not an integer, 1: odd, 2: even) for every x; it is used only where
    // x < 0, as in libm, and depends on y alone, so a loop with one y hoists it. The shift is
    // masked: lanes outside 1 <= |y| < 2^24 (where it is 0..=23) discard it.
    let sh = (0x96 - (iy >> 23)) as u32;
    let yj = iy.wrapping_shr(sh);
    let yisint = if iy >= 0x4b80_0000 {
        2
    } else if (iy >= 0x3f80_0000) & (yj.wrapping_shl(sh) == iy) {
        2 - (yj & 1)
    } else {
        0
    };
    let odd = x_neg & (yisint == 1);
    let nonint = yisint == 0;
    let sn: f32 = if odd { -1. } else { 1. };
    Flags {
        hx,
        hy,
        ix,
        iy,
        ax,
        x_neg,
        odd,
        sn,
        x_spec: (ix == 0x7f80_0000) | (ix == 0) | (ix == 0x3f80_0000), // ±inf, ±0, ±1
        y_pm1: !ORDINARY & (iy == 0x3f80_0000),
        nan_div: x_neg & nonint & (ix != 0) & (ix != 0x7f80_0000),
        huge_y: !ORDINARY & (iy > 0x4d00_0000),
    }
}

/// The first half of powf: log2|x| in two parts, t1 + t2, and the quotient q of its one
/// division (libm's v, or a special case's 1/x, 1/|x| or 0/0).
#[inline(always)]
fn log2_parts<const ORDINARY: bool>(x: f32, y: f32) -> (f32, f32, f32) {
    let Flags {
        ix,
        ax,
        x_spec,
        y_pm1,
        nan_div,
        huge_y,
        ..
    } = flags::<ORDINARY>(x, y);

    // log2|x| = n + dp_h[k] + log2(ax) with ax in [1, 2) (k = 0) or [1.5, 3) (k = 1), from
    // s = (ax - bp)/(ax + bp); subnormals scaled by 2^24 first.
    let sub = ix < 0x0080_0000;
    let axs = if sub { ax * TWO24 } else { ax };
    let ixs = axs.to_bits() as i32;
    let jm = ixs & 0x007f_ffff;
    let k1 = (jm > 0x001c_c471) & (jm < 0x005d_b3d7);
    let up = jm >= 0x005d_b3d7; // past sqrt(3): halve ax, add one to n
    let n0 = if sub { -24 } else { 0 };
    let n = n0 + (ixs >> 23) - 0x7f + up as i32;
    let ixn = (jm | 0x3f80_0000) - if up { 0x0080_0000 } else { 0 };
    let axn = f32::from_bits(ixn as u32);
    let (bp, dp_h, dp_l) = if k1 { (1.5, DP_H, DP_L) } else { (1., 0., 0.) };

    // One division for every lane: the log's 1/(ax + bp), or the specials' 1/x, 1/|x| and
    // (x-x)/(x-x), its operands picked by eager selects (with `if`, LLVM may thread the tests
    // and copy the division). x - x is 0 where used: the NaN is a runtime 0/0, as libm's.
    let pick = std::hint::select_unpredictable::<f32>;
    #[allow(clippy::eq_op)] // libm's x - x
    let zero = ax - ax;
    let num = pick(nan_div, zero, 1.);
    let den = pick(nan_div, zero, pick(y_pm1, x, pick(x_spec, ax, axn + bp)));
    let q = num / den;

    let u = axn - bp;
    let s = u * q; // q is libm's v here
    let s_h = high(s, 0xffff_f000);
    let t_h = (((ixn as u32 >> 1) & 0xffff_f000) | 0x2000_0000) + 0x0040_0000 + ((k1 as u32) << 21);
    let t_h = f32::from_bits(t_h);
    let t_l = axn - (t_h - bp);
    let s_l = q * ((u - s_h * t_h) - s_h * t_l);
    let s2 = s * s;
    let r = s2 * s2 * (L1 + s2 * (L2 + s2 * (L3 + s2 * (L4 + s2 * (L5 + s2 * L6)))));
    let r = r + s_l * (s_h + s);
    let s2 = s_h * s_h;
    let t_h = high(3. + s2 + r, 0xffff_f000);
    let t_l = r - ((t_h - 3.) - s2);
    let u = s_h * t_h;
    let v = s_l * t_h + t_l * s;
    let p_h = high(u + v, 0xffff_f000);
    let p_l = v - (p_h - u);
    let z_h = CP_H * p_h;
    let z_l = CP_L * p_h + p_l * CP + dp_l;
    let t = n as f32;
    let t1_log = high(((z_h + z_l) + dp_h) + t, 0xffff_f000);
    let t2_log = z_l - (((t1_log - t) - dp_h) - z_h);

    // |y| > 2^27 with |x - 1| <= 2^-20: log2|x| by the series x - x²/2 + x³/3 - x⁴/4.
    let t = ax - 1.;
    let w = (t * t) * (0.5 - t * (THIRD - t * 0.25));
    let u = IVLN2_H * t;
    let v = t * IVLN2_L - w * IVLN2;
    let t1_near = high(u + v, 0xffff_f000);
    let t2_near = v - (t1_near - u);
    let t1 = if huge_y { t1_near } else { t1_log };
    let t2 = if huge_y { t2_near } else { t2_log };
    (t1, t2, q)
}

/// The second half of powf, from log2|x| = t1 + t2 and q: y·log2|x|, 2 to that, and libm's
/// special cases.
#[inline(always)]
fn finish<const ORDINARY: bool>(x: f32, y: f32, t1: f32, t2: f32, q: f32) -> f32 {
    let Flags {
        hx,
        hy,
        ix,
        iy,
        ax,
        x_neg,
        odd,
        sn,
        x_spec,
        y_pm1,
        nan_div,
        huge_y,
    } = flags::<ORDINARY>(x, y);
    // y·log2|x| = p_h + p_l = z, with libm's over- and underflow tests at z = 128 and -150.
    let y1 = high(y, 0xffff_f000);
    let p_l = (y - y1) * t1 + y * t2;
    let p_h = y1 * t1;
    let z = p_l + p_h;
    let j = z.to_bits() as i32;
    let over = (j > 0x4300_0000) | ((j == 0x4300_0000) & (p_l + OVT > z - p_h));
    let under = (j < 0x4300_0000)
        & (((j & 0x7fff_ffff) > 0x4316_0000) | ((j as u32 == 0xc316_0000) & (p_l <= z - p_h)));

    // 2^z: beyond |z| = 0.5, n = z rounded by bits (the masked shifts are in range, 0..=23,
    // wherever the lane's result is kept) and p_h reduced by it.
    let i = j & 0x7fff_ffff;
    let big = i > 0x3f00_0000;
    let nb = j.wrapping_add(0x0080_0000_i32.wrapping_shr(((i >> 23) - 0x7e) as u32));
    let kb = ((nb & 0x7fff_ffff) >> 23) - 0x7f;
    let tb = f32::from_bits(nb as u32 & !(0x007f_ffff_u32.wrapping_shr(kb as u32)));
    let nm = ((nb & 0x007f_ffff) | 0x0080_0000).wrapping_shr((23 - kb) as u32);
    let nm = if j < 0 { -nm } else { nm };
    let n = if big { nm } else { 0 };
    let p_h = if big { p_h - tb } else { p_h };
    let t = high(p_l + p_h, 0xffff_8000);
    let u = t * LG2_H;
    let v = (p_l - (t - p_h)) * LG2 + t * LG2_L;
    let z = u + v;
    let w = v - (z - u);
    let t = z * z;
    let t1 = z - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    let r = (z * t1) / (t1 - 2.) - (w + z * w);
    let z = 1. - (r - z);
    let jz = (z.to_bits() as i32).wrapping_add(n << 23);
    // scalbnf(z, n) where the result is subnormal; there n is in -152..=-126.
    let deep = n < -126;
    // The pre-scale selected as a factor (z * 1 is z exactly); see lane_math/exp.rs.
    let zs = z * if deep { X1P_102 } else { 1. };
    let ns = if deep { n + 102 } else { n };
    let tiny = zs * f32::from_bits(((0x7f + ns) as u32) << 23);
    let z = if jz >> 23 <= 0 {
        tiny
    } else {
        f32::from_bits(jz as u32)
    };

    // libm's special cases, in its order; sn·HUGE·HUGE and sn·TINY·TINY are ±inf and ±0.
    let inf = sn * f32::INFINITY;
    let nil = sn * 0.;
    // x + y of NaNs, by bits (an add's operands may be swapped): x's payload if x is a NaN,
    // else y's, quieted.
    let x_nan = ix > 0x7f80_0000;
    let nan = f32::from_bits((if x_nan { hx } else { hy }) as u32 | 0x0040_0000);
    let pos_y = hy >= 0;
    if (!ORDINARY & (iy == 0)) | (hx == 0x3f80_0000) {
        1.
    } else if x_nan | (!ORDINARY & (iy > 0x7f80_0000)) {
        nan
    } else if !ORDINARY & (iy == 0x7f80_0000) {
        if ix == 0x3f80_0000 {
            1.
        } else if (ix > 0x3f80_0000) == pos_y {
            f32::INFINITY
        } else {
            0.
        }
    } else if y_pm1 {
        if pos_y {
            x
        } else {
            q
        }
    } else if !ORDINARY & (hy == 0x4000_0000) {
        x * x
    } else if !ORDINARY & (hy == 0x3f00_0000) & !x_neg {
        x.sqrt()
    } else if nan_div {
        q // (x < 0)^non-integer, x not -0 or -inf: NaN
    } else if x_spec {
        let z = if pos_y { ax } else { q }; // ±inf, ±0, -1: |x| or 1/|x|, signed
        if odd {
            -z
        } else {
            z
        }
    } else if huge_y & !(0x3f7f_fff8..=0x3f80_0007).contains(&ix) {
        if (ix < 0x3f7f_fff8) != pos_y {
            inf
        } else {
            nil
        }
    } else if over {
        inf
    } else if under {
        nil
    } else {
        sn * z
    }
}

/// Elements a block's first half fills before its second half runs.
const BLOCK: usize = 256;

/// `out[i] = powf(x[i], y)` for the `x` of one block, in two loops (the halves): one loop of
/// both was one chain of dependent operations per vector, too long for the core to overlap
/// the next vector's (pow(x, 3) on 1M f32, one thread: 3.65 -> 2.40 ms).
#[inline(always)]
fn halves<const ORDINARY: bool>(x: &[f32], y: f32, out: &mut [f32]) {
    let mut parts = [(0f32, 0f32, 0f32); BLOCK];
    for (p, &a) in parts.iter_mut().zip(x) {
        *p = log2_parts::<ORDINARY>(a, y);
    }
    for ((o, &a), &(t1, t2, q)) in out.iter_mut().zip(x).zip(&parts) {
        *o = finish::<ORDINARY>(a, y, t1, t2, q);
    }
}

/// `halves` with an exponent per element.
#[inline(always)]
fn halves_zip(x: &[f32], y: &[f32], out: &mut [f32]) {
    let mut parts = [(0f32, 0f32, 0f32); BLOCK];
    for ((p, &a), &b) in parts.iter_mut().zip(x).zip(y) {
        *p = log2_parts::<false>(a, b);
    }
    for (((o, &a), &b), &(t1, t2, q)) in out.iter_mut().zip(x).zip(y).zip(&parts) {
        *o = finish::<false>(a, b, t1, t2, q);
    }
}

/// The loops the entry points compile: named calls inline, so they vectorise.
#[inline(always)]
fn run_slice(x: &[f32], y: f32, out: &mut [f32]) {
    for (ob, xb) in out.chunks_mut(BLOCK).zip(x.chunks(BLOCK)) {
        if ordinary_exponent(y) {
            halves::<true>(xb, y, ob);
        } else {
            halves::<false>(xb, y, ob);
        }
    }
}

#[inline(always)]
fn run_zip(x: &[f32], y: &[f32], out: &mut [f32]) {
    let blocks = out
        .chunks_mut(BLOCK)
        .zip(x.chunks(BLOCK))
        .zip(y.chunks(BLOCK));
    for ((ob, xb), yb) in blocks {
        halves_zip(xb, yb, ob);
    }
}

#[cfg(target_arch = "x86_64")]
mod lanes;

/// `out[i] = libm::powf(x[i], y)` for every i, bit for bit, on 16 lanes where AVX-512 exists.
/// Panics if the lengths differ.
pub fn powf_slice(x: &[f32], y: f32, out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "powf_slice: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { lanes::run(lanes::Bases::Each(x), y, None, out) };
    }
    run_slice(x, y, out)
}

/// `out[i] = libm::powf(x[i], y[i])` for every i, bit for bit, on 16 lanes where AVX-512
/// exists. Panics if the lengths differ.
pub fn powf_zip(x: &[f32], y: &[f32], out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "powf_zip: lengths differ");
    assert_eq!(y.len(), out.len(), "powf_zip: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { lanes::run(lanes::Bases::Each(x), 0.0, Some(y), out) };
    }
    run_zip(x, y, out)
}

/// `out[i] = libm::powf(x, y[i])` for every i (a number ** a tensor), bit for bit: where
/// AVX-512 exists, log2|x| once for all lanes. Panics if the lengths differ.
pub fn powf_base(x: f32, y: &[f32], out: &mut [f32]) {
    assert_eq!(y.len(), out.len(), "powf_base: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { lanes::run(lanes::Bases::One(x), 0.0, Some(y), out) };
    }
    for (o, &b) in out.iter_mut().zip(y) {
        *o = powf_select(x, b);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{rng, windows};
    use super::*;

    /// The select form, `powf_zip` and the plain loop against libm, bit for bit.
    fn check(xs: &[f32], ys: &[f32]) {
        let mut fast = vec![0.0; xs.len()];
        powf_zip(xs, ys, &mut fast);
        let mut plain = vec![0.0; xs.len()];
        run_zip(xs, ys, &mut plain);
        for (i, (&x, &y)) in xs.iter().zip(ys).enumerate() {
            let want = libm::powf(x, y).to_bits();
            let got = [powf_select(x, y), fast[i], plain[i]].map(f32::to_bits);
            let (bx, by) = (x.to_bits(), y.to_bits());
            let at = "libm, then select, zip, plain";
            assert!(
                got == [want; 3],
                "({bx:#x}, {by:#x}): {at} {want:#x} {got:x?}"
            );
        }
    }

    /// As `check` for one y, `powf_slice` too.
    fn check_y(xs: &[f32], y: f32) {
        let mut fast = vec![0.0; xs.len()];
        powf_slice(xs, y, &mut fast);
        for (&x, f) in xs.iter().zip(fast) {
            let (want, got) = (libm::powf(x, y).to_bits(), f.to_bits());
            let (bx, by) = (x.to_bits(), y.to_bits());
            assert!(
                got == want,
                "slice ({bx:#x}, {by:#x}): libm {want:#x}, {got:#x}"
            );
        }
        check(xs, &vec![y; xs.len()]);
    }

    /// Every f32 within `w` bit steps of each boundary, both signs.
    /// Magnitudes of special x and y, taken with both signs: zero, subnormals, 1, the largest,
    /// infinity, NaNs with payloads (quiet and signalling), 2, 3, 1/2, 3/2, odd and even
    /// integers about 2^24, |y| about 2^27, x about libm's near-1 window, and values whose
    /// products land on z = 128 and -150 exactly (2^7, 150, 2^-2, 126, 127...).
    const MAGS: [u32; 36] = [
        0, 1, 0x7fffff, 0x800000, 0x3f800000, 0x7f7fffff, 0x7f800000, 0x7fc00000, 0x7fc12345,
        0x7f800001, 0x7fa00000, 0x7fc54321, 0x7fa54321, 0x40000000, 0x40400000, 0x3f000000,
        0x3fc00000, 0x4b000001, 0x4b7fffff, 0x4b800000, 0x4b800001, 0x4d000000, 0x4d000001,
        0x4f000000, 0x3f7ffff7, 0x3f7ffff8, 0x3f800007, 0x3f800008, 0x43000000, 0x43160000,
        0x42800000, 0x40800000, 0x3e800000, 0x43150000, 0x42fc0000, 0x42fe0000,
    ];

    fn specials() -> Vec<f32> {
        let both = MAGS.iter().flat_map(|&m| [m, m | 0x8000_0000]);
        both.map(f32::from_bits).collect()
    }

    #[test]
    fn one_base_for_all_matches_libm() {
        // Exponents: every 65537th bit pattern, the special values, [-20, 20) by 0.01.
        let mut ys: Vec<f32> = (0..=u32::MAX).step_by(65_537).map(f32::from_bits).collect();
        ys.extend(specials());
        ys.extend((0..4_000).map(|i| i as f32 * 0.01 - 20.));
        let mut bases = specials();
        bases.extend([2., 10., 0.5, std::f32::consts::E, -2., 1.5, 1e-3, -0.75]);
        let mut out = vec![0.0; ys.len()];
        for &x in &bases {
            powf_base(x, &ys, &mut out);
            for (&y, o) in ys.iter().zip(&out) {
                let (bx, by) = (x.to_bits(), y.to_bits());
                let want = libm::powf(x, y).to_bits();
                assert_eq!(o.to_bits(), want, "{bx:#x} ** {by:#x}: libm {want:#x}");
            }
        }
    }

    #[test]
    fn the_special_values_crossed_match_libm() {
        let sp = specials();
        let xs: Vec<f32> = sp.iter().flat_map(|&x| sp.iter().map(move |_| x)).collect();
        let ys: Vec<f32> = sp.iter().flat_map(|_| sp.iter().copied()).collect();
        check(&xs, &ys);
        // One y at a time too: `powf_slice` takes the ordinary exponents' loop where it may.
        for &y in &sp {
            check_y(&sp, y);
        }
    }

    #[test]
    fn a_sweep_of_all_f32_for_common_and_random_exponents_matches_libm() {
        let mut xs: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
        xs.extend(specials());
        let third = 1. / 3.;
        let common = [
            2., 3., 4., -1., -2., 0.5, -0.5, 1.5, 2.5, third, 10., -10., 0., 1., 100., 1e-3,
        ];
        for y in common {
            check_y(&xs, y);
        }
        // 300 random exponents, each on a coarser sweep with its own offset: bit patterns,
        // values in [-8, 8), integers and halves (x < 0 has a sign or a NaN for these).
        let mut next = rng();
        for i in 0..300 {
            let r = next();
            let y = match i % 4 {
                0 => f32::from_bits(r as u32),
                1 => (r >> 40) as f32 / (1u64 << 20) as f32 - 8.,
                2 => ((r >> 40) % 64) as f32 - 32.,
                _ => ((r >> 40) % 64) as f32 * 0.5 - 16.,
            };
            let from = (r >> 32) as u32 % 65_536;
            let xs: Vec<f32> = (from..=u32::MAX)
                .step_by(4099 * 37)
                .map(f32::from_bits)
                .collect();
            check_y(&xs, y);
        }
    }

    #[test]
    fn x_near_one_and_near_over_and_underflow_matches_libm() {
        let near_one = windows(&[0x3f80_0000], 1 << 14);
        for y in [3., -0.5, 1.5, 1e9, -1e9, 1.5e8, 1e30, -3e38, 7e5, -2e6] {
            check_y(&near_one, y);
        }
        // Where x^y crosses 2^128, 2^-126 and 2^-150.
        for y in [3., -2., 1.5, 2.5, 10., -10., 100., -0.5, 0.01, 1e3, -37.5] {
            let bounds: Vec<u32> = [128., -126., -150.]
                .map(|e: f64| (e / y as f64).exp2() as f32)
                .iter()
                .filter(|b| b.is_normal())
                .map(|b| b.to_bits())
                .collect();
            check_y(&windows(&bounds, 1 << 11), y);
        }
    }

    #[test]
    fn shuffled_random_pairs_match_libm() {
        let mut next = rng();
        let sp = specials();
        let mut pairs: Vec<(f32, f32)> = Vec::new();
        for _ in 0..200_000 {
            let (r, s) = (next(), next());
            // Bit patterns; values in (0, 16) and (-16, 16); small integers and exponents in
            // [-8, 8); the special values among them.
            let x = match r % 4 {
                0 => f32::from_bits(s as u32),
                1 => (s >> 40) as f32 / (1u64 << 20) as f32,
                2 => (s >> 40) as f32 / (1u64 << 19) as f32 - 16.,
                _ => sp[(s >> 40) as usize % sp.len()],
            };
            let y = match (r >> 8) % 5 {
                0 => f32::from_bits((s >> 32) as u32),
                1 | 2 => (r >> 40) as f32 / (1u64 << 20) as f32 - 8.,
                3 => ((r >> 40) % 64) as f32 - 32.,
                _ => sp[(r >> 40) as usize % sp.len()],
            };
            pairs.push((x, y));
        }
        for i in (1..pairs.len()).rev() {
            pairs.swap(i, next() as usize % (i + 1));
        }
        let (xs, ys): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
        check(&xs, &ys);
    }
}
