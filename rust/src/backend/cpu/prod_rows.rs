//! The product over the last axis of [outer, len] (`prod.rs`'s halving tree, row by row) and its
//! gradient, 16 rows at a time. Each row halves on its own while it has `SHORT` values or more
//! (whole vectors); then the rows' remaining values are transposed into one block whose lanes
//! are the rows, and the short levels (16, 8, 4, 2, 1 ... values, a vector or less per row)
//! multiply whole vectors of 16 rows. The gradient runs the same levels back down: the short
//! ones across the rows, then each row's long ones along the row. Each lane still runs its own
//! row's tree, the same products in the same pairs, so the bits are the row's.

use super::simd::wide_fn;
use super::uninit::filled;
use crate::dtype::Float;
use std::mem::MaybeUninit;

/// Blocks (outer indices) a thread's chunk holds at least, so short axes are not one chunk each.
const MIN_VALUES: usize = 4096;

/// Outer indices per chunk: whole blocks, about MIN_VALUES values or more.
pub(super) fn blocks_per_chunk(len: usize, inner: usize) -> usize {
    MIN_VALUES.div_ceil((len * inner).max(1)).max(1)
}

/// One level's halving of `buf` (n rows of `inner`): rows i < h become row i times row i + h,
/// row 2h (n odd) moves to row h. Returns the new row count.
#[inline(always)]
pub(super) fn halve<T: Float>(buf: &mut [T], n: usize, inner: usize) -> usize {
    let h = n / 2;
    let (lo, hi) = buf.split_at_mut(h * inner);
    for (a, &b) in lo.iter_mut().zip(&hi[..h * inner]) {
        *a = *a * b;
    }
    if n % 2 == 1 {
        buf.copy_within(2 * h * inner..(2 * h + 1) * inner, h * inner);
    }
    h + n % 2
}

/// Rows whose short levels run side by side (the lanes of a vector of f32).
const ROW_GROUP: usize = 16;
/// A row's levels run along the row while they have this many values or more.
const SHORT: usize = 32;

/// `prod` over the last axis of [outer, len] (inner = 1), `ROW_GROUP` rows at a time.
pub(super) fn prod_rows<T: Float>(x: &[T], outer: usize, len: usize) -> Vec<T> {
    let per = blocks_per_chunk(len, ROW_GROUP);
    filled(outer, per * ROW_GROUP, x.len(), |ci, out| {
        let rows = &x[ci * per * ROW_GROUP * len..][..out.len() * len];
        let (mut row, mut short) = (vec![T::ZERO; len], vec![T::ZERO; SHORT * ROW_GROUP]);
        prod_rows_wide(rows, len, &mut row, &mut short, out);
    })
}

wide_fn!(fn prod_rows_wide<T: Float>(
    rows: &[T], len: usize, row: &mut [T], short: &mut [T], out: &mut [MaybeUninit<T>]
) = prod_rows_body);

/// The products of `out.len()` rows of `len` (`rows`), `ROW_GROUP` at a time; `row` (len
/// values) and `short` (SHORT * ROW_GROUP) are scratch. The first level reads the row itself.
#[inline(always)]
fn prod_rows_body<T: Float>(
    rows: &[T],
    len: usize,
    row: &mut [T],
    short: &mut [T],
    out: &mut [MaybeUninit<T>],
) {
    for (o, out) in out.chunks_mut(ROW_GROUP).enumerate() {
        let lanes = out.len();
        let mut n = len;
        for r in 0..lanes {
            let x = &rows[(o * ROW_GROUP + r) * len..][..len];
            n = len;
            if n >= SHORT {
                // halve's first level, from x into row.
                let h = n / 2;
                for ((a, &p), &q) in row[..h].iter_mut().zip(&x[..h]).zip(&x[h..2 * h]) {
                    *a = p * q;
                }
                if n % 2 == 1 {
                    row[h] = x[2 * h];
                }
                n = h + n % 2;
            } else {
                row.copy_from_slice(x);
            }
            while n >= SHORT {
                n = halve(row, n, 1);
            }
            for (l, &v) in row[..n].iter().enumerate() {
                short[l * lanes + r] = v;
            }
        }
        while n > 1 {
            n = halve(short, n, lanes);
        }
        for (o, &v) in out.iter_mut().zip(&short[..lanes]) {
            o.write(v);
        }
    }
}

