//! Matrix products for both kernel kinds. Operands are addressed through strides, so the
//! transposes that backward needs are free: reference kernels via `gemm_ref`, fast kernels via
//! the `gemm` crate (FMA, blocked, threaded).

use super::gemm_ref::{gemm_ref, RefGemmElem};
use super::parallel::{for_each_chunk, worth_threads};
use super::uninit::{fill_with, written};
use crate::dtype::Float;
use crate::geometry::{Activation, ConvDims, MatOperand};
use std::mem::MaybeUninit;

/// Element types both GEMMs accept.
pub trait GemmElem: Float + RefGemmElem {
    /// The weight gradient of convolution `d` by a direct kernel of the given kind (no
    /// lowering), where one covers this type, geometry and CPU (`conv_direct/`); None sends it
    /// through the GEMMs. The reference kind gives the per-image lowering's bits.
    fn direct_weight_grad(
        _g: &[Self],
        _x: &[Self],
        _d: &ConvDims,
        _fast: bool,
    ) -> Option<Vec<Self>> {
        None
    }
    /// The input gradient of convolution `d` by a direct reference kernel (the lowering's bits),
    /// where one covers this type, geometry and CPU.
    fn direct_input_grad(_g: &[Self], _wt: &[Self], _d: &ConvDims) -> Option<Vec<Self>> {
        None
    }
    /// The input gradient's columns Wᵀ·gY [kk, np] (W [oc, kk], gY [oc, np]) by a fast kernel
    /// that reads W once without packing it, where one covers this type, these sizes and CPU.
    fn fast_input_cols(
        _wt: &[Self],
        _gy: &[Self],
        _kk: usize,
        _oc: usize,
        _np: usize,
    ) -> Option<Vec<Self>> {
        None
    }
    /// Whether `fast_thin_rows` covers a product with `np` columns (this type and CPU).
    fn fast_thin_rows_applies(_np: usize) -> bool {
        false
    }
    /// The forward's product W·cols [oc, np] (W [oc, kk], cols [kk, np]) by a fast kernel that
    /// reads W once without packing it, where one covers this type, `np` and CPU.
    fn fast_thin_rows(
        _wt: &[Self],
        _cols: &[Self],
        _oc: usize,
        _kk: usize,
        _np: usize,
    ) -> Option<Vec<Self>> {
        None
    }
    /// Convolution `d` by the fast small-map kernel (conv_direct/small_maps.rs), where it covers
    /// this type, geometry and CPU; `flipped` reads `wt` as the input gradient's kernel.
    fn fast_small_maps(
        _x: &[Self],
        _wt: &[Self],
        _bias: Option<&[Self]>,
        _d: &ConvDims,
        _act: Activation,
        _flipped: bool,
    ) -> Option<Vec<Self>> {
        None
    }
    /// Whether `direct_forward` covers convolution `d` (this type, geometry and CPU).
    fn direct_forward_applies(_d: &ConvDims) -> bool {
        false
    }
    /// Convolution `d`'s output by a direct kernel of the given kind, where one covers this
    /// type, geometry and CPU; the reference kind gives the lowering's bits. `flipped`: `wt`
    /// is the weight [d.c, d.oc, KH, KW] of the convolution whose input gradient `d` is, read
    /// transposed and flipped (W'[o, c, ky, kx] = wt[c, o, KH-1-ky, KW-1-kx]).
    fn direct_forward(
        _x: &[Self],
        _wt: &[Self],
        _bias: Option<&[Self]>,
        _d: &ConvDims,
        _act: Activation,
        _fast: bool,
        _flipped: bool,
    ) -> Option<Vec<Self>> {
        None
    }
}
#[cfg(target_arch = "x86_64")]
impl GemmElem for f32 {
    fn direct_weight_grad(g: &[f32], x: &[f32], d: &ConvDims, fast: bool) -> Option<Vec<f32>> {
        use super::conv_direct::{weight_grad, weight_grad_applies};
        (weight_grad_applies(d)).then(|| weight_grad(g, x, d, fast))
    }
    fn direct_input_grad(g: &[f32], wt: &[f32], d: &ConvDims) -> Option<Vec<f32>> {
        use super::conv_direct::{input_grad, input_grad_applies};
        (input_grad_applies(d)).then(|| input_grad(g, wt, d))
    }
    fn direct_forward(
        x: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        d: &ConvDims,
        act: Activation,
        fast: bool,
        flipped: bool,
    ) -> Option<Vec<f32>> {
        Self::direct_forward_applies(d)
            .then(|| super::conv_direct::forward(x, wt, bias, d, act, fast, flipped))
    }
    fn direct_forward_applies(d: &ConvDims) -> bool {
        super::conv_direct::forward_applies(d)
    }
    fn fast_small_maps(
        x: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        d: &ConvDims,
        act: Activation,
        flipped: bool,
    ) -> Option<Vec<f32>> {
        use super::conv_direct::{small_maps, small_maps_applies, Weights};
        // The forward's rows are output channels (W [OC, C, 3, 3] row by row); the input
        // gradient's are the forward's input channels, d.oc of them, reducing over d.c.
        let w = if flipped {
            Weights {
                w: wt,
                row: 9,
                red: d.oc * 9,
                flip: true,
            }
        } else {
            Weights {
                w: wt,
                row: d.c * 9,
                red: 9,
                flip: false,
            }
        };
        small_maps_applies(d).then(|| small_maps(x, w, bias, d, act))
    }
    fn fast_input_cols(
        wt: &[f32],
        gy: &[f32],
        kk: usize,
        oc: usize,
        np: usize,
    ) -> Option<Vec<f32>> {
        use super::conv_direct::{input_cols, input_cols_applies};
        input_cols_applies(kk, np).then(|| input_cols(wt, gy, kk, oc, np))
    }
    fn fast_thin_rows_applies(np: usize) -> bool {
        super::conv_direct::thin_rows_applies(np)
    }
    fn fast_thin_rows(
        wt: &[f32],
        cols: &[f32],
        oc: usize,
        kk: usize,
        np: usize,
    ) -> Option<Vec<f32>> {
        use super::conv_direct::{thin_rows, thin_rows_applies};
        thin_rows_applies(np).then(|| thin_rows(wt, cols, oc, kk, np))
    }
}
#[cfg(not(target_arch = "x86_64"))]
impl GemmElem for f32 {}
impl GemmElem for f64 {}

