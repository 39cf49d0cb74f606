//! 3×3 convolution (stride 1, padding 1) on small maps, fast kind: the forward, and the input
//! gradient as the convolution of gY with the flipped kernel, read from W in place.
//!
//! On maps of 2×2 or 4×4 most of a 3×3 window is padding (5 of 9 taps at 2×2), and each weight
//! meets only images × positions columns (32 for 8 images at 2×2), so the kernel's cost is
//! reading W once and the multiply-adds. The input is first copied image-minor with its zero
//! border, [C, H + 2, W + 2, N]: for one tap, the values an output row of every image needs
//! are then OW·N consecutive floats (whole vectors, as `applies` asks). An item holds a few
//! rows of the output (output channels) across all columns, at most 24 vectors, and walks the
//! reduction (input channel, tap) in order; a tap whose input row is all border for some
//! output rows skips those rows' vectors instead of multiplying zeros (border columns inside a
//! row are still multiplied; so an infinite weight gives NaN on a border column, as in the
//! reference kernels, but not on a border row). Each output is one chain of fused multiply-adds
//! over (channel, tap) in order, whatever the thread count.

use super::super::parallel::for_chunks;
use super::super::uninit::written;
use super::{cpu_has_them, LANES};
use crate::geometry::{Activation, ConvDims};
use std::mem::MaybeUninit;

/// (vectors of columns, vectors per output row) the kernel is built for: all the columns
/// (images × positions) in at most 8 vectors, each output row of all images whole vectors.
const SHAPES: [(usize, usize); 10] = [
    (1, 1),
    (2, 1),
    (3, 1),
    (4, 1),
    (2, 2),
    (4, 2),
    (6, 2),
    (8, 2),
    (4, 4),
    (8, 4),
];

/// Whether the kernel covers convolution `d` on this CPU: 3×3, stride 1, padding 1 (so the
/// output is the input's size), with columns in one of the `SHAPES`.
pub fn small_maps_applies(d: &ConvDims) -> bool {
    let (columns, line) = (d.oh * d.ow * d.n, d.ow * d.n);
    (d.kh, d.kw, d.stride, d.pad) == (3, 3, 1, 1)
        && line.is_multiple_of(LANES)
        && columns.is_multiple_of(LANES)
        && SHAPES.contains(&(columns / LANES, line / LANES))
        && d.c > 0
        && d.oc > 0
        && cpu_has_them()
}

/// Where weight (output row o, reduction channel c, tap t) sits: `w[o·row + c·red + t']`, with
/// t' = t, or 8 - t for the flipped kernel (the input gradient reads W [OC, C, 3, 3] with rows
/// c and reduction o: row 9, red C·9, flipped).
#[derive(Clone, Copy)]
pub struct Weights<'a> {
    pub w: &'a [f32],
    pub row: usize,
    pub red: usize,
    pub flip: bool,
}

/// The convolution `d` (which `small_maps_applies`) of x [N, C, H, W] with the weights `w`,
/// plus `bias` [OC], then `act`: y [N, OC, OH, OW].
pub fn small_maps(
    x: &[f32],
    w: Weights<'_>,
    bias: Option<&[f32]>,
    d: &ConvDims,
    act: Activation,
) -> Vec<f32> {
    assert!(small_maps_applies(d) && x.len() >= d.n * d.c * d.h * d.w);
    let (oc, c) = (d.oc, d.c);
    let last = (oc - 1) * w.row + (c - 1) * w.red + 8;
    assert!(last < w.w.len() && bias.is_none_or(|b| b.len() >= oc));
    let geo = Geometry::new(d);
    let xt = image_minor(x, &geo);
    let columns = geo.oh * geo.ow * geo.n;
    let (vectors, line) = (columns / LANES, geo.ow * geo.n / LANES);
    let rows = 24 / vectors;
    // [OC, columns], columns in (oy, ox, n) order.
    let out = written(oc * columns, |out| {
        for_chunks(out, rows * columns, oc * columns * c * 9, |i, dst| {
            // SAFETY: `small_maps_applies` checked AVX-512 on this CPU; the asserts above size
            // the weights, `image_minor` the copy.
            unsafe {
                let o0 = i * rows;
                match (vectors, line) {
                    (1, 1) => block::<1, 1>(&xt, w, &geo, o0, dst),
                    (2, 1) => block::<2, 1>(&xt, w, &geo, o0, dst),
                    (3, 1) => block::<3, 1>(&xt, w, &geo, o0, dst),
                    (4, 1) => block::<4, 1>(&xt, w, &geo, o0, dst),
                    (2, 2) => block::<2, 2>(&xt, w, &geo, o0, dst),
                    (4, 2) => block::<4, 2>(&xt, w, &geo, o0, dst),
                    (6, 2) => block::<6, 2>(&xt, w, &geo, o0, dst),
                    (8, 2) => block::<8, 2>(&xt, w, &geo, o0, dst),
                    (4, 4) => block::<4, 4>(&xt, w, &geo, o0, dst),
                    (8, 4) => block::<8, 4>(&xt, w, &geo, o0, dst),
                    _ => unreachable!("`small_maps_applies` admits only these shapes"),
                }
            }
        })
    });
    let plane = geo.oh * geo.ow;
    written(d.n * oc * plane, |y| {
        for_chunks(y, plane, d.n * oc * plane, |r, row| {
            let (n, o) = (r / oc, r % oc);
            let b = bias.map_or(0.0, |b| b[o]);
            let src = &out[o * columns..][..columns];
            for (p, v) in row.iter_mut().enumerate() {
                v.write(act.apply(src[p * geo.n + n] + b));
            }
        })
    })
}

