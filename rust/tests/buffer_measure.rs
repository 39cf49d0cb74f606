//! `buffer_cache::measure` (its own test binary: a measurement counts every thread's
//! allocations, so nothing else may run beside it): the peak above the start, and whether
//! large buffers came from the cache's table or fresh from the system.

use tlrs::buffer_cache::{measure, MIN_BYTES};

#[test]
fn a_measurement_sees_the_peak_and_where_large_buffers_came_from() {
    let n = 3 * MIN_BYTES;
    let (_, m) = measure(|| {
        let a = vec![1u8; n];
        let b = vec![2u8; n];
        drop((a, b));
        // The same size again: parked by the drop above, so it comes from the table.
        std::hint::black_box(vec![3u8; n]);
    });
    assert!(
        m.peak_bytes >= 2 * n && m.peak_bytes < 2 * n + (64 << 10),
        "{m:?}"
    );
    assert_eq!(m.large_buffers, 3, "{m:?}");
    assert_eq!(m.fresh_large_buffers, 2, "{m:?}");
    // A value freed inside that was made before does not lower the peak below zero.
    let before = vec![0u8; n];
    let (_, m) = measure(move || drop(before));
    assert_eq!((m.peak_bytes, m.large_buffers), (0, 0), "{m:?}");
}
