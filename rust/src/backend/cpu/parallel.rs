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
    /// Elements `start..start + len` (clamped to the end).
    ///
    /// # Safety
    /// No two live calls may overlap, and the output must outlive the piece.
    #[allow(clippy::mut_from_ref)]
    unsafe fn piece(&self, start: usize, len: usize) -> &mut [A] {
        std::slice::from_raw_parts_mut(self.0.add(start), len.min(self.1 - start))
    }
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
    chunks_in_groups(out, per, CLAIM_ELEMS.div_ceil(per.max(1)), work, f);
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
    let (chunks, group) = (len.div_ceil(per), CLAIM_ELEMS.div_ceil(per).max(1));
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
