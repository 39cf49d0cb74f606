//! The CPU kernels of the elementwise op table (`op_table/`): each table entry's formula
//! becomes one arm of a `match`, run through the parallel maps of `elementwise.rs`.

use super::elementwise::{broadcast_map, map, zip_map};
use super::f32_view::{as_f32, as_f32_mut, as_f64, from_f32, from_f64};
use super::lanewise::{self, Lanewise1, Lanewise2};
use super::simd::widest;
use super::{f32_lane_ops, f64_lane_ops};
use crate::dtype::Float;
use crate::op_table::{binary_ops, unary_ops, BinaryOp, UnaryOp};
use crate::Shape;

macro_rules! pick_source {
    (input, $x:ident, $y:ident) => {
        $x
    };
    (output, $x:ident, $y:ident) => {
        $y
    };
}

/// `out[i] = f(a[i], b[i])`.
#[inline(always)]
fn zip_to<T: Float>(a: &[T], b: &[T], out: &mut [T], f: impl Fn(T, T) -> T) {
    let n = out.len();
    let (a, b) = (&a[..n], &b[..n]);
    for i in 0..n {
        out[i] = f(a[i], b[i]);
    }
}

macro_rules! unary_kernels {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        method: [$($method:ident)?],
        params: [$($p:ident = $d:literal),*],
        require: [$($req:expr => $msg:literal),*],
        f: |$x:ident| $f:expr,
        df: $src:ident |$g:ident, $xd:ident| $df:expr,
        cuda: $cuda:literal,
        cuda_df: $cuda_df:literal $(,)?
    } )*) => {
        /// Each entry's formula as a type (`lanewise.rs` says why not a closure): `forward::Op`
        /// computes the op, `gradient::Op` g times its derivative from the input or the output.
        #[allow(non_camel_case_types, unused_variables, clippy::all)]
        mod formulas {
            use super::*;
            pub mod forward {
                $( pub struct $V<T> { $(pub $p: T,)* pub _t: std::marker::PhantomData<T> } )*
            }
            pub mod gradient {
                $( pub struct $V<T> { $(pub $p: T,)* pub _t: std::marker::PhantomData<T> } )*
            }
            $(
                impl<T: Float> Lanewise1<T> for forward::$V<T> {
                    #[inline(always)]
                    fn at(&self, $x: T) -> T {
                        $( let $p = self.$p; )*
                        $f
                    }
                }
                impl<T: Float> Lanewise2<T> for gradient::$V<T> {
                    #[inline(always)]
                    fn at(&self, $g: T, $xd: T) -> T {
                        $( let $p = self.$p; )*
                        $df
                    }
                }
            )*
        }

        /// `op` applied to every element of `x`.
        pub fn unary<T: Float>(op: UnaryOp, x: &[T]) -> Vec<T> {
            if let Some(y) = as_f32(x).and_then(|x| f32_lane_ops::forward(op, x, super::parallel::fast_kernels())) {
                return from_f32(y);
            }
            if let Some(y) = as_f64(x).and_then(|x| f64_lane_ops::forward(op, x)) {
                return from_f64(y);
            }
            match op {
                $( UnaryOp::$V { $($p),* } => lanewise::map(x, &formulas::forward::$V {
                    $( $p: T::from_f64($p), )* _t: std::marker::PhantomData
                }), )*
            }
        }

        /// d(op)/dx times `g`, from the op's input `x` or its output `y` (the table says which).
        pub fn unary_grad<T: Float>(op: UnaryOp, x: &[T], y: &[T], g: &[T]) -> Vec<T> {
            if let (Some(x), Some(g)) = (as_f32(x), as_f32(g)) {
                if let Some(d) = f32_lane_ops::grad(op, x, g, super::parallel::fast_kernels()) {
                    return from_f32(d);
                }
            }
            if let (Some(x), Some(g)) = (as_f64(x), as_f64(g)) {
                if let Some(d) = f64_lane_ops::grad(op, x, g) {
                    return from_f64(d);
                }
            }
            match op {
                $( UnaryOp::$V { $($p),* } => lanewise::zip(g, pick_source!($src, x, y), &formulas::gradient::$V {
                    $( $p: T::from_f64($p), )* _t: std::marker::PhantomData
                }), )*
            }
        }

        /// `op` over one block of values `x` into `out` (a step of a fused chain).
        #[inline(always)]
        pub fn unary_block<T: Float>(op: UnaryOp, x: &[T], out: &mut [T]) {
            if let Some(x) = as_f32(x) {
                if f32_lane_ops::forward_into(op, x, as_f32_mut(out), super::parallel::fast_kernels()) {
                    return;
                }
            }
            match op {
                $( UnaryOp::$V { $($p),* } => lanewise::map_block(x, out, &formulas::forward::$V {
                    $( $p: T::from_f64($p), )* _t: std::marker::PhantomData
                }), )*
            }
        }

        /// `g` times d(op)/dx into `out`, for one block whose input is `x` and output `y`.
        #[inline(always)]
        pub fn unary_grad_block<T: Float>(op: UnaryOp, x: &[T], y: &[T], g: &[T], out: &mut [T]) {
            if let (Some(x), Some(g)) = (as_f32(x), as_f32(g)) {
                if f32_lane_ops::grad_into(op, x, g, as_f32_mut(out), super::parallel::fast_kernels()) {
                    return;
                }
            }
            match op {
                $( UnaryOp::$V { $($p),* } => lanewise::zip_block(g, pick_source!($src, x, y), out, &formulas::gradient::$V {
                    $( $p: T::from_f64($p), )* _t: std::marker::PhantomData
                }), )*
            }
        }
    };
}
unary_ops!(unary_kernels);

