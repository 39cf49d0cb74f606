//! Direct weight gradient of "same" 3×3 convolutions (stride 1, padding 1).
//!
//! gW[o, c, ky, kx] = Σ over images n and positions (y, x) of gY[n, o, y, x] · x[n, c, y+ky-1,
//! x+kx-1]. Output channels sit in vector lanes: gY is first copied output-channel-minor, 32
//! channels per block ([block, N, H·W, 32], aligned), so each position gives two aligned loads;
//! each of the 9 taps of one input channel is one broadcast from a copy of x with a zero border
//! (the padding cells take part as zeros, as in the lowering). A (block, input channel) item
//! keeps its 2 × 9 sums in registers over every image and position: 18 multiply-adds per 11
//! loads, no load crossing a cache line, no horizontal sums. Fast mode runs one fused chain
//! over all images; reference mode keeps the lowering's per-image chains and image-order sum.

use super::{cpu_has_them, mac, pad_border, BLOCK, LANES};
use crate::backend::cpu::parallel::{for_chunks, for_each_chunk};
use crate::backend::cpu::uninit::written;
use crate::geometry::ConvDims;

/// Whether the direct kernel covers this geometry on this CPU: 3×3, stride 1, padding 1 (the
/// output as large as the input), output channels in whole blocks, and at least 64 positions
/// per map: on smaller maps an item's setup and stores outweigh its few multiply-adds (8 images
/// at 4×4 and 256 channels: 0.98 ms against 0.64 through the GEMMs; at 8×8 and 128 channels,
/// 0.55 against 0.80).
pub fn weight_grad_applies(d: &ConvDims) -> bool {
    d.kh == 3
        && d.kw == 3
        && d.stride == 1
        && d.pad == 1
        && (d.oh, d.ow) == (d.h, d.w)
        && d.oc.is_multiple_of(BLOCK)
        && d.h * d.w >= 64
        && d.n * d.c * d.oc > 0
        && cpu_has_them()
}

/// gW [OC, C·9] of the convolution `d` (which `applies`), from gY [N, OC, H, W] and x [N, C, H, W].
pub fn weight_grad(g: &[f32], x: &[f32], d: &ConvDims, fma: bool) -> Vec<f32> {
    let geo = Geometry::new(d);
    let padded = pad_border(x, d.n * d.c, (d.h, d.w), 1);
    let (g_minor, off) = channels_minor(g, &geo);
    let g_minor = &g_minor[off..];
    let items = d.oc / BLOCK * d.c;
    let work = d.n * d.oc * d.c * 9 * geo.plane;
    // Item (b, c)'s sums, [BLOCK, 9] each, items in (b, c) order.
    let sums = written(items * BLOCK * 9, |out| {
        for_each_chunk(out, BLOCK * 9, work, |i, out| {
            let (b, c) = (i / d.c, i % d.c);
            let mut acc = [0f32; BLOCK * 9];
            // SAFETY: `weight_grad_applies` checked AVX-512 on this CPU; `geo` sizes both copies.
            unsafe {
                if fma {
                    item::<true>(g_minor, &padded, &geo, b, c, &mut acc)
                } else {
                    item::<false>(g_minor, &padded, &geo, b, c, &mut acc)
                }
            }
            out.iter_mut().zip(acc).for_each(|(o, v)| _ = o.write(v));
        })
    });
    written(d.oc * d.c * 9, |gw| {
        for_chunks(gw, d.c * 9, d.oc * d.c * 9, |o, row| {
            let (b, j) = (o / BLOCK, o % BLOCK);
            for (c, taps) in row.chunks_mut(9).enumerate() {
                let src = &sums[((b * d.c + c) * BLOCK + j) * 9..][..9];
                taps.iter_mut().zip(src).for_each(|(t, &v)| _ = t.write(v));
            }
        })
    })
}

/// Sizes of one convolution's planes.
struct Geometry {
    n: usize,
    c: usize,
    oc: usize,
    h: usize,
    w: usize,
    plane: usize,
}

