//! The product over the middle axis of [outer, len, inner] by halving, and its gradient. Each
//! level multiplies the first half of the axis by the second, y[i] = x[i] * x[i + h] for
//! i < h = n / 2, the odd last entry carried on as y[h], until one entry is left: the
//! composition of slices, multiplies and concatenations that `BackendStorage::prod`'s default
//! runs (as CUDA does), here in place, one block of the axis at a time. The gradient runs the
//! tree back from the top, each pair's product rule (g * b for a, g * a for b), so zeros need no
//! special case. One long lane (a product over all elements) goes level by level instead, each
//! level's products (and on the way down its gradients) spread over the threads; rows of a
//! last-axis product go 16 at a time (`prod_rows.rs`).

use super::prod_rows::{blocks_per_chunk, halve, prod_rows, prod_rows_grad};
use super::uninit::filled;
use crate::dtype::Float;

/// Elements of one level a thread's claim holds at least (a level of one long lane).
const LEVEL_CHUNK: usize = 1 << 13;

/// The next level of one lane `a` (n values): y[i] = a[i] * a[i + h] for i < h = n / 2, the odd
/// last value carried as y[h]. Every product stands alone, so a long level spreads over the
/// threads.
fn next_level<T: Float>(a: &[T]) -> Vec<T> {
    let (n, h) = (a.len(), a.len() / 2);
    filled(h + n % 2, LEVEL_CHUNK, n, |ci, out| {
        let start = ci * LEVEL_CHUNK;
        let pairs = out.len().min(h.saturating_sub(start));
        let (lo, hi) = (&a[start..][..pairs], &a[start + h..][..pairs]);
        for ((o, &p), &q) in out[..pairs].iter_mut().zip(lo).zip(hi) {
            o.write(p * q);
        }
        for o in &mut out[pairs..] {
            o.write(a[2 * h]);
        }
    })
}

/// Every level of one lane, `x` first, down to the single product.
fn lane_levels<T: Float>(x: &[T]) -> Vec<Vec<T>> {
    let mut levels = vec![next_level(x)];
    while let Some(top) = levels.last().filter(|l| l.len() > 1) {
        let next = next_level(top);
        levels.push(next);
    }
    levels
}

/// The product per (outer, inner) lane; `len` >= 1.
pub fn prod<T: Float>(x: &[T], [outer, len, inner]: [usize; 3]) -> Vec<T> {
    if inner == 1 && outer > 1 {
        return prod_rows(x, outer, len);
    }
    if outer == 1 && inner == 1 {
        let mut level = next_level(x);
        while level.len() > 1 {
            level = next_level(&level);
        }
        return level;
    }
    let per = blocks_per_chunk(len, inner);
    let block = len * inner;
    filled(outer * inner, per * inner, x.len(), |ci, out| {
        let mut buf = vec![T::ZERO; block];
        for (o, out) in out.chunks_mut(inner).enumerate() {
            buf.copy_from_slice(&x[(ci * per + o) * block..][..block]);
            let mut n = len;
            while n > 1 {
                n = halve(&mut buf, n, inner);
            }
            for (o, &v) in out.iter_mut().zip(&buf[..inner]) {
                o.write(v);
            }
        }
    })
}

