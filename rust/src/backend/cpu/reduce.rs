//! Reductions. Every sum is a left fold from 0 in index order (docs/numerics.md), except the fast
//! kernels' sum of a whole tensor (`sum_fast`, its own fixed order): outputs are split across
//! threads, a single output's accumulation never is.

use super::max_long::{max_index_long, LONG_ROW};
use super::parallel::for_chunks;
use super::row_folds::{cumsum_rows, fold_rows, max_index_rows, LANES};
use super::simd;
use crate::dtype::Float;
use crate::shape::broadcast_strides;
use crate::Shape;

pub fn sum_all<T: Float>(x: &[T]) -> T {
    fold_from(T::ZERO, x)
}

/// `acc + x0 + x1 + ...`, each addition rounded, in index order: a left fold continued from
/// `acc` (a whole-tensor sum taken a block at a time).
pub fn fold_from<T: Float>(acc: T, x: &[T]) -> T {
    if let Some(x) = super::f32_view::as_f32(x) {
        // The same left fold, blocks of it as integer prefix sums where that is exact (acc is
        // an f32 here, so the round trip through f64 is exact).
        return T::from_f64(super::fold_f32::fold(acc.to_f64() as f32, x) as f64);
    }
    x.iter().fold(acc, |acc, &v| acc + v)
}

/// Partial sums of the fast kernels' sums (`sum_fast`).
const PARTIALS: usize = 64;

/// The fast kernels' sum: `PARTIALS` partial sums, partial j folding the elements at indices
/// j, j + 64, j + 128, ... in order from +0, then added pairwise in a fixed tree (j + 32 into
/// j, then j + 16, ...). The order depends on the length alone, so the result repeats bit for
/// bit on any CPU and thread count; the partials are independent chains, which the compiler
/// runs side by side in vectors, where a single left fold waits on each add's latency (131K
/// f32 elements: 0.11 ms). Within rounding of the reference's left fold, not equal to it.
pub fn sum_fast<T: Float>(x: &[T]) -> T {
    simd::widest(|| {
        let mut acc = [T::ZERO; PARTIALS];
        let mut runs = x.chunks_exact(PARTIALS);
        for run in &mut runs {
            for (a, &v) in acc.iter_mut().zip(run) {
                *a = *a + v;
            }
        }
        for (a, &v) in acc.iter_mut().zip(runs.remainder()) {
            *a = *a + v;
        }
        let mut width = PARTIALS;
        while width > 1 {
            width /= 2;
            let (lo, hi) = acc.split_at_mut(width);
            for (a, &b) in lo.iter_mut().zip(&hi[..width]) {
                *a = *a + b;
            }
        }
        acc[0]
    })
}

/// Sums a tensor viewed as [outer, len, inner] over its middle axis: [outer, inner].
pub fn sum_axis<T: Float>(x: &[T], outer: usize, len: usize, inner: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * inner];
    if inner == 0 {
        return out;
    }
    if inner == 1 && len > 0 {
        // Sums of contiguous rows: sixteen rows' folds step together (row_folds/), each one
        // still a left fold in index order, instead of one add at a time waiting on the last.
        for_chunks(&mut out, LANES, x.len(), |g, sums: &mut [T]| {
            let rows = &x[g * LANES * len..][..sums.len() * len];
            let folded = fold_rows([T::ZERO; LANES], rows, len, false);
            sums.copy_from_slice(&folded[..sums.len()]);
        });
        return out;
    }
    let block = |o: usize, acc: &mut [T]| {
        let base = o * len * inner;
        for l in 0..len {
            let row = &x[base + l * inner..base + (l + 1) * inner];
            for i in 0..inner {
                acc[i] = acc[i] + row[i];
            }
        }
    };
    for_chunks(&mut out, inner, x.len(), block);
    out
}