macro_rules! binary_kernels {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        py: $py:ident,
        f: $f:expr,
        cuda: $cuda:literal,
        da: $da:expr,
        db: $db:expr $(,)?
    } )*) => {
        /// `op` over `a` and `b` broadcast to `out` (strides `sa`, `sb`); `same` when both already
        /// have the output's shape, which skips the index arithmetic.
        pub fn binary<T: Float>(
            op: BinaryOp,
            a: &[T],
            sa: &[usize],
            b: &[T],
            sb: &[usize],
            out: &Shape,
            same: bool,
        ) -> Vec<T> {
            // tensor_pow, its slopes and atan2 on libm's lanes (whole operands or a single value).
            if let Some(y) = super::binary_lanes::lane_binary(op, a, b, out.numel()) {
                return y;
            }
            // Other broadcasts (an exponent per channel) expand both operands first: two copies
            // cost far less than libm's scalar calls.
            let on_lanes = matches!(
                op,
                BinaryOp::Pow | BinaryOp::PowSlopeBase | BinaryOp::PowSlopeExponent | BinaryOp::Atan2
            );
            if !same && on_lanes {
                let a_full = broadcast_map(a, sa, b, sb, out, |x, _| x);
                let b_full = broadcast_map(a, sa, b, sb, out, |_, y| y);
                if let Some(y) = super::binary_lanes::lane_binary(op, &a_full, &b_full, out.numel()) {
                    return y;
                }
            }
            match op {
                $( BinaryOp::$V => {
                    if same {
                        zip_map(a, b, $f)
                    } else {
                        broadcast_map(a, sa, b, sb, out, $f)
                    }
                } )*
            }
        }

        /// `op` between one block of running values `v` and `w` into `out`: `v op w` when
        /// `value_left`, else `w op v`.
        #[inline(always)]
        pub fn binary_block<T: Float>(op: BinaryOp, v: &[T], w: &[T], out: &mut [T], value_left: bool) {
            match op {
                $( BinaryOp::$V => {
                    let f = $f;
                    if value_left {
                        widest(|| zip_to(v, w, out, f));
                    } else {
                        widest(|| zip_to(v, w, out, |v, w| f(w, v)));
                    }
                } )*
            }
        }

        /// `op` between every element of `x` and the scalar `s` (`s op x` when `scalar_left`).
        pub fn binary_scalar<T: Float>(op: BinaryOp, x: &[T], s: T, scalar_left: bool) -> Vec<T> {
            if let (BinaryOp::Pow, false) = (op, scalar_left) {
                if let Some(y) = super::pow_special::pow_by_special_exponent(x, s) {
                    return y;
                }
            }
            let sv = [s];
            let (a, b) = if scalar_left { (&sv[..], x) } else { (x, &sv[..]) };
            if let Some(y) = super::binary_lanes::lane_binary(op, a, b, x.len()) {
                return y;
            }
            match op {
                $( BinaryOp::$V => {
                    let f = $f;
                    if scalar_left {
                        map(x, |v| f(s, v))
                    } else {
                        map(x, |v| f(v, s))
                    }
                } )*
            }
        }
    };
}
binary_ops!(binary_kernels);

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<T: Float>() -> Vec<T> {
        let mut v: Vec<T> = (-400..=400)
            .map(|i| T::from_f64(i as f64 * 0.0625))
            .collect();
        v.extend(
            [
                0.0,
                -0.0,
                19.999,
                20.0,
                20.001,
                1e-30,
                -1e-30,
                88.0,
                700.0,
                -700.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
            ]
            .map(T::from_f64),
        );
        v
    }

    fn same_bits<T: Float>(got: &[T], want: &[T], what: &str) {
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!(
                a.to_f64().to_bits() == b.to_f64().to_bits(),
                "{what} [{i}]: {a:?} != {b:?}"
            );
        }
    }

    /// softplus gained beta and threshold; at the defaults (1, 20) the forward and the
    /// gradient keep the bits of the formulas they had before (x * 1 and y / 1 are exact).
    fn softplus_defaults_keep_the_old_bits<T: Float>() {
        let x = inputs::<T>();
        let g: Vec<T> = (0..x.len())
            .map(|i| T::from_f64(0.25 + i as f64 * 0.001))
            .collect();
        let op = UnaryOp::Softplus {
            beta: 1.0,
            threshold: 20.0,
        };
        let twenty = T::from_f64(20.0);
        let old_f: Vec<T> = x
            .iter()
            .map(|&x| if x > twenty { x } else { x.exp().log1p() })
            .collect();
        let old_df: Vec<T> = x
            .iter()
            .zip(&g)
            .map(|(&x, &g)| {
                if x > twenty {
                    g
                } else {
                    g * (T::ONE / (T::ONE + (-x).exp()))
                }
            })
            .collect();
        let y = unary(op, &x);
        same_bits(&y, &old_f, "softplus");
        same_bits(&unary_grad(op, &x, &y, &g), &old_df, "softplus grad");
    }

    #[test]
    fn softplus_defaults_keep_the_old_bits_f32_f64() {
        softplus_defaults_keep_the_old_bits::<f32>();
        softplus_defaults_keep_the_old_bits::<f64>();
    }

    #[test]
    fn softplus_beta_and_threshold() {
        let op = UnaryOp::Softplus {
            beta: 2.0,
            threshold: 3.0,
        };
        // 2 * 1.6 > 3: x itself; 2 * 1.5 = 3 is not above: log1p(e^3) / 2.
        let y = unary(op, &[1.6f64, 1.5, -1.0]);
        assert_eq!(y[0], 1.6);
        assert_eq!(y[1], libm::log1p(libm::exp(3.0)) / 2.0);
        assert_eq!(y[2], libm::log1p(libm::exp(-2.0)) / 2.0);
        let g = unary_grad(op, &[1.6f64, -1.0], &[0.0, 0.0], &[0.5, 0.5]);
        assert_eq!(g, vec![0.5, 0.5 * (1.0 / (1.0 + libm::exp(2.0)))]);
    }

    #[test]
    fn floor_divide_follows_python_and_pytorch() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let cases: [(f64, f64, f64); 16] = [
            (7.0, 2.0, 3.0),
            (-7.0, 2.0, -4.0),
            (7.0, -2.0, -4.0),
            (-7.0, -2.0, 3.0),
            (6.0, 3.0, 2.0),
            (-6.0, 3.0, -2.0),
            (0.0, 3.0, 0.0),
            (-0.0, 3.0, -0.0),
            (0.0, -3.0, -0.0),
            (1.0, 3.0, 0.0),
            (-1.0, 3.0, -1.0),
            (3.0, inf, 0.0),
            (-3.0, inf, -1.0),
            (1.0, 0.0, inf),
            (-1.0, 0.0, -inf),
            // Python: 1 // 0.1 == 9.0 (0.1 is a little more than 1/10).
            (1.0, 0.1, 9.0),
        ];
        for (a, b, want) in cases {
            let got = crate::op_table::div_floor(a, b);
            assert_eq!(got.to_bits(), want.to_bits(), "{a} // {b}: {got}");
        }
        assert!(crate::op_table::div_floor(0.0, 0.0).is_nan());
        assert!(crate::op_table::div_floor(inf, 2.0).is_nan());
        assert!(crate::op_table::div_floor(nan, 2.0).is_nan());
        assert!(crate::op_table::div_floor(2.0, nan).is_nan());
        assert_eq!(crate::op_table::div_floor(7.0f32, -2.0), -4.0);
    }

    #[test]
    fn pow_with_one_value_keeps_libms_bits() {
        // One side a single value broadcast over the other (`2.0 ** x`, `x ** t` with a 0-d t):
        // powf's lanes, libm's bits.
        let x: Vec<f32> = (0..5000).map(|i| (i as f32 - 2500.0) / 97.0).collect();
        let out = Shape(vec![50, 100]);
        for s in [2.0f32, 0.5, 3.0, -1.0, 10000.0] {
            let left = binary(BinaryOp::Pow, &[s], &[0, 0], &x, &[100, 1], &out, false);
            let right = binary(BinaryOp::Pow, &x, &[100, 1], &[s], &[0, 0], &out, false);
            for (i, &v) in x.iter().enumerate() {
                assert_eq!(left[i].to_bits(), libm::powf(s, v).to_bits(), "{s} ** {v}");
                assert_eq!(right[i].to_bits(), libm::powf(v, s).to_bits(), "{v} ** {s}");
            }
        }
    }

    /// The lane kernels of trunc and floor (the rounding instruction) against libm's bit
    /// arithmetic: every 257th f32 bit pattern (both signs, subnormals, infinities, NaNs of
    /// both kinds with payloads) and f64 patterns from a fixed stream, all bits equal.
    #[test]
    fn trunc_and_floor_keep_libms_bits() {
        let x32: Vec<f32> = (0..=u32::MAX)
            .step_by(257)
            .chain([
                0x7fa0_0001,
                0xffa5_4321,
                0x7fc1_2345,
                0x4b00_0001,
                0xcb7f_ffff,
            ])
            .map(f32::from_bits)
            .collect();
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let x64: Vec<f64> = (0..1_000_000)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                // Every third a value near the integers: exponents of -2 to 60.
                let v = f64::from_bits(s);
                if i % 3 == 0 {
                    f64::from_bits((s >> 12) | (0x3fd0_0000_0000_0000 + ((i % 62) << 52)))
                } else {
                    v
                }
            })
            .chain([
                f64::from_bits(0x7ff0_0000_0000_0001),
                f64::from_bits(0xfff8_0000_0000_1234),
            ])
            .collect();
        for (op, f32_ref, f64_ref) in [
            (
                UnaryOp::Trunc,
                libm::truncf as fn(f32) -> f32,
                libm::trunc as fn(f64) -> f64,
            ),
            (UnaryOp::Floor, libm::floorf, libm::floor),
        ] {
            for (v, got) in x32.iter().zip(unary(op, &x32)) {
                let want = f32_ref(*v);
                assert_eq!(got.to_bits(), want.to_bits(), "{op:?}({:#x})", v.to_bits());
            }
            for (v, got) in x64.iter().zip(unary(op, &x64)) {
                let want = f64_ref(*v);
                assert_eq!(got.to_bits(), want.to_bits(), "{op:?}({:#x})", v.to_bits());
            }
        }
    }

    #[test]
    fn trunc_and_floor_and_their_zero_gradients() {
        let x = [-2.5f64, -0.5, -0.0, 0.5, 2.5, f64::INFINITY];
        let t = unary(UnaryOp::Trunc, &x);
        let f = unary(UnaryOp::Floor, &x);
        assert_eq!(t, vec![-2.0, -0.0, -0.0, 0.0, 2.0, f64::INFINITY]);
        assert!(t[1].is_sign_negative());
        assert_eq!(f, vec![-3.0, -1.0, -0.0, 0.0, 2.0, f64::INFINITY]);
        let g = [1.0, f64::NAN, f64::INFINITY, -1.0, 2.0, 3.0];
        for op in [UnaryOp::Trunc, UnaryOp::Floor] {
            let d = unary_grad(op, &x, &t, &g);
            assert!(d.iter().all(|&v| v.to_bits() == 0), "{op:?}: {d:?}");
        }
    }
}