pub use crate::geometry::MatmulDims;

/// Products big enough to be worth threads inside one GEMM.
// Below about 100³ multiply-adds a thread hand-off costs more than it saves (measured at
// n = 64: 32 µs threaded vs 4 µs inline).
const PAR_MIN_FLOPS: usize = 100 * 100 * 100;

pub fn matmul<T: GemmElem>(a: &[T], b: &[T], d: MatmulDims, fast: bool) -> Vec<T> {
    if d.m == 0 || d.n == 0 || d.batch == 0 {
        // Before the offsets: a batch of 2^40 empty products needs none.
        return Vec::new();
    }
    let operand = |batch_stride: usize, (rs, cs): (usize, usize)| MatOperand {
        offsets: (0..d.batch).map(|bi| bi * batch_stride).collect(),
        rs,
        cs,
    };
    let a_op = operand(d.a_batch_stride, if d.ta { (1, d.m) } else { (d.k, 1) });
    let b_op = operand(d.b_batch_stride, if d.tb { (1, d.k) } else { (d.n, 1) });
    matmul_strided(a, &a_op, b, &b_op, [d.m, d.n, d.k], fast)
}

/// The batch of products A_bi [m, k] · B_bi [k, n], each operand read in place through its
/// offsets and strides (one offset per product in `a.offsets`, as many in `b.offsets`).
pub fn matmul_strided<T: GemmElem>(
    a: &[T],
    a_op: &MatOperand,
    b: &[T],
    b_op: &MatOperand,
    [m, n, k]: [usize; 3],
    fast: bool,
) -> Vec<T> {
    let batch = a_op.offsets.len();
    assert_eq!(
        batch,
        b_op.offsets.len(),
        "one offset per product in each operand"
    );
    if m == 0 || n == 0 || batch == 0 {
        return vec![T::ZERO; batch * m * n];
    }
    // The kernels index from each offset with the strides; every read stays inside.
    assert!(a_op.extent(m, k) <= a.len() && b_op.extent(k, n) <= b.len());
    let big = worth_threads(m * n * k, PAR_MIN_FLOPS);
    let one = |bi: usize, c: &mut [MaybeUninit<T>], parallel: bool| {
        let a = &a[a_op.offsets[bi]..];
        let b = &b[b_op.offsets[bi]..];
        product_into(
            fast, m, n, k, a, a_op.rs, a_op.cs, b, b_op.rs, b_op.cs, c, parallel,
        );
    };
    written(batch * m * n, |out| {
        if !big && batch > 1 && worth_threads(batch * m * n * k, PAR_MIN_FLOPS) {
            // Many small products: one per item; each output's fold is unchanged.
            for_each_chunk(out, m * n, batch * m * n * k, |bi, c| one(bi, c, false));
        } else {
            // One after another, each threaded inside when large (small work costs less
            // than handing it over).
            out.chunks_mut(m * n)
                .enumerate()
                .for_each(|(bi, c)| one(bi, c, big));
        }
    })
}

