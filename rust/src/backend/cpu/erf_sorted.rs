//! libm's erf (and GELU on it) with each lane running only its own range's formula: per block,
//! AVX-512 compress stores sort the arguments by erf's range (|z| < 0.84375, < 1.25, the rest),
//! each range's formula runs on its packed lanes (`lane_math::erff`), and permutes (or expands,
//! without VPOPCNTDQ) put the results back in place (the rest with `erff_rest`: the far range, the saturated one, inf and
//! NaN). `erff_select` computes all ranges for every lane, seven divisions where one formula
//! needs one to five; sorting keeps each lane's IEEE operations exactly those of the scalar
//! call, so the bits are libm's (erf_lanes.rs tests them).

use super::exp_lanes::ExpRow;
use super::gelu_f32::{erf_arg, gelu_from_erf, gelu_from_t, gelu_grad_from_erf_exp, pdf_arg};
use crate::lane_math::erff::{
    erff_far_args, erff_far_from, erff_near, erff_rest_with, erff_select, erff_small,
};
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// Elements per sorted block (a multiple of 16): the three packed streams stay in L1.
const BLOCK: usize = 512;

/// The three packed streams of a block, with 16 spare slots each: whole vectors are stored at
/// each stream's end and loaded from it. Made (zeroed) once per call, not per block.
struct Streams {
    small: [f32; BLOCK + 16],
    near: [f32; BLOCK + 16],
    rest: [f32; BLOCK + 16],
    /// The far range's two exponentials (their arguments first).
    far_a: [f32; BLOCK + 16],
    far_b: [f32; BLOCK + 16],
}

impl Streams {
    fn new() -> Self {
        Streams {
            small: [0.0; BLOCK + 16],
            near: [0.0; BLOCK + 16],
            rest: [0.0; BLOCK + 16],
            far_a: [0.0; BLOCK + 16],
            far_b: [0.0; BLOCK + 16],
        }
    }
}

/// erf of every `z` into `out` (equal lengths, at most BLOCK).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
unsafe fn erf_block(z: &[f32], out: &mut [f32], streams: &mut Streams) {
    let n = z.len();
    debug_assert!(n <= BLOCK && out.len() == n);
    let vectors = n / 16;
    let Streams {
        small,
        near,
        rest,
        far_a,
        far_b,
    } = streams;
    let mut masks = [(0u16, 0u16); BLOCK / 16];
    let (mut ns, mut nn, mut nr) = (0usize, 0usize, 0usize);
    let abs_bits = _mm512_set1_epi32(0x7fff_ffff);
    for (j, mask) in masks.iter_mut().enumerate().take(vectors) {
        // SAFETY: 16 * j + 16 <= n; each stream has room for every element of the block.
        unsafe {
            let v = _mm512_loadu_ps(z.as_ptr().add(16 * j));
            let ix = _mm512_and_si512(_mm512_castps_si512(v), abs_bits);
            let ks = _mm512_cmplt_epi32_mask(ix, _mm512_set1_epi32(0x3f58_0000));
            let kn = !ks & _mm512_cmplt_epi32_mask(ix, _mm512_set1_epi32(0x3fa0_0000));
            let kr = !(ks | kn);
            // Compress in registers, then store whole vectors: the memory form of compress is
            // many times slower on Intel cores.
            _mm512_storeu_ps(small.as_mut_ptr().add(ns), _mm512_maskz_compress_ps(ks, v));
            _mm512_storeu_ps(near.as_mut_ptr().add(nn), _mm512_maskz_compress_ps(kn, v));
            _mm512_storeu_ps(rest.as_mut_ptr().add(nr), _mm512_maskz_compress_ps(kr, v));
            ns += ks.count_ones() as usize;
            nn += kn.count_ones() as usize;
            nr += kr.count_ones() as usize;
            *mask = (ks, kn);
        }
    }
    // Each stream in whole vectors: the lanes past its end hold finite values (zeros, or an
    // earlier block's arguments), computed and never read, instead of a scalar tail per stream.
    for v in &mut small[..ns.next_multiple_of(16)] {
        *v = erff_small(*v);
    }
    for v in &mut near[..nn.next_multiple_of(16)] {
        *v = erff_near(*v);
    }
    // The rest: the far range's two exponentials on the exponential's own 16-lane path
    // (`exp_lanes.rs`, expf's bits, the ordinary lanes' short form), then the formula.
    let whole = nr.next_multiple_of(16);
    let (rest, ea, eb) = (&mut rest[..whole], &mut far_a[..whole], &mut far_b[..whole]);
    for ((&v, a), b) in rest.iter().zip(ea.iter_mut()).zip(eb.iter_mut()) {
        (*a, *b) = erff_far_args(v);
    }
    f32::exp_row(ea);
    f32::exp_row(eb);
    for ((v, &a), &b) in rest.iter_mut().zip(ea.iter()).zip(eb.iter()) {
        *v = erff_rest_with(*v, erff_far_from(*v, a, b));
    }
    // SAFETY: this function's features (and VPOPCNTDQ where detected); 16 * vectors <= n.
    unsafe {
        let streams = [&small[..], &near[..], &rest[..]];
        if has_vpopcntdq() {
            merge_by_permutes(&masks[..vectors], streams, out)
        } else {
            merge_by_expands(&masks[..vectors], streams, out)
        }
    }
    for i in vectors * 16..n {
        out[i] = erff_select(z[i]);
    }
}