impl Geometry {
    fn new(d: &ConvDims) -> Self {
        Geometry {
            n: d.n,
            c: d.c,
            oc: d.oc,
            h: d.h,
            w: d.w,
            plane: d.h * d.w,
        }
    }
    /// Row length and plane length of x with a zero border.
    fn padded(&self) -> (usize, usize) {
        (self.w + 2, (self.h + 2) * (self.w + 2))
    }
}

/// gY [N, OC, P] as [OC / BLOCK, N, P, BLOCK] starting at a 64-byte boundary: (the copy, the
/// index it starts at).
fn channels_minor(g: &[f32], geo: &Geometry) -> (Vec<f32>, usize) {
    let len = geo.n * geo.oc * geo.plane;
    let mut out: Vec<f32> = Vec::with_capacity(len + LANES);
    let off = out.as_ptr().align_offset(64).min(LANES);
    let per = geo.n * geo.plane * BLOCK;
    let dst = &mut out.spare_capacity_mut()[off..off + len];
    for_chunks(dst, per, len, |b, dst| {
        for (n, dst) in dst.chunks_mut(geo.plane * BLOCK).enumerate() {
            let rows = &g[(n * geo.oc + b * BLOCK) * geo.plane..][..BLOCK * geo.plane];
            for (j, row) in rows.chunks_exact(geo.plane).enumerate() {
                for (p, &v) in row.iter().enumerate() {
                    dst[p * BLOCK + j].write(v);
                }
            }
        }
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

/// The sums of output-channel block `b` against input channel `c` over every image and
/// position: `acc[j * 9 + ky * 3 + kx]` for channel b·BLOCK + j. Fast: one fused chain over all
/// images. Reference: the lowering's fold, a chain from 0 over one image's positions in order,
/// the images' chains then added in image order to a total that starts at 0.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn item<const FMA: bool>(
    g_minor: &[f32],
    padded: &[f32],
    geo: &Geometry,
    b: usize,
    c: usize,
    acc: &mut [f32; BLOCK * 9],
) {
    use std::arch::x86_64::*;
    let (row, plane) = geo.padded();
    let per_image = geo.plane * BLOCK;
    assert!(g_minor.len() >= (b + 1) * geo.n * per_image && c < geo.c);
    assert!(padded.len() >= geo.n * geo.c * plane);
    let z = _mm512_setzero_ps();
    let (mut total_lo, mut total_hi) = ([z; 9], [z; 9]);
    for n in 0..geo.n {
        let (mut lo, mut hi) = if FMA {
            (total_lo, total_hi)
        } else {
            ([z; 9], [z; 9])
        };
        let gy = g_minor.as_ptr().add((b * geo.n + n) * per_image);
        let xs = padded.as_ptr().add((n * geo.c + c) * plane);
        for y in 0..geo.h {
            for x in 0..geo.w {
                let p = y * geo.w + x;
                // 64-byte aligned: the copy starts at a boundary and BLOCK floats are 128 bytes.
                let g0 = _mm512_load_ps(gy.add(p * BLOCK));
                let g1 = _mm512_load_ps(gy.add(p * BLOCK + LANES));
                let at = xs.add(y * row + x);
                for ky in 0..3 {
                    for kx in 0..3 {
                        let t = _mm512_set1_ps(*at.add(ky * row + kx));
                        lo[ky * 3 + kx] = mac!(FMA, lo[ky * 3 + kx], g0, t);
                        hi[ky * 3 + kx] = mac!(FMA, hi[ky * 3 + kx], g1, t);
                    }
                }
            }
        }
        for q in 0..9 {
            if FMA {
                (total_lo[q], total_hi[q]) = (lo[q], hi[q]);
            } else {
                total_lo[q] = _mm512_add_ps(total_lo[q], lo[q]);
                total_hi[q] = _mm512_add_ps(total_hi[q], hi[q]);
            }
        }
    }
    let mut lanes = [0f32; LANES];
    for (half, sums) in [total_lo, total_hi].iter().enumerate() {
        for (t, &v) in sums.iter().enumerate() {
            _mm512_storeu_ps(lanes.as_mut_ptr(), v);
            for (j, &s) in lanes.iter().enumerate() {
                acc[(half * LANES + j) * 9 + t] = s;
            }
        }
    }
}
