//! Direct input gradient of stride-1 convolutions with square kernels, reference mode: the
//! lowering's bits without its column matrix.
//!
//! The lowering computes gcols = Wᵀ·gY (each element a left fold from 0 over the output
//! channels) and col2im then adds, into each input cell starting from 0, the gcols entries of
//! the taps (ky, kx) that reach it, in (ky, kx) order. Here an item (one image, 32 input
//! channels in lanes) goes tap by tap; per tap it walks each input row in runs of at most 12
//! cells, folds over the output channels into 24 fresh sums (32 channels × 12 cells), reading
//! gY from a copy with a zero border, then adds each sum to its cell's total if the tap
//! reaches the cell. A tap that does not is never added (its sum, over the border, is
//! discarded), as col2im never adds it.

use super::{cpu_has_them, even_runs, mac_pair, pad_border, BLOCK, LANES, MIN_ITEMS};
use crate::backend::cpu::parallel::{for_chunks, for_each_chunk};
use crate::backend::cpu::uninit::written;
use crate::geometry::{Activation, ConvDims};
use std::mem::MaybeUninit;

/// Cells one run keeps (2 × 12 tap sums + 2 weights + 1 value = 27 of 32 registers).
const RUN: usize = 12;

/// Input cells per group of rows (at least one row): 128 cells' totals are 16 KiB, and the
/// group's rows of gY stay near L1 across the taps (2 threads, 8×64×32×32: 3.32 ms at 512,
/// 3.08 at 128).
const GROUP: usize = 128;

/// Whether the direct input gradient covers `d` on this CPU: stride 1, a square kernel no wider
/// than twice the padding plus one (the transposed convolution's border is k - 1 - p), input
/// channels in whole blocks, at least `MIN_ITEMS` (image, block) items, rows of 8 or more and
/// 16 or more output channels, where its padded copy of gY fits (`padded_fits`).
pub fn input_grad_applies(d: &ConvDims) -> bool {
    d.stride == 1
        && d.kh == d.kw
        && d.pad < d.kh
        && d.c.is_multiple_of(BLOCK)
        && d.n * (d.c / BLOCK) >= MIN_ITEMS
        && d.w >= 8
        && d.oc >= 16
        && d.n * d.h * d.oh * d.ow > 0
        && cpu_has_them()
        && super::padded_fits(d.n * d.oc, (d.oh, d.ow), d.kh - 1 - d.pad)
}

/// gX [N, C, H, W] of convolution `d` (which `input_grad_applies`) from gY [N, OC, OH, OW].
pub fn input_grad(g: &[f32], wt: &[f32], d: &ConvDims) -> Vec<f32> {
    let border = d.kh - 1 - d.pad;
    let padded = pad_border(g, d.n * d.oc, (d.oh, d.ow), border);
    let packed = pack_weights(wt, d);
    let plane = d.h * d.w;
    let blocks = d.c / BLOCK;
    let taps = d.kh * d.kw;
    let per_image = d.oc * (d.oh + 2 * border) * (d.ow + 2 * border);
    written(d.n * d.c * plane, |gx| {
        let work = d.n * d.c * plane * d.oc * taps;
        for_each_chunk(gx, BLOCK * plane, work, |i, out| {
            let (n, b) = (i / blocks, i % blocks);
            let item = Item {
                g: &padded[n * per_image..][..per_image],
                w: &packed[b * taps * d.oc * BLOCK..][..taps * d.oc * BLOCK],
                d,
                border,
            };
            // SAFETY: `input_grad_applies` checked AVX-512; `Item` sizes every slice.
            unsafe { item_rows(&item, out) }
        })
    })
}

/// W [OC, C, KH, KW] as [C / 32, KH·KW, OC, 32]: per tap and output channel, the block's 32
/// input channels side by side.
fn pack_weights(wt: &[f32], d: &ConvDims) -> Vec<f32> {
    let taps = d.kh * d.kw;
    let per_block = taps * d.oc * BLOCK;
    written(d.c * taps * d.oc, |out| {
        for_chunks(out, per_block, out.len(), |b, dst| {
            for (s, step) in dst.chunks_exact_mut(BLOCK).enumerate() {
                let (t, o) = (s / d.oc, s % d.oc);
                for (j, v) in step.iter_mut().enumerate() {
                    v.write(wt[(o * d.c + b * BLOCK + j) * taps + t]);
                }
            }
        })
    })
}

/// One item's operands: its image's gY (padded), its block's packed weights.
struct Item<'a> {
    g: &'a [f32],
    w: &'a [f32],
    d: &'a ConvDims,
    border: usize,
}

