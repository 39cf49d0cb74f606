//! Softmax and log-softmax over the middle axis of [outer, len, inner], with the max
//! subtracted first for stability; sums are left folds in index order. Each outer index is
//! independent, so groups of them run across threads (an exponential is tens of operations:
//! attention's 8×4×16×16 scores are worth spreading) without changing a bit.

use super::exp_lanes::{ExpRow, Pre};
use super::parallel::for_each_chunk;
use super::row_folds::{fold_rows, max_rows, LANES};
use super::simd::wide_fn;
use super::uninit::{assume_init, written};
use crate::dtype::Float;
use std::mem::MaybeUninit;

/// Groups of outer indices per call, so that each thread claims a few.
const GROUPS: usize = 8;
/// Operations an element costs, for the parallel loop's worth-it test (an exponential).
const ELEM_COST: usize = 16;

/// `f(x_part, out_part)` over `x` and `out` cut into groups of whole outer indices (`row`
/// elements each), spread over the threads when the work is worth it.
pub(super) fn by_groups<T: Float, O: Send>(
    x: &[T],
    out: &mut [O],
    row: usize,
    f: impl Fn(std::ops::Range<usize>, &mut [O]) + Sync,
) {
    let outer = x.len() / row.max(1);
    let per = outer.div_ceil(GROUPS).max(1) * row.max(1);
    for_each_chunk(out, per, x.len() * ELEM_COST, |i, dst| {
        f(i * per..i * per + dst.len(), dst)
    });
}

fn for_each_lane(outer: usize, len: usize, inner: usize, mut f: impl FnMut(usize)) {
    for o in 0..outer {
        for i in 0..inner {
            f(o * len * inner + i);
        }
    }
}

/// Rows a `softmax_rows` step takes together: their max and sum folds step side by side
/// (`row_folds/`: each row's fold keeps its own order), so the adds of different rows overlap
/// instead of each waiting on the one before it.
pub(super) const ROWS: usize = LANES;

/// Softmax of contiguous rows of `len` (the last axis): the shifted values `x - m` of a row are
/// written first and their exponentials taken as one block (`ExpRow`: vector lanes with the
/// scalar bits), then each row is summed in index order, so every bit is the strided form's.
/// Writes every element of `out` (which may start uninitialised).
#[inline(always)]
pub(super) fn softmax_rows_body<T: ExpRow>(
    x: &[T],
    out: &mut [MaybeUninit<T>],
    len: usize,
    log: bool,
) {
    for (x, out) in x.chunks(ROWS * len).zip(out.chunks_mut(ROWS * len)) {
        let m = max_rows(x, len);
        for (r, (out, x)) in out
            .chunks_exact_mut(len)
            .zip(x.chunks_exact(len))
            .enumerate()
        {
            for (o, &v) in out.iter_mut().zip(x) {
                o.write(v - m[r]);
            }
        }
        // SAFETY: the chunk holds whole rows, each just written.
        let out = unsafe { assume_init(out) };
        T::exp_row(out);
        let s = fold_rows([T::ZERO; ROWS], out, len, false);
        // The rows' logarithms in a loop of their own, one vector for all ROWS rows (the
        // rows past the last hold 0: ln 0 = -inf, never read).
        let mut ls = s;
        if log {
            for v in ls.iter_mut() {
                *v = v.ln();
            }
        }
        for (r, (out, x)) in out
            .chunks_exact_mut(len)
            .zip(x.chunks_exact(len))
            .enumerate()
        {
            if log {
                let ls = ls[r];
                for (o, &v) in out.iter_mut().zip(x) {
                    *o = (v - m[r]) - ls;
                }
            } else {
                for o in out.iter_mut() {
                    *o = *o / s[r];
                }
            }
        }
    }
}

wide_fn!(
    /// `softmax_rows_body` on the widest vectors this CPU has.
    fn softmax_rows<T: ExpRow>(x: &[T], out: &mut [MaybeUninit<T>], len: usize, log: bool) =
        softmax_rows_body
);
wide_fn!(
    /// `softmax_grad_rows_body` on the widest vectors this CPU has.
    fn softmax_grad_rows<T: ExpRow>(
        y: &[T], g: &[T], out: &mut [MaybeUninit<T>], len: usize, log: bool,
    ) = softmax_grad_rows_body
);

