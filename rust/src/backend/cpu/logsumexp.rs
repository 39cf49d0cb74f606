//! logsumexp over the middle axis of [outer, len, inner] in one pass per row: the lane's maximum
//! m (NaN propagating) clamped to the dtype's finite range, then ln(sum(exp(x - m))) + m with the
//! sum a left fold in index order. The same operations as the composition of max, clamp,
//! subtract, exp, sum, log and add (`BackendStorage::logsumexp`'s default), so the same bits,
//! without six passes over memory. Last-axis rows go sixteen at a time: their maxima and sums
//! step side by side (`row_folds/`) and their exponentials are taken as one block
//! (`ExpRow`, libm's bits on vector lanes).

use super::exp_lanes::ExpRow;
use super::row_folds::{fold_rows, max_rows, LANES};
use super::simd::wide_fn;
use super::uninit::filled;
use crate::dtype::Float;
use std::mem::MaybeUninit;

/// Operations an element costs (an exponential), for the threads' worth-it test.
const ELEM_COST: usize = 16;

/// `m` clamped to [-big, big] as the storage clamp does it: a NaN passes.
#[inline(always)]
fn clamped<T: Float>(m: T, big: T) -> T {
    let m = if m < -big { -big } else { m };
    if m > big {
        big
    } else {
        m
    }
}

/// One value per (outer, inner) lane; `len` >= 1.
pub fn logsumexp<T: ExpRow>(x: &[T], [outer, len, inner]: [usize; 3], big: T) -> Vec<T> {
    let lanes = outer * inner;
    debug_assert!(len >= 1 && x.len() == lanes * len);
    if lanes == 0 {
        return Vec::new();
    }
    let work = x.len().saturating_mul(ELEM_COST);
    if inner == 1 {
        // About eight chunks of whole sets of sixteen rows.
        let per = lanes.div_ceil(8).next_multiple_of(LANES);
        return filled(lanes, per, work, |ci, o| {
            let at = ci * per * len;
            rows(&x[at..at + o.len() * len], o, len, big)
        });
    }
    // Strided lanes: a chunk per outer index, each lane on its own.
    filled(lanes, inner, work, |o, out| {
        let x = &x[o * len * inner..][..len * inner];
        for (i, out) in out.iter_mut().enumerate() {
            let mut m = T::NEG_INFINITY;
            for l in 0..len {
                let v = x[l * inner + i];
                if v > m || v.is_nan() {
                    m = v;
                }
            }
            let m = clamped(m, big);
            let mut s = T::ZERO;
            for l in 0..len {
                s = s + (x[l * inner + i] - m).exp();
            }
            out.write(s.ln() + m);
        }
    })
}

/// Rows of `len` (one output each), sixteen at a time; fewer (a whole tensor's one row) one by
/// one.
#[inline(always)]
fn rows_body<T: ExpRow>(x: &[T], out: &mut [MaybeUninit<T>], len: usize, big: T) {
    let mut shifted = vec![T::ZERO; x.len().min(LANES * len)];
    if out.len() < LANES {
        for (x, out) in x.chunks_exact(len).zip(out) {
            let m = clamped(row_max(x), big);
            for (e, &v) in shifted.iter_mut().zip(x) {
                *e = v - m;
            }
            let e = &mut shifted[..len];
            T::exp_row(e);
            let mut s = T::ZERO;
            for &e in e.iter() {
                s = s + e;
            }
            out.write(s.ln() + m);
        }
        return;
    }
    for (x, out) in x.chunks(LANES * len).zip(out.chunks_mut(LANES)) {
        let m = max_rows(x, len).map(|m| clamped(m, big));
        let e = &mut shifted[..x.len()];
        for (r, (e, x)) in e.chunks_exact_mut(len).zip(x.chunks_exact(len)).enumerate() {
            for (e, &v) in e.iter_mut().zip(x) {
                *e = v - m[r];
            }
        }
        T::exp_row(e);
        let s = fold_rows([T::ZERO; LANES], e, len, false);
        for (r, o) in out.iter_mut().enumerate() {
            o.write(s[r].ln() + m[r]);
        }
    }
}

/// The greatest value of `row`, or a NaN if it holds one (which NaN, and which of two equal
/// zeros, may differ from the left fold's: neither changes ln(sum(exp(x - m))) + m, whose terms
/// x - m and m + ln(s) are the same for either zero and NaN for any NaN). Sixteen interleaved
/// lanes, so the comparisons vectorise.
#[inline(always)]
fn row_max<T: Float>(row: &[T]) -> T {
    let mut lanes = [T::NEG_INFINITY; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for c in &mut chunks {
        for (m, &v) in lanes.iter_mut().zip(c) {
            if v > *m || v.is_nan() {
                *m = v;
            }
        }
    }
    let mut m = T::NEG_INFINITY;
    for &v in lanes.iter().chain(chunks.remainder()) {
        if v > m || v.is_nan() {
            m = v;
        }
    }
    m
}

wide_fn!(
    /// `rows_body` on the widest vectors this CPU has.
    fn rows<T: ExpRow>(x: &[T], out: &mut [MaybeUninit<T>], len: usize, big: T) = rows_body
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalar formula with libm's exp and log, one lane at a time.
    fn oracle(x: &[f64], [outer, len, inner]: [usize; 3], big: f64, f32s: bool) -> Vec<f64> {
        let mut out = Vec::new();
        for o in 0..outer {
            for i in 0..inner {
                let at = |l: usize| x[(o * len + l) * inner + i];
                let mut m = f64::NEG_INFINITY;
                for l in 0..len {
                    if at(l) > m || at(l).is_nan() {
                        m = at(l);
                    }
                }
                let m = m.clamp(-big, big);
                let value = if f32s {
                    let m = m as f32;
                    let mut s = 0f32;
                    for l in 0..len {
                        s += libm::expf(at(l) as f32 - m);
                    }
                    (libm::logf(s) + m) as f64
                } else {
                    let mut s = 0f64;
                    for l in 0..len {
                        s += libm::exp(at(l) - m);
                    }
                    libm::log(s) + m
                };
                out.push(value);
            }
        }
        out
    }

    /// Rows (the last axis, counts around sixteen) and strided lanes against the scalar
    /// formula, bit for bit: infinities, a row of -inf, a huge row and NaN included.
    #[test]
    fn one_pass_matches_the_scalar_formula() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for dims in [
            [1, 1, 1],
            [15, 7, 1],
            [17, 33, 1],
            [300, 64, 1],
            [3, 5, 4],
            [2, 9, 17],
        ] {
            let n = dims.iter().product::<usize>();
            let mut x: Vec<f64> = (0..n).map(|_| (next() - 0.5) * 60.0).collect();
            if n > 40 && dims[0] >= 3 {
                x[3] = f64::INFINITY;
                x[11] = f64::NAN;
                x[20] = 3e38;
                for v in &mut x[dims[1] * dims[2] * 2..dims[1] * dims[2] * 3] {
                    *v = f64::NEG_INFINITY; // a whole outer block of -inf
                }
            }
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let got = logsumexp(&x32, dims, f32::MAX);
            let want = oracle(&x, dims, f32::MAX as f64, true);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                let same = g.to_bits() == (*w as f32).to_bits() || (g.is_nan() && w.is_nan());
                assert!(same, "f32 {dims:?} lane {k}: {g:?} vs {w:?}");
            }
            let got = logsumexp(&x, dims, f64::MAX);
            let want = oracle(&x, dims, f64::MAX, false);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                assert!(same, "f64 {dims:?} lane {k}: {g:?} vs {w:?}");
            }
        }
    }
}
