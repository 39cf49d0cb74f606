//! The f32 unary ops whose kernels are not the op table's formula run lane by lane: GELU and
//! erf (lanes sorted by erf's range, `erf_lanes.rs`), expm1 (`lane_math/expm1f.rs`), sin and
//! cos (`lane_math/sincosf.rs`, a scalar libm pass for the few arguments too large for the
//! vector reduction), and sigmoid, SiLU, softplus, logsigmoid and elu's gradient (the
//! exponentials of a block on the 16-lane intrinsics of `exp_lanes.rs`, then the rest of the
//! formula in a second loop: one loop of exp and log1p together was latency bound, 3x
//! slower), and ELU (its expm1 and exp only on the lanes that use them, `elu_lanes.rs`). Each
//! computes exactly the table formula's operations, so the bits are the formula's.

#[cfg(target_arch = "x86_64")]
use super::elu_lanes;
use super::erf_lanes;
use super::exp_lanes::{ExpRow, Pre};
use super::simd::{has_avx512, wide_fn};
use super::uninit::{assume_init, fill_with, filled};
use crate::dtype::Float;
use crate::lane_math::expm1f::expm1f_slice;
use crate::lane_math::sincosf::{cosf_slice, sinf_slice};
use crate::op_table::UnaryOp;
use std::mem::MaybeUninit;

const CHUNK: usize = 1 << 13;

/// `op` of every element of `x` (threaded over chunks), or None where the table's formula runs.
pub fn forward(op: UnaryOp, x: &[f32], fast: bool) -> Option<Vec<f32>> {
    match op {
        UnaryOp::Gelu => Some(erf_lanes::gelu(x, fast)),
        UnaryOp::Erf => Some(erf_lanes::erf(x)),
        _ if blocks_on_lanes(op) => Some(filled(x.len(), CHUNK, x.len(), |ci, out| {
            forward_uninit(op, &x[ci * CHUNK..][..out.len()], out, fast);
        })),
        _ => None,
    }
}

/// Whether `forward_into` runs `op`'s blocks on lanes (GELU and erf aside).
fn blocks_on_lanes(op: UnaryOp) -> bool {
    match op {
        UnaryOp::Exp
        | UnaryOp::Expm1
        | UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Sigmoid
        | UnaryOp::Silu
        | UnaryOp::Softplus { .. }
        | UnaryOp::Logsigmoid => true,
        UnaryOp::Elu { .. } => has_avx512(),
        _ => false,
    }
}

/// `op` of one block `x` into `out`; false where the table's formula runs.
pub fn forward_into(op: UnaryOp, x: &[f32], out: &mut [f32], fast: bool) -> bool {
    match op {
        UnaryOp::Gelu => erf_lanes::gelu_into(x, out, fast),
        UnaryOp::Exp
        | UnaryOp::Sigmoid
        | UnaryOp::Silu
        | UnaryOp::Softplus { .. }
        | UnaryOp::Logsigmoid => {
            // SAFETY: f32 and MaybeUninit<f32> share a layout, and `forward_uninit` writes
            // only f32 values, so `out` stays initialised.
            let out = unsafe { &mut *(out as *mut [f32] as *mut [MaybeUninit<f32>]) };
            return forward_uninit(op, x, out, fast);
        }
        // libm's expm1f, its common lanes in intrinsics (`lane_math/expm1f/lanes.rs`).
        UnaryOp::Expm1 => expm1f_slice(x, out),
        UnaryOp::Sin => sinf_slice(x, out),
        UnaryOp::Cos => cosf_slice(x, out),
        // The table's `x > 0 ? x : alpha * expm1(x)`, expm1 on the lanes that use it.
        #[cfg(target_arch = "x86_64")]
        UnaryOp::Elu { alpha } if has_avx512() => {
            // SAFETY: AVX-512 was just detected; x and out have the block's length.
            unsafe { elu_lanes::elu(x, f32::from_f64(alpha), out) };
        }
        _ => return false,
    }
    true
}

