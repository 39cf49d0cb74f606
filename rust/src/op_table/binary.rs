//! The binary elementwise ops (NumPy broadcasting), one declaration each; see `op_table/mod.rs`
//! for the entry syntax. `f` is the CPU formula on two elements `a`, `b` of type `T`; `cuda`
//! the same formula in CUDA C. `da`/`db` are the gradient rules, written with tensor ops on
//! (g, a, b, out) and run only for inputs that require a gradient; they are summed back to each
//! input's shape by the caller. `doc` is the docstring; `py` says how Python reaches the op: `export` (the native
//! function is the public one), `wrapped` (ops.py wraps it to accept numbers) or `none`.

macro_rules! binary_ops {
    ($m:ident) => {
        $m! {
            Add add {
                doc: "Broadcasting a + b.",
                py: wrapped,
                f: |a, b| a + b,
                cuda: "a + b",
                da: |g, _a, _b, _out| Ok(g.clone()),
                db: |g, _a, _b, _out| Ok(g.clone()),
            }
            Sub sub {
                doc: "Broadcasting a - b.",
                py: wrapped,
                f: |a, b| a - b,
                cuda: "a - b",
                da: |g, _a, _b, _out| Ok(g.clone()),
                db: |g, _a, _b, _out| neg(g),
            }
            Mul mul {
                doc: "Broadcasting a * b.",
                py: wrapped,
                f: |a, b| a * b,
                cuda: "a * b",
                da: |g, _a, b, _out| mul(g, b),
                db: |g, a, _b, _out| mul(g, a),
            }
            // d(a/b)/db = -(a/b)/b, from the output.
            Div div {
                doc: "Broadcasting a / b.",
                py: wrapped,
                f: |a, b| a / b,
                cuda: "a / b",
                da: |g, _a, b, _out| div(g, b),
                db: |g, _a, b, out| neg(&mul(g, &div(out, b)?)?),
            }
            // IEEE 754-2019 maximum/minimum: NaN from either side propagates, and of two zeros
            // maximum is +0 and minimum -0 whatever their order; ties split the gradient.
            Maximum maximum {
                doc: "Elementwise maximum (IEEE 754-2019: NaN propagates, maximum(-0, +0) = +0); ties split the gradient.",
                py: export,
                f: |a: T, b: T| if a.is_nan() || a > b { a } else if b.is_nan() || b > a { b } else if a.is_sign_negative() { b } else { a },
                cuda: "(isnan(a) || a > b) ? a : ((isnan(b) || b > a) ? b : (signbit(a) ? b : a))",
                da: |g, a, b, _out| mul(g, &select_weight(BinaryOp::Maximum, a, b)?),
                db: |g, a, b, _out| mul(g, &select_weight(BinaryOp::Maximum, b, a)?),
            }
            Minimum minimum {
                doc: "Elementwise minimum (IEEE 754-2019: NaN propagates, minimum(-0, +0) = -0); ties split the gradient.",
                py: export,
                f: |a: T, b: T| if a.is_nan() || a < b { a } else if b.is_nan() || b < a { b } else if a.is_sign_negative() { a } else { b },
                cuda: "(isnan(a) || a < b) ? a : ((isnan(b) || b < a) ? b : (signbit(a) ? a : b))",
                da: |g, a, b, _out| mul(g, &select_weight(BinaryOp::Minimum, a, b)?),
                db: |g, a, b, _out| mul(g, &select_weight(BinaryOp::Minimum, b, a)?),
            }
            // a ** b (IEEE pow from libm) for tensor exponents and `number ** tensor`:
            // d/da = b a^(b-1), 0 where b = 0; d/db = a^b ln a, 0 where a = 0 and b >= 0
            // (PyTorch's rules, so 0 ** 0 and 0 ** 2 give no NaN gradient).
            Pow tensor_pow {
                doc: "a ** b elementwise.",
                py: none,
                f: |a: T, b: T| a.powf(b),
                cuda: "pow$F(a, b)",
                da: |g, a, b, _out| mul(g, &binary(BinaryOp::PowSlopeBase, a, b)?),
                db: |g, a, _b, out| mul(g, &binary(BinaryOp::PowSlopeExponent, a, out)?),
            }
            // The partial derivatives of tensor_pow, each one op so its condition is an
            // elementwise select; the same IEEE operations in the same order as PyTorch's
            // `exponent * self.pow(exponent - 1)` and `result * self.log()`. The exponent's
            // reads the forward's output p = a ** b (the same bits as computing it again): at
            // a = ±0, b >= 0 exactly where |p| <= 1 (p is 0 or 1; b < 0 gives an infinity, a
            // NaN b a NaN), so the condition keeps its meaning without b.
            PowSlopeBase pow_slope_base {
                doc: "b * a ** (b - 1), and 0 where b = 0 (tensor_pow's gradient for a).",
                py: none,
                f: |a: T, b: T| if b == T::ZERO { T::ZERO } else { b * a.powf(b - T::ONE) },
                cuda: "(b == ($T)0) ? ($T)0 : b * pow$F(a, b - ($T)1)",
                da: |_g, _a, _b, _out| Err(no_second_derivative("tensor_pow")),
                db: |_g, _a, _b, _out| Err(no_second_derivative("tensor_pow")),
            }
            PowSlopeExponent pow_slope_exponent {
                doc: "p * ln(a) for p = a ** b, and 0 where a = 0 and |p| <= 1 (tensor_pow's gradient for b, from its output p).",
                py: none,
                f: |a: T, p: T| if a == T::ZERO && p.abs() <= T::ONE { T::ZERO } else { p * a.ln() },
                cuda: "(a == ($T)0 && fabs$F(b) <= ($T)1) ? ($T)0 : b * log$F(a)",
                da: |_g, _a, _b, _out| Err(no_second_derivative("tensor_pow")),
                db: |_g, _a, _b, _out| Err(no_second_derivative("tensor_pow")),
            }
            // atan2(a, b): the angle of the point (b, a), libm's; d/da = b / (a² + b²),
            // d/db = -a / (a² + b²), each a signed zero at the origin (PyTorch's rules).
            Atan2 atan2 {
                doc: "Elementwise atan2(a, b): the angle of the point (x = b, y = a) in (-pi, pi].",
                py: export,
                f: |a: T, b: T| a.atan2(b),
                cuda: "atan2$F(a, b)",
                da: |g, a, b, _out| mul(g, &binary(BinaryOp::Atan2Slope, a, b)?),
                db: |g, a, b, _out| neg(&mul(g, &binary(BinaryOp::Atan2Slope, b, a)?)?),
            }
            // atan2's partial derivative as one op: b · (1 / (a² + b²)), where 1 / 0 is taken
            // as 0 (PyTorch's reciprocal at the origin), so the origin gives a signed zero.
            Atan2Slope atan2_slope {
                doc: "b / (a² + b²), and a signed 0 where a² + b² = 0 (atan2's gradient for a; swapped, for b).",
                py: none,
                f: |a: T, b: T| { let d = a * a + b * b; b * (if d == T::ZERO { T::ZERO } else { T::ONE / d }) },
                cuda: "b * ((a * a + b * b == ($T)0) ? ($T)0 : ($T)1 / (a * a + b * b))",
                da: |_g, _a, _b, _out| Err(no_second_derivative("atan2")),
                db: |_g, _a, _b, _out| Err(no_second_derivative("atan2")),
            }
            // PyTorch's div(a, b, rounding_mode='trunc'): the IEEE quotient rounded toward zero,
            // as one op (the bits of trunc(a / b)); no gradient flows, as in PyTorch.
            DivTrunc div_trunc {
                doc: "Elementwise trunc(a / b), PyTorch's div(a, b, rounding_mode='trunc'), as one op. The gradient is zero.",
                py: wrapped,
                f: |a: T, b: T| (a / b).trunc(),
                cuda: "trunc$F(a / b)",
                da: |g, _a, _b, _out| zeros_like(g),
                db: |g, _a, _b, _out| zeros_like(g),
            }
            // PyTorch's floor division of floats (c10::div_floor_floating): the exact remainder
            // fmod(a, b) taken off a before dividing, then the sign fix-up and the rounding
            // correction; b == 0 gives the IEEE a / b. The gradient is zero for both operands,
            // NaN or infinite g included, as for PyTorch's div(..., rounding_mode='floor').
            FloorDivide floor_divide {
                doc: "Elementwise floor(a / b) as PyTorch computes it (fmod-based, Python's a // b); a / b where b == 0. The gradient is zero.",
                py: wrapped,
                f: |a: T, b: T| crate::op_table::div_floor(a, b),
                cuda: "tlrs_div_floor(a, b)",
                da: |g, _a, _b, _out| zeros_like(g),
                db: |g, _a, _b, _out| zeros_like(g),
            }
        }
    };
}
pub(crate) use binary_ops;

/// Floor division of two floats, step for step PyTorch's `c10::div_floor_floating`
/// (c10/util/generic_math.h), whose CUDA twin is `tlrs_div_floor` (backend/cuda/kernels.rs).
#[inline(always)]
pub fn div_floor<T: crate::dtype::Float>(a: T, b: T) -> T {
    div_floor_from(a, b, a.fmod(b))
}

/// `div_floor(a, b)` given `rem = fmod(a, b)` (found apart, on vector lanes, by
/// `lane_math/fmod.rs`).
#[inline(always)]
pub fn div_floor_from<T: crate::dtype::Float>(a: T, b: T, rem: T) -> T {
    if b == T::ZERO {
        return a / b;
    }
    let mut div = (a - rem) / b;
    if rem != T::ZERO && (b < T::ZERO) != (rem < T::ZERO) {
        div = div - T::ONE;
    }
    if div != T::ZERO {
        let floor = div.floor();
        if div - floor > T::from_f64(0.5) {
            floor + T::ONE
        } else {
            floor
        }
    } else if (a / b).is_sign_negative() {
        -T::ZERO
    } else {
        T::ZERO
    }
}
