//! Powers by one exponent: where libm answers the exponent by a special case, those operations
//! without a call per element; otherwise libm's powf or pow across vector lanes
//! (`lane_math/powf.rs`, `lane_math/pow.rs`), threaded over chunks.

use super::elementwise::map;
use super::f32_lane_ops::chunked;
use super::f32_view::{as_f32, as_f64, from_f32, from_f64};
use super::uninit::{assume_init, filled};
use super::wide_rows::map_row;
use crate::dtype::Float;

/// `x ** y` where libm's `pow`/`powf` answer the exponent `y` by a special case before their
/// general algorithm: after `1 ** y = 1` and a NaN `x` giving `x + y`, `y = ±1` gives `x` or
/// `1 / x`, `y = 2` gives `x * x`, and `y = 0.5` gives `sqrt(x)` for `x >= +0` (the general
/// algorithm elsewhere). The same operations here, so the same bits, without a call per element.
pub fn pow_by_special_exponent<T: Float>(x: &[T], y: T) -> Option<Vec<T>> {
    let yb = y.to_f64();
    // Generic in `f` (not a fn pointer), so each map inlines its operation and vectorises.
    #[inline(always)]
    fn special<T: Float>(v: T, y: T, f: impl Fn(T) -> T) -> T {
        if v.to_f64() == 1.0 {
            T::ONE
        } else if v.is_nan() {
            v + y
        } else {
            f(v)
        }
    }
    Some(if yb == 2.0 {
        map(x, move |v| special(v, y, |v| v * v))
    } else if yb == 1.0 {
        map(x, move |v| special(v, y, |v| v))
    } else if yb == -1.0 {
        map(x, move |v| special(v, y, |v| T::ONE / v))
    } else if yb == 0.5 {
        // The square root on every lane, then libm's general algorithm where x < 0 (a NaN,
        // or -0's and -inf's own cases): a second pass over the chunk, so the first stays a
        // vector loop, and the test for such lanes a vector fold.
        const CHUNK: usize = 1 << 13;
        filled(x.len(), CHUNK, x.len(), |ci, o| {
            let x = &x[ci * CHUNK..][..o.len()];
            map_row(x, o, &move |v| special(v, y, |v| v.sqrt()));
            // SAFETY: map_row wrote every element.
            let o = unsafe { assume_init(o) };
            let negative = |v: T| v.is_sign_negative() & !v.is_nan();
            if x.iter().fold(false, |any, &v| any | negative(v)) {
                for (o, &v) in o.iter_mut().zip(x) {
                    if negative(v) {
                        *o = v.powf(y);
                    }
                }
            }
        })
    } else {
        return None;
    })
}

/// `x ** y` for every element, with libm's `pow`/`powf` bits.
pub fn pow_by_scalar<T: Float>(x: &[T], y: T) -> Vec<T> {
    if let Some(out) = pow_by_special_exponent(x, y) {
        return out;
    }
    // libm's general algorithm on vector lanes, chunks on threads.
    if let (Some(x32), Some(&[y32])) = (as_f32(x), as_f32(&[y])) {
        return from_f32(chunked(x.len(), |at, o| {
            crate::lane_math::powf::powf_slice(&x32[at..][..o.len()], y32, o)
        }));
    }
    if let (Some(x64), Some(&[y64])) = (as_f64(x), as_f64(&[y])) {
        return from_f64(chunked(x.len(), |at, o| {
            crate::lane_math::pow::pow_slice(&x64[at..][..o.len()], y64, o)
        }));
    }
    map(x, |v| v.powf(y))
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

    #[test]
    fn powers_by_any_exponent_keep_libms_bits() {
        // Past one chunk (threads), any exponent: special ones, integers, fractions.
        let x: Vec<f64> = (0..20_000)
            .map(|i| (i as f64 - 5_000.0) * 0.00731)
            .collect();
        for y in [3.0, -0.5, 1.5, -2.0, 0.3, 2.0, 7.0] {
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let got = pow_by_scalar(&x32, y as f32);
            for (i, &v) in x32.iter().enumerate() {
                assert_eq!(
                    got[i].to_bits(),
                    libm::powf(v, y as f32).to_bits(),
                    "{v} ** {y}"
                );
            }
            let got = pow_by_scalar(&x, y);
            for (i, &v) in x.iter().enumerate() {
                assert_eq!(got[i].to_bits(), libm::pow(v, y).to_bits(), "{v} ** {y}");
            }
        }
    }
}