/// A row's halving tree: the values per level (`sizes[0]` = len, down to 1), the first level
/// shorter than `SHORT` (`short`), and where the long levels 1..=short start in a row's buffer.
struct Tree {
    sizes: Vec<usize>,
    short: usize,
    long_at: Vec<usize>,
    long_len: usize,
}

impl Tree {
    fn new(len: usize) -> Self {
        let mut sizes = vec![len];
        while let Some(&n) = sizes.last().filter(|&&n| n > 1) {
            sizes.push(n / 2 + n % 2);
        }
        let short = sizes
            .iter()
            .position(|&n| n < SHORT)
            .unwrap_or(sizes.len() - 1);
        // Level 0 is the row itself; levels 1..=short one after another.
        let mut long_at = vec![0; short + 1];
        let mut at = 0;
        for k in 1..=short {
            long_at[k] = at;
            at += sizes[k];
        }
        Tree {
            sizes,
            short,
            long_at,
            long_len: at,
        }
    }

    /// Where short level k (k >= `short`) starts in the short buffer, for `lanes` rows.
    fn short_at(&self, k: usize, lanes: usize) -> usize {
        self.sizes[self.short..k].iter().sum::<usize>() * lanes
    }
}

/// The gradient of `prod_rows` for `g` (one value per row).
pub(super) fn prod_rows_grad<T: Float>(x: &[T], g: &[T], outer: usize, len: usize) -> Vec<T> {
    let tree = Tree::new(len);
    let per = blocks_per_chunk(len, ROW_GROUP);
    let short_len = tree.short_at(tree.sizes.len(), ROW_GROUP);
    filled(outer * len, per * ROW_GROUP * len, x.len(), |ci, out| {
        let (r0, rows) = (ci * per * ROW_GROUP, out.len() / len);
        let mut s = Scratch {
            long: vec![T::ZERO; tree.long_len * ROW_GROUP],
            short: vec![T::ZERO; short_len],
            grad: [
                vec![T::ZERO; SHORT * ROW_GROUP],
                vec![T::ZERO; SHORT * ROW_GROUP],
            ],
            rows: [vec![T::ZERO; len], vec![T::ZERO; len]],
        };
        prod_rows_grad_wide(
            &x[r0 * len..][..rows * len],
            &g[r0..][..rows],
            &tree,
            &mut s,
            out,
        );
    })
}

/// A thread's buffers for `prod_rows_grad`: each row's long levels, the short levels of a group
/// (rows as lanes), and two gradients (the level above, the level below) for the short levels
/// and two for a row's long ones.
struct Scratch<T> {
    long: Vec<T>,
    short: Vec<T>,
    grad: [Vec<T>; 2],
    rows: [Vec<T>; 2],
}

wide_fn!(fn prod_rows_grad_wide<T: Float>(
    x: &[T], g: &[T], t: &Tree, s: &mut Scratch<T>, out: &mut [MaybeUninit<T>]
) = prod_rows_grad_body);

/// The level above `src` (n entries of `w` values): entry i is src's entry i times entry
/// i + h (h = n / 2), the odd last entry carried.
#[inline(always)]
fn level_up<T: Float>(src: &[T], dst: &mut [T], n: usize, w: usize) {
    let hw = n / 2 * w;
    for ((d, &a), &b) in dst[..hw].iter_mut().zip(&src[..hw]).zip(&src[hw..2 * hw]) {
        *d = a * b;
    }
    if n % 2 == 1 {
        dst[hw..hw + w].copy_from_slice(&src[2 * hw..][..w]);
    }
}

