//! Reference kernels (the default) give bit-identical results on 1, 2 and 4 threads and equal,
//! bit for bit, a naive sequential loop (`acc = acc + a * b` from 0 in index order, never a
//! fused multiply-add). Fast kernels agree with the naive f64 result within a stated tolerance.
//!
//! `set_num_threads` is process-global and cargo runs the tests of this file on parallel
//! threads, so every test holds `LOCK` for its whole duration.

mod common;

use common::*;
use std::sync::{Mutex, MutexGuard};
use tlrs::autograd::grad;
use tlrs::backend::cpu::matmul::{matmul as kernel_matmul, MatmulDims};
use tlrs::backend::cpu::parallel::{set_num_threads, with_fast_kernels};
use tlrs::ops::{self, Target};
use tlrs::{Result, Tensor};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

const THREADS: [usize; 3] = [1, 2, 4];

/// (m, k, n)
const SIZES: [(usize, usize, usize); 4] =
    [(3, 5, 7), (64, 64, 64), (200, 300, 150), (513, 257, 129)];

/// Runs `f` under each thread count with reference kernels and returns the results.
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

fn f32s(t: &Tensor) -> Vec<f32> {
    match t.cpu().unwrap() {
        tlrs::storage::CpuStorage::F32(v) => v.to_vec(),
        _ => panic!("expected f32"),
    }
}

fn f64s(t: &Tensor) -> Vec<f64> {
    match t.cpu().unwrap() {
        tlrs::storage::CpuStorage::F64(v) => v.to_vec(),
        _ => panic!("expected f64"),
    }
}

fn operand_shapes(m: usize, k: usize, n: usize, ta: bool, tb: bool) -> ([usize; 2], [usize; 2]) {
    (
        if ta { [k, m] } else { [m, k] },
        if tb { [n, k] } else { [k, n] },
    )
}

#[test]
fn reference_matmul_is_bit_identical_across_threads_and_to_naive_loop() {
    let _g = lock();
    for (si, &(m, k, n)) in SIZES.iter().enumerate() {
        let a = rand_vec(400 + si as u64, m * k, -1.0, 1.0);
        let b = rand_vec(500 + si as u64, k * n, -1.0, 1.0);
        let (a32, b32) = (to_f32(&a), to_f32(&b));
        for ta in [false, true] {
            for tb in [false, true] {
                let what = format!("{m}x{k}x{n} ta={ta} tb={tb}");
                let (sa, sb) = operand_shapes(m, k, n, ta, tb);
                // f64
                let (at, bt) = (t64(a.clone(), &sa), t64(b.clone(), &sb));
                let want = naive_matmul_f64(&a, &b, m, n, k, ta, tb);
                for got in per_thread_count(|| f64s(&ops::matmul_t(&at, &bt, ta, tb).unwrap())) {
                    assert_bits_eq_f64(&got, &want, &format!("f64 {what}"));
                }
                // f32
                let (at, bt) = (t32(a32.clone(), &sa), t32(b32.clone(), &sb));
                let want = naive_matmul_f32(&a32, &b32, m, n, k, ta, tb);
                for got in per_thread_count(|| f32s(&ops::matmul_t(&at, &bt, ta, tb).unwrap())) {
                    assert_bits_eq_f32(&got, &want, &format!("f32 {what}"));
                }
            }
        }
    }
}

