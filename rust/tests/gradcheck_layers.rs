//! Layer ops: f64 finite-difference gradient checks (central differences) for convolution,
//! pooling, normalisation, attention, masked_fill, the indexed ops and dropout; plus
//! determinism: reference conv2d (forward and backward), pools and attention are bit-identical
//! on 1, 2 and 4 threads, and reference conv2d equals, bit for bit, a naive loop with the
//! documented fold order (acc = 0; for c, ky, kx: acc = acc + w * x, padding cells as +0; then
//! + bias).
//!
//! `set_num_threads` is process-global and cargo runs these tests on parallel threads, so every
//! test that changes the thread count (or runs fast kernels, whose results depend on it) holds
//! `LOCK` for its whole duration.

mod common;

use common::*;
use std::ops::{Add, Mul};
use std::sync::{Mutex, MutexGuard};
use tlrs::autograd::grad;
use tlrs::autograd::gradcheck::gradcheck;
use tlrs::backend::cpu::parallel::{set_num_threads, with_fast_kernels};
use tlrs::ops;
use tlrs::storage::CpuStorage;
use tlrs::{DType, Result, Tensor};

const EPS: f64 = 1e-6;
const TOL: f64 = 1e-6;

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Gradchecks sum(f(xs) * w) with respect to every input.
fn check(name: &str, inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
    let err = gradcheck(|xs| weighted_sum(&f(xs)?, 7), inputs, EPS)
        .unwrap_or_else(|e| panic!("{name}: gradcheck failed to run: {e}"));
    assert!(err <= TOL, "{name}: worst gradient error {err:e} > {TOL:e}");
}

/// `n` distinct values spaced 0.05 apart (a shuffled ramp), shifted by `lo`: no ties within
/// any window, and no two values within EPS of each other.
fn distinct(seed: u64, n: usize, lo: f64) -> Vec<f64> {
    let mut perm: Vec<usize> = (0..n).collect();
    let mut r = Rng::new(seed);
    for i in (1..n).rev() {
        perm.swap(i, r.below(i as u64 + 1) as usize);
    }
    perm.iter().map(|&p| lo + 0.05 * p as f64).collect()
}

// ---------------------------------------------------------------- conv2d

/// (input shape, out channels, kh, kw, stride, padding)
fn conv_cases() -> Vec<(Vec<usize>, usize, usize, usize, usize, usize)> {
    let mut v = vec![(vec![1, 3, 6, 4], 2, 2, 3, 2, 1)]; // non-square kernel
    for k in [3, 1] {
        for (s, p) in [(1, 0), (1, 1), (2, 1), (2, 2), (1, 2)] {
            v.push((vec![2, 2, 5, 6], 3, k, k, s, p));
            v.push((vec![2, 5, 4], 2, k, k, s, p)); // a single [C, H, W] image
        }
    }
    v
}

fn run_conv_gradchecks(tag: &str) {
    for (i, (xs, oc, kh, kw, s, p)) in conv_cases().into_iter().enumerate() {
        let w = randt(200 + i as u64, &[oc, xs[xs.len() - 3], kh, kw]);
        let xwb = [randt(100 + i as u64, &xs), w, randt(300 + i as u64, &[oc])];
        let name = format!("{tag} conv2d x{xs:?} k{kh}x{kw} s{s} p{p}");
        check(&format!("{name} +bias"), &xwb, |t| {
            ops::conv2d(&t[0], &t[1], Some(&t[2]), s, p)
        });
        check(&format!("{name} no bias"), &xwb[..2], |t| {
            ops::conv2d(&t[0], &t[1], None, s, p)
        });
    }
}

#[test]
fn grad_conv2d_reference() {
    with_fast_kernels(false, || run_conv_gradchecks("ref"));
}

#[test]
fn grad_conv2d_fast_kernels() {
    let _g = lock();
    with_fast_kernels(true, || run_conv_gradchecks("fast"));
}

// ---------------------------------------------------------------- pooling

/// (input shape, kernel, stride, padding)
const POOL_CASES: [(&[usize], usize, Option<usize>, usize); 6] = [
    (&[2, 2, 4, 6], 2, None, 0),
    (&[2, 2, 5, 7], 3, Some(2), 1),
    (&[1, 3, 5, 5], 3, Some(1), 1),
    (&[2, 1, 6, 5], 2, Some(1), 1),
    (&[3, 5, 6], 2, Some(2), 1),
    (&[2, 7, 4], 3, Some(3), 0),
];

