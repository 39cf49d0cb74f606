//! The reference GEMM's kernel tables: for each element type and instruction set, the
//! microkernels with their register tiles, cache blocks and relative cost per computed column
//! (`pick_kernel` weighs padding against these), and the portable scalar microkernel.

#[cfg(target_arch = "x86_64")]
use super::x86::{f32_avx, f32_avx512, f64_avx, f64_avx512};
use super::{Isa, Kernel, RefGemmElem};

/// Builds a `Kernel` from a microkernel whose last generic parameter says whether the A panel is
/// read by rows; `cost` is its relative time per computed column (`Kernel::col_cost`).
macro_rules! kernel {
    ($f:ident::<$($g:tt),*>, $mr:literal x $nr:literal, kc $kc:literal, mc $mc:literal,
     nc $nc:literal, cost $cost:literal) => {
        Kernel {
            mr: $mr,
            nr: $nr,
            kc: $kc,
            mc: $mc,
            nc: $nc,
            col_cost: $cost,
            a_cols: $f::<$($g,)* false>,
            a_rows: $f::<$($g,)* true>,
        }
    };
}

// Block sizes were tuned on Zen 5 (48 KiB L1d, 1 MiB L2 per core). 8 x 3 vectors beat 12 x 2,
// 6 x 4 and 8 x 2 there; 8 x 2 remains for widths that 3-vector panels would pad heavily (n = 64
// or 256 for f32). On Zen 4, with the multiplies broadcasting A themselves (gemm_ref_simd.rs),
// 8 x 3 was again the fastest or within 1% of it on six f32 and three f64 shapes every tile
// divides (2 threads; 8 x 2 at 99-113, 6 x 4 and 4 x 6 at 99-130). 8 x 1 costs 122-126 per
// column but pads least: products 9 or 10 columns wide (a convolution's weight gradient over
// one input channel, a classifier's last layer) take it, 8 x 9 x 784: 0.0104 -> 0.0083 ms.
impl RefGemmElem for f32 {
    const REF_ZERO: f32 = 0.0;
    #[cfg(target_arch = "x86_64")]
    fn pack_columns_fast(
        dst: &mut [f32],
        nr: usize,
        src: &[f32],
        start: usize,
        cs: usize,
        kc: usize,
        w: usize,
    ) -> bool {
        if !super::super::simd::has_avx512() {
            return false;
        }
        // SAFETY: AVX-512F was detected just above.
        unsafe { super::super::tile16::columns_to_rows(dst, nr, src, start, cs, kc, w) };
        true
    }
    fn ref_gemm_kernels(isa: Isa) -> &'static [Kernel<f32>] {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => &[
                kernel!(f32_avx512::<8, 3>, 8 x 48, kc 384, mc 192, nc 4096, cost 100),
                kernel!(f32_avx512::<8, 2>, 8 x 32, kc 384, mc 192, nc 4096, cost 108),
                kernel!(f32_avx512::<8, 1>, 8 x 16, kc 384, mc 192, nc 4096, cost 125),
            ],
            #[cfg(target_arch = "x86_64")]
            Isa::Avx => &[kernel!(f32_avx::<6, 2>, 6 x 16, kc 256, mc 240, nc 4096, cost 100)],
            Isa::Scalar => {
                &[kernel!(kernel_scalar::<f32, 4, 8>, 4 x 8, kc 256, mc 128, nc 2048, cost 100)]
            }
            #[allow(unreachable_patterns)]
            _ => &[],
        }
    }
}

impl RefGemmElem for f64 {
    const REF_ZERO: f64 = 0.0;
    fn ref_gemm_kernels(isa: Isa) -> &'static [Kernel<f64>] {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => &[
                kernel!(f64_avx512::<8, 3>, 8 x 24, kc 256, mc 120, nc 2048, cost 100),
                kernel!(f64_avx512::<8, 2>, 8 x 16, kc 256, mc 120, nc 2048, cost 108),
                kernel!(f64_avx512::<8, 1>, 8 x 8, kc 256, mc 120, nc 2048, cost 125),
            ],
            #[cfg(target_arch = "x86_64")]
            Isa::Avx => &[kernel!(f64_avx::<6, 2>, 6 x 8, kc 256, mc 120, nc 2048, cost 100)],
            Isa::Scalar => {
                &[kernel!(kernel_scalar::<f64, 4, 4>, 4 x 4, kc 256, mc 128, nc 2048, cost 100)]
            }
            #[allow(unreachable_patterns)]
            _ => &[],
        }
    }
}

/// Portable microkernel (any target): the same fold in plain scalar arithmetic, which Rust never
/// contracts into FMA.
///
/// # Safety
/// The `KernelFn` contract.
unsafe fn kernel_scalar<T: RefGemmElem, const MR: usize, const NR: usize, const A_ROWS: bool>(
    kc: usize,
    a: *const T,
    lda: usize,
    b: *const T,
    c: *mut T,
    ldc: usize,
    accumulate: bool,
) {
    let (a_row, a_step) = if A_ROWS { (lda, 1) } else { (1, lda) };
    let mut acc = [[T::REF_ZERO; NR]; MR];
    if accumulate {
        for (i, row) in acc.iter_mut().enumerate() {
            // SAFETY: row i of the tile (NR elements) is inside the caller's C.
            *row = unsafe { std::ptr::read_unaligned(c.add(i * ldc) as *const [T; NR]) };
        }
    }
    for p in 0..kc {
        // SAFETY: row p of the packed B panel (NR elements).
        let bp = unsafe { std::ptr::read_unaligned(b.add(p * NR) as *const [T; NR]) };
        for (i, row) in acc.iter_mut().enumerate() {
            // SAFETY: A(i, p) of the panel, per the contract.
            let av = unsafe { *a.add(i * a_row + p * a_step) };
            for (x, &bv) in row.iter_mut().zip(&bp) {
                *x = *x + av * bv;
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        // SAFETY: as for the loads above.
        unsafe { std::ptr::write_unaligned(c.add(i * ldc) as *mut [T; NR], *row) };
    }
}
