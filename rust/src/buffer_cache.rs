//! The crate's global allocator: the system allocator, with freed large buffers kept for reuse.
//!
//! A training step frees and reallocates the same large buffers (activations, gradients, the
//! convolution's columns) every step. Handed back to the system, each one returns to the host
//! and the next step pays a page fault and a kernel page clear for every 4 KiB it touches again
//! (on these VMs that was ~14% of a ResNet-18 step). Here a freed buffer of `MIN_BYTES` or more
//! is parked in a small table instead, up to `CAP_BYTES` in all, and the next request of the same
//! size class takes it back. Sizes are rounded up to classes an eighth of a power of two apart,
//! so buffers of nearby sizes share (the rounding is address space, never touched memory).
//! When the table is full, the least recently parked buffer goes back to the system.
//! `release_all` empties the table (`tlrs.release_cached_memory()`).
//!
//! Nothing here allocates (the table is a fixed array behind a `Mutex`, which on Linux is a
//! futex), so the allocator never re-enters itself.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// Buffers smaller than this go straight to the system allocator (its heap reuses them well).
pub const MIN_BYTES: usize = 256 << 10;
/// At most this many bytes parked at once.
pub const CAP_BYTES: usize = 1 << 30;
/// Alignment of every cached buffer; larger alignments bypass the cache.
const ALIGN: usize = 64;
/// Buffers parked at once. A ResNet-18 step frees more than 64 large buffers between two uses
/// of a size class (the direct convolutions add their padded and packed copies): with 64 slots
/// the kernel's page clearing was 4.4% of a compiled fast step, with 256 it is 0.6%.
const SLOTS: usize = 256;

#[derive(Clone, Copy)]
struct Slot {
    ptr: *mut u8,
    class: usize,
    stamp: u64,
}

struct Table {
    slots: [Slot; SLOTS],
    bytes: usize,
    clock: u64,
}

// SAFETY: the raw pointers are owned buffers handed between threads under the mutex only.
unsafe impl Send for Table {}

const EMPTY: Slot = Slot {
    ptr: std::ptr::null_mut(),
    class: 0,
    stamp: 0,
};

/// What parking displaced, to go back to the system once the lock is released.
struct Displaced {
    bufs: [(*mut u8, usize); SLOTS + 1],
    n: usize,
}

impl Displaced {
    fn new() -> Displaced {
        Displaced {
            bufs: [(std::ptr::null_mut(), 0); SLOTS + 1],
            n: 0,
        }
    }
    fn push(&mut self, ptr: *mut u8, class: usize) {
        self.bufs[self.n] = (ptr, class);
        self.n += 1;
    }
}

impl Table {
    const fn new() -> Table {
        Table {
            slots: [EMPTY; SLOTS],
            bytes: 0,
            clock: 0,
        }
    }

    /// A parked buffer of `class` bytes, if one is parked.
    fn take(&mut self, class: usize) -> Option<*mut u8> {
        let i = self
            .slots
            .iter()
            .position(|s| !s.ptr.is_null() && s.class == class)?;
        let ptr = std::mem::replace(&mut self.slots[i].ptr, std::ptr::null_mut());
        self.bytes -= class;
        Some(ptr)
    }

    /// Parks `ptr` (`class` bytes) within `cap` bytes, displacing the least recently parked
    /// buffers to make room; `ptr` itself is displaced when it alone exceeds `cap`.
    fn park(&mut self, ptr: *mut u8, class: usize, cap: usize) -> Displaced {
        let mut out = Displaced::new();
        if class > cap {
            out.push(ptr, class);
            return out;
        }
        while self.bytes + class > cap || self.slots.iter().all(|s| !s.ptr.is_null()) {
            let oldest = (0..SLOTS)
                .filter(|&i| !self.slots[i].ptr.is_null())
                .min_by_key(|&i| self.slots[i].stamp);
            let Some(i) = oldest else { break };
            let s = std::mem::replace(&mut self.slots[i], EMPTY);
            self.bytes -= s.class;
            out.push(s.ptr, s.class);
        }
        self.clock += 1;
        // The loop above freed a slot whenever all were taken.
        let i = self.slots.iter().position(|s| s.ptr.is_null()).unwrap_or(0);
        self.slots[i] = Slot {
            ptr,
            class,
            stamp: self.clock,
        };
        self.bytes += class;
        out
    }

    /// Every parked buffer, the table left empty.
    fn drain(&mut self) -> Displaced {
        let mut out = Displaced::new();
        for s in self.slots.iter_mut().filter(|s| !s.ptr.is_null()) {
            out.push(s.ptr, s.class);
            *s = EMPTY;
        }
        self.bytes = 0;
        out
    }
}