#[test]
fn reference_batched_matmul_is_bit_identical_across_threads_and_to_naive_loop() {
    let _g = lock();
    // Many small products (threaded across the batch) and a few big ones, and 2-D @ batched.
    for &(batch, m, k, n) in &[(16, 9, 11, 13), (3, 70, 80, 90)] {
        let a = rand_vec(600, batch * m * k, -1.0, 1.0);
        let b = rand_vec(601, batch * k * n, -1.0, 1.0);
        let want: Vec<f64> = (0..batch)
            .flat_map(|i| naive_matmul_f64(&a[i * m * k..], &b[i * k * n..], m, n, k, false, false))
            .collect();
        let (at, bt) = (
            t64(a.clone(), &[batch, m, k]),
            t64(b.clone(), &[batch, k, n]),
        );
        for got in per_thread_count(|| f64s(&ops::matmul(&at, &bt).unwrap())) {
            assert_bits_eq_f64(&got, &want, "batched");
        }
        let shared: Vec<f64> = (0..batch)
            .flat_map(|i| naive_matmul_f64(&a, &b[i * k * n..], m, n, k, false, false))
            .collect();
        let a2 = t64(a[..m * k].to_vec(), &[m, k]);
        for got in per_thread_count(|| f64s(&ops::matmul(&a2, &bt).unwrap())) {
            assert_bits_eq_f64(&got, &shared, "2-D @ batched");
        }
        // The kernel entry point directly.
        let d = MatmulDims {
            batch,
            m,
            n,
            k,
            ta: false,
            tb: false,
            a_batch_stride: m * k,
            b_batch_stride: k * n,
        };
        for got in per_thread_count(|| kernel_matmul(&a, &b, d, false)) {
            assert_bits_eq_f64(&got, &want, "kernel matmul");
        }
    }
}

/// Naive left folds from 0 in index order over [outer, len, inner]'s middle axis.
fn naive_sum_axis<T: Copy + std::ops::Add<Output = T>>(
    x: &[T],
    zero: T,
    o: usize,
    l: usize,
    i: usize,
) -> Vec<T> {
    let mut out = Vec::with_capacity(o * i);
    for oo in 0..o {
        for ii in 0..i {
            let mut acc = zero;
            for ll in 0..l {
                acc = acc + x[(oo * l + ll) * i + ii];
            }
            out.push(acc);
        }
    }
    out
}

#[test]
fn reference_sums_are_bit_identical_across_threads_and_to_naive_loop() {
    let _g = lock();
    let dims = [50usize, 40, 60]; // 120,000 elements
    let x = rand_vec(700, numel(&dims), -1.0, 1.0);
    let x32 = to_f32(&x);
    let (t, t32v) = (t64(x.clone(), &dims), t32(x32.clone(), &dims));
    // over everything
    let all = x.iter().fold(0.0f64, |acc, &v| acc + v);
    let all32 = x32.iter().fold(0.0f32, |acc, &v| acc + v);
    for got in per_thread_count(|| f64s(&ops::sum(&t, None, false).unwrap())) {
        assert_bits_eq_f64(&got, &[all], "sum all f64");
    }
    for got in per_thread_count(|| f32s(&ops::sum(&t32v, None, false).unwrap())) {
        assert_bits_eq_f32(&got, &[all32], "sum all f32");
    }
    for got in per_thread_count(|| f64s(&ops::mean(&t, None, false).unwrap())) {
        assert_bits_eq_f64(&got, &[all / 120_000.0], "mean all f64");
    }
    // over each axis
    for axis in 0..3 {
        let o: usize = dims[..axis].iter().product();
        let i: usize = dims[axis + 1..].iter().product();
        let l = dims[axis];
        let want = naive_sum_axis(&x, 0.0, o, l, i);
        let want32 = naive_sum_axis(&x32, 0.0f32, o, l, i);
        let ax = Some(axis as isize);
        for got in per_thread_count(|| f64s(&ops::sum(&t, ax, false).unwrap())) {
            assert_bits_eq_f64(&got, &want, &format!("sum axis {axis} f64"));
        }
        for got in per_thread_count(|| f32s(&ops::sum(&t32v, ax, true).unwrap())) {
            assert_bits_eq_f32(&got, &want32, &format!("sum axis {axis} f32"));
        }
        let mean: Vec<f64> = want.iter().map(|v| v / l as f64).collect();
        for got in per_thread_count(|| f64s(&ops::mean(&t, ax, false).unwrap())) {
            assert_bits_eq_f64(&got, &mean, &format!("mean axis {axis} f64"));
        }
    }
}

