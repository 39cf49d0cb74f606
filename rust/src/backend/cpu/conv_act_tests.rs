//! A convolution's fused activation (`Activation::Relu`) against the convolution alone followed
//! by the `relu` op's own kernel: equal bits on every forward path (small maps, direct, thin
//! rows, the lowering per image and per group), reference and fast, f32 and f64, on values
//! that include NaN (-0.0 is checked on the AVX-512 epilogue in transpose.rs: these folds start
//! from +0.0 and never make one).

use super::conv::conv2d;
use super::matmul::GemmElem;
use super::table_kernels::unary;
use crate::dtype::Float;
use crate::geometry::{Activation, ConvDims};
use crate::op_table::UnaryOp;

fn dims(n: usize, c: usize, hw: usize, oc: usize, k: usize, stride: usize, pad: usize) -> ConvDims {
    let o = (hw + 2 * pad - k) / stride + 1;
    ConvDims {
        n,
        c,
        h: hw,
        w: hw,
        oc,
        kh: k,
        kw: k,
        stride,
        pad,
        oh: o,
        ow: o,
    }
}

/// Deterministic values in [-1, 1).
fn values<T: Float>(len: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f64((s >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        })
        .collect()
}

/// Inputs where image 0 is all zeros (its bias-free outputs are zero) and one value of image 1
/// is NaN (so are the outputs that read it).
fn operands<T: Float>(d: &ConvDims) -> (Vec<T>, Vec<T>, Vec<T>) {
    let mut x = values::<T>(d.n * d.c * d.h * d.w, 1);
    let w = values::<T>(d.oc * d.c * d.kh * d.kw, 2);
    x[..d.c * d.h * d.w].iter_mut().for_each(|v| *v = T::ZERO);
    if d.n > 1 {
        x[d.c * d.h * d.w + d.w / 2] = T::from_f64(f64::NAN);
    }
    (x, w, values::<T>(d.oc, 3))
}

fn bits<T: Float>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

/// Checks every case of `d` for `T`; returns whether a pre-activation was NaN (so NaN reached
/// the activation; -0.0 is checked on the AVX-512 epilogue itself, in transpose.rs, as the
/// folds, which start from +0.0, do not make one).
fn check<T: GemmElem>(d: ConvDims, what: &str) -> bool {
    let (x, w, b) = operands::<T>(&d);
    let mut nan = false;
    for fast in [false, true] {
        for bias in [None, Some(&b[..])] {
            let plain = conv2d(&x, &w, bias, d, Activation::None, fast);
            let want = unary(UnaryOp::Relu, &plain);
            let got = conv2d(&x, &w, bias, d, Activation::Relu, fast);
            assert_eq!(
                bits(&got),
                bits(&want),
                "{what} {} fast={fast} bias={}",
                T::DTYPE,
                bias.is_some()
            );
            nan |= plain.iter().any(|v| v.is_nan());
        }
    }
    nan
}

#[test]
fn fused_relu_equals_relu_after_the_convolution_on_every_path() {
    let cases = [
        ("small maps", dims(8, 32, 2, 32, 3, 1, 1)),
        ("direct", dims(2, 16, 8, 64, 3, 1, 1)),
        ("direct, stride 2", dims(4, 8, 12, 32, 3, 2, 1)),
        ("thin rows", dims(8, 512, 4, 256, 3, 2, 1)),
        ("lowering per image", dims(2, 3, 9, 5, 3, 1, 1)),
        ("lowering per group", dims(3, 4, 5, 6, 3, 1, 0)),
    ];
    for (what, d) in cases {
        assert!(
            check::<f32>(d, what),
            "{what} f32: no NaN before the activation"
        );
        assert!(
            check::<f64>(d, what),
            "{what} f64: no NaN before the activation"
        );
    }
}

/// The cases above reach the AVX-512 kernels they are named after where the CPU has them.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_cases_reach_the_direct_kernels() {
    use super::conv_direct::{forward_applies, small_maps_applies, thin_rows_applies};
    if !super::simd::has_avx512() {
        assert!(!forward_applies(&dims(2, 16, 8, 64, 3, 1, 1)));
        return;
    }
    assert!(small_maps_applies(&dims(8, 32, 2, 32, 3, 1, 1)));
    assert!(forward_applies(&dims(2, 16, 8, 64, 3, 1, 1)));
    assert!(forward_applies(&dims(4, 8, 12, 32, 3, 2, 1)));
    assert!(thin_rows_applies(8 * 4));
}
