// Parameter initialisers with the reference's exact formulas: runtime `FloatInit` values (sampled
// with the SplitMix64 unit sampler), the `Plan` checked against a definition's parameter shapes,
// fan inference for Xavier/Kaiming, and the pure layer initialisers driven by the 32-bit LCG.

use std::fmt;

use crate::rng::{lcg_units, runtime_init_unit, runtime_init_unit_f32};
use crate::storage::Fill;

/// Which fan-based scheme a rank error is about (the reference names it in the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FanScheme {
    Xavier,
    Kaiming,
}

/// Initialisation errors. `Display` gives the reference's texts where the reference has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitError {
    /// More initialisers than parameters.
    ListLonger,
    /// Fewer initialisers than parameters.
    ListShorter,
    /// A `Flat` payload whose length is not the tensor's element count.
    FlatLength { expected: usize, got: usize },
    /// `xavier_uniform_for_shape` / `kaiming_uniform_for_shape` on a shape of rank < 2.
    RankTooLow {
        scheme: FanScheme,
        shape: Vec<usize>,
    },
    /// `fan_in_out` on a shape of rank < 2 (the reference returns `none`; tlrs wording).
    FanRank { shape: Vec<usize> },
    /// More elements than the CUDA buffer API's 32-bit count.
    TooLargeForCuda { elements: usize },
    /// A shape (or fan) whose element count does not fit in `usize` (tlrs wording; the
    /// reference's naturals cannot overflow).
    SizeOverflow { shape: Vec<usize> },
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const P: &str = "torch.runtimeInit";
        match self {
            InitError::ListLonger => {
                write!(f, "{P}: initializer list longer than parameter list")
            }
            InitError::ListShorter => {
                write!(f, "{P}: initializer list shorter than parameter list")
            }
            InitError::FlatLength { expected, got } => write!(
                f,
                "{P}: flat initializer length mismatch (expected {expected}, got {got})"
            ),
            InitError::RankTooLow { scheme, shape } => {
                let name = match scheme {
                    FanScheme::Xavier => "Xavier",
                    FanScheme::Kaiming => "Kaiming",
                };
                write!(
                    f,
                    "{P}: {name} initialization expects at least 2 dimensions, got {}",
                    pretty_shape(shape)
                )
            }
            InitError::FanRank { shape } => write!(
                f,
                "{P}: fan-in/fan-out inference expects at least 2 dimensions, got {}",
                pretty_shape(shape)
            ),
            InitError::TooLargeForCuda { elements } => write!(
                f,
                "{P}: tensor too large for CUDA buffer API ({elements} elements)"
            ),
            InitError::SizeOverflow { shape } => write!(
                f,
                "{P}: element count of {} is too large to index",
                pretty_shape(shape)
            ),
        }
    }
}

impl std::error::Error for InitError {}

/// The reference's shape rendering: `dim <n> (<rest>)` nested, ending in `scalar`;
/// `[5]` is `dim 5 (scalar)`, `[]` is `scalar`.
pub fn pretty_shape(shape: &[usize]) -> String {
    let mut out = String::new();
    for d in shape {
        out.push_str(&format!("dim {d} ("));
    }
    out.push_str("scalar");
    out.push_str(&")".repeat(shape.len()));
    out
}

/// Element count of `shape` (1 for a scalar), or `SizeOverflow`.
pub fn numel(shape: &[usize]) -> Result<usize, InitError> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| InitError::SizeOverflow {
            shape: shape.to_vec(),
        })
}

/// `fanInOut?`: dims `[out, in, k1, ..., kd]` give `(in * prod k, out * prod k)`.
pub fn fan_in_out(shape: &[usize]) -> Result<(usize, usize), InitError> {
    let [out, inp, kernel @ ..] = shape else {
        return Err(InitError::FanRank {
            shape: shape.to_vec(),
        });
    };
    let overflow = || InitError::SizeOverflow {
        shape: shape.to_vec(),
    };
    let receptive = numel(kernel).map_err(|_| overflow())?;
    let fan_in = inp.checked_mul(receptive).ok_or_else(overflow)?;
    let fan_out = out.checked_mul(receptive).ok_or_else(overflow)?;
    Ok((fan_in, fan_out))
}

