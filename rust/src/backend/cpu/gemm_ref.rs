//! TEMPORARY naive reference GEMM with the final API; replaced by the blocked kernel.
pub trait RefGemmElem: crate::dtype::Float {}
impl RefGemmElem for f32 {}
impl RefGemmElem for f64 {}
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
    c: &mut [T],
    _parallel: bool,
) {
    for i in 0..m {
        for j in 0..n {
            let mut acc = T::ZERO;
            for p in 0..k {
                acc = acc + a[i * a_rs + p * a_cs] * b[p * b_rs + j * b_cs];
            }
            c[i * n + j] = acc;
        }
    }
}
