//! The unary elementwise ops, one declaration each. Every layer expands this table with a macro
//! of its own (see `op_table/mod.rs` for the entry syntax), so adding an op here adds its enum
//! variant, CPU kernel and gradient, CUDA kernels, Python function and stub entry.
//!
//! Bodies are written once for both float types: `x`, `g`, `y` are of the kernel's element type
//! `T` (a `crate::dtype::Float`), constants are `T::from_f64(..)`, and parameters arrive already
//! rounded to `T`. The CUDA expressions repeat the CPU formula term for term (`$T` is the element
//! type, `$F` the math-function suffix) so that with `--fmad=false` the rounding steps match.

macro_rules! unary_ops {
    ($m:ident) => {
        $m! {
            Neg neg {
                doc: "Elementwise -x.",
                method: [neg],
                params: [],
                require: [],
                f: |x| -x,
                df: input |g, _x| -g,
                cuda: "-v",
                cuda_df: "-g",
            }
            Exp exp {
                doc: "Elementwise e ** x.",
                method: [exp],
                params: [],
                require: [],
                f: |x| x.exp(),
                df: output |g, y| g * y,
                cuda: "exp$F(v)",
                cuda_df: "g * y",
            }
            Log log {
                doc: "Elementwise natural logarithm.",
                method: [log],
                params: [],
                require: [],
                f: |x| x.ln(),
                df: input |g, x| g / x,
                cuda: "log$F(v)",
                cuda_df: "g / x",
            }
            Sqrt sqrt {
                doc: "Elementwise square root.",
                method: [sqrt],
                params: [],
                require: [],
                f: |x| x.sqrt(),
                df: output |g, y| g / (T::from_f64(2.0) * y),
                cuda: "sqrt$F(v)",
                cuda_df: "g / (($T)2 * y)",
            }
            Abs abs {
                doc: "Elementwise absolute value.",
                method: [abs],
                params: [],
                require: [],
                f: |x| x.abs(),
                df: input |g, x| if x > T::ZERO { g } else if x < T::ZERO { -g } else { T::ZERO },
                cuda: "fabs$F(v)",
                cuda_df: "(x > ($T)0) ? g : ((x < ($T)0) ? -g : ($T)0)",
            }
            // NaN propagates: it is not > 0, but it is kept.
            Relu relu {
                doc: "Elementwise max(x, 0); NaN stays NaN.",
                method: [relu],
                params: [],
                require: [],
                f: |x| if x > T::ZERO || x.is_nan() { x } else { T::ZERO },
                df: input |g, x| if x > T::ZERO { g } else { T::ZERO },
                cuda: "(v > ($T)0 || isnan(v)) ? v : ($T)0",
                cuda_df: "(x > ($T)0) ? g : ($T)0",
            }
            Tanh tanh {
                doc: "Elementwise hyperbolic tangent.",
                method: [tanh],
                params: [],
                require: [],
                f: |x| x.tanh(),
                df: output |g, y| g * (T::ONE - y * y),
                cuda: "tanh$F(v)",
                cuda_df: "g * (($T)1 - y * y)",
            }
            Sigmoid sigmoid {
                doc: "Elementwise logistic sigmoid 1 / (1 + e ** -x).",
                method: [sigmoid],
                params: [],
                require: [],
                f: |x| T::ONE / (T::ONE + (-x).exp()),
                df: output |g, y| g * (y * (T::ONE - y)),
                cuda: "($T)1 / (($T)1 + exp$F(-v))",
                cuda_df: "g * (y * (($T)1 - y))",
            }
            // The exact GELU with erf (PyTorch's default), (0.5 x)(1 + erf(x / sqrt 2)).
            Gelu gelu {
                doc: "Elementwise GELU, 0.5 * x * (1 + erf(x / sqrt(2))) (the exact form; approximate='tanh' in Python gives gelu_tanh).",
                method: [],
                params: [],
                require: [],
                f: |x| T::from_f64(0.5) * x * (T::ONE + (x * T::from_f64(std::f64::consts::FRAC_1_SQRT_2)).erf()),
                df: input |g, x| {
                    let cdf = T::from_f64(0.5) * (T::ONE + (x * T::from_f64(std::f64::consts::FRAC_1_SQRT_2)).erf());
                    let pdf = T::from_f64(0.398_942_280_401_432_7) * (-(T::from_f64(0.5) * x * x)).exp();
                    g * (cdf + x * pdf)
                },
                cuda: "($T)0.5 * v * (($T)1 + erf$F(v * ($T)0.70710678118654752440))",
                cuda_df: "g * (($T)0.5 * (($T)1 + erf$F(x * ($T)0.70710678118654752440)) + x * (($T)0.39894228040143267794 * exp$F(-(($T)0.5 * x * x))))",
            }
            // PyTorch's tanh approximation (approximate='tanh'), with its constants and operation
            // order (aten/src/ATen/native/cpu/Activation.cpp, GeluKernelImpl and
            // GeluBackwardKernelImpl): kBeta = sqrt(2) * (2 / sqrt(pi)) * 0.5 rounded once from
            // f64, kKappa = 0.044715, and 3 * kKappa rounded in T.
            GeluTanh gelu_tanh {
                doc: "Elementwise GELU, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))) (PyTorch's approximate='tanh').",
                method: [],
                params: [],
                require: [],
                f: |x| {
                    let inner = T::from_f64(crate::op_table::GELU_TANH_BETA) * (x + T::from_f64(0.044715) * (x * x * x));
                    T::from_f64(0.5) * x * (T::ONE + inner.tanh())
                },
                df: input |g, x| {
                    let (beta, kappa) = (T::from_f64(crate::op_table::GELU_TANH_BETA), T::from_f64(0.044715));
                    let x_sq = x * x;
                    let t = (beta * (x + kappa * (x_sq * x))).tanh();
                    let left_derivative = T::from_f64(0.5) * (T::ONE + t);
                    let inner_derivative = beta * (T::ONE + T::from_f64(3.0) * kappa * x_sq);
                    let right_derivative = T::from_f64(0.5) * x * (T::ONE - t * t) * inner_derivative;
                    g * (left_derivative + right_derivative)
                },
                cuda: "($T)0.5 * v * (($T)1 + tanh$F(($T)0.7978845608028654 * (v + ($T)0.044715 * (v * v * v))))",
                cuda_df: "g * (($T)0.5 * (($T)1 + tanh$F(($T)0.7978845608028654 * (x + ($T)0.044715 * (x * x * x)))) + ($T)0.5 * x * (($T)1 - tanh$F(($T)0.7978845608028654 * (x + ($T)0.044715 * (x * x * x))) * tanh$F(($T)0.7978845608028654 * (x + ($T)0.044715 * (x * x * x)))) * (($T)0.7978845608028654 * (($T)1 + ($T)3 * ($T)0.044715 * (x * x))))",
            }
            // PyTorch's softplus(x, beta, threshold): x itself where x * beta > threshold, else
            // log1p(e^(x beta)) / beta. With beta = 1 the product and the quotient are exact, so
            // the defaults give the bits of log1p(e^x) and x above 20. The gradient is the
            // sigmoid of x beta, written 1 / (1 + e^-(x beta)) (PyTorch writes z / (z + 1) with
            // z = e^(x beta): the same value, not always the same bits).
            Softplus softplus {
                doc: "Elementwise log(1 + e ** (beta * x)) / beta, and x itself where beta * x > threshold (PyTorch's softplus).",
                method: [],
                params: [beta = 1.0, threshold = 20.0],
                require: [],
                f: |x| if x * beta > threshold { x } else { (x * beta).exp().log1p() / beta },
                df: input |g, x| if x * beta > threshold { g } else { g * (T::ONE / (T::ONE + (-(x * beta)).exp())) },
                cuda: "(v * beta > threshold) ? v : log1p$F(exp$F(v * beta)) / beta",
                cuda_df: "(x * beta > threshold) ? g : g * (($T)1 / (($T)1 + exp$F(-(x * beta))))",
            }
            // The elementwise terms of PyTorch's smooth_l1_loss and huber_loss at x = input -
            // target, with its operations in its order (aten's kernels), so the losses are one
            // op each; the gradients are PyTorch's (x / beta, or x, inside the bounds).
            SmoothL1 smooth_l1 {
                doc: "Elementwise 0.5 * x * x / beta where |x| < beta, else |x| - 0.5 * beta (smooth_l1_loss's term at x = input - target).",
                method: [],
                params: [beta = 1.0],
                require: [beta > 0.0 => "beta > 0"],
                f: |x| if x.abs() < beta { T::from_f64(0.5) * x.abs() * x.abs() / beta } else { x.abs() - T::from_f64(0.5) * beta },
                df: input |g, x| if x <= -beta { -g } else if x >= beta { g } else { g * (x / beta) },
                cuda: "(fabs$F(v) < beta) ? ($T)0.5 * fabs$F(v) * fabs$F(v) / beta : fabs$F(v) - ($T)0.5 * beta",
                cuda_df: "(x <= -beta) ? -g : ((x >= beta) ? g : g * (x / beta))",
            }
            Huber huber {
                doc: "Elementwise 0.5 * x * x where |x| < delta, else delta * (|x| - 0.5 * delta) (huber_loss's term at x = input - target).",
                method: [],
                params: [delta = 1.0],
                require: [delta > 0.0 => "delta > 0"],
                f: |x| if x.abs() < delta { T::from_f64(0.5) * x.abs() * x.abs() } else { delta * (x.abs() - T::from_f64(0.5) * delta) },
                df: input |g, x| if x < -delta { g * -delta } else if x > delta { g * delta } else { g * x },
                cuda: "(fabs$F(v) < delta) ? ($T)0.5 * fabs$F(v) * fabs$F(v) : delta * (fabs$F(v) - ($T)0.5 * delta)",
                cuda_df: "(x < -delta) ? g * -delta : ((x > delta) ? g * delta : g * x)",
            }
            // log(sigmoid(x)) as PyTorch computes it, min(x, 0) - log1p(e^-|x|), stable for every
            // x; its gradient is PyTorch's, g * (x < 0 ? 1 - z/(1+z) : z/(1+z)), z = e^-|x|.
            Logsigmoid logsigmoid {
                doc: "Elementwise log(sigmoid(x)), as min(x, 0) - log1p(e ** -|x|) (PyTorch's logsigmoid).",
                method: [],
                params: [],
                require: [],
                f: |x| (if x < T::ZERO { x } else { T::ZERO }) - (-x.abs()).exp().log1p(),
                df: input |g, x| {
                    let z = (-x.abs()).exp();
                    let (max_deriv, sign) = if x < T::ZERO { (T::ONE, T::ONE) } else { (T::ZERO, -T::ONE) };
                    g * (max_deriv - sign * (z / (T::ONE + z)))
                },
                cuda: "((v < ($T)0) ? v : ($T)0) - log1p$F(exp$F(-fabs$F(v)))",
                cuda_df: "g * (((x < ($T)0) ? ($T)1 : ($T)0) - ((x < ($T)0) ? ($T)1 : ($T)-1) * (exp$F(-fabs$F(x)) / (($T)1 + exp$F(-fabs$F(x)))))",
            }
            // x / (1 + e^-x) as PyTorch computes it; the sigmoid is recomputed in the gradient.
            Silu silu {
                doc: "Elementwise SiLU (swish), x * sigmoid(x).",
                method: [],
                params: [],
                require: [],
                f: |x| x / (T::ONE + (-x).exp()),
                df: input |g, x| {
                    let s = T::ONE / (T::ONE + (-x).exp());
                    g * (s * (T::ONE + x * (T::ONE - s)))
                },
                cuda: "v / (($T)1 + exp$F(-v))",
                cuda_df: "g * ((($T)1 / (($T)1 + exp$F(-x))) * (($T)1 + x * (($T)1 - ($T)1 / (($T)1 + exp$F(-x)))))",
            }
            LeakyRelu leaky_relu {
                doc: "Elementwise x where x > 0, else negative_slope * x.",
                method: [],
                params: [negative_slope = 0.01],
                require: [],
                f: |x| if x > T::ZERO { x } else { x * negative_slope },
                df: input |g, x| if x > T::ZERO { g } else { g * negative_slope },
                cuda: "(v > ($T)0) ? v : v * negative_slope",
                cuda_df: "(x > ($T)0) ? g : g * negative_slope",
            }
            Elu elu {
                doc: "Elementwise x where x > 0, else alpha * (e ** x - 1).",
                method: [],
                params: [alpha = 1.0],
                require: [],
                f: |x| if x > T::ZERO { x } else { alpha * x.expm1() },
                df: input |g, x| if x > T::ZERO { g } else { g * (alpha * x.exp()) },
                cuda: "(v > ($T)0) ? v : alpha * expm1$F(v)",
                cuda_df: "(x > ($T)0) ? g : g * (alpha * exp$F(x))",
            }
            // NaN stays NaN; the gradient is 0 on and beyond the bounds, as in PyTorch.
            Hardtanh hardtanh {
                doc: "Elementwise clamp to [min_val, max_val]; NaN stays NaN.",
                method: [],
                params: [min_val = -1.0, max_val = 1.0],
                require: [min_val <= max_val => "min_val <= max_val"],
                f: |x| if x < min_val { min_val } else if x > max_val { max_val } else { x },
                df: input |g, x| if x <= min_val || x >= max_val { T::ZERO } else { g },
                cuda: "(v < min_val) ? min_val : ((v > max_val) ? max_val : v)",
                cuda_df: "(x <= min_val || x >= max_val) ? ($T)0 : g",
            }
            Log1p log1p {
                doc: "Elementwise log(1 + x), accurate near 0.",
                method: [log1p],
                params: [],
                require: [],
                f: |x| x.log1p(),
                df: input |g, x| g / (x + T::ONE),
                cuda: "log1p$F(v)",
                cuda_df: "g / (x + ($T)1)",
            }
            Expm1 expm1 {
                doc: "Elementwise e ** x - 1, accurate near 0.",
                method: [expm1],
                params: [],
                require: [],
                f: |x| x.expm1(),
                df: output |g, y| g * (y + T::ONE),
                cuda: "expm1$F(v)",
                cuda_df: "g * (y + ($T)1)",
            }
            // d/dx x^-1/2 = -1/2 x^-3/2 = -(1/2) y^3, from the output.
            Rsqrt rsqrt {
                doc: "Elementwise 1 / sqrt(x).",
                method: [rsqrt],
                params: [],
                require: [],
                f: |x| T::ONE / x.sqrt(),
                df: output |g, y| -(T::from_f64(0.5) * g * (y * y * y)),
                cuda: "($T)1 / sqrt$F(v)",
                cuda_df: "-(($T)0.5 * g * (y * y * y))",
            }
            // d/dx erf(x) = 2/sqrt(pi) e^(-x^2).
            Erf erf {
                doc: "Elementwise error function.",
                method: [erf],
                params: [],
                require: [],
                f: |x| x.erf(),
                df: input |g, x| g * (T::from_f64(std::f64::consts::FRAC_2_SQRT_PI) * (-(x * x)).exp()),
                cuda: "erf$F(v)",
                cuda_df: "g * (($T)1.12837916709551257390 * exp$F(-(x * x)))",
            }
            Sin sin {
                doc: "Elementwise sine (radians).",
                method: [sin],
                params: [],
                require: [],
                f: |x| x.sin(),
                df: input |g, x| g * x.cos(),
                cuda: "sin$F(v)",
                cuda_df: "g * cos$F(x)",
            }
            Cos cos {
                doc: "Elementwise cosine (radians).",
                method: [cos],
                params: [],
                require: [],
                f: |x| x.cos(),
                df: input |g, x| g * -x.sin(),
                cuda: "cos$F(v)",
                cuda_df: "g * -sin$F(x)",
            }
            // Exact roundings; the gradient is zero everywhere, NaN or infinite g included (PyTorch's
            // zeros_like(grad)).
            Trunc trunc {
                doc: "Elementwise rounding toward zero; the gradient is zero.",
                method: [trunc],
                params: [],
                require: [],
                f: |x| x.trunc(),
                df: input |_g, _x| T::ZERO,
                cuda: "trunc$F(v)",
                cuda_df: "($T)0",
            }
            Floor floor {
                doc: "Elementwise rounding toward negative infinity; the gradient is zero.",
                method: [floor],
                params: [],
                require: [],
                f: |x| x.floor(),
                df: input |_g, _x| T::ZERO,
                cuda: "floor$F(v)",
                cuda_df: "($T)0",
            }
        }
    };
}
pub(crate) use unary_ops;

/// sqrt(2 / pi) as PyTorch spells it, M_SQRT2 * M_2_SQRTPI * 0.5 in f64 (0.7978845608028654,
/// the literal the CUDA source of `gelu_tanh` repeats).
pub(crate) const GELU_TANH_BETA: f64 =
    std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;

impl super::UnaryOp {
    /// Whether the forward pass may keep an intermediate of the formula for the gradient, where
    /// the device computes one (`BackendStorage::unary_keeping`): GELU's 1 + erf(x / sqrt 2),
    /// SiLU's 1 + exp(-x) and the tanh of GELU's tanh form, the transcendental parts the
    /// gradient formula would compute again. The gradient from the kept value has the bits of
    /// the gradient formula.
    pub fn keeps_intermediate(self) -> bool {
        use super::UnaryOp::{Gelu, GeluTanh, Silu};
        matches!(self, Gelu | Silu | GeluTanh)
    }
}
