//! Direct forward convolution: y[n, o, oy, ox] = (left fold over (c, ky, kx) of
//! W[o, c, ky, kx] · x[n, c, oy·s + ky - p, ox·s + kx - p]) + bias[o].
//!
//! An item is one image and one block of 32 output channels, and writes that block's rows of y.
//! It walks each output row in runs of at most 12 positions; a run keeps 2 × 12 sums in
//! registers (32 channels × 12 positions) while the fold runs over (c, ky, kx): per step, two
//! aligned weight loads (the block's weights are packed [C·KH·KW, 32]) and one broadcast per
//! position, against 24 multiply-adds.

use super::{cpu_has_them, even_runs, mac, pad_border, BLOCK, LANES, MIN_ITEMS};
use crate::backend::cpu::parallel::{for_chunks, for_each_chunk};
use crate::backend::cpu::uninit::written;
use crate::geometry::ConvDims;
use std::mem::MaybeUninit;

/// Positions one run keeps in registers (2 × 12 sums + 2 weights + 1 tap = 27 of 32).
const RUN: usize = 12;

/// Whether the direct forward covers `d` on this CPU and is worth it there: output channels in
/// whole blocks, at least `MIN_ITEMS` (image, block) items to spread over the threads, stride 1,
/// rows of 8 or more, 16 or more input channels. Elsewhere the weights
/// stream from L2 for too few positions, or the fold is too short to hide the stores (2
/// threads, 8 images: 2×2 maps of 512 channels 2.3 ms against 1.2 through the GEMM; the 7×7
/// stride-2 stem over 3 channels 1.3 against 1.1; 8×8 of 128 channels 0.75 against 0.93).
pub fn forward_applies(d: &ConvDims) -> bool {
    d.oc.is_multiple_of(BLOCK)
        && d.n * (d.oc / BLOCK) >= MIN_ITEMS
        && d.stride == 1
        && d.ow >= 8
        && d.c >= 16
        && d.n * d.h * d.w * d.oh * d.kh * d.kw > 0
        && cpu_has_them()
}

/// y [N, OC, OH, OW] of convolution `d` (which `forward_applies`).
pub fn forward(x: &[f32], wt: &[f32], bias: Option<&[f32]>, d: &ConvDims, fma: bool) -> Vec<f32> {
    let padded = pad_border(x, d.n * d.c, (d.h, d.w), d.pad);
    let packed = pack_weights(wt, d);
    let plane = d.oh * d.ow;
    let blocks = d.oc / BLOCK;
    let work = d.n * d.oc * plane * d.c * d.kh * d.kw;
    written(d.n * d.oc * plane, |y| {
        for_each_chunk(y, BLOCK * plane, work, |i, out| {
            let (n, b) = (i / blocks, i % blocks);
            let item = Item {
                x: &padded[n * d.c * padded_plane(d)..][..d.c * padded_plane(d)],
                w: &packed[b * BLOCK * d.c * d.kh * d.kw..][..BLOCK * d.c * d.kh * d.kw],
                bias: bias.map(|bias| &bias[b * BLOCK..][..BLOCK]),
                d,
            };
            // SAFETY: `forward_applies` checked AVX-512 on this CPU; `Item` sizes every slice.
            unsafe {
                if fma {
                    item_rows::<true>(&item, out)
                } else {
                    item_rows::<false>(&item, out)
                }
            }
        })
    })
}

fn padded_plane(d: &ConvDims) -> usize {
    (d.h + 2 * d.pad) * (d.w + 2 * d.pad)
}

/// W [OC, C·KH·KW] as [OC / 32, C·KH·KW, 32]: each fold step's 32 weights side by side.
fn pack_weights(wt: &[f32], d: &ConvDims) -> Vec<f32> {
    let k = d.c * d.kh * d.kw;
    written(d.oc * k, |out| {
        for_chunks(out, BLOCK * k, d.oc * k, |b, dst| {
            for (q, step) in dst.chunks_exact_mut(BLOCK).enumerate() {
                for (j, v) in step.iter_mut().enumerate() {
                    v.write(wt[(b * BLOCK + j) * k + q]);
                }
            }
        })
    })
}

/// One item's operands: its image (padded), its block's packed weights and biases.
struct Item<'a> {
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    d: &'a ConvDims,
}

/// The item's rows of y, [32, OH·OW], run by run.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn item_rows<const FMA: bool>(item: &Item, out: &mut [MaybeUninit<f32>]) {
    let d = item.d;
    assert!(out.len() == BLOCK * d.oh * d.ow && item.w.len() == BLOCK * d.c * d.kh * d.kw);
    assert!(item.x.len() == d.c * padded_plane(d));
    for oy in 0..d.oh {
        for (ox, len) in even_runs(d.ow, RUN) {
            macro_rules! dispatch {
                ($($n:literal)*) => {
                    match len {
                        $($n => run::<FMA, $n>(item, oy, ox, out),)*
                        _ => unreachable!("a run holds 1 to {RUN} positions"),
                    }
                };
            }
            dispatch!(1 2 3 4 5 6 7 8 9 10 11 12);
        }
    }
}

/// Positions (oy, ox .. ox + NP) of the item's 32 channels.
///
/// # Safety
/// The CPU must have AVX-512F; the run lies inside the output row.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn run<const FMA: bool, const NP: usize>(
    item: &Item,
    oy: usize,
    ox: usize,
    out: &mut [MaybeUninit<f32>],
) {
    use std::arch::x86_64::*;
    let d = item.d;
    assert!(ox + NP <= d.ow && oy < d.oh);
    let (row, plane) = (d.w + 2 * d.pad, padded_plane(d));
    let s = d.stride;
    let z = _mm512_setzero_ps();
    let (mut lo, mut hi) = ([z; NP], [z; NP]);
    let mut w = item.w.as_ptr();
    for c in 0..d.c {
        for ky in 0..d.kh {
            // Input row oy·s + ky of the padded plane, from column ox·s: in bounds, as
            // (OH-1)·s + KH <= H + 2p and (OW-1)·s + KW <= W + 2p.
            let xr = item
                .x
                .as_ptr()
                .add(c * plane + (oy * s + ky) * row + ox * s);
            for kx in 0..d.kw {
                let w0 = _mm512_loadu_ps(w);
                let w1 = _mm512_loadu_ps(w.add(LANES));
                w = w.add(BLOCK);
                for i in 0..NP {
                    let t = _mm512_set1_ps(*xr.add(i * s + kx));
                    lo[i] = mac!(FMA, lo[i], w0, t);
                    hi[i] = mac!(FMA, hi[i], w1, t);
                }
            }
        }
    }
    if let Some(b) = item.bias {
        let (b0, b1) = (
            _mm512_loadu_ps(b.as_ptr()),
            _mm512_loadu_ps(b.as_ptr().add(LANES)),
        );
        for i in 0..NP {
            lo[i] = _mm512_add_ps(lo[i], b0);
            hi[i] = _mm512_add_ps(hi[i], b1);
        }
    }
    // Lane j of a position's sums belongs to channel row j of the item's output.
    let plane_out = d.oh * d.ow;
    let at = oy * d.ow + ox;
    let mut lanes = [0f32; BLOCK];
    for i in 0..NP {
        _mm512_storeu_ps(lanes.as_mut_ptr(), lo[i]);
        _mm512_storeu_ps(lanes.as_mut_ptr().add(LANES), hi[i]);
        for (j, &v) in lanes.iter().enumerate() {
            out[j * plane_out + at + i].write(v);
        }
    }
}
