//! The losses of d = input - target averaged as one op (mse_loss, smooth_l1_loss, huber_loss),
//! their sum and gradient in one pass each where the recorded ops took three: the operations
//! of `sub`, the term (`mul` of d by itself, or the op table's smooth_l1 or huber) and the
//! whole-tensor sum (for the gradient, the mean's, the term's and sub's gradients) in their
//! order, so the bits of the ops they replace.

use super::f32_view::as_f32;
use super::table_kernels::{unary_block, unary_grad_block};
use super::uninit::{fill_with, filled};
use crate::dtype::Float;
use crate::geometry::DifferenceTerm;

/// Values per block: the differences and terms of one stay in L1.
const BLOCK: usize = 2048;
/// Elements per thread claim of the gradient.
const CHUNK: usize = 1 << 13;

/// The terms of one block: `d[i] = x[i] - t[i]`, then the term of each into `out`.
#[inline(always)]
fn terms<T: Float>(x: &[T], t: &[T], term: DifferenceTerm, d: &mut [T], out: &mut [T]) {
    super::simd::widest(|| {
        for ((d, &a), &b) in d.iter_mut().zip(x).zip(t) {
            *d = a - b;
        }
    });
    match term.table_op() {
        None => super::simd::widest(|| {
            for (o, &d) in out.iter_mut().zip(d.iter()) {
                *o = d * d;
            }
        }),
        Some(op) => unary_block(op, d, out),
    }
}

/// Sum over i of term(x[i] - t[i]), each difference and term rounded, folded left from 0 in
/// index order (`reduce::sum_all`'s fold; in f32 `fold_f32`'s, block after block).
pub fn sum<T: Float>(x: &[T], t: &[T], term: DifferenceTerm) -> T {
    debug_assert_eq!(x.len(), t.len());
    let (mut d, mut y) = ([T::ZERO; BLOCK], [T::ZERO; BLOCK]);
    let mut acc = T::ZERO;
    for (xb, tb) in x.chunks(BLOCK).zip(t.chunks(BLOCK)) {
        let n = xb.len();
        terms(xb, tb, term, &mut d[..n], &mut y[..n]);
        acc = match as_f32(&y[..n]) {
            Some(y) => T::from_f64(super::fold_f32::fold(acc.to_f64() as f32, y) as f64),
            None => y[..n].iter().fold(acc, |acc, &v| acc + v),
        };
    }
    acc
}

/// The terms term(x[i] - t[i]), for the fast kernels' own sum.
pub fn all_terms<T: Float>(x: &[T], t: &[T], term: DifferenceTerm) -> Vec<T> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        let (x, t) = (&x[ci * CHUNK..][..o.len()], &t[ci * CHUNK..][..o.len()]);
        let o = fill_with(o, T::ZERO);
        let mut d = [T::ZERO; BLOCK];
        for ((xb, tb), ob) in x
            .chunks(BLOCK)
            .zip(t.chunks(BLOCK))
            .zip(o.chunks_mut(BLOCK))
        {
            terms(xb, tb, term, &mut d[..xb.len()], ob);
        }
    })
}

/// The loss's gradient for x from the mean's gradient `w` (g / count), d = x - t: for the
/// square, mul's gradient for each operand of d * d is w * d, and the two accumulate into
/// their sum; for a table op, its gradient at d with upstream w (both are formulas of the
/// input d, not of the output).
pub fn grad<T: Float>(x: &[T], t: &[T], w: T, term: DifferenceTerm) -> Vec<T> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        let (x, t) = (&x[ci * CHUNK..][..o.len()], &t[ci * CHUNK..][..o.len()]);
        let o = fill_with(o, T::ZERO);
        let mut d = [T::ZERO; BLOCK];
        let ws = [w; BLOCK];
        for ((xb, tb), ob) in x
            .chunks(BLOCK)
            .zip(t.chunks(BLOCK))
            .zip(o.chunks_mut(BLOCK))
        {
            let n = xb.len();
            let d = &mut d[..n];
            super::simd::widest(|| {
                for ((d, &a), &b) in d.iter_mut().zip(xb).zip(tb) {
                    *d = a - b;
                }
            });
            match term.table_op() {
                None => super::simd::widest(|| {
                    for (o, &d) in ob.iter_mut().zip(d.iter()) {
                        let p = w * d;
                        *o = p + p;
                    }
                }),
                // d stands for the output too: smooth_l1's and huber's gradients read the input.
                Some(op) => unary_grad_block(op, d, d, &ws[..n], ob),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fused_sum_is_the_fold_of_the_rounded_terms() {
        // Past several blocks, both signs; then with an infinity and a NaN.
        let x: Vec<f32> = (0..10_000)
            .map(|i| ((i * 37) % 101) as f32 * 0.173 - 8.1)
            .collect();
        let t: Vec<f32> = (0..10_000)
            .map(|i| ((i * 11) % 53) as f32 * 0.291 - 7.7)
            .collect();
        let mut want = 0f32;
        for (&a, &b) in x.iter().zip(&t) {
            want += (a - b) * (a - b);
        }
        let square = DifferenceTerm::Square;
        assert_eq!(sum(&x, &t, square).to_bits(), want.to_bits());
        let (x64, t64): (Vec<f64>, Vec<f64>) = x
            .iter()
            .zip(&t)
            .map(|(&a, &b)| (a as f64 * 1.1, b as f64))
            .unzip();
        let mut want = 0f64;
        for (&a, &b) in x64.iter().zip(&t64) {
            want += (a - b) * (a - b);
        }
        assert_eq!(sum(&x64, &t64, square).to_bits(), want.to_bits());
        // Huber's term as the table writes it, 0.5 |d| |d| inside delta.
        let delta = 1.5f32;
        let mut want = 0f32;
        for (&a, &b) in x.iter().zip(&t) {
            let z = (a - b).abs();
            want += if z < delta {
                0.5 * z * z
            } else {
                delta * (z - 0.5 * delta)
            };
        }
        let huber = DifferenceTerm::Huber { delta: 1.5 };
        assert_eq!(sum(&x, &t, huber).to_bits(), want.to_bits());
        let mut y = x.clone();
        y[5_000] = f32::INFINITY;
        assert_eq!(sum(&y, &t, square), f32::INFINITY);
        y[7_000] = f32::NAN;
        assert!(sum(&y, &t, square).is_nan());
        // The gradients: twice w * d, each product rounded; huber's w * d inside delta.
        let g = grad(&x, &t, 0.37, square);
        let h = grad(&x, &t, 0.37, huber);
        for i in 0..x.len() {
            let d = x[i] - t[i];
            let p = 0.37f32 * d;
            assert_eq!(g[i].to_bits(), (p + p).to_bits());
            let want = if d < -delta {
                0.37 * -delta
            } else if d > delta {
                0.37 * delta
            } else {
                p
            };
            assert_eq!(h[i].to_bits(), want.to_bits());
        }
    }
}
