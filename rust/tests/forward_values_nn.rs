//! Forward values of softmax, losses, matmul and linear against independent naive computations
//! written here (plain f64 loops), for f64 (to ~1e-12) and f32 (to ~1e-6 relative).

mod common;

use common::*;
use tlrs::ops::{self, Target};
use tlrs::DType;

const F64_RTOL: f64 = 1e-12;
const F32_RTOL: f64 = 1e-6;

/// Naive softmax (log when `log`) of one lane.
fn naive_softmax(lane: &[f64], log: bool) -> Vec<f64> {
    let m = lane.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = lane.iter().map(|v| (v - m).exp()).sum();
    lane.iter()
        .map(|v| {
            if log {
                (v - m) - s.ln()
            } else {
                (v - m).exp() / s
            }
        })
        .collect()
}

#[test]
fn softmax_matches_naive_and_rows_sum_to_one() {
    let (rows, cols) = (6, 7);
    let x = rand_vec(260, rows * cols, -5.0, 5.0);
    for dtype in [DType::F64, DType::F32] {
        let (t, xin, tol) = match dtype {
            DType::F64 => (t64(x.clone(), &[rows, cols]), x.clone(), F64_RTOL),
            _ => {
                let v = to_f32(&x);
                (t32(v.clone(), &[rows, cols]), widen(&v), F32_RTOL)
            }
        };
        let sm = vals(&ops::softmax(&t, -1).unwrap());
        let lsm = vals(&ops::log_softmax(&t, 1).unwrap());
        for r in 0..rows {
            let lane = &xin[r * cols..(r + 1) * cols];
            let row = &sm[r * cols..(r + 1) * cols];
            assert_close(row, &naive_softmax(lane, false), tol, 1e-15, "softmax");
            assert_close(
                &lsm[r * cols..(r + 1) * cols],
                &naive_softmax(lane, true),
                tol,
                1e-15,
                "log_softmax",
            );
            let total: f64 = row.iter().sum();
            assert!((total - 1.0).abs() < 10.0 * tol, "row {r} sums to {total}");
        }
        // Along axis 0: columns sum to 1.
        let s0 = vals(&ops::softmax(&t, 0).unwrap());
        for c in 0..cols {
            let total: f64 = (0..rows).map(|r| s0[r * cols + c]).sum();
            assert!(
                (total - 1.0).abs() < 10.0 * tol,
                "column {c} sums to {total}"
            );
        }
    }
    // Large logits do not overflow (the max is subtracted first).
    let big = vals(&ops::softmax(&t64(vec![1000.0, 1000.0], &[2]), 0).unwrap());
    assert_eq!(big, [0.5, 0.5]);
}

#[test]
fn softmax_middle_axis_matches_naive() {
    let dims = [2, 5, 3];
    let x = rand_vec(261, 30, -3.0, 3.0);
    let got = vals(&ops::softmax(&t64(x.clone(), &dims), 1).unwrap());
    for o in 0..2 {
        for i in 0..3 {
            let lane: Vec<f64> = (0..5).map(|l| x[(o * 5 + l) * 3 + i]).collect();
            let want = naive_softmax(&lane, false);
            for l in 0..5 {
                assert!((got[(o * 5 + l) * 3 + i] - want[l]).abs() < 1e-15);
            }
        }
    }
}