#[test]
fn grad_max_pool2d_without_ties() {
    for (i, &(xs, k, s, p)) in POOL_CASES.iter().enumerate() {
        let n = numel(xs);
        // Mixed signs, then all negative (padding cells, which would be 0, must never win).
        for lo in [-0.025 * n as f64, -0.05 * n as f64 - 1.0] {
            let x = [t64(distinct(400 + i as u64, n, lo), xs)];
            let name = format!("max_pool2d {xs:?} k{k} s{s:?} p{p} lo {lo}");
            check(&name, &x, |t| ops::max_pool2d(&t[0], k, s, p));
        }
    }
}

#[test]
fn grad_avg_pool2d() {
    for (i, &(xs, k, s, p)) in POOL_CASES.iter().enumerate() {
        let (x, name) = (
            [randt(500 + i as u64, xs)],
            format!("avg_pool2d {xs:?} k{k} s{s:?} p{p}"),
        );
        check(&name, &x, |t| ops::avg_pool2d(&t[0], k, s, p));
    }
}

#[test]
fn grad_global_avg_pool2d() {
    for (i, xs) in [&[2usize, 3, 4, 5][..], &[3, 2, 5]].into_iter().enumerate() {
        let (x, name) = (
            [randt(600 + i as u64, xs)],
            format!("global_avg_pool2d {xs:?}"),
        );
        check(&name, &x, |t| ops::global_avg_pool2d(&t[0]));
    }
}

// ---------------------------------------------------------------- normalisation

/// Gradchecks `f(x, γ, β)` with both, only γ, and neither (γ in [0.5, 1.5), β in [-1, 1)).
fn check_affine(name: &str, x: Tensor, c: &[usize], f: impl Fn(&Tensor, Aff, Aff) -> Res) {
    let (g, b) = (randt_in(31, c, 0.5, 1.5), randt(32, c));
    check(&format!("{name} γ β"), &[x.clone(), g.clone(), b], |t| {
        f(&t[0], Some(&t[1]), Some(&t[2]))
    });
    check(&format!("{name} γ"), &[x.clone(), g], |t| {
        f(&t[0], Some(&t[1]), None)
    });
    check(&format!("{name} plain"), &[x], |t| f(&t[0], None, None));
}

type Aff<'a> = Option<&'a Tensor>;
type Res = Result<Tensor>;

#[test]
fn grad_batch_norm_per_image() {
    for (i, xs) in [&[2usize, 3, 4, 5][..], &[3, 4, 3]].into_iter().enumerate() {
        let x = randt(700 + i as u64, xs);
        check_affine(&format!("bn per image {xs:?}"), x, &[3], |x, g, b| {
            ops::batch_norm_per_image(x, g, b, 1e-6)
        });
    }
}

#[test]
fn grad_batch_norm_batch_stats() {
    for (i, xs) in [&[4usize, 3, 2, 3][..], &[5, 3]].into_iter().enumerate() {
        let x = randt(730 + i as u64, xs);
        check_affine(&format!("bn batch {xs:?}"), x.clone(), &[3], |x, g, b| {
            Ok(ops::batch_norm_batch_stats(x, g, b, 1e-5)?.0)
        });
        check(&format!("bn batch {xs:?} mean+var"), &[x], |t| {
            let (_, m, v) = ops::batch_norm_batch_stats(&t[0], None, None, 1e-5)?;
            ops::add(&m, &v)
        });
    }
}

#[test]
fn grad_batch_norm_eval() {
    for (i, xs) in [&[3usize, 2, 3, 3][..], &[4, 2]].into_iter().enumerate() {
        let s = 760 + 10 * i as u64;
        let (m, v) = (randt(s, &[2]), randt_in(s + 1, &[2], 0.5, 2.0));
        let (g, b) = (randt_in(s + 2, &[2], 0.5, 1.5), randt(s + 3, &[2]));
        check(
            &format!("bn eval {xs:?}"),
            &[randt(s + 4, xs), m, v, g, b],
            |t| ops::batch_norm_eval(&t[0], &t[1], &t[2], Some(&t[3]), Some(&t[4]), 1e-5),
        );
    }
}

#[test]
fn grad_layer_norm() {
    for norm in [&[5usize][..], &[4, 5]] {
        check_affine(
            &format!("layer_norm {norm:?}"),
            randt(800, &[3, 4, 5]),
            norm,
            |x, g, b| ops::layer_norm(x, norm, g, b, 1e-5),
        );
    }
}

