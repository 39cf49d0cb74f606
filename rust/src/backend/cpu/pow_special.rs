//! Powers whose exponent libm answers by a special case, computed as libm does without a call
//! per element.

use super::elementwise::map;
use crate::dtype::Float;

/// `x ** y` where libm's `pow`/`powf` answer the exponent `y` by a special case before their
/// general algorithm: after `1 ** y = 1` and a NaN `x` giving `x + y`, `y = ±1` gives `x` or
/// `1 / x`, `y = 2` gives `x * x`, and `y = 0.5` gives `sqrt(x)` for `x >= +0` (the general
/// algorithm elsewhere). The same operations here, so the same bits, without a call per element.
pub fn pow_by_special_exponent<T: Float>(x: &[T], y: T) -> Option<Vec<T>> {
    let yb = y.to_f64();
    let special = |v: T, f: fn(T) -> T| {
        if v.to_f64() == 1.0 {
            T::ONE
        } else if v.is_nan() {
            v + y
        } else {
            f(v)
        }
    };
    Some(if yb == 2.0 {
        map(x, move |v| special(v, |v| v * v))
    } else if yb == 1.0 {
        map(x, move |v| special(v, |v| v))
    } else if yb == -1.0 {
        map(x, move |v| special(v, |v| T::ONE / v))
    } else if yb == 0.5 {
        map(x, move |v| {
            if v.is_sign_negative() && !v.is_nan() {
                v.powf(y)
            } else {
                special(v, |v| v.sqrt())
            }
        })
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_exponents_keep_libms_bits() {
        fn check<T: Float>(xs: &[f64]) {
            let x: Vec<T> = xs.iter().map(|&v| T::from_f64(v)).collect();
            for y in [2.0, 1.0, -1.0, 0.5] {
                let y = T::from_f64(y);
                let got = pow_by_special_exponent(&x, y).expect("a special exponent");
                for (i, &v) in x.iter().enumerate() {
                    let want = v.powf(y);
                    assert_eq!(
                        got[i].to_f64().to_bits(),
                        want.to_f64().to_bits(),
                        "{v:?} ** {y:?}"
                    );
                }
            }
            assert!(pow_by_special_exponent(&x, T::from_f64(3.0)).is_none());
        }
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.5,
            1e-40,
            -1e-40,
            3e38,
            -3e38,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MIN_POSITIVE,
        ];
        xs.extend((-500..500).map(|i| i as f64 * 0.0137 + 1e-3));
        check::<f32>(&xs);
        check::<f64>(&xs);
    }
}