/// `forward_into` for an `out` that may start uninitialised (every element is written where it
/// returns true): the ops whose first pass writes every element (an exponential, or
/// softplus's product) write `out` directly; the others fill it first. Filling a chunk before
/// a kernel overwrote it was 8% of sigmoid's forward.
fn forward_uninit(op: UnaryOp, x: &[f32], out: &mut [MaybeUninit<f32>], fast: bool) -> bool {
    let x = &x[..out.len()]; // every element of out has its x
    match op {
        // The table's `exp(x)` on the 16-lane intrinsics (`exp_lanes.rs`, expf's bits).
        UnaryOp::Exp => _ = <f32 as ExpRow>::exp_from(x, out, Pre::Same),
        // The table's `1 / (1 + exp(-x))` and `x / (1 + exp(-x))`, the exponentials taken
        // over the block first on the 16-lane intrinsics (`exp_lanes.rs`, expf's bits).
        UnaryOp::Sigmoid | UnaryOp::Silu => {
            let silu = op == UnaryOp::Silu;
            let done = logistic(x, out, silu);
            let (x, out) = (&x[done..], &mut out[done..]);
            let out = <f32 as ExpRow>::exp_from(x, out, Pre::Neg);
            if silu {
                finish_silu(x, out);
            } else {
                finish_sigmoid(out);
            }
        }
        // The table's `x * beta > threshold ? x : log1p(exp(x * beta)) / beta`.
        UnaryOp::Softplus { beta, threshold } => {
            let (beta, threshold) = (f32::from_f64(beta), f32::from_f64(threshold));
            out.iter_mut()
                .zip(x)
                .for_each(|(o, &v)| _ = o.write(v * beta));
            // SAFETY: every element was just written (x holds the block's length).
            let out = unsafe { assume_init(out) };
            <f32 as ExpRow>::exp_row(out);
            finish_softplus(x, out, beta, threshold);
        }
        // The table's `min(x, 0) - log1p(exp(-|x|))`.
        UnaryOp::Logsigmoid => {
            let out = <f32 as ExpRow>::exp_from(x, out, Pre::NegAbs);
            finish_logsigmoid(x, out);
        }
        _ => return forward_into(op, x, fill_with(out, 0.0), fast),
    }
    true
}

/// `out[i] = exp(-|x[i]|)`, the negation on the exponential's own pass.
fn exp_of_negated_abs(x: &[f32], out: &mut [f32]) {
    exp_into(x, out, Pre::NegAbs);
}

/// The table's sigmoid (or SiLU) of the whole vectors of `x` into `out`, each division next
/// to its exponential where AVX-512 runs them (`exp_lanes.rs`): how many values it wrote.
fn logistic(x: &[f32], out: &mut [MaybeUninit<f32>], silu: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: AVX-512 was just detected.
        return unsafe { super::exp_lanes::avx512::logistic(x, out, silu) };
    }
    0
}

/// `out[i] = exp(-x[i])`, the negation on the exponential's own pass.
fn exp_of_negated(x: &[f32], out: &mut [f32]) {
    exp_into(x, out, Pre::Neg);
}

/// `out[i] = exp(x[i])` where !(x[i] > 0), the lanes ELU's gradient uses: only there where
/// AVX-512 packs them (`elu_lanes.rs`), any finite value on the other lanes.
fn exps_for_elu(x: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: AVX-512 was just detected; x and out have the block's length.
        unsafe { elu_lanes::elu_exps(x, out) };
        return;
    }
    out.copy_from_slice(x);
    <f32 as super::exp_lanes::ExpRow>::exp_row(out);
}

fn exp_into(x: &[f32], out: &mut [f32], pre: Pre) {
    // SAFETY: f32 and MaybeUninit<f32> share a layout; exp_from writes every element, so
    // `out` stays initialised.
    let out = unsafe { &mut *(out as *mut [f32] as *mut [std::mem::MaybeUninit<f32>]) };
    <f32 as ExpRow>::exp_from(x, out, pre);
}

// `for` loops in these bodies: `for_each` stayed out of line, compiled without the wide
// features (sigmoid and SiLU 5% slower).
#[inline(always)]
fn sigmoid_body<T: Float>(e: &mut [T]) {
    for v in e.iter_mut() {
        *v = T::ONE / (T::ONE + *v);
    }
}

#[inline(always)]
fn silu_body<T: Float>(x: &[T], e: &mut [T]) {
    for (v, &x) in e.iter_mut().zip(x) {
        *v = x / (T::ONE + *v);
    }
}

#[inline(always)]
fn silu_grad_body<T: Float>(x: &[T], g: &[T], e: &mut [T]) {
    for ((v, &x), &g) in e.iter_mut().zip(x).zip(g) {
        let s = T::ONE / (T::ONE + *v);
        *v = g * (s * (T::ONE + x * (T::ONE - s)));
    }
}

#[inline(always)]
fn softplus_body<T: Float>(x: &[T], e: &mut [T], beta: T, threshold: T) {
    for (v, &x) in e.iter_mut().zip(x) {
        let soft = v.log1p() / beta;
        *v = if x * beta > threshold { x } else { soft };
    }
}

