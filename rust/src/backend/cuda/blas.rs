//! Maps a row-major (batched) matrix product onto one column-major cuBLAS GEMM call, as plain
//! data, and picks SGEMM or DGEMM from the GPU matmul precision. Pure: it runs and is tested on
//! machines without CUDA; the code that launches cuBLAS only copies these fields over.

use std::ffi::{c_int, c_longlong};

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{GemmConfig, StridedBatchedConfig};

use crate::dtype::DType;

/// A row-major product C[m, n] = op(A)[m, k] · op(B)[k, n], repeated `batch` times.
/// A is stored as [m, k] (or [k, m] when `trans_a`), B as [k, n] (or [n, k] when `trans_b`),
/// each contiguous; C is contiguous [m, n]. Strides are in elements between consecutive
/// matrices of a batch; 0 broadcasts one matrix over the batch (allowed for A and B only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowMajorMatmul {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub trans_a: bool,
    pub trans_b: bool,
    pub batch: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
}

/// cuBLAS's op flag for one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    N,
    T,
}

impl Op {
    pub fn to_cublas(self) -> cublasOperation_t {
        match self {
            Op::N => cublasOperation_t::CUBLAS_OP_N,
            Op::T => cublasOperation_t::CUBLAS_OP_T,
        }
    }
}

/// Which of the caller's row-major operands a cuBLAS argument slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    A,
    B,
}

/// The arguments of `cublas<S|D>gemmStridedBatched` in cuBLAS's own (column-major) terms.
/// cuBLAS computes C(m×n) = op(first)(m×k) · op(second)(k×n) with leading dimensions lda/ldb/ldc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmCall {
    pub first: Operand,
    pub second: Operand,
    pub transa: Op,
    pub transb: Op,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub batch: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
}

/// A product cuBLAS cannot be asked for as described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GemmError {
    /// Batched outputs closer than one matrix apart would overlap (and race).
    OverlappingOutput { stride_c: usize, matrix: usize },
    /// A dimension, leading dimension or stride does not fit cuBLAS's 32/64-bit integers.
    TooLarge { what: &'static str, value: usize },
}

impl std::fmt::Display for GemmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GemmError::OverlappingOutput { stride_c, matrix } => write!(
                f,
                "matmul: batched output stride {stride_c} is smaller than one output matrix ({matrix} elements)"
            ),
            GemmError::TooLarge { what, value } => {
                write!(f, "matmul: {what} = {value} is too large for cuBLAS")
            }
        }
    }
}

impl std::error::Error for GemmError {}

impl RowMajorMatmul {
    /// A single (unbatched) product of contiguous matrices.
    pub fn new(m: usize, n: usize, k: usize, trans_a: bool, trans_b: bool) -> Self {
        RowMajorMatmul {
            m,
            n,
            k,
            trans_a,
            trans_b,
            batch: 1,
            stride_a: m * k,
            stride_b: k * n,
            stride_c: m * n,
        }
    }

    /// The same product over `batch` matrices at the given element strides.
    pub fn batched(self, batch: usize, stride_a: usize, stride_b: usize, stride_c: usize) -> Self {
        RowMajorMatmul {
            batch,
            stride_a,
            stride_b,
            stride_c,
            ..self
        }
    }

