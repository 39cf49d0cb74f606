//! The losses averaged over all elements as one op (mse_loss, l1_loss, smooth_l1_loss,
//! huber_loss, binary_cross_entropy_with_logits), their sum and gradient in one pass each where
//! the recorded ops took three to five: the operations of the composition (`sub`, then `mul` of
//! d by itself or the op table's abs, smooth_l1 or huber at d; or `sub(1, t)`, `mul` by x and `sub`
//! of logsigmoid(x)) and the whole-tensor sum, and for the gradient the mean's and theirs, in
//! their order, so the bits of the ops they replace.

use super::table_kernels::{unary_block, unary_grad_block};
use super::uninit::{fill_with, filled};
use crate::dtype::Float;
use crate::geometry::LossTerm;
use crate::op_table::UnaryOp;

/// Values per block: the differences and terms of one stay in L1.
const BLOCK: usize = 2048;
/// Elements per thread claim of the gradient.
const CHUNK: usize = 1 << 13;

/// `d[i] = x[i] - t[i]`.
#[inline(always)]
fn differences<T: Float>(x: &[T], t: &[T], d: &mut [T]) {
    super::simd::widest(|| {
        for ((d, &a), &b) in d.iter_mut().zip(x).zip(t) {
            *d = a - b;
        }
    });
}

/// The terms of one block into `out`, `d` a scratch block of the same length.
#[inline(always)]
fn terms<T: Float>(x: &[T], t: &[T], term: LossTerm, d: &mut [T], out: &mut [T]) {
    match term {
        LossTerm::Square => {
            differences(x, t, d);
            super::simd::widest(|| {
                for (o, &d) in out.iter_mut().zip(d.iter()) {
                    *o = d * d;
                }
            })
        }
        LossTerm::Abs | LossTerm::SmoothL1 { .. } | LossTerm::Huber { .. } => {
            differences(x, t, d);
            unary_block(term.table_op().expect("a table op's term"), d, out);
        }
        // ((1 - t) * x) - logsigmoid(x), logsigmoid on its lanes first.
        LossTerm::BceWithLogits => {
            unary_block(UnaryOp::Logsigmoid, x, d);
            super::simd::widest(|| {
                for (((o, &ls), &x), &t) in out.iter_mut().zip(d.iter()).zip(x).zip(t) {
                    *o = (T::ONE - t) * x - ls;
                }
            })
        }
    }
}

/// Sum over i of the terms of x[i] and t[i], each operation rounded, folded left from 0 in
/// index order (`reduce::sum_all`'s fold; in f32 `fold_f32`'s, block after block).
pub fn sum<T: Float>(x: &[T], t: &[T], term: LossTerm) -> T {
    debug_assert_eq!(x.len(), t.len());
    if term == LossTerm::BceWithLogits {
        // Transcendental terms: computed on all threads first, then folded (the same fold).
        return super::reduce::sum_all(&all_terms(x, t, term));
    }
    let (mut d, mut y) = ([T::ZERO; BLOCK], [T::ZERO; BLOCK]);
    let mut acc = T::ZERO;
    for (xb, tb) in x.chunks(BLOCK).zip(t.chunks(BLOCK)) {
        let n = xb.len();
        terms(xb, tb, term, &mut d[..n], &mut y[..n]);
        acc = super::reduce::fold_from(acc, &y[..n]);
    }
    acc
}

/// The terms of x[i] and t[i], for the fast kernels' own sum.
pub fn all_terms<T: Float>(x: &[T], t: &[T], term: LossTerm) -> Vec<T> {
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

/// The loss's gradient for x from the mean's gradient `w` (g / count), as the composition's
/// rules give it. With d = x - t: for the square, mul's gradient for each operand of d * d is
/// w * d, and the two accumulate into their sum; for a table op, its gradient at d with
/// upstream w (abs's, smooth_l1's and huber's read the input d, not the output). For the logits:
/// mul's for x, w * (1 - t), plus logsigmoid's at x with upstream -w (sub's for its right
/// operand).
pub fn grad<T: Float>(x: &[T], t: &[T], w: T, term: LossTerm) -> Vec<T> {
    filled(x.len(), CHUNK, x.len(), |ci, o| {
        let (x, t) = (&x[ci * CHUNK..][..o.len()], &t[ci * CHUNK..][..o.len()]);
        let o = fill_with(o, T::ZERO);
        let mut d = [T::ZERO; BLOCK];
        let upstream = [if term == LossTerm::BceWithLogits {
            -w
        } else {
            w
        }; BLOCK];
        for ((xb, tb), ob) in x
            .chunks(BLOCK)
            .zip(t.chunks(BLOCK))
            .zip(o.chunks_mut(BLOCK))
        {
            let (n, d) = (xb.len(), &mut d[..xb.len()]);
            match term {
                LossTerm::Square => {
                    differences(xb, tb, d);
                    super::simd::widest(|| {
                        for (o, &d) in ob.iter_mut().zip(d.iter()) {
                            let p = w * d;
                            *o = p + p;
                        }
                    })
                }
                LossTerm::Abs | LossTerm::SmoothL1 { .. } | LossTerm::Huber { .. } => {
                    differences(xb, tb, d);
                    let op = term.table_op().expect("a table op's term");
                    unary_grad_block(op, d, d, &upstream[..n], ob);
                }
                LossTerm::BceWithLogits => {
                    // logsigmoid's gradient reads its input x: x stands for the output too.
                    unary_grad_block(UnaryOp::Logsigmoid, xb, xb, &upstream[..n], ob);
                    super::simd::widest(|| {
                        for (o, &t) in ob.iter_mut().zip(tb) {
                            *o = w * (T::ONE - t) + *o;
                        }
                    })
                }
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
        let square = LossTerm::Square;
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
        let huber = LossTerm::Huber { delta: 1.5 };
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
