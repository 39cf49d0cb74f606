//! The CPU kernels of the elementwise op table (`op_table/`): each table entry's formula
//! becomes one arm of a `match`, run through the parallel maps of `elementwise.rs`.

use super::elementwise::{broadcast_map, map, zip_map};
use super::simd::widest;
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

/// `out[i] = f(x[i])` (the closure's types come from here).
#[inline(always)]
fn map_to<T: Float>(x: &[T], out: &mut [T], f: impl Fn(T) -> T) {
    out.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x));
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
        f: $f:expr,
        df: $src:ident $df:expr,
        cuda: $cuda:literal,
        cuda_df: $cuda_df:literal $(,)?
    } )*) => {
        /// `op` applied to every element of `x`.
        pub fn unary<T: Float>(op: UnaryOp, x: &[T]) -> Vec<T> {
            match op {
                $( UnaryOp::$V { $($p),* } => {
                    $( let $p = T::from_f64($p); )*
                    map(x, $f)
                } )*
            }
        }

        /// d(op)/dx times `g`, from the op's input `x` or its output `y` (the table says which).
        pub fn unary_grad<T: Float>(op: UnaryOp, x: &[T], y: &[T], g: &[T]) -> Vec<T> {
            match op {
                $( UnaryOp::$V { $($p),* } => {
                    $( let $p = T::from_f64($p); )*
                    zip_map(g, pick_source!($src, x, y), $df)
                } )*
            }
        }

        /// `op` over one block of values `x` into `out` (a step of a fused chain), compiled for
        /// the widest vectors.
        #[inline(always)]
        pub fn unary_block<T: Float>(op: UnaryOp, x: &[T], out: &mut [T]) {
            match op {
                $( UnaryOp::$V { $($p),* } => {
                    $( let $p = T::from_f64($p); )*
                    widest(|| map_to(x, out, $f));
                } )*
            }
        }

        /// `g` times d(op)/dx into `out`, for one block whose input is `x` and output `y`.
        #[inline(always)]
        pub fn unary_grad_block<T: Float>(op: UnaryOp, x: &[T], y: &[T], g: &[T], out: &mut [T]) {
            match op {
                $( UnaryOp::$V { $($p),* } => {
                    $( let $p = T::from_f64($p); )*
                    widest(|| zip_to(g, pick_source!($src, x, y), out, $df));
                } )*
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
