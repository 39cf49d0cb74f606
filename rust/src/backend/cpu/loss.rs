//! The negative log-likelihood over class indices (cross-entropy's last step) and its gradient:
//! one left fold over the rows, divided once by the row count.

use crate::dtype::Float;

/// -(sum over rows n of logp[n, target[n]]) / rows, for logp [rows, classes].
pub fn nll<T: Float>(logp: &[T], classes: usize, target: &[usize]) -> Vec<T> {
    let mut acc = T::ZERO;
    for (n, &t) in target.iter().enumerate() {
        acc = acc + logp[n * classes + t];
    }
    vec![-acc / T::from_f64(target.len() as f64)]
}

/// The gradient [rows, classes]: -g/rows at each row's target, 0 elsewhere.
pub fn nll_grad<T: Float>(g: T, rows: usize, classes: usize, target: &[usize]) -> Vec<T> {
    let mut out = vec![T::ZERO; rows * classes];
    let w = -(g / T::from_f64(target.len() as f64));
    for (n, &t) in target.iter().enumerate() {
        out[n * classes + t] = out[n * classes + t] + w;
    }
    out
}
