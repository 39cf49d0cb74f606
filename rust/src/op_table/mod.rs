//! The elementwise op tables: one declaration per unary op (`unary.rs`) and per binary op
//! (`binary.rs`), expanded by each layer with a macro of its own (the "X-macro" pattern), so the
//! formula, its gradient, the CUDA source and the Python binding of an op live in one place:
//!
//! | layer | expands the table into |
//! |---|---|
//! | here | `UnaryOp`/`BinaryOp`, their names, parameters and checks, `UNARY_INFO`/`BINARY_INFO` |
//! | `backend/cpu/table_kernels.rs` | the CPU forward and gradient kernels |
//! | `backend/cuda/kernels.rs` | the CUDA C kernels (from `UNARY_INFO`/`BINARY_INFO`) |
//! | `ops/elementwise.rs` | the public functions `ops::silu(&x)`, `ops::leaky_relu(&x, 0.01)` |
//! | `ops/elementwise.rs` (the `Binary` record) | the binary gradient rules |
//! | `py/elementwise.rs` | the Python functions, `Tensor` methods and `_elementwise_table()` |
//!
//! A unary entry reads
//!
//! ```text
//! LeakyRelu leaky_relu {                  // enum variant, op name (Rust, Python, CUDA)
//!     doc: "...",                         // docstring (Rust and Python)
//!     method: [],                         // [name] to add a Tensor method too
//!     params: [negative_slope = 0.01],    // scalar parameters with their defaults
//!     require: [],                        // [cond => "what is expected"] on the parameters
//!     f: |x| ...,                         // CPU forward
//!     df: input |g, x| ...,               // CPU gradient times g, from the input or the output
//!     cuda: "...", cuda_df: "...",        // the same in CUDA C (v: input; x, y, g in df)
//! }
//! ```
//!
//! docs/ARCHITECTURE.md walks through adding one.

mod binary;
mod chain;
mod compare;
mod unary;

pub(crate) use binary::{binary_ops, div_floor, div_floor_from};
pub use chain::{ChainGrad, ChainStep};
pub use compare::CompareOp;
pub(crate) use unary::{unary_ops, GELU_TANH_BETA};

/// Where a unary op's gradient reads from besides `g`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradSource {
    Input,
    Output,
}

/// What the CUDA source generator and the Python stub generator need to know about a unary op.
#[derive(Debug, Clone, Copy)]
pub struct UnaryInfo {
    pub name: &'static str,
    pub doc: &'static str,
    /// The `Tensor` method of the same name, when there is one.
    pub method: Option<&'static str>,
    /// Parameter names with their defaults, in call order.
    pub params: &'static [(&'static str, f64)],
    pub grad_from: GradSource,
    /// CUDA C forward expression in `v` and the parameters.
    pub cuda: &'static str,
    /// CUDA C gradient expression in `x`, `y`, `g` and the parameters.
    pub cuda_df: &'static str,
}

/// How Python reaches a binary op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyExposure {
    /// The native function is the public one.
    Export,
    /// `python/tlrs/ops.py` wraps it (to accept Python numbers).
    Wrapped,
    /// Reached through an operator only (`**`).
    None,
}

#[derive(Debug, Clone, Copy)]
pub struct BinaryInfo {
    pub name: &'static str,
    pub doc: &'static str,
    pub py: PyExposure,
    /// CUDA C expression in `a` and `b`.
    pub cuda: &'static str,
}

macro_rules! some_name {
    () => {
        None
    };
    ($m:ident) => {
        Some(stringify!($m))
    };
}

macro_rules! grad_source {
    (input) => {
        GradSource::Input
    };
    (output) => {
        GradSource::Output
    };
}

macro_rules! py_exposure {
    (export) => {
        PyExposure::Export
    };
    (wrapped) => {
        PyExposure::Wrapped
    };
    (none) => {
        PyExposure::None
    };
}

