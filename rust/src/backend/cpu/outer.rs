//! Products with one term per output (k = 1: a column times a row, such as a batch-1 linear
//! layer's weight gradient): c[i][j] = +0 + a[i]·b[j], the reference fold's one step, so the
//! reference GEMM's bits. Row by row across threads, each row one vector loop, where a GEMM
//! would pack both operands and run its register tiles for a single multiply each.

use super::parallel::for_chunks;
use crate::dtype::Float;
use std::mem::MaybeUninit;

/// Products under this many elements are written on the calling thread: a weight gradient is
/// read next by the optimizer's update on the calling thread (`optim/cpu.rs` keeps updates
/// under 2^18 elements there), and one written by a helper reached it from the other core's
/// cache. MLP 784-128-10 compiled, batch 1: threaded, no faster than the GEMM it replaced.
const LOCAL: usize = 1 << 18;

/// c[i*n + j] = +0 + a[i*a_rs]·b[j*b_cs] for i < m, j < n; every element of c[..m*n] is written.
pub(crate) fn outer_into<T: Float>(
    m: usize,
    n: usize,
    (a, a_rs): (&[T], usize),
    (b, b_cs): (&[T], usize),
    c: &mut [MaybeUninit<T>],
) {
    if m == 0 || n == 0 {
        return;
    }
    let row = |i: usize, out: &mut [MaybeUninit<T>]| {
        let ai = a[i * a_rs];
        if b_cs == 1 {
            for (o, &bj) in out.iter_mut().zip(&b[..n]) {
                o.write(T::ZERO + ai * bj);
            }
        } else {
            for (j, o) in out.iter_mut().enumerate() {
                o.write(T::ZERO + ai * b[j * b_cs]);
            }
        }
    };
    let c = &mut c[..m * n];
    if m * n < LOCAL {
        super::simd::widest(|| c.chunks_mut(n).enumerate().for_each(|(i, o)| row(i, o)));
    } else {
        for_chunks(c, n, m * n, row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::gemm_ref::gemm_ref;

    /// Against the reference GEMM with k = 1 (its fold from +0), signed zeros included, for
    /// contiguous and strided rows.
    #[test]
    fn outer_products_equal_the_reference_gemm() {
        let (m, n) = (37, 300);
        let a: Vec<f32> = (0..2 * m)
            .map(|i| {
                if i % 7 == 0 {
                    -0.0
                } else {
                    (i as f32 * 0.37).sin()
                }
            })
            .collect();
        let b: Vec<f32> = (0..3 * n)
            .map(|j| {
                if j % 5 == 0 {
                    0.0
                } else {
                    (j as f32 * 1.3).cos() * 1e-3
                }
            })
            .collect();
        for (a_rs, b_cs) in [(1, 1), (2, 3)] {
            let mut want = vec![MaybeUninit::new(f32::NAN); m * n];
            gemm_ref(m, n, 1, &a, a_rs, 1, &b, 1, b_cs, &mut want, false);
            let mut got = vec![MaybeUninit::new(f32::NAN); m * n];
            outer_into(m, n, (&a, a_rs), (&b, b_cs), &mut got);
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                // SAFETY: both were written in full.
                let (w, g) = unsafe { (w.assume_init(), g.assume_init()) };
                assert_eq!(
                    w.to_bits(),
                    g.to_bits(),
                    "element {i} (a_rs {a_rs}, b_cs {b_cs})"
                );
            }
        }
    }
}