#[test]
fn cross_entropy_matches_hand_formula() {
    let (n, c) = (5, 4);
    let x = rand_vec(270, n * c, -3.0, 3.0);
    let target = [3i64, 0, 1, 3, 2];
    // loss = mean over rows of logsumexp(x_row) - x_row[t]
    let lse = |row: &[f64]| {
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
    };
    let want: f64 = (0..n)
        .map(|r| lse(&x[r * c..(r + 1) * c]) - x[r * c + target[r] as usize])
        .sum::<f64>()
        / n as f64;
    let t = t64(x.clone(), &[n, c]);
    let got = ops::cross_entropy(&t, Target::Indices(&target)).unwrap();
    assert_eq!(got.dims(), &[] as &[usize]);
    assert!(
        (got.item().unwrap() - want).abs() < 1e-13,
        "{} vs {want}",
        got.item().unwrap()
    );
    // The same through one-hot targets.
    let mut oh = vec![0.0; n * c];
    for r in 0..n {
        oh[r * c + target[r] as usize] = 1.0;
    }
    let got = ops::cross_entropy(&t, Target::Probs(&t64(oh, &[n, c])))
        .unwrap()
        .item()
        .unwrap();
    assert!((got - want).abs() < 1e-13);
    // Soft targets: mean over rows of -sum p * log_softmax.
    let p = rand_vec(271, n * c, 0.0, 1.0);
    let want_soft: f64 = (0..n)
        .map(|r| {
            let row = &x[r * c..(r + 1) * c];
            let l = lse(row);
            -(0..c).map(|j| p[r * c + j] * (row[j] - l)).sum::<f64>()
        })
        .sum::<f64>()
        / n as f64;
    let got = ops::cross_entropy(&t, Target::Probs(&t64(p, &[n, c])))
        .unwrap()
        .item()
        .unwrap();
    assert!((got - want_soft).abs() < 1e-13);
    // A single row of logits [C] with one index.
    let got = ops::cross_entropy(&t64(x[..c].to_vec(), &[c]), Target::Indices(&[2])).unwrap();
    assert!((got.item().unwrap() - (lse(&x[..c]) - x[2])).abs() < 1e-14);
    // f32
    let x32 = to_f32(&x);
    let xw = widen(&x32);
    let want32: f64 = (0..n)
        .map(|r| lse(&xw[r * c..(r + 1) * c]) - xw[r * c + target[r] as usize])
        .sum::<f64>()
        / n as f64;
    let got = ops::cross_entropy(&t32(x32, &[n, c]), Target::Indices(&target)).unwrap();
    assert_eq!(got.dtype(), DType::F32);
    assert!((got.item().unwrap() - want32).abs() <= F32_RTOL * want32.abs());
}

#[test]
fn mse_loss_matches_hand_formula() {
    let a = rand_vec(280, 12, -2.0, 2.0);
    let b = rand_vec(281, 12, -2.0, 2.0);
    let want = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        / 12.0;
    let got = ops::mse_loss(&t64(a, &[3, 4]), &t64(b, &[3, 4])).unwrap();
    assert_eq!(got.item().unwrap(), want);
}

#[test]
fn matmul_matches_naive_2d_batched_and_broadcast() {
    let (m, k, n) = (5, 7, 3);
    for ta in [false, true] {
        for tb in [false, true] {
            let a = rand_vec(290, 2 * m * k, -1.0, 1.0);
            let b = rand_vec(291, 2 * k * n, -1.0, 1.0);
            let sa = if ta { [k, m] } else { [m, k] };
            let sb = if tb { [n, k] } else { [k, n] };
            // 2-D
            let y = ops::matmul_t(
                &t64(a[..m * k].to_vec(), &sa),
                &t64(b[..k * n].to_vec(), &sb),
                ta,
                tb,
            )
            .unwrap();
            assert_eq!(y.dims(), [m, n]);
            assert_eq!(
                vals(&y),
                naive_matmul_f64(&a, &b, m, n, k, ta, tb),
                "{ta} {tb}"
            );
            // batched both sides
            let y = ops::matmul_t(
                &t64(a.clone(), &[2, sa[0], sa[1]]),
                &t64(b.clone(), &[2, sb[0], sb[1]]),
                ta,
                tb,
            )
            .unwrap();
            assert_eq!(y.dims(), [2, m, n]);
            let mut want = naive_matmul_f64(&a, &b, m, n, k, ta, tb);
            want.extend(naive_matmul_f64(&a[m * k..], &b[k * n..], m, n, k, ta, tb));
            assert_eq!(vals(&y), want);
            // 2-D @ batched: the matrix is reused by each batch
            let y = ops::matmul_t(
                &t64(a[..m * k].to_vec(), &sa),
                &t64(b.clone(), &[2, sb[0], sb[1]]),
                ta,
                tb,
            )
            .unwrap();
            assert_eq!(y.dims(), [2, m, n]);
            let mut want = naive_matmul_f64(&a, &b, m, n, k, ta, tb);
            want.extend(naive_matmul_f64(&a, &b[k * n..], m, n, k, ta, tb));
            assert_eq!(vals(&y), want);
            // f32: exact against the same fold in f32
            let (a32, b32) = (to_f32(&a[..m * k]), to_f32(&b[..k * n]));
            let y = ops::matmul_t(&t32(a32.clone(), &sa), &t32(b32.clone(), &sb), ta, tb).unwrap();
            let want = naive_matmul_f32(&a32, &b32, m, n, k, ta, tb);
            assert_eq!(vals(&y), widen(&want));
            // ... and within 1e-6 * sum |a||b| of the exact product
            let exact = naive_matmul_f64(&widen(&a32), &widen(&b32), m, n, k, ta, tb);
            let absa: Vec<f64> = widen(&a32).iter().map(|v| v.abs()).collect();
            let absb: Vec<f64> = widen(&b32).iter().map(|v| v.abs()).collect();
            let scale = naive_matmul_f64(&absa, &absb, m, n, k, ta, tb);
            for ((g, w), s) in vals(&y).iter().zip(&exact).zip(&scale) {
                assert!((g - w).abs() <= F32_RTOL * s);
            }
        }
    }
}

