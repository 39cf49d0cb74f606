//! Device matrix products. With reference kernels, an exact kernel folds each output over k in
//! index order (the CPU's bits). With fast kernels, cuBLAS at the GPU matmul precision
//! (`--fast-gpu-matmul-precision`, docs/numerics.md): fp32 → SGEMM and fp64 → DGEMM whatever
//! the tensors' dtype, converting operands and result when they differ.

use super::convert::cast_buffer;
use crate::backend::cuda::blas::{precision_rule, GpuMatmulPrecision, RowMajorMatmul};
use crate::backend::cuda::{kernels, DeviceBuffer};
use crate::{DType, Error, Result};

/// Selects the arithmetic of this thread's later GPU matmuls (`--fast-gpu-matmul-precision`).
pub fn set_matmul_precision(p: GpuMatmulPrecision) {
    crate::backend::settings::update(|s| s.gpu_fp64 = p == GpuMatmulPrecision::Fp64);
}

/// The precision a product of `dtype` tensors runs at: the flag's under fast kernels, else the
/// tensors' own.
fn effective_precision(dtype: DType) -> GpuMatmulPrecision {
    if crate::backend::settings::current().fast {
        matmul_precision()
    } else if dtype == DType::F64 {
        GpuMatmulPrecision::Fp64
    } else {
        GpuMatmulPrecision::Fp32
    }
}

/// This thread's GPU matmul precision.
pub fn matmul_precision() -> GpuMatmulPrecision {
    if crate::backend::settings::current().gpu_fp64 {
        GpuMatmulPrecision::Fp64
    } else {
        GpuMatmulPrecision::Fp32
    }
}

/// C = op(A)·op(B) for each of `mm.batch` products (row-major, contiguous C of
/// batch·m·n elements), in the dtype of A and B; A and B share one dtype and one GPU. With
/// reference kernels, the exact kernel (every output one fold over k in index order, the CPU's
/// bits); with fast kernels, cuBLAS at the GPU matmul precision.
pub fn gemm(a: &DeviceBuffer, b: &DeviceBuffer, mm: RowMajorMatmul) -> Result<DeviceBuffer> {
    if !crate::backend::settings::current().fast {
        return gemm_exact(a, b, mm);
    }
    let dtype = a.dtype();
    let gpu = a.gpu();
    let rule = precision_rule(dtype, effective_precision(dtype));
    let call = mm
        .to_gemm()
        .map_err(|e| Error::arg("matmul", e.to_string()))?;
    let out_len = mm.batch * mm.m * mm.n;
    if rule.convert {
        let (ac, bc) = (cast_buffer(a, rule.compute)?, cast_buffer(b, rule.compute)?);
        let c = gpu.alloc(rule.compute, out_len)?;
        zero_if_empty_k(&c, mm)?;
        gpu.gemm(&call, &ac, &bc, &c)?;
        cast_buffer(&c, dtype)
    } else {
        let c = gpu.alloc(dtype, out_len)?;
        zero_if_empty_k(&c, mm)?;
        gpu.gemm(&call, a, b, &c)?;
        Ok(c)
    }
}

/// With k = 0 the product is all zeros; cuBLAS then only scales C by beta = 0, which is the
/// same, but uninitialised memory times 0 could be NaN, so fill it explicitly.
fn zero_if_empty_k(c: &DeviceBuffer, mm: RowMajorMatmul) -> Result<()> {
    if mm.k == 0 {
        super::elementwise::fill_into(c, 0.0)?;
    }
    Ok(())
}

/// The dtype a product of `dtype` tensors is computed in at the current precision.
pub fn compute_dtype(dtype: DType) -> DType {
    precision_rule(dtype, effective_precision(dtype)).compute
}

/// Products at least this many rows and columns run on a tiled exact kernel; smaller ones (a
/// matrix-vector product) on one output per thread.
const TILED_FROM: usize = 8;

/// Output rows and columns of one block of `gemm_exact_block` (cu/nn.cu GEMM_BM, GEMM_BN):
/// products at least this large in both run on it, smaller ones on `gemm_exact_tiled`, whose
/// 8 x 8 tiles per thread waste less work on a small product.
const BLOCK_TILE: usize = 128;

// gemm_exact_block's thread layout (a 16 x 16 grid, 4 staged values each) assumes 256 threads.
const _: () = assert!(kernels::BLOCK == 256);

/// The reference product (cu/nn.cu `gemm_exact_block`, `gemm_exact_tiled` or, for thin
/// products, `gemm_exact`): every output one fold over k in index order with a separate multiply
/// and add, so the bits are the CPU reference kernels' whichever kernel runs.
fn gemm_exact(a: &DeviceBuffer, b: &DeviceBuffer, mm: RowMajorMatmul) -> Result<DeviceBuffer> {
    let overflow = || Error::shape("matmul", "the product's size overflows the address space");
    let out_len = mm
        .batch
        .checked_mul(mm.m)
        .and_then(|v| v.checked_mul(mm.n))
        .ok_or_else(overflow)?;
    let (gpu, dtype) = (a.gpu(), a.dtype());
    let c = gpu.alloc(dtype, out_len)?;
    let tiles = |side: usize| {
        mm.batch
            .checked_mul(mm.m.div_ceil(side))
            .and_then(|v| v.checked_mul(mm.n.div_ceil(side)))
            .ok_or_else(overflow)
    };
    // (kernel, its count argument, threads to launch)
    let (kernel, count, threads) = if mm.m >= BLOCK_TILE && mm.n >= BLOCK_TILE {
        // One block of 256 threads per tile.
        let t = tiles(BLOCK_TILE)?;
        let threads = t
            .checked_mul(kernels::BLOCK as usize)
            .ok_or_else(overflow)?;
        ("gemm_exact_block", t, threads)
    } else if mm.m >= TILED_FROM && mm.n >= TILED_FROM {
        let t = tiles(TILED_FROM)?;
        ("gemm_exact_tiled", t, t)
    } else {
        ("gemm_exact", out_len, out_len)
    };
    gpu.launch(
        "nn",
        kernel,
        dtype,
        threads,
        &[
            a.into(),
            b.into(),
            (&c).into(),
            count.into(),
            mm.m.into(),
            mm.n.into(),
            mm.k.into(),
            usize::from(mm.trans_a).into(),
            usize::from(mm.trans_b).into(),
            mm.stride_a.into(),
            mm.stride_b.into(),
            mm.stride_c.into(),
        ],
    )?;
    Ok(c)
}