pub fn softmax<T: ExpRow>(x: &[T], outer: usize, len: usize, inner: usize, log: bool) -> Vec<T> {
    debug_assert_eq!(x.len(), outer * len * inner);
    if inner == 1 && len > 0 {
        return written(x.len(), |out| {
            by_groups(x, out, len, |at, out| softmax_rows(&x[at], out, len, log))
        });
    }
    let mut out = vec![T::ZERO; x.len()];
    by_groups(x, &mut out, len * inner, |at, out| {
        let x = &x[at];
        for_each_lane(out.len() / (len * inner).max(1), len, inner, |base| {
            let mut m = T::NEG_INFINITY;
            for l in 0..len {
                let v = x[base + l * inner];
                if v > m || v.is_nan() {
                    m = v;
                }
            }
            let mut s = T::ZERO;
            for l in 0..len {
                let e = (x[base + l * inner] - m).exp();
                if !log {
                    out[base + l * inner] = e;
                }
                s = s + e;
            }
            if log {
                let ls = s.ln();
                for l in 0..len {
                    out[base + l * inner] = (x[base + l * inner] - m) - ls;
                }
            } else {
                for l in 0..len {
                    out[base + l * inner] = out[base + l * inner] / s;
                }
            }
        })
    });
    out
}

/// `softmax_grad` of contiguous rows, `ROWS` at a time with their sums interleaved (each in
/// index order) and log-softmax's exponentials taken as one block: the strided form's bits.
/// Writes every element of `out` (which may start uninitialised).
#[inline(always)]
pub(super) fn softmax_grad_rows_body<T: ExpRow>(
    y: &[T],
    g: &[T],
    out: &mut [MaybeUninit<T>],
    len: usize,
    log: bool,
) {
    let block = ROWS * len;
    for ((y, g), out) in y
        .chunks(block)
        .zip(g.chunks(block))
        .zip(out.chunks_mut(block))
    {
        // The terms of each row's sum (g, or g * y), folded sixteen rows at a time; log-softmax
        // starts `out` as the exponentials of y.
        let out = if log {
            T::exp_from(y, out, Pre::Same)
        } else {
            for ((o, &g), &y) in out.iter_mut().zip(g).zip(y) {
                o.write(g * y);
            }
            // SAFETY: every element of the chunk was just written.
            unsafe { assume_init(out) }
        };
        let s = fold_rows([T::ZERO; ROWS], if log { g } else { out }, len, false);
        let rows = out
            .chunks_exact_mut(len)
            .zip(y.chunks_exact(len))
            .zip(g.chunks_exact(len));
        for (r, ((out, y), g)) in rows.enumerate() {
            let s = s[r];
            if log {
                for (o, &g) in out.iter_mut().zip(g) {
                    *o = g - *o * s;
                }
            } else {
                for ((o, &y), &g) in out.iter_mut().zip(y).zip(g) {
                    *o = y * (g - s);
                }
            }
        }
    }
}

/// Gradient through softmax (`y` its output): y * (g - sum(g * y)).
/// Through log-softmax: g - exp(y) * sum(g).
pub fn softmax_grad<T: ExpRow>(
    y: &[T],
    g: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    log: bool,
) -> Vec<T> {
    debug_assert_eq!(y.len(), outer * len * inner);
    if inner == 1 && len > 0 {
        return written(y.len(), |out| {
            by_groups(y, out, len, |at, out| {
                softmax_grad_rows(&y[at.clone()], &g[at], out, len, log)
            })
        });
    }
    let mut out = vec![T::ZERO; y.len()];
    by_groups(y, &mut out, len * inner, |at, out| {
        let (y, g) = (&y[at.clone()], &g[at]);
        for_each_lane(out.len() / (len * inner).max(1), len, inner, |base| {
            let mut s = T::ZERO;
            for l in 0..len {
                let k = base + l * inner;
                s = s + if log { g[k] } else { g[k] * y[k] };
            }
            for l in 0..len {
                let k = base + l * inner;
                out[k] = if log {
                    g[k] - y[k].exp() * s
                } else {
                    y[k] * (g[k] - s)
                };
            }
        })
    });
    out
}

#[cfg(test)]
mod row_tests {
    use super::*;

