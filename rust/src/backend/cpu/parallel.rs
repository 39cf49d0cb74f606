//! The CPU threads (the calling thread plus the spinning team of `team.rs`, sized by
//! `set_num_threads`), the chunked loops kernels run on them, and the kernel-kind switch
//! (reference or fast).

use crate::backend::settings;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Work below this many elements runs on the calling thread: spawning costs more than it saves.
pub const PAR_MIN_ELEMS: usize = 1 << 15;

/// The thread count kernels use, the calling thread included (0 until first asked).
static THREADS: AtomicUsize = AtomicUsize::new(0);

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Sets the number of CPU threads kernels use (n >= 1), starting the helpers at once.
pub fn set_num_threads(n: usize) -> crate::Result<()> {
    if n == 0 {
        return Err(crate::Error::arg(
            "set_num_threads",
            "expected a thread count >= 1, got 0",
        ));
    }
    if !super::team::resize(n) {
        return Err(crate::Error::arg(
            "set_num_threads",
            format!("could not start {n} worker threads"),
        ));
    }
    THREADS.store(n, Ordering::Relaxed);
    Ok(())
}

pub fn num_threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => {
            let n = default_threads();
            THREADS.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// Whether `work` items are worth spreading over threads: enough of them, and more than one
/// thread to spread over (a one-thread team would only add a hand-off to another OS thread).
pub fn worth_threads(work: usize, min: usize) -> bool {
    work >= min && num_threads() > 1
}

/// Runs `f(i)` once for every `i` in `0..count`, spread over the calling thread and the team's
/// helpers (`team.rs`: threads that stay awake a while after each job) when `work` (elements
/// touched) is worth it. The caller takes part: items are claimed from a shared counter, so
/// when a helper is late the caller simply does more of them. A call while another caller owns
/// the team, or from inside an item, runs on its own thread.
pub fn team_for(count: usize, work: usize, f: impl Fn(usize) + Sync) {
    let threads = num_threads();
    if threads.min(count) < 2 || work < PAR_MIN_ELEMS || !super::team::team(threads).run(count, &f)
    {
        (0..count).for_each(f);
    }
}

/// A pointer to an output that `team_for` items write in disjoint pieces.
struct Disjoint<A>(*mut A, usize);
// Each piece is handed to exactly one item (see `piece`), so sharing the pointer is sound.
unsafe impl<A: Send> Sync for Disjoint<A> {}

impl<A> Disjoint<A> {
    /// The output's first element (for pieces that are not runs, such as `Tile`s).
    fn base(&self) -> *mut A {
        self.0
    }

    /// Elements `start..start + len` (clamped to the end).
    ///
    /// # Safety
    /// No two live calls may overlap, and the output must outlive the piece.
    #[allow(clippy::mut_from_ref)]
    unsafe fn piece(&self, start: usize, len: usize) -> &mut [A] {
        std::slice::from_raw_parts_mut(self.0.add(start), len.min(self.1 - start))
    }
}

/// One tile of a row-major matrix: `rows` rows of `cols` elements, `row_len` apart. Its rows are
/// lent one at a time, so no two can alias.
pub struct Tile<'a, A> {
    ptr: *mut A,
    row_len: usize,
    rows: usize,
    cols: usize,
    _out: std::marker::PhantomData<&'a mut A>,
}

impl<A> Tile<'_, A> {
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Row `r` of the tile (`cols` elements).
    pub fn row(&mut self, r: usize) -> &mut [A] {
        assert!(r < self.rows);
        // SAFETY: the tile's rows lie inside the matrix (`for_tiles`) and belong to this tile
        // alone; the &mut borrow of self keeps one row lent at a time.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r * self.row_len), self.cols) }
    }
}