    /// The column-major call computing this product.
    ///
    /// A row-major [r, c] buffer is the column-major [c, r] matrix, its transpose. So row-major
    /// C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: B's buffer goes first, A's second,
    /// and m/n swap. An operand already stored transposed is read with OP_T, its leading
    /// dimension being its physical row length, so no transposed copy is ever made.
    pub fn to_gemm(&self) -> Result<GemmCall, GemmError> {
        let (m, n, k) = (self.m, self.n, self.k);
        if self.batch > 1 && self.stride_c < m * n {
            return Err(GemmError::OverlappingOutput {
                stride_c: self.stride_c,
                matrix: m * n,
            });
        }
        // B stored [k, n] (row length n) is column-major Bᵀ: exactly op(B)ᵀ, no op needed.
        // B stored [n, k] (row length k) is column-major (op(B)ᵀ)ᵀ: transpose it back.
        let (transa, lda) = if self.trans_b { (Op::T, k) } else { (Op::N, n) };
        let (transb, ldb) = if self.trans_a { (Op::T, m) } else { (Op::N, k) };
        // cuBLAS requires every leading dimension >= 1 even when the matrix is empty.
        Ok(GemmCall {
            first: Operand::B,
            second: Operand::A,
            transa,
            transb,
            m: n,
            n: m,
            k,
            lda: lda.max(1),
            ldb: ldb.max(1),
            ldc: n.max(1),
            batch: self.batch,
            stride_a: self.stride_b,
            stride_b: self.stride_a,
            stride_c: self.stride_c,
        })
    }
}

fn int(what: &'static str, value: usize) -> Result<c_int, GemmError> {
    c_int::try_from(value).map_err(|_| GemmError::TooLarge { what, value })
}

fn long(what: &'static str, value: usize) -> Result<c_longlong, GemmError> {
    c_longlong::try_from(value).map_err(|_| GemmError::TooLarge { what, value })
}

impl GemmCall {
    /// True when there is nothing for cuBLAS to do; with k == 0 the caller must zero C itself
    /// (an empty sum is 0), which this predicate reports as work to do.
    pub fn is_empty_output(&self) -> bool {
        self.m == 0 || self.n == 0 || self.batch == 0
    }

    /// cudarc's argument struct for `Gemm::gemm_strided_batched`, checking every integer fits.
    pub fn to_cudarc<T>(&self, alpha: T, beta: T) -> Result<StridedBatchedConfig<T>, GemmError> {
        Ok(StridedBatchedConfig {
            gemm: GemmConfig {
                transa: self.transa.to_cublas(),
                transb: self.transb.to_cublas(),
                m: int("m", self.m)?,
                n: int("n", self.n)?,
                k: int("k", self.k)?,
                alpha,
                lda: int("lda", self.lda)?,
                ldb: int("ldb", self.ldb)?,
                beta,
                ldc: int("ldc", self.ldc)?,
            },
            batch_size: int("batch", self.batch)?,
            stride_a: long("stride_a", self.stride_a)?,
            stride_b: long("stride_b", self.stride_b)?,
            stride_c: long("stride_c", self.stride_c)?,
        })
    }
}

/// `--fast-gpu-matmul-precision`: the arithmetic the product is done in, whatever the dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuMatmulPrecision {
    #[default]
    Fp32,
    Fp64,
}

/// The cuBLAS routine a precision selects. TF32 is not one of them: SGEMM under the default
/// math mode is full fp32; TF32 is a separate opt-in (docs/numerics.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmRoutine {
    Sgemm,
    Dgemm,
}

/// How a product of `dtype` tensors runs at a precision: the routine, the dtype it computes in,
/// and whether operands are converted to it first and the result converted back to `dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrecisionRule {
    pub routine: GemmRoutine,
    pub compute: DType,
    pub convert: bool,
}

