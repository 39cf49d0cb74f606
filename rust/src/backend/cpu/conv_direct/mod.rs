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
use super::uninit::{fill_with, written};

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

/// `acc + a·b`: one fused operation (fast) or a rounded product then a rounded sum (reference).
macro_rules! mac {
    ($fma:expr, $acc:expr, $a:expr, $b:expr) => {
        if $fma {
            _mm512_fmadd_ps($a, $b, $acc)
        } else {
            _mm512_add_ps($acc, _mm512_mul_ps($a, $b))
        }
    };
}
use mac;

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

/// `planes` planes of [h, w] as [h + 2·border, w + 2·border] with zeros around.
fn pad_border(x: &[f32], planes: usize, (h, w): (usize, usize), border: usize) -> Vec<f32> {
    let (row, plane) = (w + 2 * border, (h + 2 * border) * (w + 2 * border));
    written(planes * plane, |out| {
        for_chunks(out, plane.max(1), out.len(), |i, dst| {
            let src = &x[i * h * w..][..h * w];
            let zero = |s: &mut [std::mem::MaybeUninit<f32>]| _ = fill_with(s, 0.0);
            zero(&mut dst[..border * row]);
            zero(&mut dst[(border + h) * row..]);
            for (y, src) in src.chunks_exact(w.max(1)).enumerate().take(h) {
                let r = &mut dst[(border + y) * row..][..row];
                zero(&mut r[..border]);
                zero(&mut r[border + w..]);
                r[border..border + w]
                    .iter_mut()
                    .zip(src)
                    .for_each(|(v, &s)| _ = v.write(s));
            }
        })
    })
}
