//! Matrix products for both kernel kinds. Operands are addressed through strides, so the
//! transposes that backward needs are free: reference kernels via `gemm_ref`, fast kernels via
//! the `gemm` crate (FMA, blocked, threaded).

use super::gemm_ref::{gemm_ref, RefGemmElem};
use super::parallel::{install, num_threads, worth_threads};
use crate::dtype::Float;
use rayon::prelude::*;

/// Element types both GEMMs accept.
pub trait GemmElem: Float + RefGemmElem {}
impl GemmElem for f32 {}
impl GemmElem for f64 {}

pub use crate::geometry::MatmulDims;

/// Products big enough to be worth threads inside one GEMM.
// Below about 100³ multiply-adds a thread hand-off costs more than it saves (measured at
// n = 64: 32 µs threaded vs 4 µs inline).
const PAR_MIN_FLOPS: usize = 100 * 100 * 100;

pub fn matmul<T: GemmElem>(a: &[T], b: &[T], d: MatmulDims, fast: bool) -> Vec<T> {
    let MatmulDims {
        batch,
        m,
        n,
        k,
        ta,
        tb,
        ..
    } = d;
    let mut out = vec![T::ZERO; batch * m * n];
    if m == 0 || n == 0 || batch == 0 {
        return out;
    }
    let (a_rs, a_cs) = if ta { (1, m) } else { (k, 1) };
    let (b_rs, b_cs) = if tb { (1, k) } else { (n, 1) };
    let big = worth_threads(m * n * k, PAR_MIN_FLOPS);
    let one = |bi: usize, c: &mut [T], parallel: bool| {
        let a = &a[bi * d.a_batch_stride..];
        let b = &b[bi * d.b_batch_stride..];
        product(fast, m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, parallel);
    };
    if !big && (batch == 1 || !worth_threads(batch * m * n * k, PAR_MIN_FLOPS)) {
        // Small work: handing it to the pool costs more than the product itself.
        out.chunks_mut(m * n)
            .enumerate()
            .for_each(|(bi, c)| one(bi, c, false));
        return out;
    }
    install(|| {
        if big || batch == 1 {
            out.chunks_mut(m * n)
                .enumerate()
                .for_each(|(bi, c)| one(bi, c, big));
        } else {
            // Many small products: one per thread; each output's fold is unchanged.
            out.par_chunks_mut(m * n)
                .enumerate()
                .for_each(|(bi, c)| one(bi, c, false));
        }
    });
    out
}

/// One product with the chosen kernel kind: the reference GEMM or the gemm crate. Shared by
/// matmul and the convolution lowering.
#[allow(clippy::too_many_arguments)]
pub(crate) fn product<T: GemmElem>(
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
    c: &mut [T],
    parallel: bool,
) {
    if fast {
        gemm_fast(m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, parallel);
    } else {
        gemm_ref(m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, parallel);
    }
}

/// One product through the gemm crate: c = A·B with A(i,p) = a[i*a_rs + p*a_cs] and likewise B.
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
    c: &mut [T],
    parallel: bool,
) {
    if k == 0 {
        c.iter_mut().for_each(|v| *v = T::ZERO);
        return;
    }
    let par = if parallel {
        gemm::Parallelism::Rayon(num_threads())
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: the caller sized `a`, `b` and `c` for these dimensions and strides (checked at the
    // op boundary); `c` is exclusively borrowed; gemm reads `dst` only when read_dst is true.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            a_cs as isize,
            a_rs as isize,
            b.as_ptr(),
            b_cs as isize,
            b_rs as isize,
            T::ZERO,
            T::ONE,
            false,
            false,
            false,
            par,
        );
    }
}