/// Xavier (gain 1) bound `sqrt(6 / (fan_in + fan_out))`. The sum is taken exactly, as the
/// reference's naturals are, then converted once. Zero fans give `inf` (no check, as the reference).
pub fn xavier_bound(fan_in: usize, fan_out: usize) -> f64 {
    let sum = fan_in as u128 + fan_out as u128;
    (6.0 / sum as f64).sqrt()
}

/// Kaiming bound `sqrt(6 / fan_in)` (PyTorch's ReLU gain sqrt 2, `a = 0`).
pub fn kaiming_bound(fan_in: usize) -> f64 {
    (6.0 / fan_in as f64).sqrt()
}

/// A runtime parameter initialiser (`RuntimeInit.FloatInit`). Element `i` (row-major) of the
/// sampled variants is `lo + u(seed, i) * (hi - lo)` with `u` from `rng::runtime_init_unit`;
/// Xavier and Kaiming use `lo = -L`, `hi = L`, so `hi - lo = 2L` exactly.
#[derive(Debug, Clone, PartialEq)]
pub enum FloatInit {
    Zeros,
    Ones,
    Uniform {
        lo: f64,
        hi: f64,
        seed: u64,
    },
    XavierUniform {
        fan_in: usize,
        fan_out: usize,
        seed: u64,
    },
    KaimingUniform {
        fan_in: usize,
        seed: u64,
    },
    /// Exact row-major payload; its length must equal the tensor's element count.
    Flat(Vec<f64>),
}

impl FloatInit {
    fn fill(&self) -> Fill<'_> {
        match *self {
            FloatInit::Zeros => Fill::Constant(0.0),
            FloatInit::Ones => Fill::Constant(1.0),
            FloatInit::Flat(ref v) => Fill::Payload(v),
            FloatInit::Uniform { lo, hi, seed } => Fill::Sampled { lo, hi, seed },
            FloatInit::XavierUniform {
                fan_in,
                fan_out,
                seed,
            } => {
                let l = xavier_bound(fan_in, fan_out);
                Fill::Sampled {
                    lo: -l,
                    hi: l,
                    seed,
                }
            }
            FloatInit::KaimingUniform { fan_in, seed } => {
                let l = kaiming_bound(fan_in);
                Fill::Sampled {
                    lo: -l,
                    hi: l,
                    seed,
                }
            }
        }
    }

    /// Checks that this initialiser can fill `n` elements (only `Flat` can fail).
    pub fn check_len(&self, n: usize) -> Result<(), InitError> {
        match self {
            FloatInit::Flat(v) if v.len() != n => Err(InitError::FlatLength {
                expected: n,
                got: v.len(),
            }),
            _ => Ok(()),
        }
    }

    /// Binary64 values for a tensor of `shape`, as the reference's CPU path computes them.
    pub fn values_f64(&self, shape: &[usize]) -> Result<Vec<f64>, InitError> {
        let n = numel(shape)?;
        self.check_len(n)?;
        Ok(self.fill_f64(n))
    }

    /// Binary32 values for a tensor of `shape`, as the reference's CUDA path computes them: the
    /// 32-bit sample rounded once to binary32 (it may be exactly 1.0), `lo` and `hi - lo` (the
    /// difference taken in binary64) rounded to binary32, then `lo + (hi - lo) * u` as a separate
    /// binary32 multiply and add (no FMA, so every build agrees); `Flat` is rounded per element.
    pub fn values_f32(&self, shape: &[usize]) -> Result<Vec<f32>, InitError> {
        let n = numel(shape)?;
        self.check_len(n)?;
        Ok(self.fill_f32(n))
    }

    /// `n` binary64 values; the caller has run `check_len(n)`.
    fn fill_f64(&self, n: usize) -> Vec<f64> {
        match self.fill() {
            Fill::Constant(c) => vec![c; n],
            Fill::Payload(v) => v.to_vec(),
            Fill::Sampled { lo, hi, seed } => {
                let width = hi - lo;
                (0..n as u64)
                    .map(|i| lo + runtime_init_unit(seed, i) * width)
                    .collect()
            }
        }
    }

    /// `n` binary32 values; the caller has run `check_len(n)`.
    fn fill_f32(&self, n: usize) -> Vec<f32> {
        match self.fill() {
            Fill::Constant(c) => vec![c as f32; n],
            Fill::Payload(v) => v.iter().map(|&x| x as f32).collect(),
            Fill::Sampled { lo, hi, seed } => {
                let lo32 = lo as f32;
                let width32 = (hi - lo) as f32;
                (0..n as u64)
                    .map(|i| lo32 + width32 * runtime_init_unit_f32(seed, i))
                    .collect()
            }
        }
    }
}