#[test]
fn matmul_matrix_vector_and_dot() {
    let a = rand_vec(292, 12, -1.0, 1.0);
    let v = rand_vec(293, 4, -1.0, 1.0);
    let y = ops::matmul(&t64(a.clone(), &[3, 4]), &t64(v.clone(), &[4])).unwrap();
    assert_eq!(y.dims(), [3]);
    assert_eq!(vals(&y), naive_matmul_f64(&a, &v, 3, 1, 4, false, false));
    let d = ops::matmul(&t64(v.clone(), &[4]), &t64(v.clone(), &[4])).unwrap();
    assert_eq!(d.dims(), &[] as &[usize]);
    assert_eq!(
        d.item().unwrap(),
        naive_matmul_f64(&v, &v, 1, 1, 4, false, false)[0]
    );
}

#[test]
fn matmul_vector_matrix() {
    let v = rand_vec(294, 4, -1.0, 1.0);
    let b = rand_vec(295, 20, -1.0, 1.0);
    let y = ops::matmul(&t64(v.clone(), &[4]), &t64(b.clone(), &[4, 5])).unwrap();
    assert_eq!(y.dims(), [5]);
    assert_eq!(y.numel(), vals(&y).len());
    assert_eq!(vals(&y), naive_matmul_f64(&v, &b, 1, 5, 4, false, false));
    let yb = ops::matmul(
        &t64(v.clone(), &[4]),
        &t64(rand_vec(296, 40, -1.0, 1.0), &[2, 4, 5]),
    )
    .unwrap();
    assert_eq!(yb.dims(), [2, 5]);
}

#[test]
fn linear_matches_naive() {
    let (bsz, inf, outf) = (4, 6, 3);
    let x = rand_vec(300, bsz * inf, -1.0, 1.0);
    let w = rand_vec(301, outf * inf, -1.0, 1.0);
    let b = rand_vec(302, outf, -1.0, 1.0);
    let xw = naive_matmul_f64(&x, &w, bsz, outf, inf, false, true);
    let with_b: Vec<f64> = xw
        .iter()
        .enumerate()
        .map(|(i, v)| v + b[i % outf])
        .collect();
    let (xt, wt, bt) = (
        t64(x.clone(), &[bsz, inf]),
        t64(w.clone(), &[outf, inf]),
        t64(b.clone(), &[outf]),
    );
    let y = ops::linear(&xt, &wt, Some(&bt)).unwrap();
    assert_eq!(y.dims(), [bsz, outf]);
    assert_eq!(vals(&y), with_b);
    assert_eq!(vals(&ops::linear(&xt, &wt, None).unwrap()), xw);
    // 1-D input gives 1-D output; 3-D input keeps its leading axes.
    let y1 = ops::linear(&t64(x[..inf].to_vec(), &[inf]), &wt, Some(&bt)).unwrap();
    assert_eq!(
        (y1.dims(), vals(&y1)),
        (&[outf][..], with_b[..outf].to_vec())
    );
    let y3 = ops::linear(&t64(x.clone(), &[2, 2, inf]), &wt, Some(&bt)).unwrap();
    assert_eq!((y3.dims(), vals(&y3)), (&[2, 2, outf][..], with_b));
}