#[cfg(test)]
mod lane_tests {
    use super::*;

    use super::super::binary_lanes::{scalar_formula, scalar_formula64};

    #[test]
    fn broadcast_operands_keep_the_scalar_formulas_bits() {
        // [rows, 40] against an exponent per column [40] and a base per row [rows, 1], through
        // the table's broadcasting entry point (which expands them for the lanes).
        fn check<T: Float>(oracle: fn(BinaryOp, T, T) -> T) {
            use crate::shape::broadcast_strides;
            use crate::Shape;
            let (rows, cols) = (300, 40);
            let out = Shape(vec![rows, cols]);
            let from = T::from_f64;
            let a: Vec<T> = (0..rows * cols)
                .map(|i| from(((i * 7919) % 3001) as f64 / 1000.0))
                .collect();
            let col: Vec<T> = (0..cols).map(|j| from(j as f64 / 4.0 - 5.0)).collect();
            let row: Vec<T> = (0..rows).map(|r| from(r as f64 / 100.0)).collect();
            let (sa, sc) = (
                broadcast_strides(&out, &out),
                broadcast_strides(&Shape(vec![cols]), &out),
            );
            let sr = broadcast_strides(&Shape(vec![rows, 1]), &out);
            for op in [
                BinaryOp::Pow,
                BinaryOp::PowSlopeBase,
                BinaryOp::PowSlopeExponent,
                BinaryOp::Atan2,
            ] {
                let by_column = binary(op, &a, &sa, &col, &sc, &out, false);
                let by_row = binary(op, &row, &sr, &a, &sa, &out, false);
                let bits = |v: T| v.to_f64().to_bits();
                for i in 0..rows * cols {
                    let want = oracle(op, a[i], col[i % cols]);
                    assert_eq!(bits(by_column[i]), bits(want), "{op:?} column, element {i}");
                    let want = oracle(op, row[i / cols], a[i]);
                    assert_eq!(bits(by_row[i]), bits(want), "{op:?} row, element {i}");
                }
            }
        }
        check::<f32>(scalar_formula);
        check::<f64>(scalar_formula64);
    }
}