static TABLE: Mutex<Table> = Mutex::new(Table::new());

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The size class of a request of `size` bytes: rounded up to an eighth of its power of two
/// (and to whole pages); `None` when that overflows what a `Layout` can describe.
pub fn size_class(size: usize) -> Option<usize> {
    let top = usize::BITS - 1 - size.max(1).leading_zeros();
    let step = (1usize << top.saturating_sub(3)).max(4096);
    let class = size.checked_add(step - 1)? & !(step - 1);
    Layout::from_size_align(class, ALIGN).ok().map(|_| class)
}

fn cacheable(layout: Layout) -> Option<usize> {
    (layout.size() >= MIN_BYTES && layout.align() <= ALIGN)
        .then(|| size_class(layout.size()))
        .flatten()
}

fn take(class: usize) -> Option<*mut u8> {
    table().take(class)
}

fn park(ptr: *mut u8, class: usize) {
    let displaced = table().park(ptr, class, CAP_BYTES);
    // The system calls run outside the lock.
    release_each(&displaced);
}

fn release_each(d: &Displaced) {
    for &(p, c) in &d.bufs[..d.n] {
        release(p, c);
    }
}

fn release(ptr: *mut u8, class: usize) {
    // SAFETY: `ptr` came from `System` with exactly this layout (see `alloc_class`).
    unsafe { System.dealloc(ptr, Layout::from_size_align_unchecked(class, ALIGN)) }
}

/// Returns every parked buffer to the system; the bytes returned.
pub fn release_all() -> usize {
    let (d, bytes) = {
        let mut t = table();
        let bytes = t.bytes;
        (t.drain(), bytes)
    };
    release_each(&d);
    bytes
}

/// Bytes parked now.
pub fn cached_bytes() -> usize {
    table().bytes
}

/// What one `measure`d call allocated: the most bytes it held at once above what was live
/// when it began (a value freed during the call counts from then on too; bytes as requested,
/// not rounded up to size classes, and not counting buffers parked in the table), and how many
/// of its large buffers (`MIN_BYTES` or more) came from the table and how many fresh from the
/// system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measurement {
    pub peak_bytes: usize,
    pub large_buffers: usize,
    pub fresh_large_buffers: usize,
}

// Counted only while `MEASURING` (one relaxed load per allocation otherwise), by every thread:
// a measurement covers what the kernels' helper threads allocate too.
static MEASURING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static LARGE: AtomicUsize = AtomicUsize::new(0);
static FRESH: AtomicUsize = AtomicUsize::new(0);
static MEASURE_LOCK: Mutex<()> = Mutex::new(());

#[inline]
fn note_alloc(bytes: usize) {
    if MEASURING.load(Relaxed) {
        let now = LIVE.fetch_add(bytes as isize, Relaxed) + bytes as isize;
        PEAK.fetch_max(now, Relaxed);
    }
}

#[inline]
fn note_free(bytes: usize) {
    if MEASURING.load(Relaxed) {
        LIVE.fetch_sub(bytes as isize, Relaxed);
    }
}

#[inline]
fn note_large(fresh: bool) {
    if MEASURING.load(Relaxed) {
        LARGE.fetch_add(1, Relaxed);
        FRESH.fetch_add(usize::from(fresh), Relaxed);
    }
}

/// `f()` and what it allocated (one measurement at a time, so `f` must not measure itself;
/// other threads' allocations while it runs count too, so measure with nothing else running).
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Measurement) {
    let _one = MEASURE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for c in [&LIVE, &PEAK] {
        c.store(0, Relaxed);
    }
    for c in [&LARGE, &FRESH] {
        c.store(0, Relaxed);
    }
    /// Ends the measurement however `f` leaves (a panic included).
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            MEASURING.store(false, Relaxed);
        }
    }
    MEASURING.store(true, Relaxed);
    let stop = Stop;
    let r = f();
    drop(stop);
    let m = Measurement {
        peak_bytes: PEAK.load(Relaxed).max(0) as usize,
        large_buffers: LARGE.load(Relaxed),
        fresh_large_buffers: FRESH.load(Relaxed),
    };
    (r, m)
}

/// The allocator: `System` with large freed buffers parked for reuse.
pub struct BufferCache;

unsafe fn alloc_class(class: usize, zeroed: bool) -> *mut u8 {
    let layout = Layout::from_size_align_unchecked(class, ALIGN);
    if zeroed {
        System.alloc_zeroed(layout)
    } else {
        System.alloc(layout)
    }
}