/// Sizes of one convolution's planes.
struct Geometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    /// Row length of the padded input.
    row: usize,
}

impl Geometry {
    fn new(d: &ConvDims) -> Self {
        Geometry {
            n: d.n,
            c: d.c,
            h: d.h,
            w: d.w,
            oh: d.oh,
            ow: d.ow,
            row: d.w + 2,
        }
    }
    /// Floats of one channel's padded, image-minor plane.
    fn padded(&self) -> usize {
        (self.h + 2) * self.row * self.n
    }
}

/// x [N, C, H, W] as [C, H + 2, W + 2, N] with zeros around each plane.
fn image_minor(x: &[f32], geo: &Geometry) -> Vec<f32> {
    let per = geo.padded();
    written(geo.c * per, |out| {
        for_chunks(out, per, geo.c * per, |c, dst| {
            for (py, line) in dst.chunks_mut(geo.row * geo.n).enumerate() {
                for (px, cell) in line.chunks_mut(geo.n).enumerate() {
                    let inside = (1..=geo.h).contains(&py) && (1..=geo.w).contains(&px);
                    for (n, v) in cell.iter_mut().enumerate() {
                        v.write(if inside {
                            x[((n * geo.c + c) * geo.h + py - 1) * geo.w + px - 1]
                        } else {
                            0.0
                        });
                    }
                }
            }
        })
    })
}

/// Output rows o0 .. into `dst` (whole rows of JV vectors, LINE per output row): blocks of
/// 24 / JV rows, then the rest one row at a time.
///
/// # Safety
/// The CPU must have AVX-512F; `w` holds every weight of the rows `dst` covers, `xt` is the
/// image-minor copy of the input `geo` describes.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn block<const JV: usize, const LINE: usize>(
    xt: &[f32],
    w: Weights<'_>,
    geo: &Geometry,
    o0: usize,
    dst: &mut [MaybeUninit<f32>],
) {
    let per_row = JV * LANES;
    let mut o = o0;
    for chunk in dst.chunks_mut(per_row * (24 / JV)) {
        let n = chunk.len() / per_row;
        match (JV, n) {
            (1, 24) => rows_of::<1, LINE, 24>(xt, w, geo, o, chunk),
            (2, 12) => rows_of::<2, LINE, 12>(xt, w, geo, o, chunk),
            (3, 8) => rows_of::<3, LINE, 8>(xt, w, geo, o, chunk),
            (4, 6) => rows_of::<4, LINE, 6>(xt, w, geo, o, chunk),
            (5 | 6, 4) => rows_of::<JV, LINE, 4>(xt, w, geo, o, chunk),
            (7 | 8, 3) => rows_of::<JV, LINE, 3>(xt, w, geo, o, chunk),
            _ => {
                for (k, one) in chunk.chunks_mut(per_row).enumerate() {
                    rows_of::<JV, LINE, 1>(xt, w, geo, o + k, one);
                }
            }
        }
        o += n;
    }
}