/// Running sums along the middle axis of [outer, len, inner]: y[0] = x[0], y[k] = y[k-1] + x[k]
/// (from the far end when `reverse`: y[len-1] = x[len-1], y[k] = y[k+1] + x[k]), each lane a
/// fold in index order in the element type, as NumPy computes it. Blocks of `outer` run on threads; the
/// `inner` lanes of a block advance together a row at a time.
pub fn cumsum<T: Float>(x: &[T], outer: usize, len: usize, inner: usize, reverse: bool) -> Vec<T> {
    let mut out = x.to_vec();
    let block = len * inner;
    if len < 2 || inner == 0 || outer == 0 {
        return out;
    }
    if inner == 1 && len >= LANES {
        // Rows of the last axis: sixteen rows' chains step together (row_folds/).
        for_chunks(&mut out, LANES * len, x.len(), |g, ys: &mut [T]| {
            let rows = &x[g * LANES * len..][..ys.len()];
            if !cumsum_rows(rows, len, ys, reverse) {
                for (y, r) in ys.chunks_mut(len).zip(rows.chunks(len)) {
                    running_sums(r, y, reverse);
                }
            }
        });
        return out;
    }
    for_chunks(&mut out, block, x.len(), |_, ys: &mut [T]| {
        for k in 1..len {
            // The row filled this step and the one it adds to.
            let (done, row) = if reverse {
                (len - k, len - k - 1)
            } else {
                (k - 1, k)
            };
            let (lo, hi) = ys.split_at_mut(row.max(done) * inner);
            let (prev, cur) = if reverse {
                (&hi[..inner], &mut lo[row * inner..])
            } else {
                (&lo[done * inner..], &mut hi[..inner])
            };
            for (c, &p) in cur.iter_mut().zip(prev) {
                *c = p + *c;
            }
        }
    });
    out
}

/// One row's running sums into `y` (from the far end when `reverse`).
fn running_sums<T: Float>(r: &[T], y: &mut [T], reverse: bool) {
    let n = r.len();
    if reverse {
        y[n - 1] = r[n - 1];
        for k in (0..n - 1).rev() {
            y[k] = y[k + 1] + r[k];
        }
    } else {
        y[0] = r[0];
        for k in 1..n {
            y[k] = y[k - 1] + r[k];
        }
    }
}

/// Max over the middle axis of [outer, len, inner] with the index of the first maximum, as a
/// left fold of IEEE 754-2019 `maximum` (NaN propagates, +0 beats -0; `pool::beats`).
/// A NaN wins over any number, so NaN propagates.
pub fn max_axis<T: Float>(x: &[T], outer: usize, len: usize, inner: usize) -> (Vec<T>, Vec<usize>) {
    let mut vals = vec![T::NEG_INFINITY; outer * inner];
    let mut idx = vec![0usize; outer * inner];
    if inner == 1 && outer < LANES && len >= LONG_ROW {
        // A few long rows (a whole tensor's max): each row's sixteen segments fold together.
        for (o, (v, at)) in vals.iter_mut().zip(&mut idx).enumerate() {
            (*v, *at) = max_index_long(&x[o * len..][..len]);
        }
        return (vals, idx);
    }
    if inner == 1 && len > 0 {
        // Rows of the last axis: sixteen rows' folds step together (row_folds/), threaded
        // over groups of rows; each row's fold keeps its order.
        super::parallel::for_chunks2(&mut vals, LANES, &mut idx, LANES, x.len(), |g, v, at| {
            let (best, first) = max_index_rows(&x[g * LANES * len..][..v.len() * len], len);
            v.copy_from_slice(&best[..v.len()]);
            at.copy_from_slice(&first[..v.len()]);
        });
        return (vals, idx);
    }
    for o in 0..outer {
        for i in 0..inner {
            let base = o * len * inner + i;
            let (mut best, mut bi) = (x[base], 0);
            for l in 1..len {
                let v = x[base + l * inner];
                if super::pool::beats(v, best) {
                    best = v;
                    bi = l;
                }
            }
            vals[o * inner + i] = best;
            idx[o * inner + i] = bi;
        }
    }
    (vals, idx)
}

/// Reduces a gradient of broadcast shape `from` back to `to` by summing the broadcast axes.
/// Each target element is a left fold over the source elements in increasing index order.
///
/// Axes are merged first (size-1 axes dropped, neighbours of the same kind joined), so the walk
/// over `g` goes a whole innermost run at a time: a kept run adds into a stretch of the output
/// (a bias gradient: rows added one after another), a summed run folds into one element.
/// `g` is still read in index order, so every fold keeps its order.
pub fn sum_to_shape<T: Float>(g: &[T], from: &Shape, to: &Shape) -> Vec<T> {
    let strides = broadcast_strides(to, from);
    let mut out = vec![T::ZERO; to.numel()];
    if g.is_empty() {
        return out;
    }
    let axes = merged_axes(from.dims(), &strides);
    if let [(rows, 0), (run, 1)] = axes[..] {
        // A bias gradient: rows of `run` added one after another.
        column_sums(g, rows, run, &mut out);
        return out;
    }
    let Some(&(run, run_stride)) = axes.last() else {
        out[0] = out[0] + g[0];
        return out;
    };
    // A kept innermost run is the target's innermost axis, which is contiguous.
    debug_assert!(run_stride <= 1);
    let outer = &axes[..axes.len() - 1];
    let mut index = vec![0usize; outer.len()];
    let mut target = 0usize;
    simd::widest(|| {
        for src in g.chunks(run) {
            if run_stride == 0 {
                out[target] = src.iter().fold(out[target], |a, &v| a + v);
            } else {
                let dst = &mut out[target..target + run];
                dst.iter_mut().zip(src).for_each(|(a, &v)| *a = *a + v);
            }
            for d in (0..outer.len()).rev() {
                index[d] += 1;
                target += outer[d].1;
                if index[d] < outer[d].0 {
                    break;
                }
                target -= outer[d].1 * index[d];
                index[d] = 0;
            }
        }
    });
    out
}