/// One product with the chosen kernel kind, the reference GEMM or the gemm crate, into memory
/// not yet written (every element of `c[..m*n]` is written). Shared by matmul and the
/// convolution lowering.
#[allow(clippy::too_many_arguments)]
pub(crate) fn product_into<T: GemmElem>(
    fast: bool,
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    a_rs: usize,
    a_cs: usize,
    b: &[T],
    b_rs: usize,
    b_cs: usize,
    c: &mut [MaybeUninit<T>],
    parallel: bool,
) {
    if k == 1 {
        // One term per output: both kinds take the reference's one step (+0 + a·b).
        super::outer::outer_into(m, n, (a, a_rs), (b, b_cs), c);
    } else if fast {
        gemm_fast(m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, parallel);
    } else {
        gemm_ref(m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, parallel);
    }
}

/// One product through the gemm crate: c = A·B with A(i,p) = a[i*a_rs + p*a_cs] and likewise B.
///
/// Products of `BLOCKED_FLOPS` or more are cut along C's longer axis into `BLOCKS` blocks, each
/// one single-threaded gemm call; in parallel the blocks run side by side on the team
/// (`team_for`), the caller included. On two cores that reaches 1.7-1.9x one core where the
/// crate's own threading reached 1.4x on mid-sized products (128x784x512: 271 -> 317 GFLOP/s).
/// The cut is a function of the shapes alone, so the bits do not depend on the thread count.
#[allow(clippy::too_many_arguments)]
fn gemm_fast<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    a_rs: usize,
    a_cs: usize,
    b: &[T],
    b_rs: usize,
    b_cs: usize,
    c: &mut [MaybeUninit<T>],
    parallel: bool,
) {
    if k == 0 {
        fill_with(&mut c[..m * n], T::ZERO);
        return;
    }
    let blocks = if m * n * k >= BLOCKED_FLOPS {
        BLOCKS.min(m.max(n) / 32).max(1)
    } else {
        1
    };
    gemm_in_blocks(
        blocks,
        parallel,
        m,
        n,
        k,
        (a, a_rs, a_cs),
        (b, b_rs, b_cs),
        c,
    );
}

/// Gemm calls per blocked product: two per thread on two cores, so a helper that wakes late
/// leaves the caller more to do instead of idling; more blocks would repack A more often (each
/// block packs all of it).
const BLOCKS: usize = 4;
/// Products this large are blocked.
const BLOCKED_FLOPS: usize = 1 << 20;

