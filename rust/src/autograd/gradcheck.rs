//! Finite-difference gradient checking in f64, used by the test suites: compares `grad` of a
//! scalar function with central differences, element by element.

use super::grad;
use crate::{DType, Error, Result, Tensor};

/// The largest |analytic - numeric| / max(1, |numeric|) over every input element.
pub fn gradcheck(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    eps: f64,
) -> Result<f64> {
    if inputs.iter().any(|t| t.dtype() != DType::F64) {
        return Err(Error::arg("gradcheck", "expected float64 inputs"));
    }
    let leaves: Vec<Tensor> = inputs.iter().map(|t| t.detach_with_grad(true)).collect();
    let out = f(&leaves)?;
    let analytic = grad(&out, &leaves)?;
    let mut worst = 0.0f64;
    for (i, t) in inputs.iter().enumerate() {
        let base = t.to_f64_vec()?;
        let an = analytic[i].to_f64_vec()?;
        for j in 0..base.len() {
            let eval = |delta: f64| -> Result<f64> {
                let mut v = base.clone();
                v[j] += delta;
                let mut xs: Vec<Tensor> = inputs.iter().map(|t| t.detach()).collect();
                xs[i] = Tensor::from_vec_f64(v, t.shape().clone())?;
                f(&xs)?.item()
            };
            let numeric = (eval(eps)? - eval(-eps)?) / (2.0 * eps);
            let err = (an[j] - numeric).abs() / numeric.abs().max(1.0);
            if err.is_nan() {
                return Ok(f64::NAN);
            }
            worst = worst.max(err);
        }
    }
    Ok(worst)
}
