//! The left fold `acc + x0 + x1 + ...` of f32 values, every addition rounded to f32 in index
//! order (the reference kernels' sum), run as integer prefix sums where that gives the same bits.
//!
//! While the running sum s stays inside one binade [2^e, 2^(e+1)) (either sign), every f32
//! there is a multiple of u = 2^(e-23), and rounding s + x to f32 rounds s + x to a multiple of
//! u. With s = S·u (S an integer, 2^23 <= |S| < 2^24), that is S + RNE(x / u): x / u rounded to
//! the nearest integer, a tie to the one that makes the sum even (the f32's last bit). So over
//! a stretch the fold is S plus a prefix sum of integers, which vector lanes compute side by
//! side instead of each f32 add waiting on the one before (two cycles each).
//!
//! The vectors of a block are taken while every prefix stays inside the binade with a margin:
//! then each exact s + x lies in it too (|x / u - RNE(x / u)| <= 1/2). Ties are first rounded
//! to the even x / u and fixed afterwards in order; each fix moves the later sums by one unit,
//! so the margin is `MAX_TIES` units and a block takes that many ties at most. Where the first
//! vector fails (a zero, subnormal, tiny or non-finite sum; a non-finite or large term; a sum
//! leaving its binade), a few vectors run the plain fold and units start again from the new
//! sum: the result is always the plain fold's (the tests compare them bit for bit).
//!
//! Away from the binade's edges a block first goes by groups of four vectors checked by a bound
//! (`bounded.rs`: the sum before the group plus or minus the group's total |units|), which needs
//! no prefix sums but at ties. Where a group fails it, the loop goes round again from that
//! group; while the sum lies nearer its binade's edges than that failed bound, each block takes
//! the per-value check here.
//!
//! A sum whose terms never shrink it (a loss's: squares, absolute values) first tries each
//! block as a growing sum: every term a whole number of units >= 0 and no tie, so the sums
//! rise and stay in the binade when the last one does; then the block's total in units is all
//! it needs, without the prefix sums (`grown`, a third of the work per vector).

#[cfg(target_arch = "x86_64")]
use super::simd::has_avx512;

/// Values per block at most (a multiple of 16): one tie pass each; a block ends early at the
/// first vector that leaves the binade.
const BLOCK: usize = 512;
/// Ties a block takes at most (the margin its sums keep inside the binade, in units).
const MAX_TIES: i32 = 16;

/// The plain left fold: `acc + x0 + x1 + ...`, each addition rounded.
#[inline]
fn plain(acc: f32, x: &[f32]) -> f32 {
    let mut s = acc;
    for &v in x {
        s += v;
    }
    s
}

/// `acc + x0 + x1 + ...` folded left to right in f32: the plain fold's bits.
pub fn fold(acc: f32, x: &[f32]) -> f32 {
    fold_counting(acc, x).0
}

/// `fold`, and how many blocks ran as integer prefix sums (the tests check the fast path runs).
pub fn fold_counting(acc: f32, x: &[f32]) -> (f32, usize) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() && std::arch::is_x86_feature_detected!("popcnt") && x.len() >= 64 {
        // SAFETY: AVX-512 F/BW/VL/DQ and POPCNT (the ties' counts) were just detected.
        return unsafe { avx512::fold(acc, x) };
    }
    (plain(acc, x), 0)
}

#[cfg(target_arch = "x86_64")]
mod bounded;

/// A sum s in units of its last place u (s = start·u), for the checks that fold in units.
#[cfg(target_arch = "x86_64")]
struct Units {
    /// 1/u, a power of two.
    inv_u: f32,
    /// s / u: |start| in [2^23, 2^24), of s's sign.
    start: i32,
    /// The range every sum S in the stretch must keep: |S| in [2^23 + 1, 2^24 - 1] less
    /// MAX_TIES units each side, as a tie moves the later sums one unit at most (a stretch
    /// stops before its tie number MAX_TIES + 1).
    lo: i32,
    hi: i32,
}

