//! The negative log-likelihood over class indices (cross-entropy's last step) and its gradient:
//! one left fold over the counted rows, divided once by their count.

use super::exp_lanes::{ExpRow, Pre};
use super::uninit::filled;
use crate::dtype::Float;
use crate::geometry::IGNORED_ROW;

/// The rows that count: their number, as the mean's divisor.
fn kept<T: Float>(target: &[usize]) -> T {
    T::from_f64(target.iter().filter(|&&t| t != IGNORED_ROW).count() as f64)
}

/// -(sum over counted rows n of logp[n, target[n]]) / counted rows, for logp [rows, classes];
/// a row whose target is `IGNORED_ROW` takes no part.
pub fn nll<T: Float>(logp: &[T], classes: usize, target: &[usize]) -> Vec<T> {
    let mut acc = T::ZERO;
    for (n, &t) in target.iter().enumerate() {
        if t != IGNORED_ROW {
            acc = acc + logp[n * classes + t];
        }
    }
    vec![-acc / kept::<T>(target)]
}

/// The gradient [rows, classes]: -g/counted rows at each counted row's target, 0 elsewhere.
pub fn nll_grad<T: Float>(g: T, rows: usize, classes: usize, target: &[usize]) -> Vec<T> {
    let mut out = vec![T::ZERO; rows * classes];
    let w = -(g / kept::<T>(target));
    for (n, &t) in target.iter().enumerate() {
        if t != IGNORED_ROW {
            out[n * classes + t] = out[n * classes + t] + w;
        }
    }
    out
}

/// Cross-entropy's gradient for the logits [rows, classes] from the log-probabilities `logp`:
/// what `nll_grad` followed by log-softmax's gradient gives, g_j - exp(logp_j) * sum(g), in one
/// pass. A row's nll gradient is 0 but at its target, where it is 0 + w (w = -g / counted
/// rows), so its sum (a left fold from 0) is that value itself; an ignored row's is 0.
pub fn cross_entropy_grad<T: ExpRow>(logp: &[T], g: T, classes: usize, target: &[usize]) -> Vec<T> {
    let w = -(g / kept::<T>(target));
    let per = (ROWS_PER_CHUNK * classes).max(1);
    filled(logp.len(), per, logp.len() * 16, |ci, out| {
        let at = ci * per;
        let n = out.len();
        let out = T::exp_from(&logp[at..][..n], out, Pre::Same);
        for (r, row) in out.chunks_mut(classes).enumerate() {
            let t = target[at / classes + r];
            let gt = if t == IGNORED_ROW {
                T::ZERO
            } else {
                T::ZERO + w
            };
            for (j, e) in row.iter_mut().enumerate() {
                let gj = if j == t { gt } else { T::ZERO };
                *e = gj - *e * gt;
            }
        }
    })
}

/// Rows a thread's chunk of `cross_entropy_grad` holds.
const ROWS_PER_CHUNK: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass gradient against nll_grad then log-softmax's gradient (the default's
    /// composition, here the CPU kernels), bit for bit: ignored rows, -inf log-probabilities
    /// and a zero upstream gradient included.
    #[test]
    fn the_one_pass_gradient_is_nll_then_log_softmax() {
        let (rows, classes) = (150, 7);
        let logp: Vec<f32> = (0..rows * classes)
            .map(|k| match k % 29 {
                5 => f32::NEG_INFINITY,
                _ => -((k * 37 % 101) as f32) * 0.07 - 0.01,
            })
            .collect();
        let target: Vec<usize> = (0..rows)
            .map(|r| {
                if r % 9 == 4 {
                    IGNORED_ROW
                } else {
                    r * 5 % classes
                }
            })
            .collect();
        for g in [1.0f32, -0.37, 0.0] {
            let got = cross_entropy_grad(&logp, g, classes, &target);
            let nll = nll_grad(g, rows, classes, &target);
            let want = super::super::softmax::softmax_grad(&logp, &nll, rows, classes, 1, true);
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a.to_bits(), b.to_bits(), "g {g} at {k}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn ignored_rows_leave_the_sum_and_the_divisor() {
        // logp rows [-1, -2], [-3, -4], [-5, -6]; targets 1, ignored, 0: -(-2 + -5) / 2.
        let logp = [-1.0f64, -2.0, -3.0, -4.0, -5.0, -6.0];
        let target = [1, IGNORED_ROW, 0];
        assert_eq!(nll(&logp, 2, &target), vec![3.5]);
        assert_eq!(
            nll_grad(1.0f64, 3, 2, &target),
            vec![0.0, -0.5, 0.0, 0.0, -0.5, 0.0]
        );
        assert!(nll(&logp, 2, &[IGNORED_ROW; 3])[0].is_nan());
    }
}
