// Reference GEMM for the CPU backend: C = A·B over f32/f64 with arbitrary operand strides.
// Fold-order guarantee: every C[i][j] is `acc = acc + A[i][p] * B[p][j]` for p = 0..k in increasing
// order from acc = +0, multiply and add each rounded separately (never FMA), so it is bit-identical
// to the naive triple loop whatever the ISA, blocking or thread count.

use std::mem::MaybeUninit;
use std::ops::{Add, Mul};

/// Element types the reference GEMM supports (`f32`, `f64`). Sealed: the hidden items pick the
/// SIMD microkernels, so outside implementations could break the fold-order guarantee.
pub trait RefGemmElem:
    Copy + Send + Sync + 'static + Add<Output = Self> + Mul<Output = Self> + sealed::Sealed
{
    #[doc(hidden)]
    const REF_ZERO: Self;
    /// The microkernels for `isa` (empty where the target has none), to be used only when
    /// `isa_available(isa)`.
    #[doc(hidden)]
    fn ref_gemm_kernels(isa: Isa) -> &'static [Kernel<Self>];
    /// Packs the `w` contiguous columns of `kc` elements at `src[start + j·cs ..]` as the rows
    /// of the `nr`-wide panel `dst` with vector transposes, where this type and CPU have them;
    /// false (nothing written) elsewhere. A copy: the values, and so the fold, are unchanged.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn pack_columns_fast(
        _dst: &mut [Self],
        _nr: usize,
        _src: &[Self],
        _start: usize,
        _cs: usize,
        _kc: usize,
        _w: usize,
    ) -> bool {
        false
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Instruction-set levels with microkernels, best first.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx,
    Scalar,
}

const ISAS: [Isa; 3] = [Isa::Avx512, Isa::Avx, Isa::Scalar];

/// Whether this CPU runs `isa` (std caches the detection, so this is cheap per call).
fn isa_available(isa: Isa) -> bool {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => is_x86_feature_detected!("avx512f"),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx => is_x86_feature_detected!("avx"),
        Isa::Scalar => true,
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// Microkernel contract: `f(kc, a, lda, b, c, ldc, accumulate)` computes one `mr x nr` tile of C
/// over a depth block of `kc`. The A panel holds A(i, p) at `a[p*lda + i]` (column kernel) or
/// `a[i*lda + p]` (row kernel): a packed panel (`lda` = `mr` or `kc`), or A itself read in place
/// with its column or row stride; the packed B panel holds B(p, j) at
/// `b[p*nr + j]`; the tile is at `c` with row stride `ldc`. Accumulators start at +0, or at the
/// tile's current values when `accumulate` (continuing the fold from the previous depth block).
type KernelFn<T> = unsafe fn(usize, *const T, usize, *const T, *mut T, usize, bool);

/// A microkernel pair with its register tile (`mr x nr`) and cache-block sizes.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Kernel<T> {
    mr: usize,
    nr: usize,
    /// Depth of one k block. Larger means fewer passes over C; the `kc x nr` B panel streams
    /// from L2 fast enough on current cores that it need not fit L1.
    kc: usize,
    /// Rows of A per block: the `mc x kc` A block (packed, or read in place) should stay in L2.
    mc: usize,
    /// Columns of B packed per pass: the `kc x nc` packed B block should stay in L3.
    nc: usize,
    /// Relative time per computed column (padding included), to pick among an ISA's kernels.
    col_cost: usize,
    /// Reads an A panel column by column (packed, or A in place).
    a_cols: KernelFn<T>,
    /// Reads an A panel row by row (packed, or A in place).
    a_rows: KernelFn<T>,
}

/// The best ISA's kernel with the least estimated time for `n` columns (padding included) on
/// the busiest of `threads` threads when the column panels are shared out evenly (11 panels of
/// 48 on two threads leave one thread a panel longer; 16 of 32 split evenly). Every kernel
/// computes the same fold, so the choice never changes the bits.
fn pick_kernel<T: RefGemmElem>(n: usize, threads: usize) -> Kernel<T> {
    let isa = ISAS
        .into_iter()
        .find(|&isa| isa_available(isa))
        .unwrap_or(Isa::Scalar);
    let cost = |k: &Kernel<T>| n.div_ceil(k.nr).div_ceil(threads.max(1)) * k.nr * k.col_cost;
    *T::ref_gemm_kernels(isa)
        .iter()
        .min_by_key(|k| cost(k))
        .expect("every ISA in use has a kernel")
}