#[cfg(target_arch = "x86_64")]
impl Units {
    /// None where s cannot use units: 1/u = 2^(150 - biased) must be a normal f32 (|s| >=
    /// 2^-104), s finite and normal.
    fn of(s: f32) -> Option<Self> {
        let bits = s.to_bits();
        let biased = (bits >> 23) & 0xff;
        if !(23..0xff).contains(&biased) {
            return None;
        }
        let magnitude = ((bits & 0x007f_ffff) | 0x0080_0000) as i32;
        let negative = bits >> 31 != 0;
        let (start, lo, hi) = if negative {
            (-magnitude, -(1 << 24) + 1, -(1 << 23) - 1)
        } else {
            (magnitude, (1 << 23) + 1, (1 << 24) - 1)
        };
        Some(Units {
            inv_u: f32::from_bits((277 - biased) << 23),
            start,
            lo: lo + MAX_TIES,
            hi: hi - MAX_TIES,
        })
    }
}

/// The fix of a tie y = x / u whose sum came out odd: the other neighbour of y (2y - r), one
/// unit up or down from the even RNE(y) the sums took.
#[cfg(target_arch = "x86_64")]
fn other_neighbour(y: f32) -> i32 {
    if y > y.round_ties_even() {
        1
    } else {
        -1
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::bounded::in_units_bounded;
    use super::{other_neighbour, plain, Units, BLOCK, MAX_TIES};
    use std::arch::x86_64::*;

    /// What `grown` made of a block.
    enum Grown {
        /// The block's sum.
        To(f32),
        /// Every term grows the sum, but past its binade (or the sum is no positive normal).
        PastTheBinade,
        /// A term is a tie, whose rounding needs the sum before it.
        Tie,
        /// A term would shrink the sum or is not finite.
        NotGrowing,
    }

    /// `s + x0 + x1 + ...` over all of `block` (a multiple of 16 values) where s > 0 and every
    /// term rounds to a whole number of units >= 0, none a tie: then the sums only grow, so all
    /// stay in the binade when the last does, and only the total of the units is needed (no
    /// prefix sums, no tie pass: a third of `in_units`' operations per vector).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,popcnt")]
    unsafe fn grown(s: f32, block: &[f32]) -> Grown {
        if s < 0.0 {
            return Grown::NotGrowing; // a sum of growing terms from 0 is never negative
        }
        let bits = s.to_bits();
        let biased = bits >> 23; // the sign bit is clear but for -0, which fails below
                                 // As in_units: s a positive normal with a normal 1/u, S in [2^23 + 1, 2^24 - 1].
        let start = ((bits & 0x007f_ffff) | 0x0080_0000) as i32;
        if !(23..0xff).contains(&biased) || start == 1 << 23 {
            return Grown::PastTheBinade;
        }
        let room = (1 << 24) - 1 - start;
        let inv_u = f32::from_bits((277 - biased) << 23);
        let inv = _mm512_set1_ps(inv_u);
        let half = _mm512_set1_ps(0.5);
        let (mut total, mut any) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut ties = 0u16;
        for j in 0..block.len() / 16 {
            // SAFETY: 16 * j + 16 <= block.len().
            let v = unsafe { _mm512_loadu_ps(block.as_ptr().add(16 * j)) };
            let y = _mm512_mul_ps(v, inv);
            let r = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(y);
            ties |= _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(_mm512_abs_ps(_mm512_sub_ps(y, r)), half);
            let q = _mm512_cvtps_epi32(r);
            total = _mm512_add_epi32(total, q);
            any = _mm512_or_si512(any, q);
        }
        // Every unit count in [0, 2^24) (a negative, large or non-finite term sets a bit from
        // 2^24 up: non-finite ones convert to i32::MIN), so a lane's total (BLOCK / 16 of them)
        // stays below 2^29, and a lane past `room` already leaves the binade.
        if _mm512_reduce_or_epi32(any) as u32 >= 1 << 24 {
            return Grown::NotGrowing;
        }
        if ties != 0 {
            return Grown::Tie;
        }
        if _mm512_cmpgt_epi32_mask(total, _mm512_set1_epi32(room)) != 0 {
            return Grown::PastTheBinade;
        }
        let units = _mm512_reduce_add_epi32(total); // 16 lanes <= room < 2^23: no overflow
        if units > room {
            return Grown::PastTheBinade;
        }
        // start + units <= 2^24 - 1: exact in f32; times u, a power of two, exact.
        Grown::To((start + units) as f32 / inv_u)
    }

    /// The fold over whole vectors of 16 in units while they stay in a binade, a vector that
    /// leaves it plain (then units again from the new sum), the last partial vector plain.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,popcnt")]
    pub unsafe fn fold(acc: f32, x: &[f32]) -> (f32, usize) {
        let whole = x.len() / 16 * 16;
        let (mut s, mut fast, mut at) = (acc, 0, 0);
        let mut prefix = [0i32; BLOCK];
        // Whether to try a block as a growing sum first: until a block holds a term that
        // would shrink it (or a tie), as a loss's terms never do.
        let mut growing = true;
        let mut reach = 0.0f32;
        while at < whole {
            let block = &x[at..whole.min(at + BLOCK)];
            if growing {
                // SAFETY: this function's features; `block` holds a multiple of 16 values.
                match unsafe { grown(s, block) } {
                    Grown::To(t) => {
                        s = t;
                        at += block.len();
                        fast += 1;
                        continue;
                    }
                    Grown::PastTheBinade | Grown::Tie => {}
                    Grown::NotGrowing => growing = false,
                }
            }
            // Groups checked by a bound first where the sum lies farther from its binade's
            // edges than the last group's bound that failed (closer, a bounded try mostly
            // fails: the exact check takes the block).
            if room(s) > reach {
                // SAFETY: this function's features; `block` holds a multiple of 16 values.
                let (t, used, failed) = unsafe { in_units_bounded(s, block) };
                reach = failed;
                if used > 0 {
                    s = t;
                    at += used;
                    fast += 1;
                    continue;
                }
            }
            // SAFETY: this function's features; `block` holds a multiple of 16 values.
            match unsafe { in_units(s, block, &mut prefix) } {
                (t, 0) => {
                    // The sum is about to leave its binade (or cannot use units): plain for two
                    // vectors, where a random walk tends to cross back and forth.
                    let n = block.len().min(32);
                    s = plain(t, &block[..n]);
                    at += n;
                }
                (t, used) => {
                    s = t;
                    at += used;
                    fast += 1;
                }
            }
        }
        (plain(s, &x[whole..]), fast)
    }

    /// How far |s| lies from the nearer edge of its binade [2^e, 2^(e+1)) (NaN for a NaN s).
    fn room(s: f32) -> f32 {
        let low = f32::from_bits(s.to_bits() & 0x7f80_0000);
        let a = s.abs();
        (a - low).min(2.0 * low - a)
    }

    /// `s + x0 + x1 + ...` over the leading vectors of `block` (a multiple of 16 values) whose
    /// sums stay in s's binade, as an integer prefix sum in units of s's last place: the new
    /// sum and how many values it took (0 where the first vector already fails the module
    /// comment's conditions).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,popcnt")]
    unsafe fn in_units(s: f32, block: &[f32], prefix: &mut [i32; BLOCK]) -> (f32, usize) {
        let Some(Units {
            inv_u,
            start,
            lo,
            hi,
        }) = Units::of(s)
        else {
            return (s, 0);
        };
        let (lo_v, span) = (_mm512_set1_epi32(lo), _mm512_set1_epi32(hi - lo));
        // Per 16 lanes: which terms are ties, and which failed a check.
        let vectors = block.len() / 16;
        let mut masks = [(0u16, 0u16); BLOCK / 16];
        let (inv, half) = (_mm512_set1_ps(inv_u), _mm512_set1_ps(0.5));
        let (zero, last) = (_mm512_setzero_si512(), _mm512_set1_epi32(15));
        let mut carry = _mm512_set1_epi32(start);
        let mut checked = vectors;
        for (j, m) in masks.iter_mut().enumerate().take(vectors) {
            // SAFETY: 16 * j + 16 <= block.len() <= BLOCK.
            let v = unsafe { _mm512_loadu_ps(block.as_ptr().add(16 * j)) };
            // x / u, exact (a power of two) unless it underflows, and then far below 1/2.
            let y = _mm512_mul_ps(v, inv);
            // RNE(y), even at a tie (where the sum's parity decides: fixed below).
            let r = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(y);
            let tie = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(_mm512_abs_ps(_mm512_sub_ps(y, r)), half);
            // The 16 lanes' inclusive prefix sums, off the carry's chain, then the carry.
            let q = _mm512_cvtps_epi32(r);
            let q = _mm512_add_epi32(q, _mm512_alignr_epi32::<15>(q, zero));
            let q = _mm512_add_epi32(q, _mm512_alignr_epi32::<14>(q, zero));
            let q = _mm512_add_epi32(q, _mm512_alignr_epi32::<12>(q, zero));
            let q = _mm512_add_epi32(q, _mm512_alignr_epi32::<8>(q, zero));
            let p = _mm512_add_epi32(q, carry);
            carry = _mm512_add_epi32(carry, _mm512_permutexvar_epi32(last, q));
            // Outside [lo, hi] (less the ties' margin), as one unsigned comparison. A term whose
            // y is not finite or has |y| >= 2^24 (converted to i32::MIN from 2^31 on) puts its
            // own prefix outside, the one before being inside: no separate check.
            let out = _mm512_cmp_epu32_mask::<_MM_CMPINT_NLE>(_mm512_sub_epi32(p, lo_v), span);
            // SAFETY: as the load above.
            unsafe { _mm512_storeu_si512(prefix.as_mut_ptr().add(16 * j).cast(), p) };
            *m = (tie, out);
            if out != 0 {
                // The sum leaves its binade here: the vectors after it are not taken.
                checked = j + 1;
                break;
            }
        }
        // The leading vectors that passed, with MAX_TIES ties at most among them.
        let (mut used, mut ties) = (0usize, 0i32);
        for &(tie, bad) in &masks[..checked] {
            ties += tie.count_ones() as i32;
            if bad != 0 || ties > MAX_TIES {
                break;
            }
            used += 16;
        }
        if used == 0 {
            return (s, 0);
        }
        // Ties in order: a sum that came out odd takes the other neighbour of y, the one on the
        // far side of y (2y - r), which makes it even.
        let mut extra = 0i32;
        for (j, &(m, _)) in masks[..used / 16].iter().enumerate() {
            let mut m = m;
            while m != 0 {
                let k = 16 * j + m.trailing_zeros() as usize;
                if (prefix[k] + extra) & 1 != 0 {
                    extra += other_neighbour(block[k] * inv_u);
                }
                m &= m - 1;
            }
        }
        let total = prefix[used - 1] + extra;
        // |total| < 2^24: exact in f32; times u, a power of two, exact in the binade.
        (total as f32 / inv_u, used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Roughly normal: the sum of four uniforms, centred.
        fn normal(&mut self) -> f32 {
            (0..4)
                .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32)
                .sum::<f32>()
                - 2.0
        }
    }

    fn check(acc: f32, x: &[f32], what: &str) -> usize {
        let (got, fast) = fold_counting(acc, x);
        let want = plain(acc, x);
        assert!(
            got.to_bits() == want.to_bits(),
            "{what}: {got:e} ({:#x}) against the plain fold's {want:e} ({:#x})",
            got.to_bits(),
            want.to_bits()
        );
        fast
    }

    #[test]
    fn the_fold_gives_the_plain_folds_bits() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut fast = 0;
        for (n, scale) in [
            (262_144, 1.0f32),
            (100_000, 1e-3),
            (50_003, 1e6),
            (4_099, 3.0),
        ] {
            let x: Vec<f32> = (0..n).map(|_| rng.normal() * scale).collect();
            fast += check(0.0, &x, "normal values");
            // Squares (a loss's terms): the sum only grows, crossing binades upward.
            let sq: Vec<f32> = x.iter().map(|v| v * v).collect();
            fast += check(0.0, &sq, "squares");
            fast += check(-1234.5, &sq, "squares from a negative start");
        }
        // The path under test ran: most blocks of a long fold.
        assert!(fast > 1_000, "only {fast} blocks ran as prefix sums");
    }

    #[test]
    fn ties_round_to_the_even_sum() {
        // Dyadic values a few binades below the sum: many exact halves of its last place.
        let mut rng = Rng(42);
        let mut fast = 0;
        for shift in [1, 2, 3, 8] {
            let x: Vec<f32> = (0..20_000)
                .map(|_| ((rng.next() % 64) as f32 - 32.0) / (1 << shift) as f32)
                .collect();
            for start in [
                1.5f32 * (1 << 22) as f32,
                -3.0e6,
                777.25,
                2.0f32.powi(24) - 1.0,
            ] {
                fast += check(start, &x, "ties");
            }
            let halves: Vec<f32> = (0..4_096)
                .map(|i| if i % 3 == 0 { 0.5 } else { 1.5 })
                .collect();
            fast += check(2.0f32.powi(23) + 1.0, &halves, "halves");
            fast += check(2.0f32.powi(24) + 2.0, &halves, "halves of a unit of 2");
        }
        assert!(fast > 50, "only {fast} blocks ran as prefix sums");
    }

    #[test]
    fn a_block_that_reaches_the_binades_edge_runs_the_plain_fold() {
        // Sums that step a unit or two past 2^24, where the units double (2^24 + 1 is a tie
        // that stays at 2^24), or past 2^23, where they halve, and come back: both signs.
        let (top, bottom) = (2.0f32.powi(24), 2.0f32.powi(23));
        for sign in [1.0f32, -1.0] {
            for d in 1..6 {
                for k in 1..8 {
                    let mut up = vec![sign; d + k];
                    up.extend(vec![-sign; d + k]);
                    up.resize(64, 0.25 * sign);
                    check(sign * (top - d as f32), &up, "past 2^24 and back");
                    let mut down = vec![-sign; d + k];
                    down.push(-0.5 * sign);
                    down.extend(vec![sign; d + k]);
                    down.resize(64, 0.5 * sign);
                    check(sign * (bottom + d as f32), &down, "past 2^23 and back");
                }
            }
        }
    }

    #[test]
    fn a_growing_sum_that_fills_its_binade_to_the_last_unit_or_past_it() {
        // Terms of one unit from 2^24 - d: d of them reach 2^24 (then each + 1 is a tie that
        // stays there); 64 - d zeros after them stay inside. Exact totals, checked by the plain
        // fold: the blocks take the growing path where they end inside the binade.
        let top = 2.0f32.powi(24);
        for d in [1, 2, 5, 63, 64, 65] {
            let ones = vec![1.0f32; 64];
            check(top - d as f32, &ones, "growing past 2^24");
            let mut some = vec![1.0f32; d.min(64)];
            some.resize(64, 0.0);
            check(top - 64.0, &some, "growing to the binade's last unit");
            check(
                top - 64.0 - 0.5 * d as f32,
                &[vec![0.5f32; 64], some].concat(),
                "halves",
            );
        }
    }

    #[test]
    fn binade_edges_zero_crossings_and_special_values_fall_back_exactly() {
        let mut rng = Rng(7);
        // A sum that hovers about a power of two and about zero.
        let around = |c: f32, rng: &mut Rng| -> Vec<f32> {
            let mut s = 0.0f32;
            (0..30_000)
                .map(|_| {
                    let v = rng.normal() * 0.01 + (c - s) * 0.001;
                    s += v;
                    v
                })
                .collect()
        };
        for c in [1024.0f32, 0.0, -2048.0, 1.0] {
            let x = around(c, &mut rng);
            check(c, &x, "around a binade edge");
            check(0.0, &x, "from zero");
            check(-0.0, &x, "from minus zero");
        }
        let mut x: Vec<f32> = (0..5_000).map(|_| rng.normal()).collect();
        for (i, v) in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1),
            f32::MAX,
            -f32::MAX,
            1.0e-40,
            -0.0,
            3.0e30,
        ]
        .into_iter()
        .enumerate()
        {
            let mut y = x.clone();
            y[500 * i + 333] = v;
            check(100.0, &y, "a special term");
        }
        for acc in [
            f32::NAN,
            f32::INFINITY,
            f32::from_bits(5),
            1.0e-38,
            1.0e-30,
            f32::MAX,
        ] {
            check(acc, &x, "a special start");
        }
        // Tiny sums: below the units check's range (|s| < 2^-104) and just above it.
        x.iter_mut().for_each(|v| *v *= 1.0e-33);
        check(0.0, &x, "tiny terms");
        check(2.0f32.powi(-103), &x, "tiny terms from a tiny start");
        for n in [0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000] {
            check(0.5, &x[..n], "short");
        }
    }
}