/// The gradient of `prod` for `x`, given `g` per lane: every level's values, then from the top
/// g_a = g * b and g_b = g * a for each pair, the carried entry's gradient passed down.
pub fn prod_grad<T: Float>(x: &[T], g: &[T], [outer, len, inner]: [usize; 3]) -> Vec<T> {
    if outer == 1 && inner == 1 {
        return one_lane_grad(x, g[0]);
    }
    if inner == 1 && len > 0 {
        return prod_rows_grad(x, g, outer, len);
    }
    let per = blocks_per_chunk(len, inner);
    let block = len * inner;
    // Rows per level and where each level starts in the levels buffer: the same for every block.
    let mut sizes = vec![len];
    while let Some(&n) = sizes.last().filter(|&&n| n > 1) {
        sizes.push(n / 2 + n % 2);
    }
    let starts: Vec<usize> = sizes
        .iter()
        .scan(0, |at, &n| {
            let s = *at;
            *at += n * inner;
            Some(s)
        })
        .collect();
    let total: usize = sizes.iter().map(|n| n * inner).sum();
    filled(outer * block, per * block, x.len(), |ci, out| {
        let mut levels = vec![T::ZERO; total];
        let (mut grad, mut below) = (vec![T::ZERO; block], vec![T::ZERO; block]);
        for (o, out) in out.chunks_mut(block).enumerate() {
            let at = ci * per + o;
            levels[..block].copy_from_slice(&x[at * block..][..block]);
            for k in 0..sizes.len() - 1 {
                let (n, h) = (sizes[k], sizes[k] / 2);
                let (src, dst) = levels.split_at_mut(starts[k + 1]);
                let src = &src[starts[k]..];
                for i in 0..h * inner {
                    dst[i] = src[i] * src[i + h * inner];
                }
                if n % 2 == 1 {
                    dst[h * inner..(h + 1) * inner].copy_from_slice(&src[2 * h * inner..][..inner]);
                }
            }
            // Down the tree: `grad` holds the gradient of the level above (its first rows).
            grad[..inner].copy_from_slice(&g[at * inner..][..inner]);
            for k in (0..sizes.len() - 1).rev() {
                let (n, h) = (sizes[k], sizes[k] / 2);
                let level = &levels[starts[k]..][..n * inner];
                for i in 0..h * inner {
                    below[i] = grad[i] * level[i + h * inner];
                    below[i + h * inner] = grad[i] * level[i];
                }
                if n % 2 == 1 {
                    below[2 * h * inner..n * inner]
                        .copy_from_slice(&grad[h * inner..(h + 1) * inner]);
                }
                std::mem::swap(&mut grad, &mut below);
            }
            for (o, &v) in out.iter_mut().zip(&grad[..block]) {
                o.write(v);
            }
        }
    })
}

/// `prod_grad` of one long lane: its levels, then down the tree a level at a time, each
/// level's gradients spread over the threads (each value's stands alone).
fn one_lane_grad<T: Float>(x: &[T], g: T) -> Vec<T> {
    let levels = lane_levels(x);
    let mut grad = vec![g];
    let below_top = levels.iter().rev().skip(1).map(Vec::as_slice);
    for level in below_top.chain(std::iter::once(x)) {
        grad = level_grad(level, &grad);
    }
    grad
}

