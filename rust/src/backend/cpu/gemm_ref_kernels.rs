//! The reference GEMM's kernel tables: for each element type and instruction set, the
//! microkernels with their register tiles, cache blocks and relative cost per computed column
//! (`pick_kernel` weighs padding against these), and the portable scalar microkernel.

#[cfg(target_arch = "x86_64")]
use super::x86::{f32_avx, f32_avx512, f64_avx, f64_avx512};
use super::{Isa, Kernel, RefGemmElem};

/// Builds a `Kernel` from a microkernel whose last generic parameter says whether the A panel is
/// read by rows; `cost c` is the cost per column at either vector width, `cost [full, halves]`
/// one for each (`Kernel::col_cost`).
macro_rules! kernel {
    ($f:ident::<$($g:tt),*>, $mr:literal x $nr:literal, kc $kc:literal, mc $mc:literal,
     nc $nc:literal, cost $cost:literal) => {
        kernel!($f::<$($g),*>, $mr x $nr, kc $kc, mc $mc, nc $nc, cost [Some($cost), Some($cost)])
    };
    ($f:ident::<$($g:tt),*>, $mr:literal x $nr:literal, kc $kc:literal, mc $mc:literal,
     nc $nc:literal, cost [$full:expr, $halves:expr]) => {
        Kernel {
            mr: $mr,
            nr: $nr,
            kc: $kc,
            mc: $mc,
            nc: $nc,
            col_cost: [$full, $halves],
            a_cols: $f::<$($g,)* false>,
            a_rows: $f::<$($g,)* true>,
        }
    };
}

// Block sizes were tuned on Zen 5 (48 KiB L1d, 1 MiB L2 per core). 8 x 3 vectors beat 12 x 2,
// 6 x 4 and 8 x 2 there (fewer broadcasts per multiply); 8 x 2 remains for widths that 3-vector
// panels would pad heavily (n = 64 or 256 for f32). Where 512-bit operations run as two halves
// (Zen 4), tiles with fewer broadcasts per multiply measured faster per computed column (f32, 2
// threads, shapes every tile divides: 4 x 6 vectors 96, 6 x 4 98, 8 x 3 100, 8 x 2 111; f64
// alike: 96, 97-100, 100, 110), so both are chosen there too.
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
                kernel!(f32_avx512::<8, 2>, 8 x 32, kc 384, mc 192, nc 4096,
                        cost [Some(108), Some(111)]),
                kernel!(f32_avx512::<6, 4>, 6 x 64, kc 384, mc 192, nc 4096, cost [None, Some(98)]),
                kernel!(f32_avx512::<4, 6>, 4 x 96, kc 384, mc 192, nc 4096, cost [None, Some(96)]),
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
                kernel!(f64_avx512::<8, 2>, 8 x 16, kc 256, mc 120, nc 2048,
                        cost [Some(108), Some(110)]),
                kernel!(f64_avx512::<6, 4>, 6 x 32, kc 256, mc 120, nc 2048, cost [None, Some(98)]),
                kernel!(f64_avx512::<4, 6>, 4 x 48, kc 256, mc 120, nc 2048, cost [None, Some(96)]),
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

/// Whether this CPU runs 512-bit vector operations as two 256-bit halves: AMD family 0x19 (Zen 3
/// and Zen 4, of which only Zen 4 has AVX-512). Only the choice among kernels depends on it,
/// never a result (every kernel computes the same fold).
pub(super) fn avx512_in_halves() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HALVES: OnceLock<bool> = OnceLock::new();
        *HALVES.get_or_init(|| {
            use std::arch::x86_64::__cpuid;
            #[allow(unused_unsafe)]
            // SAFETY: CPUID leaves 0 and 1 exist on every x86_64 CPU.
            let (vendor, sig) = unsafe { (__cpuid(0), __cpuid(1)) };
            let amd =
                (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6E65, 0x444D_4163);
            amd && cpu_family(sig.eax) == 0x19
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The CPU family from CPUID leaf 1's EAX: the base family, plus the extended family where the
/// base is 0xF.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn cpu_family(eax: u32) -> u32 {
    let base = (eax >> 8) & 0xF;
    base + if base == 0xF { (eax >> 20) & 0xFF } else { 0 }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_family_decodes_known_signatures() {
        // Zen 4 (EPYC 9004), Zen 5, Zen 3, an Intel Xeon (family 6).
        for (eax, family) in [
            (0x00A1_0F11, 0x19),
            (0x00B4_0F40, 0x1A),
            (0x00A0_0F11, 0x19),
            (0x0005_0654, 6),
        ] {
            assert_eq!(super::cpu_family(eax), family, "{eax:#x}");
        }
    }
}