/// fp32 → SGEMM and fp64 → DGEMM for either tensor dtype: an f64 product at fp32 rounds its
/// operands to f32; an f32 product at fp64 widens them (docs/numerics.md: the flag really selects).
pub fn precision_rule(dtype: DType, precision: GpuMatmulPrecision) -> PrecisionRule {
    let (routine, compute) = match precision {
        GpuMatmulPrecision::Fp32 => (GemmRoutine::Sgemm, DType::F32),
        GpuMatmulPrecision::Fp64 => (GemmRoutine::Dgemm, DType::F64),
    };
    PrecisionRule {
        routine,
        compute,
        convert: dtype != compute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What cuBLAS does with a call, written from its documentation on column-major arrays:
    /// C[i + j·ldc] = Σ_p op(X)(i, p) · op(Y)(p, j), with op(X)(i, p) = X[i + p·lda] for OP_N
    /// and X[p + i·lda] for OP_T (the same for Y with ldb), per batch at the given strides.
    fn cublas_reference(call: &GemmCall, x: &[f64], y: &[f64], c: &mut [f64]) {
        for b in 0..call.batch {
            let (xo, yo, co) = (b * call.stride_a, b * call.stride_b, b * call.stride_c);
            for i in 0..call.m {
                for j in 0..call.n {
                    let mut acc = 0.0;
                    for p in 0..call.k {
                        let xv = match call.transa {
                            Op::N => x[xo + i + p * call.lda],
                            Op::T => x[xo + p + i * call.lda],
                        };
                        let yv = match call.transb {
                            Op::N => y[yo + p + j * call.ldb],
                            Op::T => y[yo + j + p * call.ldb],
                        };
                        acc += xv * yv;
                    }
                    c[co + i + j * call.ldc] = acc;
                }
            }
        }
    }

    /// The plain row-major definition, reading the stored (possibly transposed) operands.
    fn row_major_reference(p: &RowMajorMatmul, a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![UNTOUCHED; p.stride_c * (p.batch - 1) + p.m * p.n];
        for t in 0..p.batch {
            for i in 0..p.m {
                for j in 0..p.n {
                    let mut acc = 0.0;
                    for q in 0..p.k {
                        let av = if p.trans_a {
                            a[t * p.stride_a + q * p.m + i]
                        } else {
                            a[t * p.stride_a + i * p.k + q]
                        };
                        let bv = if p.trans_b {
                            b[t * p.stride_b + j * p.k + q]
                        } else {
                            b[t * p.stride_b + q * p.n + j]
                        };
                        acc += av * bv;
                    }
                    c[t * p.stride_c + i * p.n + j] = acc;
                }
            }
        }
        c
    }

    /// Gaps between batched outputs must keep this value: cuBLAS may not write there.
    const UNTOUCHED: f64 = 1e9;

    /// Small integers, so every product and sum is exact and results compare with ==.
    fn data(len: usize, seed: usize) -> Vec<f64> {
        (0..len)
            .map(|i| ((i * 7 + seed * 13) % 11) as f64 - 5.0)
            .collect()
    }

    fn check(p: RowMajorMatmul) {
        let len = |stride: usize, one: usize| stride * (p.batch - 1) + one;
        let a = data(len(p.stride_a, p.m * p.k), 1);
        let b = data(len(p.stride_b, p.k * p.n), 2);
        let call = p.to_gemm().unwrap();
        let (x, y) = match (call.first, call.second) {
            (Operand::B, Operand::A) => (&b, &a),
            _ => (&a, &b),
        };
        let mut c = vec![UNTOUCHED; len(p.stride_c, p.m * p.n)];
        cublas_reference(&call, x, y, &mut c);
        assert_eq!(c, row_major_reference(&p, &a, &b), "{p:?} -> {call:?}");
    }

    #[test]
    fn every_transpose_combination_matches_the_row_major_product() {
        for (m, n, k) in [
            (2, 3, 4),
            (4, 3, 2),
            (1, 5, 3),
            (3, 1, 1),
            (5, 5, 5),
            (2, 7, 1),
        ] {
            for ta in [false, true] {
                for tb in [false, true] {
                    check(RowMajorMatmul::new(m, n, k, ta, tb));
                }
            }
        }
    }

    #[test]
    fn batched_products_including_broadcast_and_padded_strides() {
        for ta in [false, true] {
            for tb in [false, true] {
                let p = RowMajorMatmul::new(3, 2, 4, ta, tb);
                check(p.batched(3, 12, 8, 6));
                check(p.batched(3, 0, 8, 6)); // one A shared by every batch
                check(p.batched(2, 12, 0, 6)); // one B shared by every batch
                check(p.batched(2, 15, 9, 10)); // gaps between matrices
            }
        }
    }

    #[test]
    fn plain_product_uses_the_swap_with_no_transposes() {
        // Hand-derived: row-major [M,K]·[K,N] is gemm(N, N, m=N, n=M, k=K, lda=N, ldb=K, ldc=N).
        let call = RowMajorMatmul::new(2, 3, 4, false, false)
            .to_gemm()
            .unwrap();
        assert_eq!(
            (call.first, call.transa, call.transb),
            (Operand::B, Op::N, Op::N)
        );
        assert_eq!((call.m, call.n, call.k), (3, 2, 4));
        assert_eq!((call.lda, call.ldb, call.ldc), (3, 4, 3));
        // A stored [K, M] (e.g. grad = Aᵀ·G in backward): OP_T on A with its row length M.
        let call = RowMajorMatmul::new(2, 3, 4, true, false).to_gemm().unwrap();
        assert_eq!((call.transb, call.ldb), (Op::T, 2));
    }

    #[test]
    fn overlapping_outputs_and_oversized_dims_are_errors() {
        let p = RowMajorMatmul::new(2, 3, 4, false, false).batched(2, 8, 12, 5);
        assert!(matches!(
            p.to_gemm(),
            Err(GemmError::OverlappingOutput { .. })
        ));
        let big = RowMajorMatmul::new(1, 1 << 31, 1, false, false)
            .to_gemm()
            .unwrap();
        let e = big.to_cudarc(1.0f32, 0.0).unwrap_err();
        assert_eq!(
            e,
            GemmError::TooLarge {
                what: "m",
                value: 1 << 31
            }
        );
    }

    #[test]
    fn cudarc_config_copies_every_field() {
        let call = RowMajorMatmul::new(2, 3, 4, true, true)
            .batched(5, 8, 12, 6)
            .to_gemm()
            .unwrap();
        let cfg = call.to_cudarc(1.0f64, 0.0).unwrap();
        assert_eq!(cfg.gemm.transa, cublasOperation_t::CUBLAS_OP_T);
        assert_eq!(cfg.gemm.transb, cublasOperation_t::CUBLAS_OP_T);
        assert_eq!((cfg.gemm.m, cfg.gemm.n, cfg.gemm.k), (3, 2, 4));
        assert_eq!((cfg.gemm.lda, cfg.gemm.ldb, cfg.gemm.ldc), (4, 2, 3));
        assert_eq!(
            (cfg.batch_size, cfg.stride_a, cfg.stride_b, cfg.stride_c),
            (5, 12, 8, 6)
        );
    }

    #[test]
    fn empty_shapes_keep_leading_dimensions_valid() {
        let call = RowMajorMatmul::new(0, 0, 0, false, false)
            .to_gemm()
            .unwrap();
        assert!(call.is_empty_output());
        assert_eq!((call.lda, call.ldb, call.ldc), (1, 1, 1));
        assert!(!RowMajorMatmul::new(2, 2, 0, false, false)
            .to_gemm()
            .unwrap()
            .is_empty_output());
    }

    #[test]
    fn precision_selects_the_routine_for_either_dtype() {
        use GpuMatmulPrecision::*;
        let r = |d, p| precision_rule(d, p);
        assert_eq!(
            r(DType::F32, Fp32),
            PrecisionRule {
                routine: GemmRoutine::Sgemm,
                compute: DType::F32,
                convert: false
            }
        );
        assert_eq!(
            r(DType::F64, Fp32),
            PrecisionRule {
                routine: GemmRoutine::Sgemm,
                compute: DType::F32,
                convert: true
            }
        );
        assert_eq!(
            r(DType::F32, Fp64),
            PrecisionRule {
                routine: GemmRoutine::Dgemm,
                compute: DType::F64,
                convert: true
            }
        );
        assert_eq!(
            r(DType::F64, Fp64),
            PrecisionRule {
                routine: GemmRoutine::Dgemm,
                compute: DType::F64,
                convert: false
            }
        );
        assert_eq!(GpuMatmulPrecision::default(), Fp32);
    }
}