    /// The rows path (last axis: block exponentials, interleaved folds) against the strided
    /// path (one lane at a time, scalar `libm` exponentials) on the same values laid out
    /// transposed: every bit equal, NaN and infinities included, row counts not a multiple of
    /// the block.
    fn rows_equal_strided<T: ExpRow>(from: impl Fn(f64) -> T) {
        for (rows, len) in [(1, 1), (3, 5), (8, 64), (13, 95), (17, 3)] {
            let x: Vec<T> = (0..rows * len)
                .map(|i| match i % 23 {
                    5 => from(f64::NAN),
                    7 => from(f64::INFINITY),
                    11 => from(f64::NEG_INFINITY),
                    _ => from(((i * 37) % 101) as f64 * 0.37 - 18.0),
                })
                .collect();
            let mut xt = vec![T::ZERO; x.len()];
            for r in 0..rows {
                for l in 0..len {
                    xt[l * rows + r] = x[r * len + l];
                }
            }
            for log in [false, true] {
                let a = softmax(&x, rows, len, 1, log);
                let b = softmax(&xt, 1, len, rows, log);
                // The gradient too, with the outputs as y and the inputs as g.
                let ga = softmax_grad(&a, &x, rows, len, 1, log);
                let gb = softmax_grad(&b, &xt, 1, len, rows, log);
                for r in 0..rows {
                    for l in 0..len {
                        let (p, q) = (ga[r * len + l], gb[l * rows + r]);
                        // Two NaNs meeting in a product leave a payload the compiler's operand
                        // order picks: a NaN is a NaN there.
                        assert!(
                            p.to_f64().to_bits() == q.to_f64().to_bits()
                                || (p.is_nan() && q.is_nan()),
                            "grad rows={rows} len={len} log={log} at ({r}, {l})"
                        );
                    }
                }
                for r in 0..rows {
                    for l in 0..len {
                        let (p, q) = (a[r * len + l], b[l * rows + r]);
                        assert!(
                            p.to_f64().to_bits() == q.to_f64().to_bits(),
                            "{} rows={rows} len={len} log={log} at ({r}, {l}): {} vs {}",
                            std::any::type_name::<T>(),
                            p.to_f64(),
                            q.to_f64()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn rows_path_has_the_strided_paths_bits() {
        rows_equal_strided::<f32>(|v| v as f32);
        rows_equal_strided::<f64>(|v| v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row kernels (sixteen rows' folds side by side) against the strided kernel on the
    /// transposed layout (one lane at a time), bit for bit: forward and gradient, softmax and
    /// log-softmax, row counts around sixteen, NaN, infinities and signed zeros included.
    fn rows_match_strided<T: ExpRow>() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Threads take rows in eight groups: 300 rows make groups of 38, two whole sets of 16.
        for (rows, len) in [(1, 1), (15, 7), (17, 33), (300, 64), (260, 100)] {
            let mut x: Vec<T> = (0..rows * len)
                .map(|_| T::from_f64(((next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 40.0))
                .collect();
            for (i, v) in [f64::NAN, f64::NEG_INFINITY, f64::INFINITY, -0.0]
                .into_iter()
                .enumerate()
            {
                let at = (next() as usize) % x.len();
                if rows > 4 || i == 3 {
                    x[at] = T::from_f64(v);
                }
            }
            if rows > 2 {
                x[len..2 * len].fill(T::NEG_INFINITY); // a row with no finite value
            }
            let g: Vec<T> = (0..rows * len)
                .map(|_| T::from_f64((next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5))
                .collect();
            let t = |v: &[T]| -> Vec<T> {
                (0..rows * len)
                    .map(|k| v[(k % rows) * len + k / rows])
                    .collect()
            };
            for log in [false, true] {
                let y = softmax(&x, rows, len, 1, log);
                let yt = softmax(&t(&x), 1, len, rows, log);
                let dy = softmax_grad(&y, &g, rows, len, 1, log);
                let dyt = softmax_grad(&t(&y), &t(&g), 1, len, rows, log);
                for (what, a, b) in [("forward", t(&y), yt), ("gradient", t(&dy), dyt)] {
                    for (k, (a, b)) in a.iter().zip(&b).enumerate() {
                        assert_eq!(
                            a.to_f64().to_bits(),
                            b.to_f64().to_bits(),
                            "{what} log={log} {rows}x{len} at {k}: {a:?} vs {b:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn row_kernels_match_the_strided_kernel() {
        rows_match_strided::<f32>();
        rows_match_strided::<f64>();
    }
}
