//! Forward values of elementwise ops, reductions and layout ops against independent naive
//! computations written here (plain f64 loops), for f64 tensors (to ~1e-12) and f32 tensors
//! (to ~1e-6 relative), plus hand-derived exact values.

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

/// softplus at PyTorch's defaults (beta 1, threshold 20).
fn softplus(x: &Tensor) -> Result<Tensor> {
    ops::softplus(x, 1.0, 20.0)
}
/// (name, op, naive formula, input range low, input range high)
type UnaryCase = (&'static str, Unary, fn(f64) -> f64, f64, f64);

fn unary_cases() -> Vec<UnaryCase> {
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
        ("softplus", softplus, |x| x.exp().ln_1p(), -5.0, 5.0),
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
    assert_eq!(one(softplus, 30.0), 30.0); // above the threshold: x itself
    assert!((one(softplus, 0.0) - std::f64::consts::LN_2).abs() < 1e-15);
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
type BinaryCase = (&'static str, Binary, fn(f64, f64) -> f64);

#[test]
fn binary_ops_broadcast_like_numpy() {
    let cases: [BinaryCase; 6] = [
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

/// `pow` with a number exponent, forward and gradient, gives the libm crate's bits (not the
/// platform's `powf`): forward `powf(x, e)`, gradient `g * (e * powf(x, e - 1))` with g = 1.
#[test]
fn pow_with_a_number_exponent_has_libms_bits() {
    let mut v = rand_vec(212, 40, -3.0, 3.0);
    v.extend([0.0, -0.0, 1.0, f64::NAN, f64::INFINITY, 1e-300, 7.5e10]);
    let n = v.len();
    for e in [2.0, 0.5, -1.5, 3.0, 1.0 / 3.0, 7.3, -2.0] {
        let x = t64(v.clone(), &[n]).detach_with_grad(true);
        let y = ops::pow(&x, e).unwrap();
        let g = tlrs::autograd::grad(&ops::sum(&y, None, false).unwrap(), &[x]).unwrap();
        for (i, &a) in v.iter().enumerate() {
            assert_eq!(
                vals(&y)[i].to_bits(),
                libm::pow(a, e).to_bits(),
                "pow({a}, {e})"
            );
            let want = 1.0 * (e * libm::pow(a, e - 1.0));
            assert_eq!(vals(&g[0])[i].to_bits(), want.to_bits(), "pow'({a}, {e})");
        }
        let v32 = to_f32(&v);
        let (e32, em1) = (e as f32, (e - 1.0) as f32);
        let x = t32(v32.clone(), &[n]).detach_with_grad(true);
        let y = ops::pow(&x, e).unwrap();
        let g = tlrs::autograd::grad(&ops::sum(&y, None, false).unwrap(), &[x]).unwrap();
        for (i, &a) in v32.iter().enumerate() {
            let got = vals(&y)[i] as f32;
            assert_eq!(
                got.to_bits(),
                libm::powf(a, e32).to_bits(),
                "f32 pow({a}, {e})"
            );
            let want = 1.0f32 * (e32 * libm::powf(a, em1));
            assert_eq!(
                (vals(&g[0])[i] as f32).to_bits(),
                want.to_bits(),
                "f32 pow'({a}, {e})"
            );
        }
    }
}
