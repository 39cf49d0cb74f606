//! Direct input gradient of stride-1 convolutions with square kernels, reference mode: the
//! lowering's bits without its column matrix.
//!
//! The lowering computes gcols = Wᵀ·gY (each element a left fold from 0 over the output
//! channels) and col2im then adds, into each input cell starting from 0, the gcols entries of
//! the taps (ky, kx) that reach it, in (ky, kx) order. Here an item (one image, 32 input
//! channels in lanes) walks each input row in runs of at most 6 cells; per tap it folds over
//! the output channels into 12 fresh sums (32 channels × 6 cells), reading gY from a copy with a
//! zero border, then adds each sum to its cell's total if the tap reaches the cell. A tap that
//! does not is never added (its sum, over the border, is discarded), as col2im never adds it.

use super::{cpu_has_them, even_runs, mac, pad_border, BLOCK, LANES, MIN_ITEMS};
use crate::backend::cpu::parallel::{for_chunks, for_each_chunk};
use crate::backend::cpu::uninit::written;
use crate::geometry::ConvDims;
use std::mem::MaybeUninit;

/// Cells one run keeps (2 × 6 tap sums + 2 × 6 totals + 2 weights + 1 value = 27 of 32).
const RUN: usize = 6;

/// Whether the direct input gradient covers `d` on this CPU: stride 1, a square kernel no wider
/// than twice the padding plus one (the transposed convolution's border is k - 1 - p), input
/// channels in whole blocks, at least `MIN_ITEMS` (image, block) items, rows of 8 or more and
/// 16 or more output channels.
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

/// The item's rows of gX, [32, H·W], run by run.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn item_rows(item: &Item, out: &mut [MaybeUninit<f32>]) {
    let d = item.d;
    let (gh, gw) = (d.oh + 2 * item.border, d.ow + 2 * item.border);
    assert!(out.len() == BLOCK * d.h * d.w && item.g.len() == d.oc * gh * gw);
    assert!(item.w.len() == d.kh * d.kw * d.oc * BLOCK);
    for iy in 0..d.h {
        for (ix, len) in even_runs(d.w, RUN) {
            macro_rules! dispatch {
                ($($n:literal)*) => {
                    match len {
                        $($n => run::<$n>(item, iy, ix, out),)*
                        _ => unreachable!("a run holds 1 to {RUN} cells"),
                    }
                };
            }
            dispatch!(1 2 3 4 5 6);
        }
    }
}

/// Cells (iy, ix .. ix + NP) of the item's 32 channels.
///
/// # Safety
/// The CPU must have AVX-512F; the run lies inside the input row.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn run<const NP: usize>(item: &Item, iy: usize, ix: usize, out: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    let d = item.d;
    assert!(ix + NP <= d.w && iy < d.h);
    let (gh, gw) = (d.oh + 2 * item.border, d.ow + 2 * item.border);
    let z = _mm512_setzero_ps();
    let (mut total_lo, mut total_hi) = ([z; NP], [z; NP]);
    let mut w = item.w.as_ptr();
    for ky in 0..d.kh {
        // Tap (ky, kx) reaches cell (iy, ix') from output (iy + p - ky, ix' + p - kx), which
        // sits at padded row iy + (KH-1-ky), column ix' + (KW-1-kx).
        let oy = (iy + d.pad).checked_sub(ky).filter(|&oy| oy < d.oh);
        if oy.is_none() {
            w = w.add(d.kw * d.oc * BLOCK);
            continue;
        }
        let row = iy + d.kh - 1 - ky;
        for kx in 0..d.kw {
            let (mut lo, mut hi) = ([z; NP], [z; NP]);
            let at = item.g.as_ptr().add(row * gw + ix + d.kw - 1 - kx);
            for o in 0..d.oc {
                let w0 = _mm512_loadu_ps(w);
                let w1 = _mm512_loadu_ps(w.add(LANES));
                w = w.add(BLOCK);
                let src = at.add(o * gh * gw);
                for i in 0..NP {
                    let t = _mm512_set1_ps(*src.add(i));
                    lo[i] = mac!(false, lo[i], w0, t);
                    hi[i] = mac!(false, hi[i], w1, t);
                }
            }
            for i in 0..NP {
                let ox = (ix + i + d.pad).checked_sub(kx).filter(|&ox| ox < d.ow);
                if ox.is_some() {
                    total_lo[i] = _mm512_add_ps(total_lo[i], lo[i]);
                    total_hi[i] = _mm512_add_ps(total_hi[i], hi[i]);
                }
            }
        }
    }
    let plane = d.h * d.w;
    let at = iy * d.w + ix;
    let mut lanes = [0f32; BLOCK];
    for i in 0..NP {
        _mm512_storeu_ps(lanes.as_mut_ptr(), total_lo[i]);
        _mm512_storeu_ps(lanes.as_mut_ptr().add(LANES), total_hi[i]);
        for (j, &v) in lanes.iter().enumerate() {
            out[j * plane + at + i].write(v);
        }
    }
}
