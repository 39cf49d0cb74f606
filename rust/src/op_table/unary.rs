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
                doc: "Elementwise GELU, 0.5 * x * (1 + erf(x / sqrt(2))) (the exact form).",
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
            // PyTorch's beta = 1, threshold = 20: above 20, softplus(x) is x to working precision.
            Softplus softplus {
                doc: "Elementwise log(1 + e ** x), and x itself above 20 (PyTorch's beta=1, threshold=20).",
                method: [],
                params: [],
                require: [],
                f: |x| if x > T::from_f64(20.0) { x } else { x.exp().log1p() },
                df: input |g, x| if x > T::from_f64(20.0) { g } else { g * (T::ONE / (T::ONE + (-x).exp())) },
                cuda: "(v > ($T)20) ? v : log1p$F(exp$F(v))",
                cuda_df: "(x > ($T)20) ? g : g * (($T)1 / (($T)1 + exp$F(-x)))",
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
        }
    };
}
pub(crate) use unary_ops;