/// c = A·B as `blocks` gemm calls over equal blocks (whole register tiles) of C's longer axis,
/// side by side when `parallel`.
#[allow(clippy::too_many_arguments)]
fn gemm_in_blocks<T: GemmElem>(
    blocks: usize,
    parallel: bool,
    m: usize,
    n: usize,
    k: usize,
    (a, a_rs, a_cs): (&[T], usize, usize),
    (b, b_rs, b_cs): (&[T], usize, usize),
    c: &mut [MaybeUninit<T>],
) {
    assert!(c.len() >= m * n, "gemm: C is shorter than {m} x {n}");
    let by_cols = n >= m;
    let len = if by_cols { n } else { m };
    let step = len.div_ceil(blocks.max(1)).div_ceil(16) * 16;
    let (pa, pb, pc) = (
        a.as_ptr() as usize,
        b.as_ptr() as usize,
        c.as_mut_ptr() as usize,
    );
    let size = std::mem::size_of::<T>();
    let block = |i: usize| {
        let (lo, hi) = (i * step, ((i + 1) * step).min(len));
        // SAFETY: the caller sized `a`, `b` and `c` for these dimensions and strides; block i
        // reads its own rows of A or columns of B and writes C's rows or columns lo..hi,
        // disjoint from every other block's; `c` stays borrowed mutably until all have run.
        unsafe {
            if by_cols {
                let (bp, cp) = (
                    (pb + lo * b_cs * size) as *const T,
                    (pc + lo * size) as *mut T,
                );
                gemm_block(
                    m,
                    hi - lo,
                    k,
                    pa as *const T,
                    a_rs,
                    a_cs,
                    bp,
                    b_rs,
                    b_cs,
                    cp,
                    n,
                );
            } else {
                let (ap, cp) = (
                    (pa + lo * a_rs * size) as *const T,
                    (pc + lo * n * size) as *mut T,
                );
                gemm_block(
                    hi - lo,
                    n,
                    k,
                    ap,
                    a_rs,
                    a_cs,
                    pb as *const T,
                    b_rs,
                    b_cs,
                    cp,
                    n,
                );
            }
        }
    };
    let count = len.div_ceil(step);
    if parallel {
        super::parallel::team_for(count, usize::MAX, block);
    } else {
        (0..count).for_each(block);
    }
}

/// One single-threaded gemm call: C (row stride `ldc`) = A·B.
///
/// # Safety
/// The pointers address matrices of these sizes and strides; nothing else writes C meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_block<T: GemmElem>(
    m: usize,
    n: usize,
    k: usize,
    a: *const T,
    a_rs: usize,
    a_cs: usize,
    b: *const T,
    b_rs: usize,
    b_cs: usize,
    c: *mut T,
    ldc: usize,
) {
    // gemm reads `dst` only when read_dst is true.
    gemm::gemm(
        m,
        n,
        k,
        c,
        1,
        ldc as isize,
        false,
        a,
        a_cs as isize,
        a_rs as isize,
        b,
        b_cs as isize,
        b_rs as isize,
        T::ZERO,
        T::ONE,
        false,
        false,
        false,
        gemm::Parallelism::None,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        (0..n as u64)
            .map(|i| crate::rng::uniform_at_f32(seed, i) - 0.5)
            .collect()
    }

    /// Blocked products match an f64 triple loop, for both axes, uneven blocks and transposed
    /// operands, and the blocks run side by side give the bits they give one after another.
    #[test]
    fn blocked_products_are_right_and_the_same_in_parallel() {
        for &(m, n, k) in &[(128, 512, 784), (300, 70, 129), (33, 97, 1000), (64, 64, 5)] {
            for (ta, tb) in [(false, false), (true, false), (false, true)] {
                let (a, b) = (values(m * k, 1), values(k * n, 2));
                let (a_rs, a_cs) = if ta { (1, m) } else { (k, 1) };
                let (b_rs, b_cs) = if tb { (1, k) } else { (n, 1) };
                for blocks in [1, 2, 3, 7] {
                    let run = |parallel| {
                        let (a, b) = ((&a[..], a_rs, a_cs), (&b[..], b_rs, b_cs));
                        written(m * n, |c| {
                            gemm_in_blocks(blocks, parallel, m, n, k, a, b, c)
                        })
                    };
                    let seq = run(false);
                    for i in 0..m {
                        for j in 0..n {
                            let e: f64 = (0..k)
                                .map(|p| {
                                    a[i * a_rs + p * a_cs] as f64 * b[p * b_rs + j * b_cs] as f64
                                })
                                .sum();
                            let tol = 1e-5 * (k as f64).sqrt() * 4.0;
                            let got = seq[i * n + j] as f64;
                            assert!((got - e).abs() <= tol, "{m}x{n}x{k} {blocks} ({i},{j})");
                        }
                    }
                    let par = run(true);
                    let same = par
                        .iter()
                        .zip(&seq)
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(same, "{m}x{n}x{k} ta={ta} tb={tb} in {blocks} blocks");
                }
            }
        }
    }
}
