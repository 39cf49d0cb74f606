//! libm's `expf` (FreeBSD's e_expf.c: argument reduction by k*ln2 in two parts, a degree-2
//! rational correction, then scalbnf) without branches: each branch is computed and one chosen
//! by a select, so a loop of it vectorises, every lane running the scalar call's IEEE operations
//! in the same order. Tested bit for bit against `libm::expf` in `backend/cpu/exp_lanes.rs`.

// libm's constants, by their bits.
pub const HALF: f32 = 0.5;
pub const LN2_HI: f32 = f32::from_bits(0x3f31_7200); // 6.9314575195e-01
pub const LN2_LO: f32 = f32::from_bits(0x35bf_be8e); // 1.4286067653e-06
pub const INV_LN2: f32 = f32::from_bits(0x3fb8_aa3b); // 1.4426950216e+00
pub const P1: f32 = f32::from_bits(0x3e2a_aa8f); // 0xaaaa8f.0p-26
pub const P2: f32 = f32::from_bits(0xbb35_5215); // -0xb55215.0p-32

/// `libm::expf(x)`, bit for bit, written without branches.
#[inline(always)]
pub fn expf_select(x: f32) -> f32 {
    let bits = x.to_bits();
    let negative = bits >> 31 != 0;
    let hx = bits & 0x7fff_ffff;
    // Argument reduction: k = round(x / ln2) beyond 1.5 ln2, +-1 beyond 0.5 ln2, else 0 (for
    // which the general formulas give hi = x, lo = 0, r = x exactly, as libm's third branch).
    let half = if negative { -HALF } else { HALF };
    // Beyond |x| ~ 1e9 (and for NaN) k is unused (a special case below answers), so any in-range
    // value does; clamping there lets the conversion be one truncating instruction per vector
    // (`as i32` saturates, which LLVM does lane by lane).
    let t = INV_LN2 * x + half;
    let t = if t.abs() < 1e9 { t } else { 0.0 };
    // SAFETY: t is finite and |t| < 1e9 < 2^31, so its truncation fits in i32.
    let k_far: i32 = unsafe { t.to_int_unchecked() };
    let k_near = if negative { -1 } else { 1 };
    let k = if hx > 0x3f85_1592 {
        k_far
    } else if hx > 0x3eb1_7218 {
        k_near
    } else {
        0
    };
    let kf = k as f32;
    let hi = x - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * (P1 + rr * P2);
    let y = 1.0 + (r * c / (2.0 - c) - lo + hi);
    // scalbnf(y, k) for the k this range gives (-150..=128): one pre-scaling step at most, and
    // a scale of 2^0 = 1 where k = 0 leaves y as it is.
    // The pre-scale is selected as a factor (1 where k needs none: y * 1 is y exactly); computing
    // both products and selecting one ran slower (see lane_math/exp.rs).
    let (pre, n) = if k > 127 {
        (f32::from_bits(0x7f00_0000), k - 127)
    } else if k < -126 {
        (f32::from_bits(0x0c80_0000), k + 102) // 2^-126 * 2^24
    } else {
        (1.0, k)
    };
    let y = y * pre;
    let general = y * f32::from_bits(((0x7f + n) as u32) << 23);
    // libm's special cases, in its order.
    if hx > 0x7f80_0000 {
        x // NaN, payload kept
    } else if hx >= 0x42b1_7218 && !negative {
        x * f32::from_bits(0x7f00_0000) // x >= 88.72: overflow to inf
    } else if negative && hx >= 0x42cf_f1b5 {
        0.0 // x <= -103.97
    } else if hx <= 0x3900_0000 {
        1.0 + x // |x| <= 2^-14
    } else {
        general
    }
}