/// Below this many multiply-adds a parallel split costs more than it saves.
const PAR_MIN_WORK: u128 = 64 * 64 * 64;

/// `c` (m x n, row-major, row stride n) = A·B, where `A(i,p) = a[i*a_rs + p*a_cs]` and
/// `B(p,j) = b[p*b_rs + j*b_cs]` (any strides, so transposed operands need no copy).
/// Writes every element of `c[..m*n]`, reading none before it is written (so `c` may start
/// uninitialised). Each output is the in-order fold described at the top of this file, so
/// results are bit-identical to the naive loop for every thread count. With `parallel`, large
/// problems are split over the tlrs threads (`parallel::team_for`).
///
/// # Panics
/// If `c` is shorter than `m*n`, or an element of A or B addressed by the strides lies outside
/// `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_ref<T: RefGemmElem>(
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
    let (a, b) = (View::new(a, a_rs, a_cs), View::new(b, b_rs, b_cs));
    let threads = threads_for(m, n, k, parallel);
    gemm_with_kernel(pick_kernel::<T>(n, threads), m, n, k, a, b, c, threads);
}

/// Threads a product runs on: all of them when asked and large enough, else one.
fn threads_for(m: usize, n: usize, k: usize, parallel: bool) -> usize {
    if parallel && m as u128 * n as u128 * k as u128 >= PAR_MIN_WORK {
        super::parallel::num_threads()
    } else {
        1
    }
}

/// Strided read-only view of a matrix operand: element (r, q) is `data[r*rs + q*cs]`.
#[derive(Clone, Copy)]
struct View<'a, T> {
    data: &'a [T],
    rs: usize,
    cs: usize,
}

impl<'a, T> View<'a, T> {
    fn new(data: &'a [T], rs: usize, cs: usize) -> Self {
        View { data, rs, cs }
    }
}