/// Runs `f(i, tile)` for every tile of `out`, a matrix with rows of `row_len`, cut into tiles of
/// `tile_rows` × `tile_cols` (smaller at the bottom and right edges), tile i in row-major tile
/// order, one `team_for` item per tile: for work whose pieces are rectangles of the output
/// rather than runs of it.
pub fn for_tiles<A: Send>(
    out: &mut [A],
    row_len: usize,
    (tile_rows, tile_cols): (usize, usize),
    work: usize,
    f: impl Fn(usize, Tile<'_, A>) + Sync,
) {
    if out.is_empty() || row_len == 0 || tile_rows == 0 || tile_cols == 0 {
        return;
    }
    assert!(out.len().is_multiple_of(row_len));
    let rows = out.len() / row_len;
    let across = row_len.div_ceil(tile_cols);
    let ptr = Disjoint(out.as_mut_ptr(), out.len());
    team_for(rows.div_ceil(tile_rows) * across, work, |i| {
        let (r0, c0) = (i / across * tile_rows, i % across * tile_cols);
        let tile = Tile {
            // SAFETY: (r0, c0) lies inside the matrix; tiles do not overlap, and `out` is
            // borrowed mutably for this whole call.
            ptr: unsafe { ptr.base().add(r0 * row_len + c0) },
            row_len,
            rows: tile_rows.min(rows - r0),
            cols: tile_cols.min(row_len - c0),
            _out: std::marker::PhantomData,
        };
        super::simd::widest(|| f(i, tile))
    });
}

/// Elements a `for_chunks` claim covers at least, so tiny chunks (short rows) are not claimed
/// one atomic operation at a time.
const CLAIM_ELEMS: usize = 1 << 13;

/// Runs `f(i, chunk)` over `out` split into chunks of `per` elements: across the calling thread
/// and the pool when `work` (elements touched) is worth it (`team_for`), each call compiled for
/// the widest vector instructions available (`simd::widest`). Each chunk is written
/// by one call, so the result does not depend on the thread count.
pub fn for_chunks<A: Send>(
    out: &mut [A],
    per: usize,
    work: usize,
    f: impl Fn(usize, &mut [A]) + Sync,
) {
    let group = claim_group(out.len(), per, work);
    chunks_in_groups(out, per, group, work, f);
}

/// Chunks of `per` elements per claim, for an output of `len` elements costing `work`: at least
/// CLAIM_ELEMS elements touched, and at most about a quarter of the output per claim on two
/// threads. An output element may cost many (a reduction's row): the minimum counts the work,
/// else a reduction to a few thousand values was one claim, on one thread. A large output goes
/// in long runs, which the hardware prefetcher follows; short interleaved claims left a
/// memory-bound loop (a map, an add) as slow on two threads as on one.
fn claim_group(len: usize, per: usize, work: usize) -> usize {
    let per = per.max(1);
    let per_element = (work / len.max(1)).max(1);
    CLAIM_ELEMS
        .div_ceil(per.saturating_mul(per_element))
        .max(len.div_ceil(per).div_ceil(2 * num_threads()))
        .max(1)
}

/// As `for_chunks`, one item per chunk however small (for chunks whose work is heavy, such as
/// a product each).
pub fn for_each_chunk<A: Send>(
    out: &mut [A],
    per: usize,
    work: usize,
    f: impl Fn(usize, &mut [A]) + Sync,
) {
    chunks_in_groups(out, per, 1, work, f);
}

/// `f(i, chunk)` over `out` in chunks of `per`, `group` consecutive chunks per `team_for` item,
/// each item compiled for the widest vector instructions available.
fn chunks_in_groups<A: Send>(
    out: &mut [A],
    per: usize,
    group: usize,
    work: usize,
    f: impl Fn(usize, &mut [A]) + Sync,
) {
    if per == 0 || out.is_empty() {
        return;
    }
    let (chunks, group) = (out.len().div_ceil(per), group.max(1));
    let (len, ptr) = (out.len(), Disjoint(out.as_mut_ptr(), out.len()));
    team_for(chunks.div_ceil(group), work, |g| {
        super::simd::widest(|| {
            for i in g * group..((g + 1) * group).min(chunks) {
                // SAFETY: chunk i covers i*per..(i+1)*per, claimed by one item only; `out` is
                // borrowed mutably for this whole call.
                f(i, unsafe { ptr.piece(i * per, per.min(len - i * per)) });
            }
        })
    });
}

/// `for_chunks` over two outputs split alike (e.g. max pooling's values and winners): chunk `i`
/// is `a[i*pa..]` and `b[i*pb..]`.
pub fn for_chunks2<A: Send, B: Send>(
    a: &mut [A],
    pa: usize,
    b: &mut [B],
    pb: usize,
    work: usize,
    f: impl Fn(usize, &mut [A], &mut [B]) + Sync,
) {
    if pa == 0 || pb == 0 || a.is_empty() {
        return;
    }
    let chunks = a.len().div_ceil(pa).min(b.len().div_ceil(pb));
    let (la, lb) = (a.len(), b.len());
    let (x, y) = (Disjoint(a.as_mut_ptr(), la), Disjoint(b.as_mut_ptr(), lb));
    team_for(chunks, work, |i| {
        // SAFETY: as in `for_chunks`, chunk i of each output belongs to item i alone.
        let (ca, cb) = unsafe { (x.piece(i * pa, pa), y.piece(i * pb, pb)) };
        super::simd::widest(|| f(i, ca, cb))
    });
}

/// `for_chunks` over several outputs of one length, split alike: `f(i, pieces, scratch)` gets
/// chunk `i` of every output, in the order given, and a scratch value made by `scratch()` once
/// per claim of consecutive chunks (so buffers are not allocated per chunk).
pub fn for_chunks_many<A: Send, S>(
    outs: &mut [&mut [A]],
    per: usize,
    work: usize,
    scratch: impl Fn() -> S + Sync,
    f: impl Fn(usize, &mut [&mut [A]], &mut S) + Sync,
) {
    let len = outs.first().map_or(0, |o| o.len());
    if per == 0 || len == 0 {
        return;
    }
    assert!(outs.iter().all(|o| o.len() == len), "outputs of one length");
    let ptrs: Vec<Disjoint<A>> = outs
        .iter_mut()
        .map(|o| Disjoint(o.as_mut_ptr(), len))
        .collect();
    let chunks = len.div_ceil(per);
    let group = claim_group(len, per, work);
    team_for(chunks.div_ceil(group), work, |gi| {
        super::simd::widest(|| {
            let mut s = scratch();
            let mut pieces: Vec<&mut [A]> = Vec::with_capacity(ptrs.len());
            for i in gi * group..((gi + 1) * group).min(chunks) {
                pieces.clear();
                // SAFETY: as in `for_chunks`, chunk i of each output belongs to item i alone.
                pieces.extend(ptrs.iter().map(|p| unsafe { p.piece(i * per, per) }));
                f(i, &mut pieces, &mut s);
            }
        })
    });
}

/// Whether this thread runs fast kernels (see `backend::settings`).
pub fn fast_kernels() -> bool {
    settings::current().fast
}

/// Selects fast or reference kernels for this thread.
pub fn set_fast_kernels(on: bool) {
    settings::update(|s| s.fast = on);
}

/// Runs `f` with the kernel kind fixed to `on` on this thread, then restores it.
pub fn with_fast_kernels<R>(on: bool, f: impl FnOnce() -> R) -> R {
    settings::with_settings(
        settings::KernelSettings {
            fast: on,
            ..settings::current()
        },
        f,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_tiles_hands_each_element_to_the_tile_that_holds_it() {
        // 7 rows of 10 in 3 × 4 tiles: 3 × 3 tiles, the last row and column of tiles smaller
        // (on the default threads; `work` large enough to use them).
        let (rows, row_len, tr, tc) = (7, 10, 3, 4);
        let mut out = vec![usize::MAX; rows * row_len];
        for_tiles(&mut out, row_len, (tr, tc), usize::MAX, |i, mut tile| {
            for r in 0..tile.rows() {
                for v in tile.row(r).iter_mut() {
                    assert_eq!(*v, usize::MAX, "written twice");
                    *v = i;
                }
            }
        });
        for (at, &v) in out.iter().enumerate() {
            let (r, c) = (at / row_len, at % row_len);
            assert_eq!(
                v,
                r / tr * row_len.div_ceil(tc) + c / tc,
                "element ({r}, {c})"
            );
        }
    }
}
