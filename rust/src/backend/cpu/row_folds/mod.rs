//! Up to sixteen left folds over contiguous rows (the planes of a per-image norm, the rows of a
//! last-axis sum) stepping together. Each is still one left fold in index order, but sixteen
//! independent chains advance side by side instead of each addition waiting on the one before;
//! on AVX-512 the sixteen folds are the lanes of one vector (f32) or two (f64), fed by register
//! transposes of the rows (`fold16.rs`).

use crate::dtype::Float;

/// Planes whose statistics fold side by side: each is still one left fold in index order, but
/// sixteen of them advance together (independent chains), instead of one fold waiting on each
/// scalar addition (the passes were bound by that wait). On AVX-512 the sixteen folds are the
/// lanes of one vector (f32) or two (f64), fed by register transposes of the planes. The terms
/// themselves are computed plane by plane in contiguous runs, where the divisions vectorise.
pub const LANES: usize = 16;

/// For each plane l of `terms` (up to `LANES` planes of `hw` terms, one after another):
/// `init_l + t_0 + ... + t_(hw-1)` left to right, where t_i is the plane's term i, negated when
/// `negate`; the planes' folds step together.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // one position index steps all planes together
pub fn fold_rows<T: Float>(acc: [T; LANES], terms: &[T], hw: usize, negate: bool) -> [T; LANES] {
    let f = |v: T| if negate { -v } else { v };
    let lanes = (terms.len() / hw.max(1)).min(LANES);
    if lanes == LANES {
        #[cfg(target_arch = "x86_64")]
        if let Some(acc) = fold16::lanes(acc, terms, hw, negate) {
            return acc;
        }
        let planes: [&[T]; LANES] = std::array::from_fn(|l| &terms[l * hw..][..hw]);
        let mut acc = acc;
        for i in 0..hw {
            for l in 0..LANES {
                acc[l] = acc[l] + f(planes[l][i]);
            }
        }
        acc
    } else if lanes == 1 {
        // One row: its fold in a register (an array indexed by a run-time count stays in
        // memory, each add then waiting on a store and a load).
        let mut a = acc[0];
        for &t in &terms[..hw] {
            a = a + f(t);
        }
        let mut acc = acc;
        acc[0] = a;
        acc
    } else {
        let mut acc = acc;
        for i in 0..hw {
            for l in 0..lanes {
                acc[l] = acc[l] + f(terms[l * hw + i]);
            }
        }
        acc
    }
}

/// For each of up to `LANES` rows of `hw` values: the running maximum from -inf in index order,
/// where a value replaces the maximum when it is greater or NaN (so NaN propagates, and of
/// equal values the first stays: softmax's max). The rows step together.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // one position index steps all rows together
pub fn max_rows<T: Float>(rows: &[T], hw: usize) -> [T; LANES] {
    let lanes = (rows.len() / hw.max(1)).min(LANES);
    #[cfg(target_arch = "x86_64")]
    if lanes == LANES {
        if let Some(m) = fold16::max_lanes(rows, hw) {
            return m;
        }
    }
    let mut m = [T::NEG_INFINITY; LANES];
    for i in 0..hw {
        for l in 0..lanes {
            let v = rows[l * hw + i];
            if v > m[l] || v.is_nan() {
                m[l] = v;
            }
        }
    }
    m
}

/// For each of up to `LANES` rows of `hw` values (hw >= 1): the maximum as a left fold of
/// `pool::beats` (NaN propagates, +0 beats -0, of equal values the first stays) and its
/// index. The rows step together.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // one position index steps all rows together
pub fn max_index_rows<T: Float>(rows: &[T], hw: usize) -> ([T; LANES], [usize; LANES]) {
    let lanes = (rows.len() / hw.max(1)).min(LANES);
    #[cfg(target_arch = "x86_64")]
    if lanes == LANES {
        if let Some(m) = fold16::max_index_lanes(rows, hw) {
            return m;
        }
    }
    let mut best = [T::NEG_INFINITY; LANES];
    let mut at = [0usize; LANES];
    for l in 0..lanes {
        best[l] = rows[l * hw];
    }
    for i in 1..hw {
        for l in 0..lanes {
            let v = rows[l * hw + i];
            if super::pool::beats(v, best[l]) {
                best[l] = v;
                at[l] = i;
            }
        }
    }
    (best, at)
}

/// Running sums of 16 contiguous rows of `len` values into `out` (same layout): out[l][0] =
/// rows[l][0], out[l][k] = out[l][k-1] + rows[l][k] (from the far end when `reverse`: out[l][len-1]
/// = rows[l][len-1], out[l][k] = out[l][k+1] + rows[l][k]), the rows' chains stepping together (in f32
/// on AVX-512 the lanes of one vector, fed by 16 x 16 register transposes). False (nothing
/// written) where T is not f32, the CPU lacks AVX-512 or there are not 16 rows.
#[inline(always)]
pub fn cumsum_rows<T: Float>(rows: &[T], len: usize, out: &mut [T], reverse: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if len > 0 && rows.len() == LANES * len && out.len() == rows.len() {
        return fold16::cumsum_lanes(rows, len, out, reverse);
    }
    let _ = (rows, len, out, reverse);
    false
}

