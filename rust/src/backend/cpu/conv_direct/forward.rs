//! Direct forward convolution (stride 1 or 2): y[n, o, oy, ox] = (left fold over (c, ky, kx) of
//! W[o, c, ky, kx] · x[n, c, oy·s + ky - p, ox·s + kx - p]) + bias[o].
//!
//! An item is one image (on rows narrower than 8, a few images) and one block of 32 output
//! channels, and writes that block's rows of y. It walks the output positions in row order in
//! runs of at most 12, a run that reaches a row's end going on at the next row's start (rows
//! narrower than 8 go whole, several rows a run); a run keeps 2 × 12 sums in
//! registers (32 channels × 12 positions) while the fold runs over (c, ky, kx): per step, two
//! weight loads (the block's weights are packed [C·KH·KW, 32]) and one broadcast per
//! position, against 24 multiply-adds. The fold is cut into chunks of input channels whose
//! weights fit in L1 (each chunk passes over all the item's runs; the sums wait in between in a
//! scratch), and the finished sums go out to y through 16 × 16 register transposes.
//!
//! Alone, on one core of the development host: 8×64×16×16 → 64 fast forward 66% of the FMA peak
//! with the weights streamed from L2 per run and scalar transposed stores, 76% chunked.

use super::pack::{pack_flipped, pack_weights};
use super::{cpu_has_them, even_runs, mac_pair, pad_border, transpose, BLOCK, LANES, MIN_ITEMS};
use crate::backend::cpu::parallel::{for_chunks, for_each_chunk};
use crate::backend::cpu::uninit::written;
use crate::geometry::{Activation, ConvDims};
use std::mem::MaybeUninit;

/// Positions one run keeps in registers (2 × 12 sums + 2 weights + 1 tap = 27 of 32).
const RUN: usize = 12;

/// Output positions per group of rows (at least one row): 512 positions' sums are 64 KiB.
const GROUP: usize = 512;

/// Packed weights per chunk of input channels, in floats (16 KiB: with the chunk's input rows
/// well inside a 48 KiB L1).
const CHUNK_FLOATS: usize = 4096;

/// Whether the direct forward covers `d` on this CPU and is worth it there: output channels in
/// whole blocks, at least `MIN_ITEMS` (image, block) items to spread over the threads, stride 1
/// or 2 (not for 1×1 kernels, which read a quarter of the padded copy), folds of 64 or more
/// terms (C·KH·KW), and rows of 8 or more, or narrower rows that several to a run make 8 or
/// more positions. Elsewhere the GEMM wins (2 threads, 8 images: 1×1 at stride 2 from 64
/// channels of 16×16, 0.098 ms against 0.042; 2×2 maps of 512 channels, 2.3 against 1.2; a
/// 3×3 fold over 1 channel of 28×28, 32 images, 0.15 against 0.09; over 3 channels of 32×32,
/// 0.072 against 0.064). Gains: the 7×7 stride-2 stem over 3 channels of 64×64 0.59 → 0.46 ms
/// fast, 1.02 → 0.75 reference; 8×64×16×16 → 128 at stride 2, 0.42 → 0.29 fast; 4×4 maps, 32
/// images of 64 channels 0.29 → 0.16 fast, 0.39 → 0.23 reference; 8 images of 256 channels
/// 0.62 → 0.56 fast, 1.06 → 0.85 reference (`images_per_item`). Only where its padded copy of
/// x fits (`padded_fits`).
pub fn forward_applies(d: &ConvDims) -> bool {
    let narrow = d.ow >= 2 && (RUN / d.ow).min(d.oh) * d.ow >= 8;
    d.oc.is_multiple_of(BLOCK)
        && d.n * (d.oc / BLOCK) >= MIN_ITEMS
        && (d.stride == 1 || (d.stride == 2 && d.kh * d.kw > 1))
        && (d.ow >= 8 || narrow)
        && d.c * d.kh * d.kw >= 64
        && d.n * d.h * d.w * d.oh * d.kh * d.kw > 0
        && cpu_has_them()
        && super::padded_fits(d.n * d.c, (d.h, d.w), d.pad)
}