#[inline(always)]
fn softplus_grad_body<T: Float>(x: &[T], g: &[T], e: &mut [T], beta: T, threshold: T) {
    for ((v, &x), &g) in e.iter_mut().zip(x).zip(g) {
        let slope = g * (T::ONE / (T::ONE + *v));
        *v = if x * beta > threshold { g } else { slope };
    }
}

#[inline(always)]
fn logsigmoid_body<T: Float>(x: &[T], e: &mut [T]) {
    for (v, &x) in e.iter_mut().zip(x) {
        *v = (if x < T::ZERO { x } else { T::ZERO }) - v.log1p();
    }
}

#[inline(always)]
fn logsigmoid_grad_body<T: Float>(x: &[T], g: &[T], e: &mut [T]) {
    for ((z, &x), &g) in e.iter_mut().zip(x).zip(g) {
        let (max_deriv, sign) = if x < T::ZERO {
            (T::ONE, T::ONE)
        } else {
            (T::ZERO, -T::ONE)
        };
        *z = g * (max_deriv - sign * (*z / (T::ONE + *z)));
    }
}

#[inline(always)]
fn elu_grad_body<T: Float>(x: &[T], g: &[T], e: &mut [T], alpha: T) {
    for ((v, &x), &g) in e.iter_mut().zip(x).zip(g) {
        let below = g * (alpha * *v);
        *v = if x > T::ZERO { g } else { below };
    }
}

wide_fn!(fn finish_sigmoid<T: Float>(e: &mut [T]) = sigmoid_body);
wide_fn!(fn finish_elu_grad<T: Float>(x: &[T], g: &[T], e: &mut [T], alpha: T) = elu_grad_body);
wide_fn!(fn finish_softplus<T: Float>(x: &[T], e: &mut [T], beta: T, threshold: T) = softplus_body);
wide_fn!(fn finish_softplus_grad<T: Float>(x: &[T], g: &[T], e: &mut [T], beta: T, threshold: T) = softplus_grad_body);
wide_fn!(fn finish_logsigmoid<T: Float>(x: &[T], e: &mut [T]) = logsigmoid_body);
wide_fn!(fn finish_logsigmoid_grad<T: Float>(x: &[T], g: &[T], e: &mut [T]) = logsigmoid_grad_body);
wide_fn!(fn finish_silu_grad<T: Float>(x: &[T], g: &[T], e: &mut [T]) = silu_grad_body);
wide_fn!(fn finish_silu<T: Float>(x: &[T], e: &mut [T]) = silu_body);

/// `g` times d(op)/dx at `x` (threaded over chunks), or None where the table's formula runs.
pub fn grad(op: UnaryOp, x: &[f32], g: &[f32], fast: bool) -> Option<Vec<f32>> {
    match op {
        UnaryOp::Gelu => Some(erf_lanes::gelu_grad(x, g, fast)),
        UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Silu
        | UnaryOp::Softplus { .. }
        | UnaryOp::Logsigmoid
        | UnaryOp::Elu { .. } => Some(chunked(x.len(), |at, out| {
            let n = out.len();
            grad_into(op, &x[at..][..n], &g[at..][..n], out, fast);
        })),
        _ => None,
    }
}

/// `g` times d(op)/dx for one block into `out`; false where the table's formula runs.
// `g * f(x)` in the table's operand order (`*o *= g` would put a NaN's payload first).
#[allow(clippy::assign_op_pattern)]
pub fn grad_into(op: UnaryOp, x: &[f32], g: &[f32], out: &mut [f32], fast: bool) -> bool {
    match op {
        UnaryOp::Gelu => erf_lanes::gelu_grad_into(x, g, out, fast),
        // The table's `g * x.cos()` and `g * -x.sin()`, the function taken over the block first.
        UnaryOp::Sin => {
            cosf_slice(x, out);
            out.iter_mut().zip(g).for_each(|(o, &g)| *o = g * *o);
        }
        UnaryOp::Cos => {
            sinf_slice(x, out);
            out.iter_mut().zip(g).for_each(|(o, &g)| *o = g * -*o);
        }
        // The table's `s = 1 / (1 + exp(-x))`, `g * (s * (1 + x * (1 - s)))`.
        UnaryOp::Silu => {
            exp_of_negated(x, out);
            finish_silu_grad(x, g, out);
        }
        // The table's `x * beta > threshold ? g : g * (1 / (1 + exp(-(x * beta))))`.
        UnaryOp::Softplus { beta, threshold } => {
            let (beta, threshold) = (f32::from_f64(beta), f32::from_f64(threshold));
            // The product, then its negation in a loop of its own: in one, LLVM folds
            // -(v * beta) into v * -beta, which keeps a NaN's sign where the formula flips it.
            out.iter_mut().zip(x).for_each(|(o, &v)| *o = v * beta);
            out.iter_mut().for_each(|o| *o = -*o);
            <f32 as super::exp_lanes::ExpRow>::exp_row(out);
            finish_softplus_grad(x, g, out, beta, threshold);
        }
        // The table's `x > 0 ? g : g * (alpha * exp(x))`.
        UnaryOp::Elu { alpha } => {
            exps_for_elu(x, out);
            finish_elu_grad(x, g, out, f32::from_f64(alpha));
        }
        // The table's z = exp(-|x|), `g * (max_deriv - sign * (z / (1 + z)))`.
        UnaryOp::Logsigmoid => {
            exp_of_negated_abs(x, out);
            finish_logsigmoid_grad(x, g, out);
        }
        _ => return false,
    }
    true
}

