//! Stable sorting positions along an axis (sort, top-k), on the host, threaded over lanes.
//!
//! Each value becomes an unsigned key whose integer order is the wanted order (NaN above every
//! number, -0 equal to +0, reversed for a descending sort), paired with its position: sorting
//! the pairs with an unstable sort then gives the stable order (ties by position), and top-k
//! selects the k smallest pairs before sorting only those.

use super::parallel::for_chunks;

/// A value's sort key: integer order = ascending order, NaN largest, -0 == +0.
pub trait SortKey: Copy + Send + Sync {
    /// Whether every key fits in 32 bits (then a key and its position pack into one u64,
    /// which sorts faster than a pair).
    const NARROW: bool;
    fn key(self) -> u64;
}

impl SortKey for f32 {
    const NARROW: bool = true;
    fn key(self) -> u64 {
        if self.is_nan() {
            return u64::from(u32::MAX);
        }
        let b = (self + 0.0).to_bits(); // -0 + 0 = +0
        u64::from(if b >> 31 == 1 { !b } else { b | 1 << 31 })
    }
}

impl SortKey for f64 {
    const NARROW: bool = false;
    fn key(self) -> u64 {
        if self.is_nan() {
            return u64::MAX;
        }
        let b = (self + 0.0).to_bits();
        if b >> 63 == 1 {
            !b
        } else {
            b | 1 << 63
        }
    }
}

impl SortKey for i64 {
    const NARROW: bool = false;
    fn key(self) -> u64 {
        (self as u64) ^ (1 << 63)
    }
}

/// Lanes per parallel item: enough work per hand-off for rows of a few dozen values.
const LANES_PER_ITEM: usize = 16;

/// The positions (0..n) of the first `k` values of every lane in sorted order, for `values` of
/// shape [outer, n, inner] sorted along the middle axis: an array of shape [outer, k, inner].
pub fn sorted_positions<T: SortKey>(
    values: &[T],
    [outer, n, inner]: [usize; 3],
    descending: bool,
    k: usize,
) -> Vec<i64> {
    let lanes = outer * inner;
    let mut lane_major = vec![0i64; lanes * k];
    if k == 0 {
        return lane_major;
    }
    let flip = match (descending, T::NARROW) {
        (false, _) => 0,
        (true, true) => u64::from(u32::MAX),
        (true, false) => u64::MAX,
    };
    let per = LANES_PER_ITEM * k;
    for_chunks(&mut lane_major, per, lanes * n * 8, |c, out| {
        let mut packed: Vec<u64> = Vec::with_capacity(if T::NARROW { n } else { 0 });
        let mut pairs: Vec<(u64, u32)> = Vec::with_capacity(if T::NARROW { 0 } else { n });
        for (j, lane_out) in out.chunks_mut(k).enumerate() {
            let lane = c * LANES_PER_ITEM + j;
            let (o, i) = (lane / inner, lane % inner);
            let key = |p: usize| values[o * n * inner + i + p * inner].key() ^ flip;
            // Positions fit in u32: an axis longer than that is refused by the caller.
            if T::NARROW {
                packed.clear();
                packed.extend((0..n).map(|p| key(p) << 32 | p as u64));
                first_sorted(&mut packed, k);
                for (slot, &v) in lane_out.iter_mut().zip(&packed) {
                    *slot = (v & u64::from(u32::MAX)) as i64;
                }
            } else {
                pairs.clear();
                pairs.extend((0..n).map(|p| (key(p), p as u32)));
                first_sorted(&mut pairs, k);
                for (slot, &(_, p)) in lane_out.iter_mut().zip(&pairs) {
                    *slot = i64::from(p);
                }
            }
        }
    });
    if inner == 1 {
        return lane_major;
    }
    let mut out = vec![0i64; lanes * k];
    for o in 0..outer {
        for i in 0..inner {
            for j in 0..k {
                out[(o * k + j) * inner + i] = lane_major[(o * inner + i) * k + j];
            }
        }
    }
    out
}

/// Sorts the `k` smallest items of `v` to its front (the rest dropped).
fn first_sorted<E: Ord>(v: &mut Vec<E>, k: usize) {
    if k < v.len() {
        v.select_nth_unstable(k - 1);
        v.truncate(k);
    }
    v.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle: a stable sort of positions by value with NaN largest (std's sort is
    /// stable), reversed keys for descending.
    fn oracle(v: &[f64], descending: bool) -> Vec<i64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        let rank = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
        idx.sort_by(|&a, &b| {
            let (x, y) = (rank(v[a]), rank(v[b]));
            let (nx, ny) = (v[a].is_nan(), v[b].is_nan());
            let ord = match (nx, ny) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => x.partial_cmp(&y).unwrap(),
            };
            if descending {
                ord.reverse()
            } else {
                ord
            }
        });
        idx.into_iter().map(|p| p as i64).collect()
    }

    #[test]
    fn matches_a_stable_sort_with_nan_largest_and_signed_zeros_tied() {
        let row = [
            1.0,
            -0.0,
            f64::NAN,
            0.0,
            -2.5,
            f64::INFINITY,
            1.0,
            f64::NEG_INFINITY,
            -0.0,
            f64::NAN,
            3.0,
        ];
        for descending in [false, true] {
            let want = oracle(&row, descending);
            let got64 = sorted_positions(&row, [1, row.len(), 1], descending, row.len());
            assert_eq!(got64, want, "f64 descending={descending}");
            let row32: Vec<f32> = row.iter().map(|&x| x as f32).collect();
            let got32 = sorted_positions(&row32, [1, row.len(), 1], descending, row.len());
            assert_eq!(got32, want, "f32 descending={descending}");
            for k in [0, 1, 3, 7] {
                let top = sorted_positions(&row, [1, row.len(), 1], descending, k);
                assert_eq!(top, want[..k], "top {k} descending={descending}");
            }
        }
        let ints = [3i64, -1, 3, i64::MIN, 0, i64::MAX, -1];
        let got = sorted_positions(&ints, [1, ints.len(), 1], false, ints.len());
        assert_eq!(got, [3, 1, 6, 4, 0, 2, 5]);
    }

    #[test]
    fn sorts_along_a_middle_axis_lane_by_lane() {
        // [outer 3, n 5, inner 4] of small integers (many ties), against sorting each lane.
        let (outer, n, inner) = (3, 5, 4);
        let v: Vec<f64> = (0..outer * n * inner)
            .map(|i| ((i * 7919) % 5) as f64)
            .collect();
        for (descending, k) in [(false, 5), (true, 2)] {
            let got = sorted_positions(&v, [outer, n, inner], descending, k);
            for o in 0..outer {
                for i in 0..inner {
                    let lane: Vec<f64> = (0..n).map(|p| v[(o * n + p) * inner + i]).collect();
                    let want = oracle(&lane, descending);
                    for j in 0..k {
                        assert_eq!(got[(o * k + j) * inner + i], want[j], "lane ({o}, {i})");
                    }
                }
            }
        }
    }
}