/// y [N, OC, OH, OW] of convolution `d` (which `forward_applies`), `act` applied to each output
/// as its block is written; with `flipped`, `wt` is [C, OC, KH, KW] and the weights are
/// W'[o, c, ky, kx] = wt[c, o, KH-1-ky, KW-1-kx] (an input gradient as a convolution).
pub fn forward(
    x: &[f32],
    wt: &[f32],
    bias: Option<&[f32]>,
    d: &ConvDims,
    act: Activation,
    fma: bool,
    flipped: bool,
) -> Vec<f32> {
    let padded = pad_border(x, d.n * d.c, (d.h, d.w), d.pad);
    let packed = if flipped {
        pack_flipped(wt, d)
    } else {
        pack_weights(wt, d)
    };
    let plane = d.oh * d.ow;
    let blocks = d.oc / BLOCK;
    let work = d.n * d.oc * plane * d.c * d.kh * d.kw;
    let pp = padded_plane(d);
    let item = |n: usize, b: usize| Item {
        x: &padded[n * d.c * pp..][..d.c * pp],
        w: &packed[b * BLOCK * d.c * d.kh * d.kw..][..BLOCK * d.c * d.kh * d.kw],
        bias: bias.map(|bias| &bias[b * BLOCK..][..BLOCK]),
        act,
        d,
    };
    let run = |items: &[Item], out: &mut [MaybeUninit<f32>]| {
        // SAFETY: `forward_applies` checked AVX-512 on this CPU; `Item` sizes every slice.
        unsafe {
            if fma {
                item_rows::<true>(items, out)
            } else {
                item_rows::<false>(items, out)
            }
        }
    };
    let g = images_per_item(d);
    if g == 1 && whole_images(d.n) {
        return written(d.n * d.oc * plane, |y| {
            for_each_chunk(y, blocks * BLOCK * plane, work, |n, out| {
                for (b, o) in out.chunks_mut(BLOCK * plane).enumerate() {
                    run(&[item(n, b)], o)
                }
            })
        });
    }
    if g == 1 {
        return written(d.n * d.oc * plane, |y| {
            for_each_chunk(y, BLOCK * plane, work, |i, out| {
                run(&[item(i / blocks, i % blocks)], out)
            })
        });
    }
    // Items of g images of one block write [N / g, blocks, g, 32, P]; then each image's rows
    // move to their place in y.
    let staged = written(d.n * d.oc * plane, |t| {
        for_each_chunk(t, g * BLOCK * plane, work, |i, out| {
            let (n0, b) = (i / blocks * g, i % blocks);
            let items: Vec<Item> = (n0..n0 + g).map(|n| item(n, b)).collect();
            run(&items, out)
        })
    });
    written(d.n * d.oc * plane, |y| {
        for_chunks(y, BLOCK * plane, d.n * d.oc * plane, |i, dst| {
            let (n, b) = (i / blocks, i % blocks);
            let at = ((n / g * blocks + b) * g + n % g) * BLOCK * plane;
            for (v, &s) in dst.iter_mut().zip(&staged[at..at + BLOCK * plane]) {
                v.write(s);
            }
        })
    })
}

/// Whether a thread should take all output blocks of an image at once: when the images alone
/// share out evenly (or nearly: four or more per thread). Then one core reads each image,
/// instead of both cores reading every image for their blocks (8 images of 64 channels at
/// 16x16, forward + backward 1.46 -> 1.39 ms on 2 threads).
fn whole_images(n: usize) -> bool {
    let threads = crate::backend::cpu::parallel::num_threads();
    threads > 1 && (n.is_multiple_of(threads) || n >= 4 * threads)
}

/// Images one item takes: 1 on rows of 8+, whose positions alone reuse each weight chunk
/// enough. Narrower rows take the largest divisor of N that still leaves two items per thread,
/// so each chunk of weights serves that many images' positions from L1 (8 images, 256
/// channels of 4×4, fast: one image per item 0.72 ms, four 0.56, the GEMM 0.62). Only who
/// computes an output depends on it, never how, so neither do the bits.
fn images_per_item(d: &ConvDims) -> usize {
    if d.ow >= 8 {
        return 1;
    }
    let (threads, blocks) = (crate::backend::cpu::parallel::num_threads(), d.oc / BLOCK);
    (1..=d.n)
        .rev()
        .find(|g| d.n.is_multiple_of(*g) && blocks * (d.n / g) >= 2 * threads)
        .unwrap_or(1)
}