// ---------------------------------------------------------------- attention

fn causal(n: usize) -> Vec<bool> {
    (0..n * n).map(|i| i % n > i / n).collect()
}

#[test]
fn grad_multi_head_attention() {
    // (x shape, d_model, heads, head_dim); the second is unbatched with heads·head_dim != d_model
    for (i, (xs, dm, h, hd)) in [(vec![2, 4, 6], 6, 2, 3), (vec![5, 4], 4, 3, 2)]
        .into_iter()
        .enumerate()
    {
        let s = 900 + 10 * i as u64;
        let mut inputs = vec![randt(s, &xs)];
        for j in 0..4 {
            let shape = if j < 3 { [dm, h * hd] } else { [h * hd, dm] };
            inputs.push(randt_in(s + 1 + j, &shape, -0.7, 0.7));
        }
        let mask = causal(xs[xs.len() - 2]);
        for m in [None, Some(&mask[..])] {
            check(
                &format!("mha {xs:?} heads {h} mask {}", m.is_some()),
                &inputs,
                |t| ops::multi_head_attention(&t[0], &t[1], &t[2], &t[3], &t[4], h, m),
            );
        }
    }
}

#[test]
fn grad_masked_fill() {
    let x = [randt(950, &[3, 4])];
    let full: Vec<bool> = (0..12).map(|i| i % 5 == 1).collect();
    check("masked_fill row mask", &x, |t| {
        ops::masked_fill(&t[0], &[true, false, false, true], &[4], -2.0)
    });
    check("masked_fill full mask", &x, |t| {
        ops::masked_fill(&t[0], &full, &[3, 4], 0.5)
    });
}

// ---------------------------------------------------------------- indexed ops and dropout

#[test]
fn grad_embedding_with_repeated_indices() {
    let (w, idx) = ([randt(960, &[5, 3])], [1i64, 3, 1, 0, 1, 4]);
    check("embedding [2,3]", &w, |t| {
        ops::embedding(&idx, &[2, 3], &t[0])
    });
    check("embedding [6]", &w, |t| ops::embedding(&idx, &[6], &t[0]));
}

#[test]
fn grad_gather() {
    let x = [randt(970, &[3, 4])];
    let idx1 = [0i64, 3, 3, 1, 0, 2, 2, 2, 1, 0, 3, 3, 0, 0, 1];
    check("gather axis 1", &x, |t| {
        ops::gather(&t[0], 1, &idx1, &[3, 5])
    });
    let idx0 = [2i64, 0, 1, 2, 2, 2, 0, 0];
    check("gather axis 0", &x, |t| {
        ops::gather(&t[0], 0, &idx0, &[2, 4])
    });
    let idx3: Vec<i64> = (0..16).map(|i| [2, 0, 2, 1][i % 4]).collect();
    check("gather 3-D axis -2", &[randt(971, &[2, 3, 4])], |t| {
        ops::gather(&t[0], -2, &idx3, &[2, 2, 4])
    });
}

#[test]
fn grad_scatter_add_input_and_src() {
    let x = randt(980, &[3, 4]);
    let idx0 = [0i64, 2, 2, 1, 1, 1, 0, 0, 2, 2, 2, 2, 0, 1, 0];
    check(
        "scatter_add axis 0",
        &[x.clone(), randt(981, &[5, 3])],
        |t| ops::scatter_add(&t[0], 0, &idx0, &t[1]),
    );
    let idx1: Vec<i64> = (0..18).map(|i| [3, 3, 0, 1, 3, 2][i % 6]).collect();
    check("scatter_add axis 1", &[x, randt(982, &[3, 6])], |t| {
        ops::scatter_add(&t[0], 1, &idx1, &t[1])
    });
}

#[test]
fn grad_dropout_with_fixed_key() {
    let x = [randt(990, &[4, 5])];
    for p in [0.0, 0.3, 0.75] {
        check(&format!("dropout p {p}"), &x, |t| {
            tlrs::random::dropout(&t[0], p, Some(1234))
        });
    }
}

// ---------------------------------------------------------------- determinism

const THREADS: [usize; 3] = [1, 2, 4];

/// Runs `f` under 1, 2 and 4 threads (runs 0, 1, 2) with reference kernels (the caller
/// holds LOCK).
fn per_thread_count<R>(f: impl Fn() -> R) -> Vec<R> {
    let out = THREADS
        .iter()
        .map(|&t| {
            set_num_threads(t).unwrap();
            with_fast_kernels(false, &f)
        })
        .collect();
    set_num_threads(4).unwrap();
    out
}