/// Whether the CPU counts bits per lane (AVX-512 VPOPCNTDQ), for `merge_by_permutes`.
fn has_vpopcntdq() -> bool {
    std::arch::is_x86_feature_detected!("avx512vpopcntdq")
}

/// Puts each stream's results back in place: vector j takes its lanes of each range (`masks`:
/// small, near; the rest is neither) from the front of that range's stream, in order, each
/// range's lanes by `place(so far, mask, the stream's next 16)`.
#[inline(always)]
unsafe fn merge(
    masks: &[(u16, u16)],
    [small, near, rest]: [&[f32]; 3],
    out: &mut [f32],
    place: impl Fn(__m512, u16, __m512) -> __m512,
) {
    let (mut ps, mut pn, mut pr) = (0usize, 0usize, 0usize);
    for (j, &(ks, kn)) in masks.iter().enumerate() {
        let kr = !(ks | kn);
        // SAFETY: each load reads 16 values of a stream of BLOCK + 16 from an offset of at most
        // BLOCK; the lanes its mask selects were written. 16 * j + 16 <= out.len().
        unsafe {
            let e = place(
                _mm512_setzero_ps(),
                ks,
                _mm512_loadu_ps(small.as_ptr().add(ps)),
            );
            let e = place(e, kn, _mm512_loadu_ps(near.as_ptr().add(pn)));
            let e = place(e, kr, _mm512_loadu_ps(rest.as_ptr().add(pr)));
            _mm512_storeu_ps(out.as_mut_ptr().add(16 * j), e);
        }
        ps += ks.count_ones() as usize;
        pn += kn.count_ones() as usize;
        pr += kr.count_ones() as usize;
    }
}

/// `merge` by expands (the definition of putting packed values back on their lanes).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
unsafe fn merge_by_expands(masks: &[(u16, u16)], streams: [&[f32]; 3], out: &mut [f32]) {
    // SAFETY: this function's features.
    unsafe {
        merge(masks, streams, out, |e, m, v| {
            _mm512_mask_expand_ps(e, m, v)
        })
    }
}

/// `merge` with each expand as a permute: lane i of a range's mask m takes element
/// popcount(m & (2^i - 1)) of the stream's next 16. Counted per lane (VPOPCNTDQ), a permute
/// and a mask: half the time of the expands on Zen 5 (measured 0.115 -> 0.065 ms for 512K
/// values' merges).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt,avx512vpopcntdq")]
unsafe fn merge_by_permutes(masks: &[(u16, u16)], streams: [&[f32]; 3], out: &mut [f32]) {
    let below = _mm512_setr_epi32(
        0, 1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095, 8191, 16383, 32767,
    );
    // SAFETY: this function's features.
    unsafe {
        merge(masks, streams, out, |e, m, v| {
            let index = _mm512_popcnt_epi32(_mm512_and_si512(_mm512_set1_epi32(m as i32), below));
            _mm512_mask_permutexvar_ps(e, m, index, v)
        })
    }
}

/// erf of `x` into `out` (equal lengths), libm's bits.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VL and DQ, and POPCNT.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
pub unsafe fn erf(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    let x = &x[..out.len()];
    let mut e = [0f32; BLOCK];
    let mut streams = Streams::new();
    for (xb, ob) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        let n = xb.len();
        // SAFETY: this function's features are erf_block's.
        unsafe { erf_block(xb, &mut e[..n], &mut streams) };
        for i in 0..n {
            ob[i].write(e[i]);
        }
    }
}

