//! Direct weight gradient of 3×3 and 7×7 convolutions, any stride and padding.
//!
//! gW[o, c, ky, kx] = Σ over images n and output positions (y, x) of gY[n, o, y, x] ·
//! x[n, c, y·s + ky - p, x·s + kx - p]. Output channels sit in vector lanes: gY is first copied
//! output-channel-minor, 32 channels per block ([block, N, OH·OW, 32], aligned), so each
//! position gives two aligned loads; each tap is one broadcast from a copy of x with a zero
//! border (the padding cells take part as zeros, as in the lowering). An item (block, input
//! channel, kernel rows) keeps 2 × its taps' sums in registers over an image's positions: a
//! 3×3 item takes all 9 taps (18 multiply-adds per 11 loads), a 7×7 item one kernel row of 7.
//! A thread's unit is a block and a few input channels: image by image, each of its items runs
//! over that image, so the image's gY block is read from L1 by all of them (the sums wait in
//! between as exact f32 vectors). No load crosses a cache line, and no sum is folded across
//! lanes. Fast mode runs one fused chain over all images; reference mode keeps the lowering's
//! per-image chains (over positions in order) and their image-order sum.

use super::{cpu_has_them, lane_mask, mac_pair, pad_border, BLOCK, LANES};
use crate::backend::cpu::parallel::{for_chunks, for_tiles, Tile};
use crate::backend::cpu::uninit::written;
use crate::geometry::ConvDims;
use std::mem::MaybeUninit;

/// Whether the direct kernel covers this geometry on this CPU: a 3×3 or 7×7 kernel, output
/// channels in whole blocks, and at least 64 output positions per map (the lowering's per-image
/// form, whose fold reference mode reproduces): on smaller maps an item's setup and stores
/// outweigh its few multiply-adds (8 images at 4×4 and 256 channels: 0.98 ms against 0.64
/// through the GEMMs; at 8×8 and 128 channels, 0.55 against 0.80). Only where its padded copy
/// of x fits (`padded_fits`).
pub fn weight_grad_applies(d: &ConvDims) -> bool {
    matches!((d.kh, d.kw), (3, 3) | (7, 7))
        && d.oc.is_multiple_of(BLOCK)
        && d.oh * d.ow >= 64
        && d.n * d.c * d.h * d.w > 0
        && cpu_has_them()
        && super::padded_fits(d.n * d.c, (d.h, d.w), d.pad)
}

/// gW [OC, C·KH·KW] of the convolution `d` (which `weight_grad_applies`), from gY [N, OC, OH, OW]
/// and x [N, C, H, W].
pub fn weight_grad(g: &[f32], x: &[f32], d: &ConvDims, fma: bool) -> Vec<f32> {
    let geo = Geometry::new(d);
    let padded = pad_border(x, d.n * d.c, (d.h, d.w), d.pad);
    let (g_minor, off) = channels_minor(g, &geo);
    let g_minor = &g_minor[off..];
    // 3×3: one item per (block, channel) with all 9 taps; 7×7: one per kernel row.
    let rows = if d.kh == 3 { 3 } else { 1 };
    let groups = d.kh / rows;
    let taps = d.kh * d.kw;
    let work = d.n * d.oc * d.c * taps * geo.plane;
    // A unit is one block and `span` consecutive input channels, all their items: it walks the
    // images in order and, per image, every item of its channels, so that image's block of gY
    // (32 KiB at 16×16) is read from L1 by all of them rather than from L2 by each.
    let span = channel_span(d.c, d.oc / BLOCK);
    // Unit (b, channels c0 .. c0 + span) writes its tile of gW [OC, C·taps] in place: rows
    // b·32 .. b·32 + 32, columns c0·taps .. (c0 + span)·taps, each item's sums at its columns.
    written(d.oc * d.c * taps, |gw| {
        for_tiles(gw, d.c * taps, (BLOCK, span * taps), work, |u, mut tile| {
            let units_per_block = d.c / span;
            let (b, c0) = (u / units_per_block, u % units_per_block * span);
            let mut totals = vec![Sums::zero(); span * groups];
            // SAFETY: `weight_grad_applies` checked AVX-512 on this CPU; `geo` sizes both copies.
            unsafe {
                for n in 0..d.n {
                    for (k, t) in totals.iter_mut().enumerate() {
                        let at = Item {
                            b,
                            c: c0 + k / groups,
                            ky0: k % groups * rows,
                            n,
                        };
                        match (fma, d.kh) {
                            (true, 3) => image::<true, 3, 3>(g_minor, &padded, &geo, at, t),
                            (false, 3) => image::<false, 3, 3>(g_minor, &padded, &geo, at, t),
                            (true, _) => image::<true, 7, 1>(g_minor, &padded, &geo, at, t),
                            (false, _) => image::<false, 7, 1>(g_minor, &padded, &geo, at, t),
                        }
                    }
                }
            }
            // Item k (channel c0 + k / groups, kernel-row group k % groups) fills columns
            // k·rows·KW .. of the tile: (c - c0)·taps + group·rows·KW.
            for (k, t) in totals.iter().enumerate() {
                // SAFETY: AVX-512 checked as above.
                unsafe { t.write_out(rows * d.kw, k * rows * d.kw, &mut tile) };
            }
        })
    })
}

