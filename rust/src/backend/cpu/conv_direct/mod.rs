//! Direct convolution kernels in f32 for CPUs with AVX-512: no im2col matrix, no packing of the
//! activations. Output (or input) channels sit in vector lanes, 32 per block; the other
//! operand's values are broadcast from a copy of the activations with a zero border, so padding
//! cells take part as zeros exactly as they do in the lowering (conv.rs).
//!
//! Each kernel comes in two modes. Fast (`FMA = true`) fuses multiply and add. Reference
//! (`FMA = false`) rounds the product and the sum separately and adds in the reference fold's
//! order, so its bits equal the GEMM lowering's: the per-item loops run the fold's own index
//! order, and the vector lanes only hold independent outputs.

mod forward;
mod input_cols;
mod input_grad;
mod pack;
mod small_maps;
mod thin_rows;
mod transpose;
mod weight_grad;

pub use forward::{forward, forward_applies};
pub use input_cols::{input_cols, input_cols_applies};
pub use input_grad::{input_grad, input_grad_applies};
pub use small_maps::{small_maps, small_maps_applies, Weights};
pub use thin_rows::{thin_rows, thin_rows_applies};
pub use weight_grad::{weight_grad, weight_grad_applies};

use super::parallel::for_chunks;
use super::uninit::written;

const LANES: usize = 16;

/// Channels one vector pair holds (an item's block).
const BLOCK: usize = 2 * LANES;

/// Items (one image's block of channels each) a direct forward or input gradient needs before
/// it is chosen: with fewer, its threads would idle where the lowering's GEMM threads inside one
/// product. A function of the shapes alone, so the kind of kernel never depends on the thread
/// count.
const MIN_ITEMS: usize = 4;

/// A row of `width` cells cut into runs of at most `max`, as even as they come (16 = 8 + 8 at 12,
/// 32 = 11 + 11 + 10): (start, length) of each.
fn even_runs(width: usize, max: usize) -> impl Iterator<Item = (usize, usize)> {
    let runs = width.div_ceil(max);
    (0..runs).scan(0, move |start, r| {
        let len = width / runs + usize::from(r < width % runs);
        let at = *start;
        *start += len;
        Some((at, len))
    })
}

/// Columns (images × output positions) up to which a product of the weights with them counts
/// as thin (`input_cols`, `thin_rows`): whole vectors, at most four of them.
const THIN_COLUMNS: usize = 4 * LANES;

/// Whether `np` columns make a thin product on this CPU.
fn thin_columns(np: usize) -> bool {
    (1..=THIN_COLUMNS).contains(&np) && np.is_multiple_of(LANES) && cpu_has_them()
}

/// Whether this CPU runs the kernels.
fn cpu_has_them() -> bool {
    super::simd::has_avx512()
}

/// `lo += w0·x; hi += w1·x` for the f32 at address `x` (one scalar, two vectors): one fused
/// multiply-add each (fast), or a rounded product then a rounded sum (reference). The reference
/// mode's multiplies read `x` with an embedded broadcast: on Zen 4 a broadcast in its own
/// instruction takes a slot of the adder pipes, which the reference's separate adds also need,
/// and that held these kernels to about 62% of the FMA peak (now 85–90%). The rounding is
/// unchanged: one rounded product, then one rounded sum.
macro_rules! mac_pair {
    ($fma:expr, $lo:expr, $hi:expr, $w0:expr, $w1:expr, $x:expr) => {
        if $fma {
            let t = _mm512_set1_ps(*$x);
            $lo = _mm512_fmadd_ps($w0, t, $lo);
            $hi = _mm512_fmadd_ps($w1, t, $hi);
        } else {
            let (p0, p1): (std::arch::x86_64::__m512, std::arch::x86_64::__m512);
            std::arch::asm!(
                "vmulps {p0}, {w0}, dword ptr [{x}]{{1to16}}",
                "vmulps {p1}, {w1}, dword ptr [{x}]{{1to16}}",
                p0 = out(zmm_reg) p0,
                p1 = out(zmm_reg) p1,
                w0 = in(zmm_reg) $w0,
                w1 = in(zmm_reg) $w1,
                x = in(reg) $x,
                options(pure, readonly, nostack),
            );
            $lo = _mm512_add_ps($lo, p0);
            $hi = _mm512_add_ps($hi, p1);
        }
    };
}
use mac_pair;

/// Writes R rows of JV vectors of sums to `dst`, row after row (the thin kernels' results).
///
/// # Safety
/// The CPU must have AVX-512F; `dst` holds R · JV vectors.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store_rows<const JV: usize, const R: usize>(
    acc: &[[std::arch::x86_64::__m512; JV]; R],
    dst: &mut [std::mem::MaybeUninit<f32>],
) {
    assert!(dst.len() >= R * JV * LANES);
    let d = dst.as_mut_ptr() as *mut f32;
    for (r, acc) in acc.iter().enumerate() {
        for (j, &a) in acc.iter().enumerate() {
            std::arch::x86_64::_mm512_storeu_ps(d.add((r * JV + j) * LANES), a);
        }
    }
}