fn padded_plane(d: &ConvDims) -> usize {
    (d.h + 2 * d.pad) * (d.w + 2 * d.pad)
}

/// One item's operands: its image (padded), its block's packed weights and biases, and the
/// activation its outputs get.
struct Item<'a> {
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    act: Activation,
    d: &'a ConvDims,
}

/// The item's rows of y, [32, OH·OW]: the fold runs chunk by chunk of input channels, each
/// chunk over every run of the item, so the chunk's packed weights (about 16 KiB) stay in L1
/// while all positions use them; the sums wait between chunks in a position-major scratch,
/// which holds exact f32 values, so the fold's order and bits are those of one pass.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn item_rows<const FMA: bool>(items: &[Item], out: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::*;
    let d = items[0].d;
    let plane_out = d.oh * d.ow;
    assert!(out.len() == items.len() * BLOCK * plane_out);
    for item in items {
        assert!(item.w.len() == BLOCK * d.c * d.kh * d.kw && item.x.len() == d.c * padded_plane(d));
        assert!(std::ptr::eq(item.d, d) && item.w.as_ptr() == items[0].w.as_ptr());
    }
    // Every tap `run` reads lies in the padded plane: the last output's window ends inside it.
    assert!(d.oh > 0 && (d.oh - 1) * d.stride + d.kh <= d.h + 2 * d.pad);
    assert!(d.ow > 0 && (d.ow - 1) * d.stride + d.kw <= d.w + 2 * d.pad);
    // The plane goes in groups of whole rows of about GROUP positions (one row where a row is
    // longer), so the sums' scratch (two 64-byte-aligned vectors, 32 channels, per position
    // and image) stays near 64 KiB per image unless the rows themselves are longer than GROUP.
    let rows = (GROUP / d.ow).clamp(1, d.oh);
    let span = rows * d.ow;
    let mut sums = vec![_mm512_setzero_ps(); 2 * span * items.len()];
    let chunk = (CHUNK_FLOATS / (d.kh * d.kw * BLOCK)).max(1);
    // Narrower rows than 8 go whole, several rows a run. Rows of 8+ go in runs of RUN positions
    // through the group's positions in row order, a run that reaches a row's end going on at
    // the next row's start (16 = 12 + 4 | 8 + 8 | 4 + 12 ...): each full run keeps 2 × 12 sums.
    let narrow_step = RUN / d.ow;
    let sums_at = sums.as_mut_ptr();
    for oy0 in (0..d.oh).step_by(rows) {
        let oy1 = (oy0 + rows).min(d.oh);
        for (c0, cn) in even_runs(d.c, chunk) {
            for (k, item) in items.iter().enumerate() {
                let at =
                    |oy: usize, ox: usize| sums_at.add(2 * (k * span + (oy - oy0) * d.ow + ox));
                let part = |at| Part {
                    c0,
                    cn,
                    first: c0 == 0,
                    at,
                };
                if d.ow < 8 {
                    for oy in (oy0..oy1).step_by(narrow_step) {
                        let nrows = narrow_step.min(oy1 - oy);
                        row_runs::<FMA>(item, nrows, d.ow, oy, 0, &part(at(oy, 0)));
                    }
                    continue;
                }
                let total = (oy1 - oy0) * d.ow;
                let mut q = 0;
                while q < total {
                    let (oy, ox) = (oy0 + q / d.ow, q % d.ow);
                    let first = (d.ow - ox).min(total - q).min(RUN);
                    let second = (RUN - first).min(total - q - first).min(d.ow);
                    if second == 0 {
                        row_runs::<FMA>(item, 1, first, oy, ox, &part(at(oy, ox)));
                    } else if first + second == RUN {
                        split_run::<FMA>(item, first, oy, ox, &part(at(oy, ox)));
                    } else {
                        // Not reached with rows of 8+ (a run that reaches a row's end with rows
                        // after it fills up: RUN - first <= ow for every start a row of 8+
                        // gives); kept so any other case still computes each row's positions.
                        row_runs::<FMA>(item, 1, first, oy, ox, &part(at(oy, ox)));
                        row_runs::<FMA>(item, 1, second, oy + 1, 0, &part(at(oy + 1, 0)));
                    }
                    q += first + second;
                }
            }
        }
        let done = (oy1 - oy0) * d.ow;
        for (k, item) in items.iter().enumerate() {
            let flat = std::slice::from_raw_parts(
                sums.as_ptr().add(2 * k * span) as *const f32,
                2 * done * LANES,
            );
            let out_k = &mut out[k * BLOCK * plane_out..][..BLOCK * plane_out];
            transpose::block_out(flat, item.bias, item.act, out_k, oy0 * d.ow);
        }
    }
}