impl FloatInit {
    /// The values as a tensor on `device`. On a CUDA device sampled and constant fills are made
    /// by a kernel there (no host copy), equal to `values_f32`/`values_f64`; `Flat` is uploaded
    /// (`Storage::filled`).
    pub fn tensor_on(
        &self,
        shape: &[usize],
        dtype: crate::DType,
        device: crate::Device,
    ) -> crate::Result<crate::Tensor> {
        use crate::storage::{CpuStorage, Storage};
        let bad = |e: InitError| crate::Error::arg("init", e.to_string());
        let n = numel(shape).map_err(bad)?;
        self.check_len(n).map_err(bad)?;
        if !dtype.is_float() {
            return Err(crate::error::not_float("init", dtype));
        }
        let s = Storage::filled(device, dtype, n, self.fill(), || match dtype {
            crate::DType::F32 => CpuStorage::F32((self.fill_f32(n)).into()),
            _ => CpuStorage::F64((self.fill_f64(n)).into()),
        })?;
        crate::Tensor::from_storage(s, shape.to_vec())
    }
}

/// `xavierUniformForShape`: Xavier with the fans of `shape` (rank >= 2).
pub fn xavier_uniform_for_shape(shape: &[usize], seed: u64) -> Result<FloatInit, InitError> {
    let (fan_in, fan_out) = fan_in_out(shape).map_err(|e| rank_as(e, FanScheme::Xavier))?;
    Ok(FloatInit::XavierUniform {
        fan_in,
        fan_out,
        seed,
    })
}

/// `kaimingUniformForShape`: Kaiming with the fan-in of `shape` (rank >= 2).
pub fn kaiming_uniform_for_shape(shape: &[usize], seed: u64) -> Result<FloatInit, InitError> {
    let (fan_in, _) = fan_in_out(shape).map_err(|e| rank_as(e, FanScheme::Kaiming))?;
    Ok(FloatInit::KaimingUniform { fan_in, seed })
}

/// Names the scheme in a rank error; other errors pass through.
fn rank_as(err: InitError, scheme: FanScheme) -> InitError {
    match err {
        InitError::FanRank { shape } => InitError::RankTooLow { scheme, shape },
        other => other,
    }
}

/// `xavierLinearWeight(outDim, inDim, seed)`: Xavier for an `[out_dim, in_dim]` weight.
pub fn xavier_linear_weight(out_dim: usize, in_dim: usize, seed: u64) -> FloatInit {
    FloatInit::XavierUniform {
        fan_in: in_dim,
        fan_out: out_dim,
        seed,
    }
}

/// `kaimingLinearWeight(outDim, inDim, seed)`: Kaiming with `fan_in = in_dim`; `out_dim` is
/// unused, as in the reference, and kept so call sites read like the Xavier one.
pub fn kaiming_linear_weight(out_dim: usize, in_dim: usize, seed: u64) -> FloatInit {
    let _ = out_dim;
    FloatInit::KaimingUniform {
        fan_in: in_dim,
        seed,
    }
}

/// The CUDA buffer API counts elements in 32 bits; returns the count as `u32` or the
/// reference's "too large" error.
pub fn cuda_buffer_len(elements: usize) -> Result<u32, InitError> {
    u32::try_from(elements).map_err(|_| InitError::TooLargeForCuda { elements })
}

/// A runtime initialisation plan: one `FloatInit` per parameter, in parameter order, checked
/// against the definition's parameter shapes when built (the reference's indexed `Plan`).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    shapes: Vec<Vec<usize>>,
    numels: Vec<usize>,
    inits: Vec<FloatInit>,
}

impl Plan {
    /// Pairs `inits` with `param_shapes`. Errors, first one wins: the count (longer/shorter, as
    /// `Plan.ofList?`), then per parameter in order an overflowing shape or a `Flat` length.
    pub fn new<S: AsRef<[usize]>>(
        param_shapes: &[S],
        inits: Vec<FloatInit>,
    ) -> Result<Plan, InitError> {
        if inits.len() > param_shapes.len() {
            return Err(InitError::ListLonger);
        }
        if inits.len() < param_shapes.len() {
            return Err(InitError::ListShorter);
        }
        let shapes: Vec<Vec<usize>> = param_shapes.iter().map(|s| s.as_ref().to_vec()).collect();
        let mut numels = Vec::with_capacity(shapes.len());
        for (shape, init) in shapes.iter().zip(&inits) {
            let n = numel(shape)?;
            init.check_len(n)?;
            numels.push(n);
        }
        Ok(Plan {
            shapes,
            numels,
            inits,
        })
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.inits.len()
    }