#[test]
fn softmax_and_elementwise_are_bit_identical_across_threads() {
    let _g = lock();
    let x = rand_vec(710, 300 * 400, -4.0, 4.0);
    let b = rand_vec(711, 400, -1.0, 1.0);
    let (t, bt) = (t64(x.clone(), &[300, 400]), t64(b, &[400]));
    let tf = t32(to_f32(&x), &[300, 400]);
    for axis in [0, 1] {
        let r = per_thread_count(|| f64s(&ops::softmax(&t, axis).unwrap()));
        assert_bits_eq_f64(&r[1], &r[0], "softmax 2 threads");
        assert_bits_eq_f64(&r[2], &r[0], "softmax 4 threads");
        let r = per_thread_count(|| f32s(&ops::log_softmax(&tf, axis).unwrap()));
        assert_bits_eq_f32(&r[1], &r[0], "log_softmax f32 2 threads");
        assert_bits_eq_f32(&r[2], &r[0], "log_softmax f32 4 threads");
    }
    let r = per_thread_count(|| {
        let y = ops::gelu(&ops::add(&t, &bt).unwrap()).unwrap();
        f64s(&ops::mul(&ops::exp(&ops::neg(&y).unwrap()).unwrap(), &y).unwrap())
    });
    assert_bits_eq_f64(&r[1], &r[0], "elementwise 2 threads");
    assert_bits_eq_f64(&r[2], &r[0], "elementwise 4 threads");
    // and elementwise equals one IEEE operation per element
    let want: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| v + vals(&bt)[i % 400])
        .collect();
    let got = per_thread_count(|| f64s(&ops::add(&t, &bt).unwrap()));
    for g in got {
        assert_bits_eq_f64(&g, &want, "broadcast add");
    }
}

/// Gradients of a two-layer classifier's loss, flattened to bits.
fn mlp_grads(params: &[Tensor], x: &Tensor, labels: &[i64]) -> Result<Vec<Vec<u64>>> {
    let p: Vec<Tensor> = params.iter().map(|t| t.detach_with_grad(true)).collect();
    let h = ops::relu(&ops::linear(x, &p[0], Some(&p[1]))?)?;
    let y = ops::linear(&h, &p[2], Some(&p[3]))?;
    let loss = ops::add(
        &ops::cross_entropy(&y, Target::Indices(labels))?,
        &ops::mean(&ops::mul(&p[0], &p[0])?, None, false)?,
    )?;
    let gs = grad(&loss, &p)?;
    let mut out: Vec<Vec<u64>> = gs
        .iter()
        .map(|g| vals(g).iter().map(|v| v.to_bits()).collect())
        .collect();
    out.push(vec![loss.item()?.to_bits()]);
    Ok(out)
}

#[test]
fn backward_pass_is_bit_identical_across_threads() {
    let _g = lock();
    let (bsz, inf, hid, classes) = (256, 128, 192, 10);
    let x = randt(720, &[bsz, inf]);
    let params = [
        randt_in(721, &[hid, inf], -0.1, 0.1),
        randt_in(722, &[hid], -0.1, 0.1),
        randt_in(723, &[classes, hid], -0.1, 0.1),
        randt_in(724, &[classes], -0.1, 0.1),
    ];
    let mut r = Rng::new(725);
    let labels: Vec<i64> = (0..bsz).map(|_| r.below(classes as u64) as i64).collect();
    let runs = per_thread_count(|| mlp_grads(&params, &x, &labels).unwrap());
    assert_eq!(runs[0], runs[1], "1 vs 2 threads");
    assert_eq!(runs[0], runs[2], "1 vs 4 threads");
    // And a second run on the same thread count repeats.
    set_num_threads(2).unwrap();
    assert_eq!(mlp_grads(&params, &x, &labels).unwrap(), runs[1]);
}