/// Panics unless every element `(r, q)` with `r < rows`, `q < cols` is inside the view's data.
fn check_extent<T>(name: &str, v: View<'_, T>, rows: usize, cols: usize) {
    let (rs, cs, len) = (v.rs, v.cs, v.data.len());
    let last = (rows - 1)
        .checked_mul(rs)
        .and_then(|x| (cols - 1).checked_mul(cs).and_then(|y| x.checked_add(y)));
    if !matches!(last, Some(last) if last < len) {
        panic!(
            "gemm_ref: {name} ({rows} x {cols}, strides {rs}, {cs}) exceeds its buffer of {len}"
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn gemm_with_kernel<T: RefGemmElem>(
    kern: Kernel<T>,
    m: usize,
    n: usize,
    k: usize,
    a: View<'_, T>,
    b: View<'_, T>,
    c: &mut [MaybeUninit<T>],
    threads: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    let mn = m.checked_mul(n).expect("gemm_ref: m*n overflows usize");
    assert!(c.len() >= mn, "gemm_ref: c is shorter than m*n = {mn}");
    let c = &mut c[..mn];
    if k == 0 {
        // The empty fold is its start value.
        c.iter_mut().for_each(|v| _ = v.write(T::REF_ZERO));
        return;
    }
    check_extent("a", a, m, k);
    check_extent("b", b, k, n);
    // The thread count sets how C is cut into rectangles, never how an output is computed.
    blocked(&kern, m, n, k, a, b, c, threads);
}

/// Raw pointer to C shared by tasks that write disjoint rectangles.
#[derive(Clone, Copy)]
struct CPtr<T>(*mut T);
// SAFETY: the pointer is only dereferenced inside the disjoint rectangles of C that
// `plan_rects` hands to distinct tasks, while the `&mut` borrow of C it came from is held unused.
unsafe impl<T: Send> Send for CPtr<T> {}
// SAFETY: as for `Send`: no two tasks touch the same element of C.
unsafe impl<T: Send> Sync for CPtr<T> {}

/// A rectangle of C: rows `r0..r1`, columns `c0..c1`.
#[derive(Clone, Copy, Debug)]
struct Rect {
    r0: usize,
    r1: usize,
    c0: usize,
    c1: usize,
}

/// Splits C into independent rectangles for `threads` workers: a multiple of `threads` of them
/// (so cores get equal shares, with spares for work stealing), as square as the shape allows,
/// edges on `mr` / `nr` multiples. The split decides only who computes an output, never how, so
/// results do not depend on it.
fn plan_rects(m: usize, n: usize, threads: usize, mr: usize, nr: usize) -> Vec<Rect> {
    let (row_units, col_units) = (m.div_ceil(mr), n.div_ceil(nr));
    let mut best = (1, 1);
    if threads > 1 {
        let target = threads * 2;
        let mut best_cost = f64::MAX;
        for rp in 1..=target.min(row_units) {
            let cp = (target / rp).min(col_units);
            // Prefer reaching the target count, then square rectangles (least packing per flop).
            let count = rp * cp;
            let (h, w) = (m as f64 / rp as f64, n as f64 / cp as f64);
            let cost = (target - count) as f64 * 1e9 + (h / w).ln().abs();
            if cost < best_cost {
                best_cost = cost;
                best = (rp, cp);
            }
        }
    }
    let rows_per = row_units.div_ceil(best.0) * mr;
    let cols_per = col_units.div_ceil(best.1) * nr;
    let mut rects = Vec::new();
    for r0 in (0..m).step_by(rows_per) {
        for c0 in (0..n).step_by(cols_per) {
            rects.push(Rect {
                r0,
                r1: (r0 + rows_per).min(m),
                c0,
                c1: (c0 + cols_per).min(n),
            });
        }
    }
    rects
}

/// Packing buffers (A, B) of one worker, reused across its blocks.
type Bufs<T> = (Vec<T>, Vec<T>);

/// Computes C over `rects`, in parallel when there are several.
#[allow(clippy::too_many_arguments)]
fn blocked<T: RefGemmElem>(
    kern: &Kernel<T>,
    m: usize,
    n: usize,
    k: usize,
    a: View<'_, T>,
    b: View<'_, T>,
    c: &mut [MaybeUninit<T>],
    threads: usize,
) {
    let rects = plan_rects(m, n, threads, kern.mr, kern.nr);
    // Every element is written (the first depth block stores without reading) before any read.
    let cp = CPtr(c.as_mut_ptr().cast::<T>());
    // Each rectangle packs into buffers of its own (a few per product); one rectangle runs on
    // the calling thread (`team_for` with a single item).
    super::parallel::team_for(rects.len(), usize::MAX, |i| {
        let bufs: &mut Bufs<T> = &mut (Vec::new(), Vec::new());
        run_rect(kern, &rects[i], k, a, b, cp, n, bufs)
    });
}

/// The blocked algorithm on one rectangle of C: for each column block and, in increasing order,
/// each depth block, pack that B block, then for each row block pack the A panels it cannot
/// read in place (all of them where A's stride along the kernel's reading is not 1, else only a
/// last panel shorter than mr) and run the microkernel over every tile. Depth blocks after the
/// first continue each output's fold from the value stored in C, which keeps the order p = 0..k
/// intact.
#[allow(clippy::too_many_arguments)]
fn run_rect<T: RefGemmElem>(
    kern: &Kernel<T>,
    r: &Rect,
    k: usize,
    a: View<'_, T>,
    b: View<'_, T>,
    cp: CPtr<T>,
    n: usize,
    (apack, bpack): &mut Bufs<T>,
) {
    let (mr, nr) = (kern.mr, kern.nr);
    let kc_max = kern.kc.max(1);
    let mc_max = kern.mc.max(mr).next_multiple_of(mr);
    let nc_max = kern.nc.max(nr).next_multiple_of(nr);
    // Row-major A is read by the kernel that reads panels by rows; other layouts by the one that
    // reads them column by column (p-major). Where A has unit stride along that direction the
    // kernel reads it in place; otherwise its panels are packed (copied) first. In place was
    // never slower, on 1 and 2 threads, from thin products (512 x 32 x 4608, the copy 15% of
    // the time) to square ones with power-of-two strides (1024^3: 26.7 -> 26.3 ms).
    let by_rows = a.cs <= a.rs;
    let func = if by_rows { kern.a_rows } else { kern.a_cols };
    // In place: panel ip starts `step` elements after panel ip - 1, its rows (or columns) `lda`
    // apart; packed panels have lda = kc (rows) or mr (columns).
    let (unit, step, lda) = if by_rows {
        (a.cs == 1, mr * a.rs, a.rs)
    } else {
        (a.rs == 1, mr, a.cs)
    };
    for jc in (r.c0..r.c1).step_by(nc_max) {
        let nc = nc_max.min(r.c1 - jc);
        let npanels = nc.div_ceil(nr);
        for pc in (0..k).step_by(kc_max) {
            let kc = kc_max.min(k - pc);
            bpack.resize(npanels * kc * nr, T::REF_ZERO);
            for (q, dst) in bpack.chunks_exact_mut(kc * nr).enumerate() {
                pack_b(dst, b, pc, kc, jc + q * nr, nr.min(nc - q * nr), nr);
            }
            for ic in (r.r0..r.r1).step_by(mc_max) {
                let mc = mc_max.min(r.r1 - ic);
                // In place, only a last panel shorter than mr is packed (the kernel reads mr rows).
                let packed_from = if unit { mc / mr } else { 0 };
                let a_panels = mc.div_ceil(mr) - packed_from;
                apack.resize(a_panels * mr * kc, T::REF_ZERO);
                for (ip, dst) in apack.chunks_exact_mut(mr * kc).enumerate() {
                    let i0 = ic + (packed_from + ip) * mr;
                    pack_a(dst, a, by_rows, i0, mr.min(ic + mc - i0), pc, kc, mr);
                }
                let panels = APanels {
                    packed: apack,
                    packed_lda: if by_rows { kc } else { mr },
                    packed_from,
                    // Rows ic..ic + packed_from*mr and depth pc..pc + kc lie inside A
                    // (`check_extent` covered m x k), so the in-place reads stay inside it.
                    in_place: (a.data[ic * a.rs + pc * a.cs..].as_ptr(), step, lda),
                };
                let blk = Block {
                    i0: ic,
                    h: mc,
                    j0: jc,
                    w: nc,
                    kc,
                    accumulate: pc > 0,
                };
                compute_block(kern, func, &panels, bpack, &blk, cp, n);
            }
        }
    }
}

/// The A panels of one block as the microkernel reads them: panel `ip` (rows `ip*mr..`) is
/// read in A itself for `ip < packed_from` (block start, elements from one panel to the next,
/// `lda`), else it is packed panel `ip - packed_from` of `packed` (each `mr x kc`).
struct APanels<'a, T> {
    packed: &'a [T],
    packed_lda: usize,
    packed_from: usize,
    in_place: (*const T, usize, usize),
}

impl<T> APanels<'_, T> {
    /// Where panel `ip` starts and its `lda` (the `KernelFn` contract).
    fn panel(&self, ip: usize, mr: usize, kc: usize) -> (*const T, usize) {
        if ip < self.packed_from {
            // Address arithmetic only; the bounds are `run_rect`'s.
            let (start, step, lda) = self.in_place;
            (start.wrapping_add(ip * step), lda)
        } else {
            let q = ip - self.packed_from;
            let panel = &self.packed[q * mr * kc..(q + 1) * mr * kc];
            (panel.as_ptr(), self.packed_lda)
        }
    }
}

/// Rows `i0..i0+h` x columns `j0..j0+w` of C over one depth block of `kc`.
struct Block {
    i0: usize,
    h: usize,
    j0: usize,
    w: usize,
    kc: usize,
    accumulate: bool,
}

/// Runs the microkernel over every tile of a block, B panel outermost: each B panel is reused
/// from L1/L2 across the whole A block, which stays in L2.
#[allow(clippy::too_many_arguments)]
fn compute_block<T: RefGemmElem>(
    kern: &Kernel<T>,
    func: KernelFn<T>,
    apanels: &APanels<'_, T>,
    bpack: &[T],
    blk: &Block,
    cp: CPtr<T>,
    n: usize,
) {
    let (mr, nr, kc) = (kern.mr, kern.nr, blk.kc);
    assert!(mr * nr <= MAX_TILE, "kernel tile larger than MAX_TILE");
    // Edge tiles go through this buffer, so the microkernel always sees a full mr x nr tile.
    let mut edge = [T::REF_ZERO; MAX_TILE];
    let (np, nq) = (blk.h.div_ceil(mr), blk.w.div_ceil(nr));
    for (q, ip) in (0..nq).flat_map(|q| (0..np).map(move |ip| (q, ip))) {
        let (i0, j0) = (blk.i0 + ip * mr, blk.j0 + q * nr);
        let (h, w) = (mr.min(blk.i0 + blk.h - i0), nr.min(blk.j0 + blk.w - j0));
        // C tiles are far apart in memory (row stride n) and each is touched once per depth
        // block, so fetch the next tile's rows while this one computes.
        let (nip, nqq) = if ip + 1 < np { (ip + 1, q) } else { (0, q + 1) };
        if nqq < nq {
            let (ni0, nj0) = (blk.i0 + nip * mr, blk.j0 + nqq * nr);
            let (nh, nw) = (mr.min(blk.i0 + blk.h - ni0), nr.min(blk.j0 + blk.w - nj0));
            prefetch_rows(cp.0 as *const T, ni0 * n + nj0, nh, nw, n);
        }
        let (ap, lda) = apanels.panel(ip, mr, kc);
        let bp = bpack[q * kc * nr..(q + 1) * kc * nr].as_ptr();
        // SAFETY: `i0 + h <= m` and `j0 + w <= n`, so the tile lies in C (m x n, row stride n),
        // inside this task's rectangle, which no other task touches (see `plan_rects`).
        let ctile = unsafe { cp.0.add(i0 * n + j0) };
        if h == mr && w == nr {
            // SAFETY: the A panel holds mr x kc elements as `lda` lays them out (packed, or in
            // A; see `APanels`) and the B panel kc*nr elements, in the layouts the `KernelFn`
            // contract names; the full tile is inside C (above).
            unsafe { func(kc, ap, lda, bp, ctile, n, blk.accumulate) };
            continue;
        }
        if blk.accumulate {
            for r in 0..h {
                // SAFETY: row r of the tile has w valid elements inside C (above).
                let src = unsafe { std::slice::from_raw_parts(ctile.add(r * n), w) };
                edge[r * nr..r * nr + w].copy_from_slice(src);
            }
        }
        // SAFETY: as above, with the tile in `edge` (mr x nr, row stride nr).
        unsafe { func(kc, ap, lda, bp, edge.as_mut_ptr(), nr, blk.accumulate) };
        for r in 0..h {
            // SAFETY: as above; only the valid h x w part is written back.
            let dst = unsafe { std::slice::from_raw_parts_mut(ctile.add(r * n), w) };
            dst.copy_from_slice(&edge[r * nr..r * nr + w]);
        }
    }
}

/// Hints the cache to load `rows` rows of `w` elements starting at `base + off`, row stride `ld`.
#[inline]
fn prefetch_rows<T>(base: *const T, off: usize, rows: usize, w: usize, ld: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let line = 64 / std::mem::size_of::<T>();
        for r in 0..rows {
            for j in (0..w).step_by(line) {
                // Address arithmetic only (wrapping_add never dereferences), and a prefetch never
                // faults, so any address is fine; callers pass addresses inside C anyway.
                let p = base.wrapping_add(off + r * ld + j) as *const i8;
                // SAFETY: `_mm_prefetch` needs only SSE (baseline on x86_64) and cannot fault.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (base, off, rows, w, ld);
}

/// At least the largest `mr * nr` of any kernel (the edge-tile buffer size).
const MAX_TILE: usize = 512;

// Packing the operands into the microkernels' panel layouts.
#[path = "gemm_ref_pack.rs"]
mod pack;
use pack::{pack_a, pack_b};

// The kernel tables (which microkernels, tile and block sizes, per type and CPU) and the
// portable scalar microkernel.
#[path = "gemm_ref_kernels.rs"]
mod kernels;

// The x86 SIMD microkernels (AVX and AVX-512), one file of their own.
#[cfg(target_arch = "x86_64")]
#[path = "gemm_ref_simd.rs"]
mod x86;

#[cfg(test)]
#[path = "gemm_ref_tests.rs"]
mod tests;