/// The gradient of a level `a` (n values) from its next level's gradient `up`: g * a[i + h] for
/// a[i], g * a[i] for a[i + h], the carried value's passed down.
fn level_grad<T: Float>(a: &[T], up: &[T]) -> Vec<T> {
    let (n, h) = (a.len(), a.len() / 2);
    filled(n, LEVEL_CHUNK, n, |ci, out| {
        // This chunk's indices in the first half [0, h) (g * a[i + h]), in the second [h, 2h)
        // (g * a[i - h]), and the carried value's (2h, n odd).
        let (start, end) = (ci * LEVEL_CHUNK, ci * LEVEL_CHUNK + out.len());
        let first = end.min(h).saturating_sub(start);
        let b0 = start.max(h);
        let second = end.min(2 * h).saturating_sub(b0);
        let (lo, rest) = out.split_at_mut(first);
        let (mid, carry) = rest.split_at_mut(second);
        if first > 0 {
            let (g, b) = (&up[start..][..first], &a[start + h..][..first]);
            for ((o, &g), &b) in lo.iter_mut().zip(g).zip(b) {
                o.write(g * b);
            }
        }
        if second > 0 {
            let k = b0 - h;
            let (g, b) = (&up[k..][..second], &a[k..][..second]);
            for ((o, &g), &b) in mid.iter_mut().zip(g).zip(b) {
                o.write(g * b);
            }
        }
        for o in carry {
            o.write(up[h]);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The halving tree's levels written out with vectors, as the composition builds them.
    fn levels<T: Float>(lane: &[T]) -> Vec<Vec<T>> {
        let mut levels = vec![lane.to_vec()];
        while levels.last().unwrap().len() > 1 {
            let l = levels.last().unwrap();
            let h = l.len() / 2;
            let mut next: Vec<T> = (0..h).map(|i| l[i] * l[i + h]).collect();
            if l.len() % 2 == 1 {
                next.push(l[2 * h]);
            }
            levels.push(next);
        }
        levels
    }

    /// The gradient down the levels: each pair's product rule, the carried entry passed down.
    fn tree_grad<T: Float>(lane: &[T], g: T) -> Vec<T> {
        let mut grad = vec![g];
        for l in levels(lane).iter().rev().skip(1) {
            let h = l.len() / 2;
            let mut below = vec![T::ZERO; l.len()];
            for i in 0..h {
                below[i] = grad[i] * l[i + h];
                below[i + h] = grad[i] * l[i];
            }
            if l.len() % 2 == 1 {
                below[2 * h] = grad[h];
            }
            grad = below;
        }
        grad
    }

    /// The kernels against the tree written out: values and gradients bit for bit, zeros
    /// included.
    #[test]
    fn the_tree_and_its_gradient_match_the_composition() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for dims in [
            [1, 1, 1],
            [3, 7, 1],
            [5, 128, 1],
            [2, 13, 3],
            [1, 1000, 1],
            // One long lane: levels spread over the threads.
            [1, 70_001, 1],
            [4, 6, 5],
            // Rows in groups of 16: whole groups, a partial last group, rows long and short.
            [37, 9, 1],
            [32, 128, 1],
            [17, 300, 1],
            [20, 31, 1],
            [18, 32, 1],
            // An odd row of 32 or more: the first level, read from the row, carries its last.
            [19, 33, 1],
            [17, 65, 1],
            [16, 2, 1],
            [33, 100, 1],
        ] {
            let [outer, len, inner] = dims;
            let x: Vec<f64> = (0..outer * len * inner)
                .map(|k| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Zeros (the gradient needs no division) in lanes shorter than 32 only: in
                    // a longer one (a few zeros each) they would make every product and
                    // gradient zero, hiding the rest.
                    if k % 11 == 3 && len < 32 {
                        0.0
                    } else {
                        0.9 + (state >> 11) as f64 / (1u64 << 53) as f64 * 0.2
                    }
                })
                .collect();
            let g: Vec<f64> = (0..outer * inner).map(|k| 1.5 - k as f64 * 0.25).collect();
            check(&x, &g, dims);
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let g32: Vec<f32> = g.iter().map(|&v| v as f32).collect();
            check(&x32, &g32, dims);
        }
    }

    /// `prod` and `prod_grad` of `x` against the tree written out.
    fn check<T: Float>(x: &[T], g: &[T], dims: [usize; 3]) {
        let [outer, len, inner] = dims;
        let (p, dx) = (prod(x, dims), prod_grad(x, g, dims));
        for o in 0..outer {
            for i in 0..inner {
                let lane: Vec<T> = (0..len).map(|l| x[(o * len + l) * inner + i]).collect();
                let want = levels(&lane).last().unwrap()[0];
                assert_eq!(
                    p[o * inner + i].to_f64().to_bits(),
                    want.to_f64().to_bits(),
                    "{dims:?} prod ({o}, {i})"
                );
                let want = tree_grad(&lane, g[o * inner + i]);
                for l in 0..len {
                    let got = dx[(o * len + l) * inner + i];
                    assert_eq!(
                        got.to_f64().to_bits(),
                        want[l].to_f64().to_bits(),
                        "{dims:?} grad ({o}, {l}, {i})"
                    );
                }
            }
        }
    }
}