/// Columns a thread's share of `column_sums` takes at a time.
const STRETCH: usize = 64;

/// `out[j] = 0 + g[0][j] + g[1][j] + ...` over `rows` rows of `run`, stretches of columns
/// spread over the threads, each stretch's running sums in registers across the rows.
fn column_sums<T: Float>(g: &[T], rows: usize, run: usize, out: &mut [T]) {
    for_chunks(out, STRETCH, g.len(), |q, o| {
        column_stretch_wide(g, rows, run, q * STRETCH, o)
    });
}

/// The sums of columns `j0 ..` into `o` (compiled wide by `wide_fn!` below).
#[inline(always)]
fn column_stretch<T: Float>(g: &[T], rows: usize, run: usize, j0: usize, o: &mut [T]) {
    let len = o.len();
    let mut acc = [T::ZERO; STRETCH];
    for r in 0..rows {
        let src = &g[r * run + j0..][..len];
        if len == STRETCH {
            for j in 0..STRETCH {
                acc[j] = acc[j] + src[j];
            }
        } else {
            for j in 0..len {
                acc[j] = acc[j] + src[j];
            }
        }
    }
    o.copy_from_slice(&acc[..len]);
}

simd::wide_fn!(fn column_stretch_wide<T: Float>(
    g: &[T], rows: usize, run: usize, j0: usize, o: &mut [T],
) = column_stretch);

/// (size, target stride) of `from`'s axes with size-1 axes dropped and neighbours merged when
/// the outer one steps over exactly the inner one's extent (both summed: stride 0, or both kept
/// and contiguous in the target).
fn merged_axes(dims: &[usize], strides: &[usize]) -> Vec<(usize, usize)> {
    let mut axes: Vec<(usize, usize)> = Vec::new();
    for (&n, &s) in dims.iter().zip(strides) {
        if n == 1 {
            continue;
        }
        match axes.last_mut() {
            Some(last) if last.1 == s * n => *last = (last.0 * n, s),
            _ => axes.push((n, s)),
        }
    }
    axes
}

