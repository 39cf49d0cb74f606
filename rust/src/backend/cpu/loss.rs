//! The negative log-likelihood over class indices (cross-entropy's last step) and its gradient:
//! one left fold over the counted rows, divided once by their count.

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

#[cfg(test)]
mod tests {
    use super::*;

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
