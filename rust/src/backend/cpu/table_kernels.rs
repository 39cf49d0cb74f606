//! The CPU kernels of the elementwise op table (`op_table/`): each table entry's formula
//! becomes one arm of a `match`, run through the parallel maps of `elementwise.rs`.

use super::elementwise::{broadcast_map, map, zip_map};
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