/// The gradient of a level (n entries of `w` values) from its upper level's `up`: each pair's
/// product rule, g * b for a and g * a for b, the carried entry's gradient passed down.
#[inline(always)]
fn level_down<T: Float>(level: &[T], up: &[T], below: &mut [MaybeUninit<T>], n: usize, w: usize) {
    let hw = n / 2 * w;
    let (lo, hi) = below[..n * w].split_at_mut(hw);
    for ((b, &g), &v) in lo.iter_mut().zip(&up[..hw]).zip(&level[hw..2 * hw]) {
        b.write(g * v);
    }
    for ((b, &g), &v) in hi[..hw].iter_mut().zip(&up[..hw]).zip(&level[..hw]) {
        b.write(g * v);
    }
    if n % 2 == 1 {
        for (b, &g) in hi[hw..].iter_mut().zip(&up[hw..hw + w]) {
            b.write(g);
        }
    }
}

/// `level_down` into an initialised buffer.
#[inline(always)]
fn level_down_to<T: Float>(level: &[T], up: &[T], below: &mut [T], n: usize, w: usize) {
    // SAFETY: writing initialised values over initialised ones keeps every element initialised.
    let below = unsafe { &mut *(below as *mut [T] as *mut [MaybeUninit<T>]) };
    level_down(level, up, below, n, w);
}

/// The gradients of `g.len()` rows of `x`, `ROW_GROUP` at a time, into `out`.
#[inline(always)]
fn prod_rows_grad_body<T: Float>(
    x: &[T],
    g: &[T],
    t: &Tree,
    s: &mut Scratch<T>,
    out: &mut [MaybeUninit<T>],
) {
    let (len, ks, top) = (t.sizes[0], t.short, t.sizes.len() - 1);
    let [ga, gb] = &mut s.grad;
    for (o, out) in out.chunks_mut(ROW_GROUP * len).enumerate() {
        let lanes = out.len() / len;
        let xg = &x[o * ROW_GROUP * len..][..lanes * len];
        // Up: each row's long levels, its first short level transposed into the block.
        for r in 0..lanes {
            let xr = &xg[r * len..][..len];
            let long = &mut s.long[r * t.long_len..][..t.long_len];
            for k in 0..ks {
                let (src, dst) = long.split_at_mut(t.long_at[k + 1]);
                let src = if k == 0 { xr } else { &src[t.long_at[k]..] };
                level_up(src, dst, t.sizes[k], 1);
            }
            let first = if ks == 0 { xr } else { &long[t.long_at[ks]..] };
            for (l, &v) in first[..t.sizes[ks]].iter().enumerate() {
                s.short[l * lanes + r] = v;
            }
        }
        for k in ks..top {
            let (src, dst) = s.short.split_at_mut(t.short_at(k + 1, lanes));
            level_up(&src[t.short_at(k, lanes)..], dst, t.sizes[k], lanes);
        }
        // Down the short levels, the rows side by side: `ga` holds the level above's gradient.
        ga[..lanes].copy_from_slice(&g[o * ROW_GROUP..][..lanes]);
        for k in (ks..top).rev() {
            let level = &s.short[t.short_at(k, lanes)..];
            level_down_to(level, ga, gb, t.sizes[k], lanes);
            std::mem::swap(ga, gb);
        }
        // The first short level's gradient transposed back to rows (`gb`, row after row).
        let n = t.sizes[ks];
        for r in 0..lanes {
            for (l, v) in gb[r * n..][..n].iter_mut().enumerate() {
                *v = ga[l * lanes + r];
            }
        }
        // Then each row's long levels, the last (the row's own values) into `out`.
        let [ra, rb] = &mut s.rows;
        let (mut ra, mut rb) = (ra, rb);
        for r in 0..lanes {
            let (out, g_row) = (&mut out[r * len..][..len], &gb[r * n..][..n]);
            if ks == 0 {
                for (o, &v) in out.iter_mut().zip(g_row) {
                    o.write(v);
                }
                continue;
            }
            let long = &s.long[r * t.long_len..][..t.long_len];
            for k in (1..ks).rev() {
                let level = &long[t.long_at[k]..];
                if k == ks - 1 {
                    level_down_to(level, g_row, ra, t.sizes[k], 1);
                } else {
                    level_down_to(level, ra, rb, t.sizes[k], 1);
                    std::mem::swap(&mut ra, &mut rb);
                }
            }
            let up = if ks == 1 { g_row } else { &ra[..] };
            level_down(&xg[r * len..][..len], up, out, len, 1);
        }
    }
}