/// Whether `pad_border`'s copy of these planes can be allocated here: a huge padding (with a
/// huge stride, a small output) would make it larger than any tensor, and the lowering, which
/// copies nothing padded, then runs instead of an abort.
fn padded_fits(planes: usize, (h, w): (usize, usize), border: usize) -> bool {
    let side = |n: usize| border.checked_mul(2).and_then(|b| b.checked_add(n));
    let bytes = side(h)
        .zip(side(w))
        .and_then(|(ph, pw)| ph.checked_mul(pw))
        .and_then(|p| p.checked_mul(planes))
        .and_then(|c| c.checked_mul(std::mem::size_of::<f32>()));
    bytes.is_some_and(|b| crate::alloc::check_bytes("conv2d", "a padded copy", b).is_ok())
}

/// `planes` planes of [h, w] as [h + 2·border, w + 2·border] with zeros around. Each padded row
/// goes out in whole vectors, a masked load taking the row's cells and zeros beside them (a
/// scalar copy with a fill per border cell spent 7% of an 8×64×16×16 forward in its memset
/// calls and loop).
fn pad_border(x: &[f32], planes: usize, (h, w): (usize, usize), border: usize) -> Vec<f32> {
    assert!(cpu_has_them() && x.len() == planes * h * w);
    let plane = (h + 2 * border) * (w + 2 * border);
    written(planes * plane, |out| {
        for_chunks(out, plane.max(1), out.len(), |i, dst| {
            // SAFETY: AVX-512 checked above; `dst` is one padded plane, the source one plane.
            unsafe { pad_plane(&x[i * h * w..][..h * w], dst, (h, w), border) }
        })
    })
}

/// Lanes lo .. hi of a vector (hi <= 16).
fn lane_mask(lo: usize, hi: usize) -> u16 {
    debug_assert!(lo <= hi && hi <= LANES);
    ((1u32 << hi) - (1u32 << lo)) as u16
}

/// Writes every cell of `dst`, the padded [h + 2·border, w + 2·border] copy of `src` [h, w].
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn pad_plane(
    src: &[f32],
    dst: &mut [std::mem::MaybeUninit<f32>],
    (h, w): (usize, usize),
    border: usize,
) {
    use std::arch::x86_64::*;
    let row = w + 2 * border;
    assert!(src.len() == h * w && dst.len() == (h + 2 * border) * row);
    let out = dst.as_mut_ptr() as *mut f32;
    for py in 0..h + 2 * border {
        // The source row, when this padded row has one.
        let y = py.checked_sub(border).filter(|&y| y < h);
        for j in (0..row).step_by(LANES) {
            let n = (row - j).min(LANES);
            let v = match y {
                Some(y) => {
                    // Lanes l with border <= j + l < border + w hold src[y, j + l - border].
                    let lo = border.saturating_sub(j).min(n);
                    let hi = (border + w).saturating_sub(j).min(n);
                    if lo < hi {
                        // Lanes below `lo` would read before the row: the mask keeps them
                        // unread (AVX-512 suppresses masked-off accesses), and the address is
                        // formed without claiming it in bounds.
                        let at = src.as_ptr().wrapping_add(y * w + j).wrapping_sub(border);
                        _mm512_maskz_loadu_ps(lane_mask(lo, hi), at)
                    } else {
                        _mm512_setzero_ps()
                    }
                }
                None => _mm512_setzero_ps(),
            };
            _mm512_mask_storeu_ps(out.add(py * row + j), lane_mask(0, n), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_border_puts_each_cell_in_place_and_zeros_around() {
        if !cpu_has_them() {
            return; // the direct kernels, the only users, do not run on this CPU either
        }
        let shapes = [
            (1, 1, 0),
            (3, 5, 1),
            (16, 16, 1),
            (8, 8, 2),
            (2, 17, 3),
            (7, 33, 1),
            (4, 15, 0),
        ];
        for &(h, w, b) in &shapes {
            let planes = 3;
            let x: Vec<f32> = (0..planes * h * w).map(|i| i as f32 + 0.5).collect();
            let got = pad_border(&x, planes, (h, w), b);
            let (ph, pw) = (h + 2 * b, w + 2 * b);
            assert_eq!(got.len(), planes * ph * pw);
            for p in 0..planes {
                for py in 0..ph {
                    for px in 0..pw {
                        let inside = (b..b + h).contains(&py) && (b..b + w).contains(&px);
                        let want = if inside {
                            x[(p * h + py - b) * w + px - b]
                        } else {
                            0.0
                        };
                        assert_eq!(
                            got[(p * ph + py) * pw + px],
                            want,
                            "{h}x{w} border {b} at {p},{py},{px}"
                        );
                    }
                }
            }
        }
    }
}