/// A vector of `n` values (f32 here, f64 in `f64_lane_ops.rs`), each chunk written by
/// `fill(start, chunk)`, chunks on threads.
pub(super) fn chunked<T: Float>(n: usize, fill: impl Fn(usize, &mut [T]) + Sync) -> Vec<T> {
    filled(n, CHUNK, n, |ci, o| {
        fill(ci * CHUNK, super::uninit::fill_with(o, T::ZERO))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Formula = fn(f32) -> f32;

    #[test]
    fn sigmoid_and_silu_give_the_table_formulas_bits() {
        // Past one chunk: every exponent range, the overflow and underflow edges, specials.
        let mut x: Vec<f32> = (0..20_000)
            .map(|i| (i as f32 - 10_000.0) * 0.0113)
            .collect();
        x.extend([
            0.0,
            -0.0,
            88.7,
            88.73,
            -87.3,
            -103.9,
            -104.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]);
        x.extend([
            f32::NAN,
            f32::from_bits(0xffc1_2345),
            1e-30,
            -1e-30,
            f32::MAX,
            f32::MIN,
        ]);
        let formulas: [(UnaryOp, Formula); 2] = [
            (UnaryOp::Sigmoid, |v| 1.0 / (1.0 + libm::expf(-v))),
            (UnaryOp::Silu, |v| v / (1.0 + libm::expf(-v))),
        ];
        for (op, f) in formulas {
            let y = forward(op, &x, false).expect("a lane kernel");
            for (i, &v) in x.iter().enumerate() {
                assert_eq!(y[i].to_bits(), f(v).to_bits(), "{op:?} at {v:?}");
            }
        }
        let g: Vec<f32> = (0..x.len()).map(|i| 1.5 - i as f32 * 1e-4).collect();
        let d = grad(UnaryOp::Silu, &x, &g, false).expect("a lane kernel");
        for (i, &v) in x.iter().enumerate() {
            let s = 1.0 / (1.0 + libm::expf(-v));
            let want = g[i] * (s * (1.0 + v * (1.0 - s)));
            if want.is_nan() {
                // Where two NaNs meet (x and s), IEEE leaves open whose payload and sign come
                // out, and the compiler may swap a product's operands.
                assert!(d[i].is_nan(), "SiLU gradient at {v:?}");
            } else {
                assert_eq!(d[i].to_bits(), want.to_bits(), "SiLU gradient at {v:?}");
            }
        }
    }

    /// softplus (two parameter pairs) and logsigmoid, forward and gradient, and elu's gradient
    /// (two alphas), against their table
    /// formulas written with libm, bit for bit, past one chunk and on the special values.
    #[test]
    fn softplus_and_logsigmoid_give_the_table_formulas_bits() {
        let mut x: Vec<f32> = (0..20_000)
            .map(|i| (i as f32 - 10_000.0) * 0.0113)
            .collect();
        x.extend([
            0.0,
            -0.0,
            20.0,
            20.001,
            88.8,
            -104.0,
            1e-30,
            f32::MAX,
            f32::MIN,
        ]);
        x.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::from_bits(0xffc1_2345),
        ]);
        let g: Vec<f32> = (0..x.len()).map(|i| 1.5 - i as f32 * 1e-4).collect();
        // Bit for bit, NaNs too (only x is ever a NaN, so its payload and sign are defined).
        let same = |got: &[f32], want: &dyn Fn(usize) -> f32, what: &str| {
            for (i, &v) in x.iter().enumerate() {
                let w = want(i).to_bits();
                assert_eq!(got[i].to_bits(), w, "{what} at {v:?} ({:#x})", v.to_bits());
            }
        };
        // -t where LLVM cannot fold the negation into the product that made t (it folds
        // -(v * b) into v * -b, which keeps a NaN's sign where the formula flips it).
        let neg = |t: f32| -std::hint::black_box(t);
        for (beta, threshold) in [(1.0f32, 20.0f32), (2.0, 3.0)] {
            let op = UnaryOp::Softplus {
                beta: beta as f64,
                threshold: threshold as f64,
            };
            let y = forward(op, &x, false).expect("a lane kernel");
            let f = |i: usize| {
                let v = x[i];
                if v * beta > threshold {
                    v
                } else {
                    libm::log1pf(libm::expf(v * beta)) / beta
                }
            };
            same(&y, &f, "softplus");
            let d = grad(op, &x, &g, false).expect("a lane kernel");
            let df = |i: usize| {
                let v = x[i];
                if v * beta > threshold {
                    g[i]
                } else {
                    g[i] * (1.0 / (1.0 + libm::expf(neg(v * beta))))
                }
            };
            same(&d, &df, "softplus gradient");
        }
        for alpha in [1.0f32, 0.3] {
            let d = grad(
                UnaryOp::Elu {
                    alpha: alpha as f64,
                },
                &x,
                &g,
                false,
            )
            .expect("a lane kernel");
            let df = |i: usize| {
                if x[i] > 0.0 {
                    g[i]
                } else {
                    g[i] * (alpha * libm::expf(x[i]))
                }
            };
            same(&d, &df, "elu gradient");
        }
        let y = forward(UnaryOp::Logsigmoid, &x, false).expect("a lane kernel");
        let f = |i: usize| {
            (if x[i] < 0.0 { x[i] } else { 0.0 }) - libm::log1pf(libm::expf(neg(x[i].abs())))
        };
        same(&y, &f, "logsigmoid");
        let d = grad(UnaryOp::Logsigmoid, &x, &g, false).expect("a lane kernel");
        let df = |i: usize| {
            let z = libm::expf(neg(x[i].abs()));
            let (m, s) = if x[i] < 0.0 { (1.0, 1.0) } else { (0.0, -1.0) };
            g[i] * (m - s * (z / (1.0 + z)))
        };
        same(&d, &df, "logsigmoid gradient");
    }

    #[test]
    fn sin_and_cos_give_the_table_formulas_bits() {
        // Past one chunk, with huge arguments (the scalar pass) among ordinary ones.
        let x: Vec<f32> = (0..20_000)
            .map(|i| match i % 7 {
                0 => 1e30 * (i as f32 - 9_999.5),
                1 => f32::from_bits(0x7fc0_0001 + i as u32),
                _ => (i as f32 - 10_000.0) * 0.0137,
            })
            .collect();
        let g: Vec<f32> = (0..x.len()).map(|i| 0.5 + i as f32 * 1e-4).collect();
        for (op, f, df) in [
            (
                UnaryOp::Sin,
                libm::sinf as fn(f32) -> f32,
                libm::cosf as fn(f32) -> f32,
            ),
            (UnaryOp::Cos, libm::cosf, libm::sinf),
        ] {
            let y = forward(op, &x, false).expect("a lane kernel");
            let d = grad(op, &x, &g, false).expect("a lane kernel");
            for i in 0..x.len() {
                assert_eq!(y[i].to_bits(), f(x[i]).to_bits(), "{op:?} at {}", x[i]);
                let want = if op == UnaryOp::Sin {
                    g[i] * df(x[i])
                } else {
                    g[i] * -df(x[i])
                };
                assert_eq!(
                    d[i].to_bits(),
                    want.to_bits(),
                    "{op:?} gradient at {}",
                    x[i]
                );
            }
        }
    }

    #[test]
    fn expm1_gives_libms_bits() {
        // Past one chunk: every branch of libm's (k of -1, 0, 1, the middle and far ones,
        // saturation, overflow, tiny values), NaNs among them.
        let x: Vec<f32> = (0..20_000)
            .map(|i| match i % 11 {
                0 => f32::from_bits(0x7fc0_0001 + i as u32),
                1 => (i as f32 - 10_000.0) * 1e-9,
                _ => (i as f32 - 10_000.0) * 0.0113,
            })
            .collect();
        let y = forward(UnaryOp::Expm1, &x, false).expect("a lane kernel");
        for (v, y) in x.iter().zip(y) {
            assert_eq!(y.to_bits(), libm::expm1f(*v).to_bits(), "expm1 at {v:e}");
        }
    }
}