unsafe impl GlobalAlloc for BufferCache {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = match cacheable(layout) {
            Some(class) => {
                let parked = take(class);
                let p = parked.unwrap_or_else(|| alloc_class(class, false));
                if !p.is_null() {
                    note_large(parked.is_none());
                }
                p
            }
            None => System.alloc(layout),
        };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = match cacheable(layout) {
            Some(class) => {
                let parked = take(class);
                let fresh = parked.is_none();
                let p = match parked {
                    Some(p) => {
                        // Only the requested bytes: the rest of the class is never read.
                        p.write_bytes(0, layout.size());
                        p
                    }
                    // Fresh pages from the system are zero already: no clearing pass.
                    None => alloc_class(class, true),
                };
                if !p.is_null() {
                    note_large(fresh);
                }
                p
            }
            None => System.alloc_zeroed(layout),
        };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(layout.size());
        match cacheable(layout) {
            Some(class) => park(ptr, class),
            None => System.dealloc(ptr, layout),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align_unchecked(new_size, layout.align());
        match (cacheable(layout), cacheable(new)) {
            (None, None) => {
                let out = System.realloc(ptr, layout, new_size);
                if !out.is_null() {
                    note_free(layout.size());
                    note_alloc(new_size);
                }
                out
            }
            // Same class: the buffer already has the room.
            (Some(a), Some(b)) if a == b => {
                note_free(layout.size());
                note_alloc(new_size);
                ptr
            }
            _ => {
                let out = self.alloc(new);
                if !out.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, out, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_by_at_most_an_eighth_and_to_pages() {
        for size in [
            MIN_BYTES,
            MIN_BYTES + 1,
            1_000_003,
            3 << 20,
            (5 << 20) + 7,
            1 << 30,
        ] {
            let c = size_class(size).unwrap();
            assert!(c >= size && c - size <= size / 8 + 4096, "{size} -> {c}");
            assert_eq!(c % 4096, 0);
            assert_eq!(size_class(c), Some(c), "a class is its own class");
        }
        assert_eq!(size_class(usize::MAX - 10), None);
    }

    /// Distinct fake addresses: the table only stores them, these tests never dereference them.
    fn fake(i: usize) -> *mut u8 {
        (0x1000 * (i + 1)) as *mut u8
    }

    fn displaced(d: &Displaced) -> Vec<(usize, usize)> {
        d.bufs[..d.n]
            .iter()
            .map(|&(p, c)| (p as usize, c))
            .collect()
    }

    #[test]
    fn a_parked_buffer_comes_back_for_its_class_only() {
        let mut t = Table::new();
        let c = size_class(MIN_BYTES).unwrap();
        assert_eq!(displaced(&t.park(fake(0), c, CAP_BYTES)), vec![]);
        assert_eq!(t.bytes, c);
        assert_eq!(t.take(c + 4096), None);
        assert_eq!(t.take(c), Some(fake(0)));
        assert_eq!(t.take(c), None);
        assert_eq!(t.bytes, 0);
    }

    #[test]
    fn the_cap_displaces_the_least_recently_parked_first() {
        let mut t = Table::new();
        let c = 1 << 20;
        for i in 0..3 {
            assert_eq!(t.park(fake(i), c, 3 << 20).n, 0);
        }
        // A fourth MiB under a 3 MiB cap displaces the first parked.
        assert_eq!(displaced(&t.park(fake(3), c, 3 << 20)), vec![(0x1000, c)]);
        assert_eq!(t.bytes, 3 << 20);
        // A buffer larger than the cap is never parked: it is displaced itself.
        assert_eq!(
            displaced(&t.park(fake(9), 4 << 20, 3 << 20)),
            vec![(0xa000, 4 << 20)]
        );
        let mut rest = displaced(&t.drain());
        rest.sort();
        assert_eq!(rest, vec![(0x2000, c), (0x3000, c), (0x4000, c)]);
        assert_eq!((t.bytes, t.take(c)), (0, None));
    }

    #[test]
    fn a_full_table_displaces_one_slot() {
        let mut t = Table::new();
        for i in 0..SLOTS {
            assert_eq!(t.park(fake(i), 4096, usize::MAX).n, 0);
        }
        assert_eq!(
            displaced(&t.park(fake(SLOTS), 4096, usize::MAX)),
            vec![(0x1000, 4096)]
        );
        assert_eq!(t.bytes, SLOTS * 4096);
    }

    #[test]
    fn zeroed_requests_read_zeros_when_a_dirty_buffer_is_reused() {
        // Through the real allocator: a dirty buffer of one class is freed, then a zeroed one of
        // the same class requested (other tests may take the parked one first; either way the
        // new buffer must read as zeros).
        for _ in 0..4 {
            let n = (MIN_BYTES + 12345) / 4;
            drop(vec![0xdead_beef_u32; n]);
            let b: Vec<u32> = vec![0; n];
            assert!(b.iter().all(|&v| v == 0));
        }
    }
}