/// R output rows from o0, each JV vectors of columns (oy, ox, n), LINE vectors per output row
/// oy, into `dst`.
///
/// # Safety
/// As `block`, with `dst` exactly R rows.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
unsafe fn rows_of<const JV: usize, const LINE: usize, const R: usize>(
    xt: &[f32],
    w: Weights<'_>,
    geo: &Geometry,
    o0: usize,
    dst: &mut [MaybeUninit<f32>],
) {
    use std::arch::x86_64::*;
    assert!(dst.len() == R * JV * LANES && LINE * LANES == geo.ow * geo.n && LINE * geo.oh == JV);
    assert!((o0 + R - 1) * w.row + (geo.c - 1) * w.red + 8 < w.w.len());
    assert!(xt.len() >= geo.c * geo.padded());
    // Vector j's offset from a tap's first cell: output row j / LINE, then its place in the row.
    let at = |j: usize| j / LINE * geo.row * geo.n + j % LINE * LANES;
    let mut acc = [[_mm512_setzero_ps(); JV]; R];
    // One tap over the output rows whose vectors j are in js: each multiplies its input vector
    // into every row's sum. With more vectors than rows (4×4 maps), the rows' weights are
    // broadcast into registers once per tap (otherwise each multiply-add would load its weight
    // again: 8 images of 256 channels at 4×4, forward 0.44 -> 0.41 ms on 2 threads); with few
    // vectors the weights stream through the multiply-adds (at 2×2, loading them first was
    // slower: input gradient 0.53 -> 0.67 ms).
    #[inline(always)]
    unsafe fn tap<const JV: usize, const R: usize>(
        acc: &mut [[__m512; JV]; R],
        xs: *const f32,
        at: impl Fn(usize) -> usize,
        wt: *const f32,
        row: usize,
        js: std::ops::Range<usize>,
    ) {
        if JV > R {
            let b: [__m512; R] = std::array::from_fn(|r| _mm512_set1_ps(*wt.add(r * row)));
            for j in js {
                let v = _mm512_loadu_ps(xs.add(at(j)));
                for (acc, &b) in acc.iter_mut().zip(&b) {
                    acc[j] = _mm512_fmadd_ps(v, b, acc[j]);
                }
            }
        } else {
            for j in js {
                let v = _mm512_loadu_ps(xs.add(at(j)));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let b = _mm512_set1_ps(*wt.add(r * row));
                    acc[j] = _mm512_fmadd_ps(v, b, acc[j]);
                }
            }
        }
    }
    for c in 0..geo.c {
        let wc = w.w.as_ptr().add(o0 * w.row + c * w.red);
        let xc = xt.as_ptr().add(c * geo.padded());
        for ky in 0..3 {
            for kx in 0..3 {
                let t = ky * 3 + kx;
                let wt = wc.add(if w.flip { 8 - t } else { t });
                let xs = xc.add((ky * geo.row + kx) * geo.n);
                // Output rows whose input row oy + ky - 1 is border are skipped: the first
                // for ky = 0, the last for ky = 2.
                match ky {
                    0 => tap(&mut acc, xs, at, wt, w.row, LINE..JV),
                    1 => tap(&mut acc, xs, at, wt, w.row, 0..JV),
                    _ => tap(&mut acc, xs, at, wt, w.row, 0..JV - LINE),
                }
            }
        }
    }
    super::store_rows(&acc, dst);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// y[n, o, oy, ox] in f64: the weights as `Weights` places them, taps outside the input
    /// left out.
    fn reference(x: &[f32], w: Weights<'_>, bias: &[f32], d: &ConvDims) -> Vec<f64> {
        let mut y = vec![0.0; d.n * d.oc * d.oh * d.ow];
        for n in 0..d.n {
            for o in 0..d.oc {
                for oy in 0..d.oh {
                    for ox in 0..d.ow {
                        let mut s = bias[o] as f64;
                        for c in 0..d.c {
                            for t in 0..9 {
                                let (iy, ix) =
                                    ((oy + t / 3) as isize - 1, (ox + t % 3) as isize - 1);
                                if iy < 0 || ix < 0 || iy >= d.h as isize || ix >= d.w as isize {
                                    continue;
                                }
                                let tw = if w.flip { 8 - t } else { t };
                                let wv = w.w[o * w.row + c * w.red + tw] as f64;
                                let xv = x[((n * d.c + c) * d.h + iy as usize) * d.w + ix as usize];
                                s += wv * xv as f64;
                            }
                        }
                        y[((n * d.oc + o) * d.oh + oy) * d.ow + ox] = s;
                    }
                }
            }
        }
        y
    }

    #[test]
    fn every_shape_and_both_weight_layouts_match_a_float64_convolution() {
        if !cpu_has_them() {
            return;
        }
        let value = |i: usize, m: usize| ((i * m) % 29) as f32 / 14.0 - 1.0;
        for &(vectors, line) in &SHAPES {
            // Output rows of 2 positions (1 for one vector per row): n images fill the row.
            let ow = if line == 1 { 1 } else { 2 };
            let (oh, n) = (vectors / line, line * LANES / ow);
            // Output channels in a full block and a shorter rest; odd input channel counts.
            for (oc, c) in [(24 / vectors + 1, 3), (2 * (24 / vectors) + 5, 5)] {
                let d = ConvDims {
                    n,
                    c,
                    h: oh,
                    w: ow,
                    oc,
                    kh: 3,
                    kw: 3,
                    stride: 1,
                    pad: 1,
                    oh,
                    ow,
                };
                assert!(small_maps_applies(&d), "{vectors} {line}");
                let x: Vec<f32> = (0..n * c * oh * ow).map(|i| value(i, 7919)).collect();
                let wt: Vec<f32> = (0..oc * c * 9).map(|i| value(i, 104729)).collect();
                let bias: Vec<f32> = (0..oc).map(|i| value(i, 31)).collect();
                for w in [
                    Weights {
                        w: &wt,
                        row: c * 9,
                        red: 9,
                        flip: false,
                    },
                    Weights {
                        w: &wt,
                        row: 9,
                        red: oc * 9,
                        flip: true,
                    },
                ] {
                    let got = small_maps(&x, w, Some(&bias), &d, Activation::None);
                    let want = reference(&x, w, &bias, &d);
                    for (i, (&g, &e)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g as f64 - e).abs() <= 1e-5 * (9 * c) as f64,
                            "{vectors}x{line} oc {oc} c {c} flip {} at {i}: {g} vs {e}",
                            w.flip
                        );
                    }
                }
            }
        }
    }
}