// Fast kernels (FMA, blocked GEMM) reorder and fuse the k-sum, so they are compared with the
// exact-order naive f64 product c = sum_p a_ip b_pj within a bound relative to the dot
// product's natural scale s = sum_p |a_ip| |b_pj| (relative to |c| itself would be meaningless
// under cancellation):
//   f64: |fast - naive| <= 1e-12 * k * s
//   f32: |fast - naive_f64(widened inputs)| <= 1e-5 * sqrt(k) * s
// and for a fixed thread count they repeat bit for bit.
#[test]
fn fast_kernels_agree_with_naive_within_tolerance() {
    let _g = lock();
    for (si, &(m, k, n)) in SIZES.iter().enumerate() {
        let a = rand_vec(800 + si as u64, m * k, -1.0, 1.0);
        let b = rand_vec(900 + si as u64, k * n, -1.0, 1.0);
        let (a32, b32) = (to_f32(&a), to_f32(&b));
        let (aa, ab): (Vec<f64>, Vec<f64>) = (
            a.iter().map(|v| v.abs()).collect(),
            b.iter().map(|v| v.abs()).collect(),
        );
        let (aa32, ab32): (Vec<f64>, Vec<f64>) = (
            widen(&a32).iter().map(|v| v.abs()).collect(),
            widen(&b32).iter().map(|v| v.abs()).collect(),
        );
        for ta in [false, true] {
            for tb in [false, true] {
                let what = format!("{m}x{k}x{n} ta={ta} tb={tb}");
                let (sa, sb) = operand_shapes(m, k, n, ta, tb);
                let want = naive_matmul_f64(&a, &b, m, n, k, ta, tb);
                let scale = naive_matmul_f64(&aa, &ab, m, n, k, ta, tb);
                let want32 = naive_matmul_f64(&widen(&a32), &widen(&b32), m, n, k, ta, tb);
                let scale32 = naive_matmul_f64(&aa32, &ab32, m, n, k, ta, tb);
                let (at, bt) = (t64(a.clone(), &sa), t64(b.clone(), &sb));
                let (at32, bt32) = (t32(a32.clone(), &sa), t32(b32.clone(), &sb));
                for &threads in &THREADS {
                    set_num_threads(threads).unwrap();
                    let got =
                        with_fast_kernels(true, || f64s(&ops::matmul_t(&at, &bt, ta, tb).unwrap()));
                    let again =
                        with_fast_kernels(true, || f64s(&ops::matmul_t(&at, &bt, ta, tb).unwrap()));
                    assert_bits_eq_f64(&again, &got, &format!("fast f64 repeat {what}"));
                    for (i, ((g, w), s)) in got.iter().zip(&want).zip(&scale).enumerate() {
                        let tol = 1e-12 * k as f64 * s;
                        assert!(
                            (g - w).abs() <= tol,
                            "fast f64 {what} [{i}]: {g} vs {w} (tol {tol:e})"
                        );
                    }
                    let got = with_fast_kernels(true, || {
                        f32s(&ops::matmul_t(&at32, &bt32, ta, tb).unwrap())
                    });
                    for (i, ((g, w), s)) in
                        widen(&got).iter().zip(&want32).zip(&scale32).enumerate()
                    {
                        let tol = 1e-5 * (k as f64).sqrt() * s;
                        assert!(
                            (g - w).abs() <= tol,
                            "fast f32 {what} [{i}]: {g} vs {w} (tol {tol:e})"
                        );
                    }
                }
            }
        }
    }
    set_num_threads(4).unwrap();
}

#[test]
fn reference_kernels_are_the_default_and_fast_switch_is_scoped() {
    let _g = lock();
    // 3x5x7 with values where fused and unfused results differ would be fragile; instead check
    // that outside `with_fast_kernels(true, ..)` the result is again the naive fold bit for bit.
    let (m, k, n) = (200, 300, 150);
    let a = rand_vec(950, m * k, -1.0, 1.0);
    let b = rand_vec(951, k * n, -1.0, 1.0);
    let want = naive_matmul_f64(&a, &b, m, n, k, false, false);
    let (at, bt) = (t64(a, &[m, k]), t64(b, &[k, n]));
    let _ = with_fast_kernels(true, || ops::matmul(&at, &bt).unwrap());
    assert_bits_eq_f64(
        &f64s(&ops::matmul(&at, &bt).unwrap()),
        &want,
        "default after fast scope",
    );
}
