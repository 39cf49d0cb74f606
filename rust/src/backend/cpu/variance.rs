//! The variance over the middle axis of [outer, len, inner] as one op: mean = sum / len, then
//! sum((x - mean)²) / divisor, each sum a left fold in index order: the operations of the
//! composition (sum, divide, subtract, square, sum, divide; `BackendStorage::var`'s default),
//! so the same bits, in two passes instead of six. Last-axis rows fold sixteen at a time
//! (`row_folds/`).

use super::reduce::sum_axis;
use super::row_folds::{fold_rows, LANES};
use super::uninit::filled;
use crate::dtype::Float;

/// (variance, mean), one of each per (outer, inner) lane; `len` >= 1.
pub fn var<T: Float>(x: &[T], [outer, len, inner]: [usize; 3], divisor: T) -> (Vec<T>, Vec<T>) {
    let n = T::from_f64(len as f64);
    let mean: Vec<T> = sum_axis(x, outer, len, inner)
        .into_iter()
        .map(|s| s / n)
        .collect();
    let lanes = outer * inner;
    if lanes == 0 {
        return (Vec::new(), mean);
    }
    let var = if inner == 1 {
        filled(lanes, LANES, x.len(), |g, out| {
            let rows = &x[g * LANES * len..][..out.len() * len];
            let m = &mean[g * LANES..][..out.len()];
            let mut sq = Vec::with_capacity(rows.len());
            for (r, row) in rows.chunks_exact(len).enumerate() {
                sq.extend(row.iter().map(|&v| {
                    let d = v - m[r];
                    d * d
                }));
            }
            let ss = fold_rows([T::ZERO; LANES], &sq, len, false);
            for (o, &s) in out.iter_mut().zip(&ss) {
                o.write(s / divisor);
            }
        })
    } else {
        filled(lanes, inner, x.len(), |o, out| {
            let x = &x[o * len * inner..][..len * inner];
            let m = &mean[o * inner..][..inner];
            for (i, out) in out.iter_mut().enumerate() {
                let mut s = T::ZERO;
                for l in 0..len {
                    let d = x[l * inner + i] - m[i];
                    s = s + d * d;
                }
                out.write(s / divisor);
            }
        })
    };
    (var, mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows (counts around sixteen, one long row) and strided lanes against the formula one
    /// lane at a time in plain loops, bit for bit, in f32 and f64.
    #[test]
    fn two_passes_match_the_formula() {
        fn check<T: Float>(from: impl Fn(f64) -> T) {
            let mut state = 0x2545_f491_4f6c_dd1du64;
            for dims in [
                [1, 1, 1],
                [15, 7, 1],
                [17, 33, 1],
                [40, 64, 1],
                [1, 5000, 1],
                [3, 5, 4],
                [2, 9, 17],
            ] {
                let [outer, len, inner] = dims;
                let x: Vec<T> = (0..outer * len * inner)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        from((state >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 7.0)
                    })
                    .collect();
                let divisor = from(len as f64 - 1.0);
                let (var, mean) = super::var(&x, dims, divisor);
                for o in 0..outer {
                    for i in 0..inner {
                        let at = |l: usize| x[(o * len + l) * inner + i];
                        let mut s = T::ZERO;
                        for l in 0..len {
                            s = s + at(l);
                        }
                        let m = s / from(len as f64);
                        let mut ss = T::ZERO;
                        for l in 0..len {
                            let d = at(l) - m;
                            ss = ss + d * d;
                        }
                        let k = o * inner + i;
                        let want = ss / divisor;
                        assert_eq!(
                            mean[k].to_f64().to_bits(),
                            m.to_f64().to_bits(),
                            "{dims:?} mean {k}"
                        );
                        let same = var[k].to_f64().to_bits() == want.to_f64().to_bits()
                            || (var[k].is_nan() && want.is_nan());
                        assert!(same, "{dims:?} var {k}: {:?} vs {want:?}", var[k]);
                    }
                }
            }
        }
        check::<f32>(|v| v as f32);
        check::<f64>(|v| v);
    }
}