/// The item's rows of gX, [32, H·W]: tap by tap (in (ky, kx) order), every run of the item
/// folds that tap's sums and adds them to its cells' totals, which wait between taps in a
/// position-major scratch (exact f32 values, and each cell still takes its taps in order from
/// a total of 0). So a tap's packed weights (OC × 32 floats, 8 KiB at 64 channels) stay in L1
/// for all the runs; the totals go out through register transposes. Rows go in groups of
/// about `GROUP` cells, which bounds the scratch.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn item_rows(item: &Item, out: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    let d = item.d;
    let (gh, gw) = (d.oh + 2 * item.border, d.ow + 2 * item.border);
    assert!(out.len() == BLOCK * d.h * d.w && item.g.len() == d.oc * gh * gw);
    assert!(item.w.len() == d.kh * d.kw * d.oc * BLOCK);
    // Stride 1's output size, so every cell's taps lie in the bordered gY (`run` reads by it).
    assert!(d.oh + d.kh == d.h + 2 * d.pad + 1 && d.ow + d.kw == d.w + 2 * d.pad + 1);
    let rows = (GROUP / d.w).clamp(1, d.h);
    let mut totals = vec![_mm512_setzero_ps(); 2 * rows * d.w];
    for iy0 in (0..d.h).step_by(rows) {
        let iy1 = (iy0 + rows).min(d.h);
        totals.fill(_mm512_setzero_ps());
        for ky in 0..d.kh {
            for kx in 0..d.kw {
                let tap = Tap {
                    ky,
                    kx,
                    w: item.w.as_ptr().add((ky * d.kw + kx) * d.oc * BLOCK),
                };
                for iy in iy0..iy1 {
                    for (ix, len) in even_runs(d.w, RUN) {
                        let at = totals.as_mut_ptr().add(2 * ((iy - iy0) * d.w + ix));
                        macro_rules! dispatch {
                            ($($n:literal)*) => {
                                match len {
                                    $($n => run::<$n>(item, &tap, iy, ix, at),)*
                                    _ => unreachable!("a run holds 1 to {RUN} cells"),
                                }
                            };
                        }
                        dispatch!(1 2 3 4 5 6 7 8 9 10 11 12);
                    }
                }
            }
        }
        let done = (iy1 - iy0) * d.w;
        let flat = std::slice::from_raw_parts(totals.as_ptr() as *const f32, 2 * done * LANES);
        super::transpose::block_out(flat, None, Activation::None, out, iy0 * d.w);
    }
}

/// One tap of the kernel and its packed weights (OC steps of 32).
struct Tap {
    ky: usize,
    kx: usize,
    w: *const f32,
}

/// Adds tap (ky, kx)'s sums to cells (iy, ix .. ix + NP) of the item's 32 channels where the
/// tap reaches them; `at` holds their 2 × NP totals (position-major).
///
/// # Safety
/// The CPU must have AVX-512F; the run lies inside the input row; `at` holds 2 × NP vectors.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn run<const NP: usize>(
    item: &Item,
    tap: &Tap,
    iy: usize,
    ix: usize,
    at: *mut std::arch::x86_64::__m512,
) {
    use std::arch::x86_64::*;
    let d = item.d;
    assert!(ix + NP <= d.w && iy < d.h && tap.ky < d.kh && tap.kx < d.kw);
    // Tap (ky, kx) reaches cell (iy, ix') from output (iy + p - ky, ix' + p - kx), which sits
    // at padded row iy + (KH-1-ky), column ix' + (KW-1-kx). A row it misses adds nothing.
    let (ky, kx) = (tap.ky, tap.kx);
    if (iy + d.pad)
        .checked_sub(ky)
        .filter(|&oy| oy < d.oh)
        .is_none()
    {
        return;
    }
    let (gh, gw) = (d.oh + 2 * item.border, d.ow + 2 * item.border);
    let z = _mm512_setzero_ps();
    let (mut lo, mut hi) = ([z; NP], [z; NP]);
    let src0 = item
        .g
        .as_ptr()
        .add((iy + d.kh - 1 - ky) * gw + ix + d.kw - 1 - kx);
    let mut w = tap.w;
    for o in 0..d.oc {
        let w0 = _mm512_loadu_ps(w);
        let w1 = _mm512_loadu_ps(w.add(LANES));
        w = w.add(BLOCK);
        let src = src0.add(o * gh * gw);
        for i in 0..NP {
            mac_pair!(false, lo[i], hi[i], w0, w1, src.add(i));
        }
    }
    for i in 0..NP {
        let ox = (ix + i + d.pad).checked_sub(kx).filter(|&ox| ox < d.ow);
        if ox.is_some() {
            *at.add(2 * i) = _mm512_add_ps(*at.add(2 * i), lo[i]);
            *at.add(2 * i + 1) = _mm512_add_ps(*at.add(2 * i + 1), hi[i]);
        }
    }
}