/// erf(x / sqrt 2) of each BLOCK of `x` in turn (GELU's erf), handed to `each(start, the
/// block's x, its erfs)`.
#[inline(always)]
unsafe fn gelu_erfs(x: &[f32], mut each: impl FnMut(usize, &[f32], &[f32])) {
    let (mut z, mut e, mut streams) = ([0f32; BLOCK], [0f32; BLOCK], Streams::new());
    for (b, xb) in x.chunks(BLOCK).enumerate() {
        let n = xb.len();
        for i in 0..n {
            z[i] = erf_arg(xb[i]);
        }
        // SAFETY: the callers' features are erf_block's.
        unsafe { erf_block(&z[..n], &mut e[..n], &mut streams) };
        each(b * BLOCK, xb, &e[..n]);
    }
}

/// GELU of `x` into `out` (equal lengths), libm's erf bits.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VL and DQ, and POPCNT.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
pub unsafe fn gelu(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    // SAFETY: this function's features are gelu_erfs's.
    unsafe {
        gelu_erfs(&x[..out.len()], |at, xb, e| {
            for (i, (o, &x)) in out[at..][..xb.len()].iter_mut().zip(xb).enumerate() {
                o.write(gelu_from_erf(x, e[i]));
            }
        })
    }
}

/// GELU of `x` into `y` and t = 1 + erf(x / sqrt 2) into `t` (equal lengths; t kept for the
/// gradient), libm's erf bits.
///
/// # Safety
/// As for `gelu`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
pub unsafe fn gelu_keeping(x: &[f32], y: &mut [MaybeUninit<f32>], t: &mut [MaybeUninit<f32>]) {
    // SAFETY: as in `gelu`.
    unsafe {
        gelu_erfs(&x[..y.len()], |at, xb, e| {
            let (yb, tb) = (&mut y[at..][..xb.len()], &mut t[at..][..xb.len()]);
            for i in 0..xb.len() {
                let ti = 1.0 + e[i];
                tb[i].write(ti);
                yb[i].write(gelu_from_t(xb[i], ti));
            }
        })
    }
}

/// `g` times GELU's derivative at `x` into `out` (equal lengths), libm's erf bits.
///
/// # Safety
/// As for `gelu`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
pub unsafe fn gelu_grad(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    let mut ex = [0f32; BLOCK];
    // SAFETY: as in `gelu`.
    unsafe {
        gelu_erfs(&x[..out.len()], |at, xb, e| {
            let n = xb.len();
            let (gb, ob) = (&g[at..][..n], &mut out[at..][..n]);
            // The density's exponentials in a loop of their own (a chain beside the rest was
            // too long to overlap).
            for i in 0..n {
                ex[i] = pdf_arg(xb[i]);
            }
            f32::exp_row(&mut ex[..n]);
            for i in 0..n {
                ob[i].write(gelu_grad_from_erf_exp(gb[i], xb[i], e[i], ex[i]));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two merges put the same stream values in the same places (the permutes' indices
    /// against the expands, which are the definition), for masks of every density.
    #[test]
    fn permutes_merge_as_expands_do() {
        if !(crate::backend::cpu::simd::has_avx512() && has_vpopcntdq()) {
            return; // no permute form to compare on this CPU
        }
        let mut st = Streams::new();
        for (i, v) in st.small.iter_mut().enumerate() {
            *v = i as f32;
        }
        for (i, v) in st.near.iter_mut().enumerate() {
            *v = 1000.0 + i as f32;
        }
        for (i, v) in st.rest.iter_mut().enumerate() {
            *v = 2000.0 + i as f32;
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let masks: Vec<(u16, u16)> = (0..BLOCK / 16)
            .map(|j| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let (a, b) = (state as u16, (state >> 16) as u16);
                // Dense, sparse, empty and full masks among them.
                let a = [a, a & b, 0, 0xffff][j % 4];
                (a, b & !a)
            })
            .collect();
        let (mut by_expands, mut by_permutes) = (vec![0f32; BLOCK], vec![0f32; BLOCK]);
        let streams = [&st.small[..], &st.near[..], &st.rest[..]];
        // SAFETY: the features were detected above; BLOCK / 16 masks for BLOCK values.
        unsafe {
            merge_by_expands(&masks, streams, &mut by_expands);
            merge_by_permutes(&masks, streams, &mut by_permutes);
        }
        assert_eq!(by_expands, by_permutes);
    }
}
