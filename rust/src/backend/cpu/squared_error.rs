//! mse_loss's sum and gradient in one pass each, where the recorded ops took three: the
//! operations of `sub`, `mul` and the whole-tensor sum (for the gradient, of the mean's,
//! mul's and sub's gradients) in their order, so the bits of the ops they replace.

use super::elementwise::zip_map;
use super::f32_view::as_f32;
use crate::dtype::Float;

/// Values squared per block before the fold takes them (they stay in L1).
const BLOCK: usize = 2048;

/// Sum over i of (x[i] - t[i])², each difference and square rounded, folded left from 0 in
/// index order (`reduce::sum_all`'s fold; in f32 `fold_f32`'s, block after block).
pub fn squared_error_sum<T: Float>(x: &[T], t: &[T]) -> T {
    debug_assert_eq!(x.len(), t.len());
    if let (Some(x), Some(t)) = (as_f32(x), as_f32(t)) {
        let mut block = [0f32; BLOCK];
        let mut acc = 0f32;
        for (xb, tb) in x.chunks(BLOCK).zip(t.chunks(BLOCK)) {
            let sq = &mut block[..xb.len()];
            super::simd::widest(|| {
                for ((s, &a), &b) in sq.iter_mut().zip(xb).zip(tb) {
                    let d = a - b;
                    *s = d * d;
                }
            });
            acc = super::fold_f32::fold(acc, sq);
        }
        return T::from_f64(acc as f64);
    }
    let mut acc = T::ZERO;
    for (&a, &b) in x.iter().zip(t) {
        let d = a - b;
        acc = acc + d * d;
    }
    acc
}

/// The squares (x[i] - t[i])², for the fast kernels' own sum.
pub fn squared_errors<T: Float>(x: &[T], t: &[T]) -> Vec<T> {
    zip_map(x, t, |a, b| {
        let d = a - b;
        d * d
    })
}

/// mse_loss's gradient for x from the mean's gradient `w` (g / count): with d = x - t, mul's
/// gradient for each operand of d * d is w * d, and the two accumulate: (w * d) + (w * d).
pub fn squared_error_grad<T: Float>(x: &[T], t: &[T], w: T) -> Vec<T> {
    zip_map(x, t, move |a, b| {
        let p = w * (a - b);
        p + p
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fused_sum_is_the_fold_of_the_rounded_squares() {
        // Past several blocks, both signs, a NaN-free run then one with a NaN and an infinity.
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
        assert_eq!(squared_error_sum(&x, &t).to_bits(), want.to_bits());
        let (x64, t64): (Vec<f64>, Vec<f64>) = x
            .iter()
            .zip(&t)
            .map(|(&a, &b)| (a as f64 * 1.1, b as f64))
            .unzip();
        let mut want = 0f64;
        for (&a, &b) in x64.iter().zip(&t64) {
            want += (a - b) * (a - b);
        }
        assert_eq!(squared_error_sum(&x64, &t64).to_bits(), want.to_bits());
        let mut y = x.clone();
        y[5_000] = f32::INFINITY;
        assert_eq!(squared_error_sum(&y, &t), f32::INFINITY);
        y[7_000] = f32::NAN;
        assert!(squared_error_sum(&y, &t).is_nan());
        // The gradient: twice w * d, each product rounded.
        let g = squared_error_grad(&x, &t, 0.37);
        for i in 0..x.len() {
            let p = 0.37f32 * (x[i] - t[i]);
            assert_eq!(g[i].to_bits(), (p + p).to_bits());
        }
    }
}