// Builds `UnaryOp` one variant at a time: a unit variant for an op without parameters (so
// `UnaryOp::Exp` reads as a value), a struct variant otherwise. Every consumer writes the
// braced form `UnaryOp::Exp {}`, which Rust accepts for both kinds.
macro_rules! unary_enum {
    (@acc [$($done:tt)*]) => {
        /// A unary elementwise op with its scalar parameters.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum UnaryOp { $($done)* }
    };
    (@acc [$($done:tt)*] $doc:literal $V:ident [] $($rest:tt)*) => {
        unary_enum!(@acc [$($done)* #[doc = $doc] $V,] $($rest)*);
    };
    (@acc [$($done:tt)*] $doc:literal $V:ident [$($p:ident)+] $($rest:tt)*) => {
        unary_enum!(@acc [$($done)* #[doc = $doc] $V { $($p: f64),* },] $($rest)*);
    };
}

macro_rules! define_unary_op {
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
        unary_enum!(@acc [] $($doc $V [$($p)*])*);

        /// Every unary op, in table order.
        pub const UNARY_INFO: &[UnaryInfo] = &[
            $( UnaryInfo {
                name: stringify!($name),
                doc: $doc,
                method: some_name!($($method)?),
                params: &[$((stringify!($p), $d)),*],
                grad_from: grad_source!($src),
                cuda: $cuda,
                cuda_df: $cuda_df,
            }, )*
        ];

        impl UnaryOp {
            pub fn name(self) -> &'static str {
                match self {
                    $( UnaryOp::$V { .. } => stringify!($name), )*
                }
            }

            /// The parameters by name, in declaration order (empty for most ops).
            pub fn params(self) -> Vec<(&'static str, f64)> {
                match self {
                    $( UnaryOp::$V { $($p),* } => vec![$((stringify!($p), $p)),*], )*
                }
            }

            /// Refuses NaN parameters and those breaking the op's stated requirement, with a
            /// message naming what was expected and what came.
            // `!(requirement)` on purpose: a requirement that cannot be decided fails.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            pub fn check(self) -> Result<(), String> {
                match self {
                    $( UnaryOp::$V { $($p),* } => {
                        $( if $p.is_nan() {
                            return Err(format!("expected {} to be a number, got nan", stringify!($p)));
                        } )*
                        $( if !($req) {
                            return Err(format!("expected {}, got {}", $msg, self.describe_params()));
                        } )*
                        Ok(())
                    } )*
                }
            }

            fn describe_params(self) -> String {
                self.params()
                    .iter()
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }
    };
}
unary_ops!(define_unary_op);

macro_rules! define_binary_op {
    ($( $V:ident $name:ident {
        doc: $doc:literal,
        py: $py:ident,
        f: $f:expr,
        cuda: $cuda:literal,
        da: $da:expr,
        db: $db:expr $(,)?
    } )*) => {
        /// A binary elementwise op (NumPy broadcasting).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum BinaryOp {
            $( $V, )*
        }

        /// Every binary op, in table order.
        pub const BINARY_INFO: &[BinaryInfo] = &[
            $( BinaryInfo { name: stringify!($name), doc: $doc, py: py_exposure!($py), cuda: $cuda }, )*
        ];

        impl BinaryOp {
            pub fn name(self) -> &'static str {
                match self {
                    $( BinaryOp::$V => stringify!($name), )*
                }
            }
        }
    };
}
binary_ops!(define_binary_op);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parameters_have_defaults() {
        let mut seen = std::collections::HashSet::new();
        for u in UNARY_INFO {
            assert!(seen.insert(u.name), "{} twice", u.name);
        }
        for b in BINARY_INFO {
            assert!(seen.insert(b.name), "{} twice", b.name);
        }
        let leaky = UNARY_INFO.iter().find(|u| u.name == "leaky_relu").unwrap();
        assert_eq!(leaky.params, &[("negative_slope", 0.01)]);
        let hard = UNARY_INFO.iter().find(|u| u.name == "hardtanh").unwrap();
        assert_eq!(hard.params, &[("min_val", -1.0), ("max_val", 1.0)]);
    }

    #[test]
    fn checks_refuse_nan_and_broken_requirements() {
        assert!(UnaryOp::Neg.check().is_ok());
        let e = UnaryOp::LeakyRelu {
            negative_slope: f64::NAN,
        }
        .check()
        .unwrap_err();
        assert_eq!(e, "expected negative_slope to be a number, got nan");
        let e = UnaryOp::Hardtanh {
            min_val: 1.0,
            max_val: -1.0,
        }
        .check()
        .unwrap_err();
        assert_eq!(e, "expected min_val <= max_val, got min_val=1, max_val=-1");
        assert!(UnaryOp::Hardtanh {
            min_val: 0.0,
            max_val: 0.0
        }
        .check()
        .is_ok());
        assert_eq!(UnaryOp::Elu { alpha: 2.0 }.params(), vec![("alpha", 2.0)]);
    }
}