/// `run` for R rows of NP positions from (oy, ox), dispatched to its monomorphic form.
///
/// # Safety
/// As `run`.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn row_runs<const FMA: bool>(
    item: &Item,
    nrows: usize,
    len: usize,
    oy: usize,
    ox: usize,
    part: &Part,
) {
    macro_rules! dispatch {
        ($(($r:literal, $n:literal))*) => {
            match (nrows, len) {
                $(($r, $n) => if item.d.stride == 2 {
                    run::<FMA, 2, $r, $n>(item, oy, ox, part)
                } else {
                    run::<FMA, 1, $r, $n>(item, oy, ox, part)
                },)*
                _ => unreachable!("a run holds 1 to {RUN} positions"),
            }
        };
    }
    dispatch!((1, 1)(1, 2)(1, 3)(1, 4)(1, 5)(1, 6)(1, 7)(1, 8)(1, 9)(
        1, 10
    )(1, 11)(1, 12)(2, 2)(3, 2)(4, 2)(5, 2)(6, 2)(2, 3)(3, 3)(
        4, 3
    )(2, 4)(3, 4)(2, 5)(2, 6));
}

/// `split_run` for `first` positions at the end of row oy from ox and RUN - first at the start
/// of row oy + 1, dispatched to its monomorphic form.
///
/// # Safety
/// As `split_run`.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn split_run<const FMA: bool>(item: &Item, first: usize, oy: usize, ox: usize, part: &Part) {
    macro_rules! dispatch {
        ($(($a:literal, $b:literal))*) => {
            match first {
                $($a => if item.d.stride == 2 {
                    run_split::<FMA, 2, $a, $b>(item, oy, ox, part)
                } else {
                    run_split::<FMA, 1, $a, $b>(item, oy, ox, part)
                },)*
                _ => unreachable!("a split run holds 1 to {} positions of its first row", RUN - 1),
            }
        };
    }
    dispatch!((1, 11)(2, 10)(3, 9)(4, 8)(5, 7)(6, 6)(7, 5)(8, 4)(9, 3)(
        10, 2
    )(11, 1));
}

/// One run's share of a chunk: input channels c0 .. c0 + cn, and where its 2 × NP sums wait
/// (position-major; unread on the first chunk, whose sums start from zero).
struct Part {
    c0: usize,
    cn: usize,
    first: bool,
    at: *mut std::arch::x86_64::__m512,
}