/// Raw bits of every element, whatever the dtype.
fn bits(t: &Tensor) -> Vec<u64> {
    match t.cpu().unwrap() {
        CpuStorage::F32(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        CpuStorage::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        other => panic!("bits of a {} tensor", other.dtype()),
    }
}

fn assert_all_equal(runs: &[Vec<Vec<u64>>], what: &str) {
    for (t, run) in runs.iter().enumerate().skip(1) {
        for (o, (a, b)) in runs[0].iter().zip(run).enumerate() {
            assert!(a == b, "{what}: output {o} of run {t} differs from run 0");
        }
    }
}

/// The forward output and the gradients of sum(y * w) for every leaf, as raw bits.
fn forward_backward(leaves: &[Tensor], y: Tensor) -> Vec<Vec<u64>> {
    let w = randt(77, y.dims()).to_dtype(y.dtype()).unwrap();
    let loss = ops::sum(&ops::mul(&y, &w).unwrap(), None, false).unwrap();
    let g = grad(&loss, leaves).unwrap();
    [bits(&y)].into_iter().chain(g.iter().map(bits)).collect()
}

fn leaves(seed: u64, shapes: &[&[usize]], f32: bool) -> Vec<Tensor> {
    let dt = if f32 { DType::F32 } else { DType::F64 };
    let t = |(i, s): (usize, &&[usize])| randt(seed + i as u64, s).to_dtype(dt).unwrap();
    shapes
        .iter()
        .enumerate()
        .map(|p| t(p).detach_with_grad(true))
        .collect()
}

#[test]
fn conv2d_forward_and_backward_bit_identical_across_threads() {
    let _g = lock();
    for f32 in [false, true] {
        for (s, p) in [(1, 0), (1, 1), (2, 1), (2, 3)] {
            let l = leaves(1000, &[&[3, 4, 17, 13], &[6, 4, 3, 3], &[6]], f32);
            let runs = per_thread_count(|| {
                let y = ops::conv2d(&l[0], &l[1], Some(&l[2]), s, p).unwrap();
                forward_backward(&l, y)
            });
            assert_all_equal(&runs, &format!("conv2d f32={f32} s{s} p{p}"));
        }
    }
}

#[test]
fn pools_bit_identical_across_threads() {
    let _g = lock();
    for f32 in [false, true] {
        let l = leaves(1100, &[&[4, 6, 19, 15]], f32);
        type Pool = fn(&Tensor) -> Result<Tensor>;
        let pools: [(&str, Pool); 4] = [
            ("max_pool2d", |x| ops::max_pool2d(x, 3, Some(2), 1)),
            ("avg_pool2d", |x| ops::avg_pool2d(x, 3, Some(2), 1)),
            ("avg_pool2d k2", |x| ops::avg_pool2d(x, 2, None, 0)),
            ("global_avg_pool2d", ops::global_avg_pool2d),
        ];
        for (name, f) in pools {
            let runs = per_thread_count(|| forward_backward(&l, f(&l[0]).unwrap()));
            assert_all_equal(&runs, &format!("{name} f32={f32}"));
        }
    }
}

#[test]
fn attention_bit_identical_across_threads() {
    let _g = lock();
    let mask = causal(24);
    for f32 in [false, true] {
        let w: &[usize] = &[32, 32];
        let l = leaves(1200, &[&[3, 24, 32], w, w, w, w], f32);
        for m in [None, Some(&mask[..])] {
            let runs = per_thread_count(|| {
                let y = ops::multi_head_attention(&l[0], &l[1], &l[2], &l[3], &l[4], 4, m);
                forward_backward(&l, y.unwrap())
            });
            assert_all_equal(&runs, &format!("attention f32={f32} mask={}", m.is_some()));
        }
    }
}

/// The documented fold: acc = 0; for c, ky, kx: acc = acc + w * x (x = +0 in padding); + bias.
#[allow(clippy::too_many_arguments, clippy::assign_op_pattern)]
fn naive_conv<T: Copy + Default + Add<Output = T> + Mul<Output = T>>(
    x: &[T],
    w: &[T],
    b: Option<&[T]>,
    [n, c, h, wd]: [usize; 4],
    [oc, kh, kw]: [usize; 3],
    s: usize,
    p: usize,
) -> Vec<T> {
    let (oh, ow) = ((h + 2 * p - kh) / s + 1, (wd + 2 * p - kw) / s + 1);
    let mut y = Vec::with_capacity(n * oc * oh * ow);
    for ni in 0..n {
        for o in 0..oc {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = T::default();
                    for ci in 0..c {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let (iy, ix) = (oy * s + ky, ox * s + kx);
                                // Zero padding: a padding cell takes part as +0.
                                let outside = iy < p || ix < p || iy - p >= h || ix - p >= wd;
                                let xv = if outside {
                                    T::default()
                                } else {
                                    x[((ni * c + ci) * h + iy - p) * wd + ix - p]
                                };
                                acc = acc + w[((o * c + ci) * kh + ky) * kw + kx] * xv;
                            }
                        }
                    }
                    if let Some(b) = b {
                        acc = acc + b[o];
                    }
                    y.push(acc);
                }
            }
        }
    }
    y
}