    /// True for a definition without parameters.
    pub fn is_empty(&self) -> bool {
        self.inits.is_empty()
    }

    /// The initialisers, in parameter order.
    pub fn inits(&self) -> &[FloatInit] {
        &self.inits
    }

    /// The parameter shapes the plan was checked against.
    pub fn shapes(&self) -> &[Vec<usize>] {
        &self.shapes
    }

    /// The initialisers, forgetting the shapes (`Plan.toList`).
    pub fn into_inits(self) -> Vec<FloatInit> {
        self.inits
    }

    /// Every parameter's element count fits the CUDA buffer API (checked in parameter order).
    pub fn check_cuda_fit(&self) -> Result<(), InitError> {
        self.numels
            .iter()
            .try_for_each(|&n| cuda_buffer_len(n).map(|_| ()))
    }

    /// Binary64 values of every parameter, in order (see `FloatInit::values_f64`).
    pub fn values_f64(&self) -> Vec<Vec<f64>> {
        self.inits
            .iter()
            .zip(&self.numels)
            .map(|(init, &n)| init.fill_f64(n))
            .collect()
    }

    /// Binary32 values of every parameter, in order (see `FloatInit::values_f32`).
    pub fn values_f32(&self) -> Vec<Vec<f32>> {
        self.inits
            .iter()
            .zip(&self.numels)
            .map(|(init, &n)| init.fill_f32(n))
            .collect()
    }
}

/// A pure layer initialiser scheme (`Torch.Init`), used by every layer constructor. Element `i`
/// uses `r = rand01(seed, i)` from the 32-bit LCG (`rng::lcg_units`) and the same bounds as
/// `FloatInit`: `lo + r * (hi - lo)`, Xavier/Kaiming with `lo = -L`, `hi = L`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LayerInit {
    Zeros,
    Ones,
    Uniform { lo: f64, hi: f64 },
    XavierUniform { fan_in: usize, fan_out: usize },
    KaimingUniform { fan_in: usize },
}

impl LayerInit {
    /// `n` row-major binary64 values from `seed`, in one O(n) LCG sweep.
    pub fn values(&self, n: usize, seed: u64) -> Vec<f64> {
        let (lo, hi) = match *self {
            LayerInit::Zeros => return vec![0.0; n],
            LayerInit::Ones => return vec![1.0; n],
            LayerInit::Uniform { lo, hi } => (lo, hi),
            LayerInit::XavierUniform { fan_in, fan_out } => {
                let l = xavier_bound(fan_in, fan_out);
                (-l, l)
            }
            LayerInit::KaimingUniform { fan_in } => {
                let l = kaiming_bound(fan_in);
                (-l, l)
            }
        };
        let width = hi - lo;
        lcg_units(seed, n)
            .into_iter()
            .map(|r| lo + r * width)
            .collect()
    }
}

/// `xavierW(out, in, seed)`: an `[out_dim, in_dim]` weight, row-major, Xavier from the LCG.
pub fn layer_xavier_weight(
    out_dim: usize,
    in_dim: usize,
    seed: u64,
) -> Result<Vec<f64>, InitError> {
    let n = numel(&[out_dim, in_dim])?;
    let scheme = LayerInit::XavierUniform {
        fan_in: in_dim,
        fan_out: out_dim,
    };
    Ok(scheme.values(n, seed))
}

/// `kaimingW(out, in, seed)`: an `[out_dim, in_dim]` weight, row-major, Kaiming from the LCG.
pub fn layer_kaiming_weight(
    out_dim: usize,
    in_dim: usize,
    seed: u64,
) -> Result<Vec<f64>, InitError> {
    let n = numel(&[out_dim, in_dim])?;
    Ok(LayerInit::KaimingUniform { fan_in: in_dim }.values(n, seed))
}

#[cfg(test)]
#[path = "init_tests.rs"]
mod tests;
