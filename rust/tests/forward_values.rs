//! Forward values against independent naive computations written here (plain f64 loops), for
//! f64 tensors (to ~1e-12) and f32 tensors (to ~1e-6 relative), plus hand-derived exact values.

mod common;

use common::*;
use tlrs::ops::{self, Target};
use tlrs::{DType, Result, Tensor};

const F64_RTOL: f64 = 1e-12;
const F32_RTOL: f64 = 1e-6;

/// erf by its Taylor series; accurate to ~1e-13 for |x| <= 3.
fn erf(x: f64) -> f64 {
    let (mut term, mut sum, x2) = (x, x, x * x);
    for n in 1..200 {
        term *= -x2 / n as f64;
        let t = term / (2 * n + 1) as f64;
        sum += t;
        if t.abs() < 1e-18 {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

type Unary = fn(&Tensor) -> Result<Tensor>;

fn unary_cases() -> Vec<(&'static str, Unary, fn(f64) -> f64, f64, f64)> {
    vec![
        ("neg", ops::neg, |x| -x, -3.0, 3.0),
        ("exp", ops::exp, f64::exp, -3.0, 3.0),
        ("log", ops::log, f64::ln, 0.01, 5.0),
        ("sqrt", ops::sqrt, f64::sqrt, 0.0, 5.0),
        ("abs", ops::abs, f64::abs, -3.0, 3.0),
        (
            "relu",
            ops::relu,
            |x| if x > 0.0 { x } else { 0.0 },
            -3.0,
            3.0,
        ),
        ("tanh", ops::tanh, f64::tanh, -3.0, 3.0),
        (
            "sigmoid",
            ops::sigmoid,
            |x| 1.0 / (1.0 + (-x).exp()),
            -6.0,
            6.0,
        ),
        (
            "gelu",
            ops::gelu,
            |x| 0.5 * x * (1.0 + erf(x / 2f64.sqrt())),
            -1.5,
            3.0,
        ),
        ("softplus", ops::softplus, |x| x.exp().ln_1p(), -5.0, 5.0),
    ]
}

#[test]
fn unary_f64_matches_formulas() {
    for (i, (name, f, naive, lo, hi)) in unary_cases().into_iter().enumerate() {
        let v = rand_vec(200 + i as u64, 50, lo, hi);
        let got = vals(&f(&t64(v.clone(), &[5, 10])).unwrap());
        let want: Vec<f64> = v.iter().map(|&x| naive(x)).collect();
        assert_close(&got, &want, F64_RTOL, 1e-15, name);
    }
}

#[test]
fn unary_f32_matches_formulas() {
    for (i, (name, f, naive, lo, hi)) in unary_cases().into_iter().enumerate() {
        let v32 = to_f32(&rand_vec(300 + i as u64, 50, lo, hi));
        let y = f(&t32(v32.clone(), &[50])).unwrap();
        assert_eq!(y.dtype(), DType::F32, "{name} keeps f32");
        let want: Vec<f64> = widen(&v32).iter().map(|&x| naive(x)).collect();
        assert_close(&vals(&y), &want, F32_RTOL, 1e-7, name);
    }
}

#[test]
fn hand_derived_exact_values() {
    let one = |f: Unary, x: f64| f(&Tensor::scalar(x, DType::F64)).unwrap().item().unwrap();
    assert_eq!(one(ops::sigmoid, 0.0), 0.5);
    assert_eq!(one(ops::gelu, 0.0), 0.0);
    assert_eq!(one(ops::tanh, 0.0), 0.0);
    assert_eq!(one(ops::exp, 0.0), 1.0);
    assert_eq!(one(ops::log, 1.0), 0.0);
    assert_eq!(one(ops::sqrt, 4.0), 2.0);
    assert_eq!(one(ops::relu, -3.0), 0.0);
    assert_eq!(one(ops::relu, 2.5), 2.5);
    assert_eq!(one(ops::abs, -2.5), 2.5);
    assert_eq!(one(ops::neg, 1.5), -1.5);
    assert_eq!(one(ops::softplus, 30.0), 30.0); // above the threshold: x itself
    assert!((one(ops::softplus, 0.0) - std::f64::consts::LN_2).abs() < 1e-15);
    assert_eq!(one(ops::log, 0.0), f64::NEG_INFINITY);
    assert!(one(ops::sqrt, -1.0).is_nan());
    assert!(one(ops::exp, f64::NAN).is_nan());
    let s = |x: f64| Tensor::scalar(x, DType::F64);
    assert_eq!(ops::pow(&s(3.0), 2.0).unwrap().item().unwrap(), 9.0);
    assert_eq!(ops::pow(&s(2.0), -1.0).unwrap().item().unwrap(), 0.5);
    assert_eq!(ops::pow(&s(-2.0), 3.0).unwrap().item().unwrap(), -8.0);
    assert_eq!(ops::pow(&s(5.0), 0.0).unwrap().item().unwrap(), 1.0);
    let x = t64(vec![-2.0, -0.5, 0.0, 0.5, 2.0], &[5]);
    assert_eq!(
        vals(&ops::clamp(&x, Some(-1.0), Some(1.0)).unwrap()),
        [-1.0, -0.5, 0.0, 0.5, 1.0]
    );
    assert_eq!(
        vals(&ops::clamp(&x, Some(0.0), None).unwrap()),
        [0.0, 0.0, 0.0, 0.5, 2.0]
    );
    assert_eq!(
        vals(&ops::clamp(&x, None, Some(0.0)).unwrap()),
        [-2.0, -0.5, 0.0, 0.0, 0.0]
    );
    // softmax of equal logits is uniform; cross-entropy of uniform logits is ln C.
    let sm = vals(&ops::softmax(&Tensor::zeros(vec![4], DType::F64), 0).unwrap());
    assert_eq!(sm, [0.25; 4]);
    let ce = ops::cross_entropy(
        &Tensor::zeros(vec![2, 4], DType::F64),
        Target::Indices(&[1, 3]),
    );
    assert!((ce.unwrap().item().unwrap() - 4f64.ln()).abs() < 1e-15);
    let z = Tensor::ones(vec![2, 3], DType::F64);
    assert_eq!(ops::mse_loss(&z, &z).unwrap().item().unwrap(), 0.0);
}

#[test]
fn pow_and_clamp_match_naive() {
    let v = rand_vec(210, 30, 0.1, 3.0);
    for e in [2.0, 0.5, -1.5, 3.0] {
        let got = vals(&ops::pow(&t64(v.clone(), &[30]), e).unwrap());
        let want: Vec<f64> = v.iter().map(|x| x.powf(e)).collect();
        assert_close(&got, &want, F64_RTOL, 0.0, &format!("pow {e}"));
        let v32 = to_f32(&v);
        let got = vals(&ops::pow(&t32(v32.clone(), &[30]), e).unwrap());
        let want: Vec<f64> = widen(&v32).iter().map(|x| x.powf(e)).collect();
        assert_close(&got, &want, F32_RTOL, 0.0, &format!("pow f32 {e}"));
    }
    let v = rand_vec(211, 30, -2.0, 2.0);
    let got = vals(&ops::clamp(&t64(v.clone(), &[30]), Some(-0.7), Some(1.1)).unwrap());
    let want: Vec<f64> = v.iter().map(|x| x.clamp(-0.7, 1.1)).collect();
    assert_eq!(got, want);
}

type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

#[test]
fn binary_ops_broadcast_like_numpy() {
    let cases: [(&str, Binary, fn(f64, f64) -> f64); 6] = [
        ("add", ops::add, |a, b| a + b),
        ("sub", ops::sub, |a, b| a - b),
        ("mul", ops::mul, |a, b| a * b),
        ("div", ops::div, |a, b| a / b),
        ("maximum", ops::maximum, f64::max),
        ("minimum", ops::minimum, f64::min),
    ];
    let shapes: [(&[usize], &[usize]); 7] = [
        (&[3, 4], &[3, 4]),
        (&[3, 4], &[4]),
        (&[3, 1], &[1, 4]),
        (&[2, 1, 4], &[3, 1]),
        (&[5, 1, 3, 1], &[2, 1, 6]),
        (&[], &[2, 3]),
        (&[200, 300], &[300]), // big enough for the threaded path
    ];
    for (name, f, naive) in cases {
        for (i, (sa, sb)) in shapes.into_iter().enumerate() {
            let a = rand_vec(220 + i as u64, numel(sa), -2.0, 2.0);
            let b = rand_vec_away_from_zero(230 + i as u64, numel(sb), 0.3, 2.0);
            let (want, wd) = naive_binary(&a, sa, &b, sb, naive);
            let y = f(&t64(a.clone(), sa), &t64(b.clone(), sb)).unwrap();
            assert_eq!(y.dims(), &wd[..], "{name} shape {sa:?} {sb:?}");
            // One IEEE operation per element: exact.
            assert_eq!(vals(&y), want, "{name} {sa:?} {sb:?}");
            let (a32, b32) = (to_f32(&a), to_f32(&b));
            let y = f(&t32(a32.clone(), sa), &t32(b32.clone(), sb)).unwrap();
            let (want, _) = naive_binary(&widen(&a32), sa, &widen(&b32), sb, naive);
            assert_close(
                &vals(&y),
                &want,
                F32_RTOL,
                0.0,
                &format!("{name} f32 {sa:?} {sb:?}"),
            );
        }
    }
}

/// Naive reduction over `axis` of `dims` (None: everything) with `f` folding from `init`.
fn naive_reduce(
    x: &[f64],
    dims: &[usize],
    axis: Option<usize>,
    init: f64,
    f: impl Fn(f64, f64) -> f64,
) -> Vec<f64> {
    match axis {
        None => vec![x.iter().fold(init, |a, &b| f(a, b))],
        Some(ax) => {
            let outer: usize = dims[..ax].iter().product();
            let inner: usize = dims[ax + 1..].iter().product();
            let len = dims[ax];
            let mut out = Vec::new();
            for o in 0..outer {
                for i in 0..inner {
                    let mut acc = init;
                    for l in 0..len {
                        acc = f(acc, x[(o * len + l) * inner + i]);
                    }
                    out.push(acc);
                }
            }
            out
        }
    }
}

#[test]
fn reductions_match_naive_with_shapes() {
    let dims = [3, 4, 5];
    let x = rand_vec(240, 60, -2.0, 2.0);
    let t = t64(x.clone(), &dims);
    let t32v = to_f32(&x);
    let tf = t32(t32v.clone(), &dims);
    for (axis, ax) in [
        (None, None),
        (Some(0), Some(0)),
        (Some(1), Some(1)),
        (Some(-1), Some(2)),
    ] {
        for keepdim in [false, true] {
            let shape: Vec<usize> = match ax {
                None if keepdim => vec![1, 1, 1],
                None => vec![],
                Some(a) => dims
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != a || keepdim)
                    .map(|(i, &d)| if i == a { 1 } else { d })
                    .collect(),
            };
            let s = ops::sum(&t, axis, keepdim).unwrap();
            assert_eq!(s.dims(), &shape[..], "sum shape {axis:?} {keepdim}");
            let want_sum = naive_reduce(&x, &dims, ax, 0.0, |a, b| a + b);
            assert_eq!(vals(&s), want_sum, "sum {axis:?}");
            let count = ax.map_or(60, |a| dims[a]) as f64;
            let m = ops::mean(&t, axis, keepdim).unwrap();
            let want_mean: Vec<f64> = want_sum.iter().map(|v| v / count).collect();
            assert_eq!(vals(&m), want_mean, "mean {axis:?}");
            let mx = ops::max(&t, axis, keepdim).unwrap();
            assert_eq!(
                vals(&mx),
                naive_reduce(&x, &dims, ax, f64::NEG_INFINITY, f64::max)
            );
            // f32: the fold in f32 stays within 1e-6 of the exact sum relative to sum |x|.
            let abs = naive_reduce(&widen(&t32v), &dims, ax, 0.0, |a, b| a + b.abs());
            let want = naive_reduce(&widen(&t32v), &dims, ax, 0.0, |a, b| a + b);
            let got = vals(&ops::sum(&tf, axis, keepdim).unwrap());
            for ((g, w), s) in got.iter().zip(&want).zip(&abs) {
                assert!(
                    (g - w).abs() <= F32_RTOL * s,
                    "sum f32 {axis:?}: {g} vs {w}"
                );
            }
        }
    }
    // The empty sum is 0, the empty mean NaN; max of a NaN is NaN.
    let e = Tensor::zeros(vec![0], DType::F64);
    assert_eq!(ops::sum(&e, None, false).unwrap().item().unwrap(), 0.0);
    assert!(ops::mean(&e, None, false).unwrap().item().unwrap().is_nan());
    let n = t64(vec![1.0, f64::NAN, 3.0], &[3]);
    assert!(ops::max(&n, None, false).unwrap().item().unwrap().is_nan());
}

#[test]
fn layout_ops_match_naive() {
    let dims = [2, 3, 4];
    let x = rand_vec(250, 24, -1.0, 1.0);
    let t = t64(x.clone(), &dims);
    // permute [2, 0, 1]: out[i, j, k] = x[j, k, i]
    let p = ops::permute(&t, &[2, 0, 1]).unwrap();
    assert_eq!(p.dims(), [4, 2, 3]);
    let pv = vals(&p);
    for i in 0..4 {
        for j in 0..2 {
            for k in 0..3 {
                assert_eq!(pv[(i * 2 + j) * 3 + k], x[(j * 3 + k) * 4 + i]);
            }
        }
    }
    let tr = vals(&ops::transpose(&t, 0, -1).unwrap());
    for i in 0..4 {
        for j in 0..3 {
            for k in 0..2 {
                assert_eq!(tr[(i * 3 + j) * 2 + k], x[(k * 3 + j) * 4 + i]);
            }
        }
    }
    let r = ops::reshape(&t, &[-1, 6]).unwrap();
    assert_eq!((r.dims(), vals(&r)), (&[4, 6][..], x.clone()));
    let f = ops::flatten(&t, 0, 1).unwrap();
    assert_eq!((f.dims(), vals(&f)), (&[6, 4][..], x.clone()));
    // slice axis 1, [1, 3)
    let s = ops::slice(&t, 1, 1, 3).unwrap();
    assert_eq!(s.dims(), [2, 2, 4]);
    let want: Vec<f64> = (0..2)
        .flat_map(|o| x[(o * 3 + 1) * 4..(o * 3 + 3) * 4].to_vec())
        .collect();
    assert_eq!(vals(&s), want);
    // negative start counts from the end; an end past the axis is clamped
    assert_eq!(vals(&ops::slice(&t, 1, -2, 100).unwrap()), want);
    // index_select axis 1 with repeats
    let is = ops::index_select(&t, 1, &[2, 0, 2]).unwrap();
    assert_eq!(is.dims(), [2, 3, 4]);
    let iv = vals(&is);
    for o in 0..2 {
        for (r, &src) in [2usize, 0, 2].iter().enumerate() {
            assert_eq!(
                iv[(o * 3 + r) * 4..(o * 3 + r + 1) * 4],
                x[(o * 3 + src) * 4..(o * 3 + src + 1) * 4]
            );
        }
    }
    // concat along axis 1
    let y = rand_vec(251, 8, -1.0, 1.0);
    let c = ops::concat(&[t.clone(), t64(y.clone(), &[2, 1, 4])], 1).unwrap();
    assert_eq!(c.dims(), [2, 4, 4]);
    let mut want = Vec::new();
    for o in 0..2 {
        want.extend_from_slice(&x[o * 12..(o + 1) * 12]);
        want.extend_from_slice(&y[o * 4..(o + 1) * 4]);
    }
    assert_eq!(vals(&c), want);
}

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
            DType::F32 => {
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
#[ignore = "bug: matmul([k], [k, n]) returns shape [1] over n values (rust/src/ops/matmul.rs: for a 1-D left operand it removes the last axis instead of the second to last)"]
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