/// The gradient of `max_axis`: `g` [outer, inner] placed at each lane's winner of zeros
/// [outer, len, inner].
pub fn max_axis_grad<T: Float>(
    g: &[T],
    arg: &[usize],
    outer: usize,
    len: usize,
    inner: usize,
) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * len * inner];
    for o in 0..outer {
        for i in 0..inner {
            let r = o * inner + i;
            out[o * len * inner + arg[r] * inner + i] = g[r];
        }
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `n` values of magnitudes from 1e-3 to 1e3, both signs (so a fold's order shows in its
    /// bits), from the xorshift stream at `state`.
    pub(in crate::backend::cpu) fn spread_values<T: Float>(n: usize, state: &mut u64) -> Vec<T> {
        (0..n)
            .map(|_| {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                let u = (*state >> 11) as f64 / (1u64 << 53) as f64;
                T::from_f64((u - 0.5) * 10f64.powf(6.0 * u - 3.0))
            })
            .collect()
    }

    /// Row sums (the last axis) equal each row's left fold from 0 in index order, bit for bit,
    /// for row counts around the sixteen folded together and lengths around a 16 x 16 tile.
    fn rows_fold_in_order<T: Float>() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for (outer, len) in [(1, 1), (15, 7), (16, 16), (17, 33), (40, 128), (3, 1000)] {
            let x: Vec<T> = spread_values(outer * len, &mut state);
            let got = sum_axis(&x, outer, len, 1);
            for (r, g) in got.iter().enumerate() {
                let want = x[r * len..(r + 1) * len]
                    .iter()
                    .fold(T::ZERO, |acc, &v| acc + v);
                assert_eq!(
                    g.to_f64().to_bits(),
                    want.to_f64().to_bits(),
                    "row {r} of {outer}x{len}"
                );
            }
        }
    }

    /// A bias gradient (rows summed into one row) equals each column's left fold from 0 over
    /// the rows in order, bit for bit: columns in whole stretches and in a partial one, leading
    /// size-1 axes, and a batch of rows over two axes.
    fn column_sums_fold_in_order<T: Float>() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let cases: [(&[usize], &[usize]); 4] = [
            (&[300, 130], &[130]),
            (&[7, 5, 64], &[1, 64]),
            (&[1, 40, 3], &[3]),
            (&[2, 33, 200], &[1, 1, 200]),
        ];
        for (from, to) in cases {
            let n: usize = from.iter().product();
            let g: Vec<T> = spread_values(n, &mut state);
            let run = *from.last().unwrap();
            let got = sum_to_shape(&g, &Shape(from.to_vec()), &Shape(to.to_vec()));
            for (j, v) in got.iter().enumerate() {
                let want = g.chunks(run).fold(T::ZERO, |acc, row| acc + row[j]);
                assert_eq!(
                    v.to_f64().to_bits(),
                    want.to_f64().to_bits(),
                    "{from:?} column {j}"
                );
            }
        }
    }

    #[test]
    fn column_sums_are_left_folds_over_the_rows_in_order() {
        column_sums_fold_in_order::<f32>();
        column_sums_fold_in_order::<f64>();
    }

    #[test]
    fn row_sums_are_left_folds_in_index_order() {
        rows_fold_in_order::<f32>();
        rows_fold_in_order::<f64>();
    }

    /// Row maxima (the last axis) equal each row's own left fold of `pool::beats` and the index
    /// of its winner: ties keep the first, +0 beats -0, a NaN wins and stays.
    fn row_maxima_fold_in_order<T: Float>() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let pool = [-0.0, 0.0, 1.0, -1.0, 2.0, f64::NAN, f64::NEG_INFINITY, 3.0];
        for (outer, len) in [(1, 1), (15, 7), (17, 33), (300, 40), (40, 1000)] {
            let x: Vec<T> = (0..outer * len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly small integers (ties), some NaN and signed zeros.
                    let v = pool[(state >> 20) as usize % pool.len()];
                    T::from_f64(if (state >> 40).is_multiple_of(50) {
                        v
                    } else {
                        (state % 7) as f64 - 3.0
                    })
                })
                .collect();
            let (vals, idx) = max_axis(&x, outer, len, 1);
            for r in 0..outer {
                let row = &x[r * len..(r + 1) * len];
                let (mut best, mut at) = (row[0], 0);
                for (l, &v) in row.iter().enumerate().skip(1) {
                    if super::super::pool::beats(v, best) {
                        best = v;
                        at = l;
                    }
                }
                assert_eq!(
                    vals[r].to_f64().to_bits(),
                    best.to_f64().to_bits(),
                    "row {r} of {outer}x{len}"
                );
                assert_eq!(idx[r], at, "row {r} of {outer}x{len}");
            }
        }
    }

    #[test]
    fn last_axis_running_sums_are_folds_in_index_order() {
        // 16-row groups, a partial group, and rows with a tail past the last 16 x 16 tile.
        fn check<T: Float>() {
            let mut state = 11u64;
            for (outer, len) in [(35, 16), (17, 37), (48, 128), (3, 20)] {
                let x: Vec<T> = spread_values(outer * len, &mut state);
                for reverse in [false, true] {
                    let y = cumsum(&x, outer, len, 1, reverse);
                    for r in 0..outer {
                        let order: Vec<usize> = if reverse {
                            (0..len).rev().collect()
                        } else {
                            (0..len).collect()
                        };
                        let mut acc = x[r * len + order[0]];
                        for (n, &k) in order.iter().enumerate() {
                            if n > 0 {
                                acc = acc + x[r * len + k];
                            }
                            let got = y[r * len + k].to_f64().to_bits();
                            assert_eq!(
                                got,
                                acc.to_f64().to_bits(),
                                "row {r} position {k} reverse {reverse}"
                            );
                        }
                    }
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn row_maxima_are_left_folds_in_index_order() {
        row_maxima_fold_in_order::<f32>();
        row_maxima_fold_in_order::<f64>();
    }
}
