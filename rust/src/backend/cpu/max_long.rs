//! The maximum of a few long rows (a whole tensor's max) and the index of its first occurrence,
//! as the left fold of `pool::beats` gives them (NaN propagates, +0 beats -0, of equal values
//! the first stays). The winner is the first element of the largest class (equal values; all
//! NaNs one class, +0 above -0), which no grouping of the fold changes, so any split gives the
//! fold's value bits and index: parts of `PART` elements are found on the threads, each part's
//! lanes fold side by side, and the winners combine by class, the smaller index on a tie.

use super::parallel::for_chunks;
use super::pool::beats;
use super::row_folds::{max_index_rows, LANES};
use crate::dtype::Float;
use std::any::TypeId;

/// Rows at least this long take `max_index_long` when there are too few to fill the lanes.
pub const LONG_ROW: usize = 64 * LANES;

/// Elements per part, each part's winner found by one thread.
const PART: usize = 1 << 15;

/// Whether (v, i) wins over (best, at) wherever the two came from: the larger class, or the
/// same class at a smaller index.
#[inline(always)]
fn wins<T: Float>((v, i): (T, usize), (best, at): (T, usize)) -> bool {
    beats(v, best) || (!beats(best, v) && i < at)
}

/// The row's maximum and the index of its first occurrence, as the left fold gives them.
pub fn max_index_long<T: Float>(row: &[T]) -> (T, usize) {
    let mut winners = vec![(T::NEG_INFINITY, 0usize); row.len().div_ceil(PART)];
    for_chunks(&mut winners, 1, row.len(), |p, w| {
        let part = &row[p * PART..row.len().min((p + 1) * PART)];
        let (v, at) = max_index_part(part); // for_chunks compiles it at the widest width
        w[0] = (v, p * PART + at);
    });
    let mut best = winners[0];
    for &w in &winners[1..] {
        if wins(w, best) {
            best = w;
        }
    }
    best
}

/// One part's winner: in f32, sixteen equal segments fold side by side (`max_index_rows`, its
/// AVX-512 tiles), the segments' winners and the tail then taken in index order; otherwise
/// lanes of eight consecutive elements fold side by side (a vector loop), their winners then
/// combined by class and index.
#[inline(always)]
fn max_index_part<T: Float>(row: &[T]) -> (T, usize) {
    const W: usize = 8;
    let (start, mut best) = if row.len() < LONG_ROW {
        (1, (row[0], 0))
    } else if TypeId::of::<T>() == TypeId::of::<f32>() {
        let seg = row.len() / LANES;
        let (bests, firsts) = max_index_rows(&row[..seg * LANES], seg);
        let mut best = (bests[0], firsts[0]);
        for s in 1..LANES {
            if beats(bests[s], best.0) {
                best = (bests[s], s * seg + firsts[s]);
            }
        }
        (seg * LANES, best)
    } else {
        let whole = row.len() / W * W;
        let mut lanes: [T; W] = std::array::from_fn(|k| row[k]);
        let mut at: [usize; W] = std::array::from_fn(|k| k);
        for (c, chunk) in row[..whole].chunks_exact(W).enumerate().skip(1) {
            for k in 0..W {
                if beats(chunk[k], lanes[k]) {
                    lanes[k] = chunk[k];
                    at[k] = c * W + k;
                }
            }
        }
        let mut best = (lanes[0], at[0]);
        for k in 1..W {
            if wins((lanes[k], at[k]), best) {
                best = (lanes[k], at[k]);
            }
        }
        (whole, best)
    };
    for (i, &v) in row.iter().enumerate().skip(start) {
        if beats(v, best.0) {
            best = (v, i);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::super::reduce::tests::spread_values as spread;
    use super::*;

    /// One and three long rows (several parts and a partial one, or shorter than a part), with
    /// ties, signed zeros, infinities and NaNs placed across parts and lanes, through
    /// `max_axis`: value bits and index as the scalar left fold of `beats` gives them.
    fn long_rows_are_the_left_folds<T: Float>(nan: [T; 2]) {
        let mut state = 7u64;
        let inf = T::from_f64(f64::INFINITY);
        // Parts: two and a partial one past LONG_ROW, one and a partial one shorter than
        // LONG_ROW, exactly one, and less than one.
        for len in [2 * PART + 3 * LONG_ROW + 7, PART + 5, PART, LONG_ROW + 5] {
            for case in 0..7 {
                let mut x: Vec<T> = spread(3 * len, &mut state);
                let at = |f: f64| (f * len as f64) as usize;
                let zero_positives = |x: &mut Vec<T>| {
                    x.iter_mut()
                        .for_each(|v| *v = if *v > T::ZERO { -T::ZERO } else { *v })
                };
                match case {
                    1 => x
                        .iter_mut()
                        .for_each(|v| *v = T::from_f64(v.to_f64().round())),
                    2 => zero_positives(&mut x),
                    3 => {
                        zero_positives(&mut x);
                        x[at(0.7)] = T::ZERO;
                        x[at(0.9)] = T::ZERO;
                    }
                    4 => {
                        x[at(0.6) + 3] = nan[0];
                        x[at(0.2) + 1] = nan[1];
                        x[len - 1] = nan[0];
                        x[len + at(0.5)] = nan[1];
                    }
                    5 => {
                        x[len - 2] = inf;
                        x[at(0.8)] = inf;
                    }
                    6 => x.iter_mut().for_each(|v| *v = -inf),
                    _ => {}
                }
                for rows in [1, 3] {
                    let (vals, idx) =
                        super::super::reduce::max_axis(&x[..rows * len], rows, len, 1);
                    for r in 0..rows {
                        let row = &x[r * len..][..len];
                        let (mut best, mut first) = (row[0], 0);
                        for (i, &v) in row.iter().enumerate().skip(1) {
                            if beats(v, best) {
                                (best, first) = (v, i);
                            }
                        }
                        let case = format!("{} case {case}, length {len}, row {r}", T::DTYPE);
                        assert_eq!(
                            vals[r].to_f64().to_bits(),
                            best.to_f64().to_bits(),
                            "{case}"
                        );
                        assert_eq!(idx[r], first, "{case}");
                    }
                }
            }
        }
    }

    #[test]
    fn long_row_maxima_are_the_left_folds() {
        long_rows_are_the_left_folds::<f32>([0x7fc0_0001, 0x7fc0_0002].map(f32::from_bits));
        long_rows_are_the_left_folds::<f64>(
            [0x7ff8_0000_0000_0001, 0x7ff8_0000_0000_0002].map(f64::from_bits),
        );
    }
}