#[cfg(target_arch = "x86_64")]
mod fold16;

#[cfg(test)]
mod tests {
    use super::*;

    /// The next value of a xorshift64 stream.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// `fold_rows` (on AVX-512, 16 x 16 tiles in f32 and two 8 x 8 in f64, the last positions
    /// from a partial tile) against each row's left fold one term at a time, bit for bit: terms
    /// of many magnitudes, so any change of order shows in the rounding.
    #[test]
    fn fold_rows_keeps_each_rows_left_fold() {
        fn check<T: Float>() {
            let mut state = 0x1234_5678_9abc_def1u64;
            for hw in [1, 5, 7, 8, 9, 16, 17, 23, 31, 40, 95, 128, 131] {
                for negate in [false, true] {
                    let terms: Vec<T> = (0..LANES * hw)
                        .map(|_| {
                            let r = xorshift(&mut state);
                            let m = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                            T::from_f64(m * f64::powi(2.0, (r % 24) as i32 - 12))
                        })
                        .collect();
                    let acc: [T; LANES] =
                        std::array::from_fn(|l| T::from_f64(l as f64 * 0.37 - 3.0));
                    let got = fold_rows(acc, &terms, hw, negate);
                    for l in 0..LANES {
                        let mut want = acc[l];
                        for &t in &terms[l * hw..][..hw] {
                            want = want + if negate { -t } else { t };
                        }
                        assert_eq!(
                            got[l].to_f64().to_bits(),
                            want.to_f64().to_bits(),
                            "{} hw {hw} negate {negate} row {l}",
                            T::DTYPE
                        );
                    }
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }

    /// `max_index_rows` (on AVX-512, 16 x 16 tiles, the last positions from an overlapping
    /// tile) against the left fold of `pool::beats` one position at a time: values and indices,
    /// bit for bit, on rows drawn from few values (ties, signed zeros, NaN payloads).
    #[test]
    fn max_index_rows_keeps_the_left_folds_bits_and_indices() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::NEG_INFINITY,
            f32::from_bits(0x7fc0_0001),
            f32::from_bits(0xffc0_0002),
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for hw in [1, 5, 16, 17, 20, 32, 33, 40, 95, 128, 131] {
            for round in 0..100 {
                let kinds = if round % 4 == 0 { values.len() } else { 5 };
                let rows: Vec<f32> = (0..LANES * hw)
                    .map(|_| values[(xorshift(&mut state) % kinds as u64) as usize])
                    .collect();
                let (best, at) = max_index_rows(&rows, hw);
                for l in 0..LANES {
                    let row = &rows[l * hw..][..hw];
                    let (mut m, mut i) = (row[0], 0);
                    for (k, &v) in row.iter().enumerate().skip(1) {
                        if crate::backend::cpu::pool::beats(v, m) {
                            (m, i) = (v, k);
                        }
                    }
                    let got = (best[l].to_bits(), at[l]);
                    assert_eq!(got, (m.to_bits(), i), "hw {hw} round {round} row {l}");
                }
            }
        }
    }

    /// `max_rows` (on AVX-512, tiles combined as trees) against the left fold one value at a
    /// time, bit for bit: rows drawn from few values, so ties of +0 and -0 (the first stays) and
    /// NaNs with different payloads (the last wins) are common.
    #[test]
    fn max_rows_keeps_the_left_folds_bits() {
        fn check<T: Float>(nans: [T; 3]) {
            let mut values = [0.0, -0.0, 1.0, -1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY]
                .map(T::from_f64)
                .to_vec();
            values.extend(nans);
            let mut state = 0x2545_f491_4f6c_dd1du64;
            for hw in [1, 5, 7, 8, 9, 16, 17, 40, 64, 95] {
                for round in 0..200 {
                    // Few NaNs in most rounds, so rows without one are common too.
                    let kinds = if round % 4 == 0 { values.len() } else { 7 };
                    let rows: Vec<T> = (0..LANES * hw)
                        .map(|_| values[(xorshift(&mut state) % kinds as u64) as usize])
                        .collect();
                    let got = max_rows(&rows, hw);
                    for (l, g) in got.iter().enumerate() {
                        let mut m = T::NEG_INFINITY;
                        for &v in &rows[l * hw..][..hw] {
                            if v > m || v.is_nan() {
                                m = v;
                            }
                        }
                        let (g, m) = (g.to_f64().to_bits(), m.to_f64().to_bits());
                        assert_eq!(g, m, "{} hw {hw} round {round} row {l}", T::DTYPE);
                    }
                }
            }
        }
        check::<f32>([0x7fc0_0001, 0xffc0_0002, 0x7fc0_0003].map(f32::from_bits));
        check::<f64>(
            [
                0x7ff8_0000_0000_0001,
                0xfff8_0000_0000_0002,
                0x7ff8_0000_0000_0003,
            ]
            .map(f64::from_bits),
        );
    }
}