#[test]
fn reference_conv2d_equals_naive_fold_bit_for_bit() {
    let _g = lock();
    let cases: [([usize; 4], [usize; 3], usize, usize); 5] = [
        ([2, 3, 11, 9], [4, 3, 3], 1, 1),
        ([2, 5, 12, 10], [3, 3, 3], 2, 0),
        ([1, 3, 16, 16], [8, 7, 7], 2, 3),
        ([3, 4, 7, 8], [5, 1, 1], 1, 2),
        ([2, 2, 9, 7], [3, 2, 4], 3, 2),
    ];
    for (i, (xd, [oc, kh, kw], s, p)) in cases.into_iter().enumerate() {
        let x = rand_vec(1300 + i as u64, numel(&xd), -1.0, 1.0);
        let w = rand_vec(1400 + i as u64, oc * xd[1] * kh * kw, -1.0, 1.0);
        let b = rand_vec(1500 + i as u64, oc, -1.0, 1.0);
        let wd = [oc, xd[1], kh, kw];
        for bias in [false, true] {
            let what = format!("conv {xd:?} w{wd:?} s{s} p{p} bias {bias}");
            let want = naive_conv(&x, &w, bias.then_some(&b[..]), xd, [oc, kh, kw], s, p);
            let want = want.iter().map(|v| v.to_bits()).collect();
            let (x32, w32, b32) = (to_f32(&x), to_f32(&w), to_f32(&b));
            let want32 = naive_conv(&x32, &w32, bias.then_some(&b32[..]), xd, [oc, kh, kw], s, p);
            let want32 = want32.iter().map(|v| v.to_bits() as u64).collect();
            let t64s = [(&x, &xd[..]), (&w, &wd), (&b, &[oc])].map(|(v, d)| t64(v.clone(), d));
            let t32s = [t32(x32, &xd), t32(w32, &wd), t32(b32, &[oc])];
            for (ts, want, dt) in [(t64s, want, "f64"), (t32s, want32, "f32")] {
                let conv = || ops::conv2d(&ts[0], &ts[1], bias.then_some(&ts[2]), s, p);
                let runs = per_thread_count(|| vec![bits(&conv().unwrap())]);
                let runs: Vec<_> = std::iter::once(vec![want]).chain(runs).collect();
                let what =
                    format!("{dt} {what} (run 0: the naive loop; runs 1-3: 1, 2, 4 threads)");
                assert_all_equal(&runs, &what);
            }
        }
    }
}

#[test]
fn fast_conv2d_is_deterministic_for_a_fixed_thread_count_and_close_to_reference() {
    let _g = lock();
    let l = leaves(1600, &[&[4, 8, 14, 12], &[16, 8, 3, 3], &[16]], false);
    for t in [1, 2, 4] {
        set_num_threads(t).unwrap();
        let run = |fast| {
            with_fast_kernels(fast, || {
                let y = ops::conv2d(&l[0], &l[1], Some(&l[2]), 1, 1).unwrap();
                forward_backward(&l, y)
            })
        };
        let (a, b, r) = (run(true), run(true), run(false));
        assert!(a == b, "fast conv2d differs between two runs ({t} threads)");
        for (o, (fa, ra)) in a.iter().zip(&r).enumerate() {
            let [f, r] = [fa, ra].map(|v| v.iter().map(|&u| f64::from_bits(u)).collect::<Vec<_>>());
            let what = format!("fast vs ref {o} ({t} threads)");
            assert_close(&f, &r, 1e-12, 1e-12, &what);
        }
    }
    set_num_threads(4).unwrap();
}