/// Positions (oy + r, ox .. ox + NP) for r < R of the item's 32 channels, folded over the
/// part's channels (R > 1 only where NP is the whole row, so the positions are consecutive).
///
/// # Safety
/// The CPU must have AVX-512F; the run lies inside the output rows; `part.at` holds 2 × R × NP
/// vectors.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn run<const FMA: bool, const S: usize, const R: usize, const NP: usize>(
    item: &Item,
    oy: usize,
    ox: usize,
    part: &Part,
) {
    use std::arch::x86_64::*;
    let d = item.d;
    assert!(ox + NP <= d.ow && oy + R <= d.oh && part.c0 + part.cn <= d.c && d.stride == S);
    assert!(R == 1 || NP == d.ow);
    let (row, plane) = (d.w + 2 * d.pad, padded_plane(d));
    let z = _mm512_setzero_ps();
    let (mut lo, mut hi) = ([[z; NP]; R], [[z; NP]; R]);
    if !part.first {
        for r in 0..R {
            for i in 0..NP {
                lo[r][i] = *part.at.add(2 * (r * NP + i));
                hi[r][i] = *part.at.add(2 * (r * NP + i) + 1);
            }
        }
    }
    let mut w = item.w.as_ptr().add(part.c0 * d.kh * d.kw * BLOCK);
    for c in part.c0..part.c0 + part.cn {
        for ky in 0..d.kh {
            // Input row (oy + r)·S + ky of the padded plane, from column ox·S: in bounds, as
            // (OH-1)·S + KH <= H + 2p and (OW-1)·S + KW <= W + 2p. Each tap then sits a
            // constant offset from its row's start (S is a constant).
            let xr: [*const f32; R] = std::array::from_fn(|r| {
                item.x
                    .as_ptr()
                    .add(c * plane + ((oy + r) * S + ky) * row + ox * S)
            });
            for kx in 0..d.kw {
                let w0 = _mm512_loadu_ps(w);
                let w1 = _mm512_loadu_ps(w.add(LANES));
                w = w.add(BLOCK);
                for r in 0..R {
                    for i in 0..NP {
                        mac_pair!(FMA, lo[r][i], hi[r][i], w0, w1, xr[r].add(i * S + kx));
                    }
                }
            }
        }
    }
    for r in 0..R {
        for i in 0..NP {
            *part.at.add(2 * (r * NP + i)) = lo[r][i];
            *part.at.add(2 * (r * NP + i) + 1) = hi[r][i];
        }
    }
}

/// Positions (oy, ox .. ox + NA) and then (oy + 1, 0 .. NB): a run that goes on from one row's
/// end to the next row's start, folded like `run` (each position's fold is the same; only which
/// positions share a pass changes).
///
/// # Safety
/// The CPU must have AVX-512F; the run lies inside the output rows; `part.at` holds
/// 2 × (NA + NB) vectors.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn run_split<const FMA: bool, const S: usize, const NA: usize, const NB: usize>(
    item: &Item,
    oy: usize,
    ox: usize,
    part: &Part,
) {
    use std::arch::x86_64::*;
    let d = item.d;
    assert!(ox + NA == d.ow && NB <= d.ow && oy + 1 < d.oh && d.stride == S);
    assert!(part.c0 + part.cn <= d.c);
    let (row, plane) = (d.w + 2 * d.pad, padded_plane(d));
    let z = _mm512_setzero_ps();
    let (mut lo_a, mut hi_a, mut lo_b, mut hi_b) = ([z; NA], [z; NA], [z; NB], [z; NB]);
    if !part.first {
        for i in 0..NA {
            lo_a[i] = *part.at.add(2 * i);
            hi_a[i] = *part.at.add(2 * i + 1);
        }
        for i in 0..NB {
            lo_b[i] = *part.at.add(2 * (NA + i));
            hi_b[i] = *part.at.add(2 * (NA + i) + 1);
        }
    }
    let mut w = item.w.as_ptr().add(part.c0 * d.kh * d.kw * BLOCK);
    for c in part.c0..part.c0 + part.cn {
        for ky in 0..d.kh {
            // Input rows oy·S + ky (from column ox·S) and (oy + 1)·S + ky (from column 0), in
            // bounds as in `run`.
            let base = item.x.as_ptr().add(c * plane);
            let xa = base.add((oy * S + ky) * row + ox * S);
            let xb = base.add(((oy + 1) * S + ky) * row);
            for kx in 0..d.kw {
                let w0 = _mm512_loadu_ps(w);
                let w1 = _mm512_loadu_ps(w.add(LANES));
                w = w.add(BLOCK);
                for i in 0..NA {
                    mac_pair!(FMA, lo_a[i], hi_a[i], w0, w1, xa.add(i * S + kx));
                }
                for i in 0..NB {
                    mac_pair!(FMA, lo_b[i], hi_b[i], w0, w1, xb.add(i * S + kx));
                }
            }
        }
    }
    for i in 0..NA {
        *part.at.add(2 * i) = lo_a[i];
        *part.at.add(2 * i + 1) = hi_a[i];
    }
    for i in 0..NB {
        *part.at.add(2 * (NA + i)) = lo_b[i];
        *part.at.add(2 * (NA + i) + 1) = hi_b[i];
    }
}