/// Sizes of one convolution's planes.
struct Geometry {
    n: usize,
    c: usize,
    oc: usize,
    oh: usize,
    ow: usize,
    /// Output positions per map.
    plane: usize,
    stride: usize,
    /// Row and plane lengths of x with its zero border.
    row: usize,
    padded: usize,
}

impl Geometry {
    fn new(d: &ConvDims) -> Self {
        let row = d.w + 2 * d.pad;
        Geometry {
            n: d.n,
            c: d.c,
            oc: d.oc,
            oh: d.oh,
            ow: d.ow,
            plane: d.oh * d.ow,
            stride: d.stride,
            row,
            padded: (d.h + 2 * d.pad) * row,
        }
    }
}

/// One item's share of image `n`: output-channel block `b`, input channel `c`, kernel rows
/// from `ky0`.
#[derive(Clone, Copy)]
struct Item {
    b: usize,
    c: usize,
    ky0: usize,
    n: usize,
}

/// The input channels one unit takes: the largest divisor of `c` up to 16 that still leaves a
/// unit per thread across the `blocks` output-channel blocks (1 where none does; the 2-thread
/// stem, 3 channels, ran 7% slower with 6 one-channel units than with 2). At 16 channels of a
/// 3×3 kernel a unit's tile of gW is 144 floats of each row (8 at most: 72), so half as many
/// tile edges, where two threads can write one cache line, and each unit reuses an image's gY
/// block over twice the items (2 threads, 8 images: 128 channels at 8×8 0.50 -> 0.43 ms, 64 at
/// 16×16 0.43 -> 0.42).
/// Only who computes an item depends on it, never how, so neither do the bits.
fn channel_span(c: usize, blocks: usize) -> usize {
    let threads = crate::backend::cpu::parallel::num_threads();
    (1..=16.min(c))
        .rev()
        .find(|s| c.is_multiple_of(*s) && blocks * (c / s) >= threads)
        .unwrap_or(1)
}

/// One item's running sums: lanes of vector `h·9 + t` are tap t's sums for the block's
/// channels h·16 .. h·16 + 16.
#[derive(Clone, Copy)]
struct Sums([std::arch::x86_64::__m512; 18]);

impl Sums {
    fn zero() -> Self {
        // SAFETY: an all-zero __m512 is 16 zero floats.
        Sums(unsafe { std::mem::zeroed() })
    }

    /// The sums into columns `col .. col + taps` of the tile's 32 rows (gW's rows: channel
    /// h·16 + j of the block is row h·16 + j): per half, the taps' vectors transposed in
    /// registers, so channel j's taps come out as one vector, stored under a mask.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn write_out(&self, taps: usize, col: usize, tile: &mut Tile<'_, MaybeUninit<f32>>) {
        use std::arch::x86_64::*;
        assert!(tile.rows() == BLOCK && taps <= 9);
        let mask = lane_mask(0, taps);
        for h in 0..2 {
            let mut r = [_mm512_setzero_ps(); LANES];
            r[..taps].copy_from_slice(&self.0[h * 9..h * 9 + taps]);
            for (j, v) in crate::backend::cpu::tile16::tile(r).iter().enumerate() {
                let row = &mut tile.row(h * LANES + j)[col..col + taps];
                _mm512_mask_storeu_ps(row.as_mut_ptr() as *mut f32, mask, *v);
            }
        }
    }
}

