//! Helpers shared by the integration tests: a deterministic pseudo-random generator written
//! here (independent of the crate's RNGs), tensor constructors, naive reference computations
//! in plain f64 loops, and closeness checks.
#![allow(dead_code)]

use tlrs::ops;
use tlrs::{Result, Tensor};

/// SplitMix64: a tiny, well-mixed, deterministic generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `n` values uniform in [lo, hi).
pub fn rand_vec(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    (0..n).map(|_| r.uniform(lo, hi)).collect()
}

/// `n` values with |v| in [lo, hi) and a random sign: keeps inputs away from 0 (relu, abs, div).
pub fn rand_vec_away_from_zero(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|_| {
            let m = r.uniform(lo, hi);
            if r.next_u64() & 1 == 0 {
                m
            } else {
                -m
            }
        })
        .collect()
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// An f64 tensor of uniform values in [-1, 1).
pub fn randt(seed: u64, shape: &[usize]) -> Tensor {
    t64(rand_vec(seed, numel(shape), -1.0, 1.0), shape)
}

/// An f64 tensor of uniform values in [lo, hi).
pub fn randt_in(seed: u64, shape: &[usize], lo: f64, hi: f64) -> Tensor {
    t64(rand_vec(seed, numel(shape), lo, hi), shape)
}

pub fn t64(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec_f64(v, shape.to_vec()).expect("tensor shape")
}

pub fn t32(v: Vec<f32>, shape: &[usize]) -> Tensor {
    Tensor::from_vec_f32(v, shape.to_vec()).expect("tensor shape")
}

pub fn to_f32(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// f32 values widened to f64 exactly (what an f32 tensor really holds).
pub fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

pub fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().expect("cpu tensor")
}

/// sum(y * w) with fixed pseudo-random weights w of y's shape: turns any output into a scalar
/// whose gradient exercises every output element differently.
pub fn weighted_sum(y: &Tensor, seed: u64) -> Result<Tensor> {
    let w = t64(rand_vec(seed ^ 0xABCD, y.numel(), -1.0, 1.0), y.dims());
    ops::sum(&ops::mul(y, &w)?, None, false)
}

/// Row-major strides of `dims`.
pub fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Multi-index of flat position `flat` in `dims`.
pub fn unravel(mut flat: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        idx[d] = flat % dims[d];
        flat /= dims[d];
    }
    idx
}

/// Flat position in `src_dims` of output multi-index `out_idx` under NumPy broadcasting.
pub fn broadcast_offset(out_idx: &[usize], src_dims: &[usize]) -> usize {
    let off = out_idx.len() - src_dims.len();
    let st = strides(src_dims);
    let mut p = 0;
    for (d, &n) in src_dims.iter().enumerate() {
        if n != 1 {
            p += out_idx[d + off] * st[d];
        }
    }
    p
}

/// NumPy broadcast of two shapes (panics on mismatch: test inputs are chosen to fit).
pub fn broadcast_dims(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let da = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let db = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            assert!(da == db || da == 1 || db == 1);
            da.max(db)
        })
        .collect()
}

/// Naive broadcast binary op in f64.
pub fn naive_binary(
    a: &[f64],
    ad: &[usize],
    b: &[f64],
    bd: &[usize],
    f: impl Fn(f64, f64) -> f64,
) -> (Vec<f64>, Vec<usize>) {
    let out = broadcast_dims(ad, bd);
    let v = (0..numel(&out))
        .map(|i| {
            let idx = unravel(i, &out);
            f(a[broadcast_offset(&idx, ad)], b[broadcast_offset(&idx, bd)])
        })
        .collect();
    (v, out)
}

/// Naive product of A (stored [k, m] when ta, else [m, k]) and B (stored [n, k] when tb, else
/// [k, n]): each output a left fold from 0 in k order, `acc = acc + a * b` (never fused).
#[allow(clippy::assign_op_pattern)] // the fold is spelled out on purpose
pub fn naive_matmul_f64(
    a: &[f64],
    b: &[f64],
    m: usize,
    n: usize,
    k: usize,
    ta: bool,
    tb: bool,
) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for p in 0..k {
                let x = if ta { a[p * m + i] } else { a[i * k + p] };
                let y = if tb { b[j * k + p] } else { b[p * n + j] };
                acc = acc + x * y;
            }
            c[i * n + j] = acc;
        }
    }
    c
}

/// The same fold in f32 arithmetic.
#[allow(clippy::assign_op_pattern)]
pub fn naive_matmul_f32(
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
    ta: bool,
    tb: bool,
) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for p in 0..k {
                let x = if ta { a[p * m + i] } else { a[i * k + p] };
                let y = if tb { b[j * k + p] } else { b[p * n + j] };
                acc = acc + x * y;
            }
            c[i * n + j] = acc;
        }
    }
    c
}

/// Checks |got - want| <= atol + rtol * |want| element by element.
pub fn assert_close(got: &[f64], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan());
        assert!(ok, "{what}: element {i}: got {g:e}, want {w:e}");
    }
}

/// Checks two f64 slices are identical bit for bit.
pub fn assert_bits_eq_f64(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{what}: element {i}: {g:e} vs {w:e}"
        );
    }
}

pub fn assert_bits_eq_f32(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{what}: element {i}: {g:e} vs {w:e}"
        );
    }
}