/// gY [N, OC, P] as [OC / BLOCK, N, P, BLOCK] starting at a 64-byte boundary: (the copy, the
/// index it starts at).
fn channels_minor(g: &[f32], geo: &Geometry) -> (Vec<f32>, usize) {
    let len = geo.n * geo.oc * geo.plane;
    let mut out: Vec<f32> = Vec::with_capacity(len + LANES);
    let off = out.as_ptr().align_offset(64).min(LANES);
    let dst = &mut out.spare_capacity_mut()[off..off + len];
    // One chunk per (block, image), so both threads share even a two-block copy.
    for_chunks(dst, geo.plane * BLOCK, len, |i, dst| {
        let (b, n) = (i / geo.n, i % geo.n);
        let rows = &g[(n * geo.oc + b * BLOCK) * geo.plane..][..BLOCK * geo.plane];
        // SAFETY: `weight_grad_applies` checked AVX-512 on this CPU.
        unsafe { super::transpose::block_in(rows, dst) };
    });
    // Elements before `off` stay unwritten and are never read; set the length past them with
    // zeros so the vector holds only initialised values.
    out.spare_capacity_mut()[..off]
        .iter_mut()
        .for_each(|v| _ = v.write(0.0));
    // SAFETY: elements 0..off were just written, off..off+len by the copy above.
    unsafe { out.set_len(off + len) };
    (out, off)
}

/// Image `n`'s part of the sums of output-channel block `b` against input channel `c`'s taps
/// in kernel rows ky0 .. ky0 + R (KW taps each), added to `total`. Fast: the fused chain goes
/// on from `total` over this image's positions. Reference: the lowering's fold, a chain from 0
/// over the image's positions in order, then added to the total (images come in order, from a
/// total of 0).
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn image<const FMA: bool, const KW: usize, const R: usize>(
    g_minor: &[f32],
    padded: &[f32],
    geo: &Geometry,
    Item { b, c, ky0, n }: Item,
    total: &mut Sums,
) {
    use std::arch::x86_64::*;
    let per_image = geo.plane * BLOCK;
    let s = geo.stride;
    assert!(g_minor.len() >= (b + 1) * geo.n * per_image && c < geo.c && n < geo.n);
    assert!(R * KW <= 9 && padded.len() >= geo.n * geo.c * geo.padded);
    // The last position's last tap: ((OH-1)·s + ky0 + R - 1)·row + (OW-1)·s + KW - 1, inside
    // the plane as the output size comes from the padded input's.
    assert!(((geo.oh - 1) * s + ky0 + R - 1) * geo.row + (geo.ow - 1) * s + KW <= geo.padded);
    let z = _mm512_setzero_ps();
    let (mut lo, mut hi) = ([[z; KW]; R], [[z; KW]; R]);
    if FMA {
        for r in 0..R {
            for kx in 0..KW {
                (lo[r][kx], hi[r][kx]) = (total.0[r * KW + kx], total.0[9 + r * KW + kx]);
            }
        }
    }
    let gy = g_minor.as_ptr().add((b * geo.n + n) * per_image);
    let xs = padded
        .as_ptr()
        .add((n * geo.c + c) * geo.padded + ky0 * geo.row);
    for y in 0..geo.oh {
        for x in 0..geo.ow {
            let p = y * geo.ow + x;
            // 64-byte aligned: the copy starts at a boundary and BLOCK floats are 128 bytes.
            let g0 = _mm512_load_ps(gy.add(p * BLOCK));
            let g1 = _mm512_load_ps(gy.add(p * BLOCK + LANES));
            let at = xs.add(y * s * geo.row + x * s);
            for r in 0..R {
                for kx in 0..KW {
                    mac_pair!(FMA, lo[r][kx], hi[r][kx], g0, g1, at.add(r * geo.row + kx));
                }
            }
        }
    }
    for r in 0..R {
        for kx in 0..KW {
            let (l, h) = (r * KW + kx, 9 + r * KW + kx);
            if FMA {
                (total.0[l], total.0[h]) = (lo[r][kx], hi[r][kx]);
            } else {
                total.0[l] = _mm512_add_ps(total.0[l], lo[r][kx]);
                total.0[h] = _mm512_add_ps(total.0[h], hi[r][kx]);
            }
        }
    }
}
