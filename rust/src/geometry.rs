//! The geometry of matrix products and windowed ops (convolution, pooling): sizes and the window
//! arithmetic, shared by the op layer, autograd records and both backends.

/// The target of a row that the negative log-likelihood ignores (cross-entropy's
/// `ignore_index`): no class index is this large.
pub const IGNORED_ROW: usize = usize::MAX;

/// Sizes of one convolution.
#[derive(Debug, Clone, Copy)]
pub struct ConvDims {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub oc: usize,
    pub kh: usize,
    pub kw: usize,
    pub stride: usize,
    pub pad: usize,
    pub oh: usize,
    pub ow: usize,
}

impl ConvDims {
    /// Output columns `ow` whose input column `ow*s + kx - p` lies inside [0, w): a span
    /// lo..hi within [0, OW] (empty when none does).
    pub(crate) fn valid_cols(&self, kx: usize) -> (usize, usize) {
        let (s, p) = (self.stride, self.pad);
        let lo = if kx >= p { 0 } else { (p - kx).div_ceil(s) };
        // Largest ow with ow*s + kx - p <= w - 1.
        let hi = if self.w + p > kx {
            ((self.w + p - kx - 1) / s + 1).min(self.ow)
        } else {
            0
        };
        let lo = lo.min(self.ow);
        (lo, hi.max(lo))
    }
    pub(crate) fn in_row(&self, oy: usize, ky: usize) -> Option<usize> {
        let r = oy * self.stride + ky;
        (r >= self.pad && r - self.pad < self.h).then(|| r - self.pad)
    }
}

/// The elementwise term of a loss averaged over all elements as one op: of d = input -
/// target, d * d (mse_loss) or the op table's abs, smooth_l1 or huber at d (l1_loss,
/// smooth_l1_loss, huber_loss); or of logits x and targets t, (1 - t) * x - logsigmoid(x)
/// (binary_cross_entropy_with_logits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossTerm {
    Square,
    Abs,
    SmoothL1 { beta: f64 },
    Huber { delta: f64 },
    BceWithLogits,
}

impl LossTerm {
    /// The op table's op the term applies to d = input - target, None for the others.
    pub fn table_op(self) -> Option<crate::op_table::UnaryOp> {
        use crate::op_table::UnaryOp;
        match self {
            LossTerm::Abs => Some(UnaryOp::Abs),
            LossTerm::SmoothL1 { beta } => Some(UnaryOp::SmoothL1 { beta }),
            LossTerm::Huber { delta } => Some(UnaryOp::Huber { delta }),
            LossTerm::Square | LossTerm::BceWithLogits => None,
        }
    }
}

/// What a convolution applies to each output after its bias: nothing, or ReLU. The compiled
/// backend's fusion pass (graph/fuse_conv.rs) moves a ReLU that is a convolution's only reader
/// into it, so the value is clamped while the kernel still holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    None,
    Relu,
}

impl Activation {
    /// One output from its fold's `sum`: plus the bias where there is one (none is not +0.0,
    /// which would turn a -0.0 sum into +0.0), then the activation.
    #[inline(always)]
    pub fn finish<T: crate::dtype::Float>(self, sum: T, bias: Option<T>) -> T {
        self.apply(match bias {
            Some(b) => sum + b,
            None => sum,
        })
    }

    /// The activation of one output: the `relu` op's formula (op_table/unary.rs), NaN kept and
    /// -0.0 made +0.0, so a fused ReLU has the bits of the op run alone.
    #[inline(always)]
    pub fn apply<T: crate::dtype::Float>(self, v: T) -> T {
        match self {
            Activation::None => v,
            Activation::Relu if v > T::ZERO || v.is_nan() => v,
            Activation::Relu => T::ZERO,
        }
    }
}

/// Sizes of one pooling op over [N*C, H, W] planes: kernel, stride, padding and dilation per
/// axis (PyTorch's meaning: tap `ky` of output row `oy` reads input row
/// `oy·sh - ph + ky·dh`; taps outside the image take no part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolDims {
    pub planes: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub dh: usize,
    pub dw: usize,
    pub oh: usize,
    pub ow: usize,
    /// What average pooling divides by (max pooling ignores it).
    pub divisor: AvgDivisor,
}

/// Average pooling's divisor, PyTorch's `count_include_pad` and `divisor_override`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AvgDivisor {
    /// The window's cells inside the padded input (`count_include_pad=True`): kh·kw except
    /// where `ceil_mode` lets a window run past the padding.
    Padded,
    /// The window's cells inside the image (`count_include_pad=False`).
    Valid,
    /// A fixed divisor, not 0 (`divisor_override`; PyTorch takes negative ones too).
    Fixed(i64),
}

/// The taps `k` of a window starting at `start` (cell `start + k·dil`, `k < taps`) that land
/// inside `0..n`: a contiguous range, since the cells increase with `k`.
fn axis_taps(start: isize, taps: usize, dil: usize, n: usize) -> std::ops::Range<usize> {
    let dil = dil.max(1) as isize;
    let lo = if start >= 0 {
        0
    } else {
        ((-start) + dil - 1) / dil
    } as usize;
    let hi = if start >= n as isize {
        0
    } else {
        (((n as isize - start) + dil - 1) / dil) as usize
    };
    let hi = hi.min(taps);
    lo.min(hi)..hi
}

impl PoolDims {
    /// Square kernel, stride and padding, no dilation (the form most callers use).
    #[allow(clippy::too_many_arguments)]
    pub fn square(
        planes: usize,
        h: usize,
        w: usize,
        k: usize,
        stride: usize,
        pad: usize,
        oh: usize,
        ow: usize,
    ) -> Self {
        PoolDims {
            planes,
            h,
            w,
            kh: k,
            kw: k,
            sh: stride,
            sw: stride,
            ph: pad,
            pw: pad,
            dh: 1,
            dw: 1,
            oh,
            ow,
            divisor: AvgDivisor::Padded,
        }
    }

    /// Input row of tap 0 of output row `oy` (negative in the padding).
    pub fn top(&self, oy: usize) -> isize {
        (oy * self.sh) as isize - self.ph as isize
    }

    /// Input column of tap 0 of output column `ox`.
    pub fn left(&self, ox: usize) -> isize {
        (ox * self.sw) as isize - self.pw as isize
    }

    /// The kernel rows and columns of the window at (oy, ox) that land inside the image; tap
    /// (ky, kx) reads cell (top + ky·dh, left + kx·dw).
    pub fn taps(&self, oy: usize, ox: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        (
            axis_taps(self.top(oy), self.kh, self.dh, self.h),
            axis_taps(self.left(ox), self.kw, self.dw, self.w),
        )
    }

    /// Whether cell (r, c) is a tap of the window at (oy, ox) inside the image.
    pub fn covers(&self, oy: usize, ox: usize, r: usize, c: usize) -> bool {
        let (ky, kx) = self.taps(oy, ox);
        let on = |start: isize, dil: usize, taps: std::ops::Range<usize>, cell: usize| {
            let off = cell as isize - start;
            let dil = dil.max(1) as isize;
            off >= 0 && off % dil == 0 && taps.contains(&((off / dil) as usize))
        };
        on(self.top(oy), self.dh, ky, r) && on(self.left(ox), self.dw, kx, c)
    }

    /// Average pooling's divisor at (oy, ox), as PyTorch computes it: the window clipped to
    /// the padded input (or to the image for `Valid`), or the fixed one.
    pub fn avg_divisor(&self, oy: usize, ox: usize) -> i64 {
        let span = |start: isize, k: usize, pad: usize, n: usize, valid: bool| {
            let end = (start + k as isize).min((n + pad) as isize);
            if valid {
                (end.min(n as isize) - start.max(0)).max(0) as usize
            } else {
                (end - start).max(0) as usize
            }
        };
        match self.divisor {
            AvgDivisor::Fixed(d) => d,
            rule => {
                let valid = rule == AvgDivisor::Valid;
                let cells = span(self.top(oy), self.kh, self.ph, self.h, valid)
                    * span(self.left(ox), self.kw, self.pw, self.w, valid);
                i64::try_from(cells).unwrap_or(i64::MAX)
            }
        }
    }

    /// No dilation and the same stride and padding along both axes.
    pub fn is_plain(&self) -> bool {
        self.dh == 1 && self.dw == 1 && self.sh == self.sw && self.ph == self.pw
    }
}

/// Shape of one batched product: `batch` products of A [m, k] and B [k, n]; A is stored as
/// [k, m] when `ta` and B as [n, k] when `tb`. Batch strides of 0 reuse one operand.
#[derive(Debug, Clone, Copy)]
pub struct MatmulDims {
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub ta: bool,
    pub tb: bool,
    pub a_batch_stride: usize,
    pub b_batch_stride: usize,
}

/// An operand of a matrix product read in place: matrix `bi` of the batch has element (i, j)
/// at `offsets[bi] + i·rs + j·cs` of its storage (a transposed or strided view needs no copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatOperand {
    pub offsets: Vec<usize>,
    pub rs: usize,
    pub cs: usize,
}

impl MatOperand {
    /// One past the last element any of its `rows` × `cols` matrices reads (0 when none).
    pub fn extent(&self, rows: usize, cols: usize) -> usize {
        if rows == 0 || cols == 0 {
            return 0;
        }
        let last = (rows - 1) * self.rs + (cols - 1) * self.cs;
        self.offsets.iter().map(|o| o + last + 1).max().unwrap_or(0)
    }
}

/// The planes of an [N, C, H, W] (or [C, H, W]) input: `planes` = N·C, plane p is channel
/// `p % channels`, each `hw` elements long. The affine parameters are one per channel (batch
/// norm, [C]) or, with `per_position`, one per position of a plane (layer norm's rows as
/// planes of one channel, [hw]).
#[derive(Clone, Copy, Debug)]
pub struct PlaneDims {
    pub planes: usize,
    pub channels: usize,
    pub hw: usize,
    pub per_position: bool,
}

/// Attention scores [.., queries, keys] as rows of `keys` values, row r being query
/// `r % queries` of its matrix; with `causal`, query q sees keys 0..=q.
#[derive(Clone, Copy, Debug)]
pub struct ScoreRows {
    pub keys: usize,
    pub queries: usize,
    pub causal: bool,
}

impl ScoreRows {
    /// Keys row `row` sees: a prefix (all of them without a mask).
    #[inline(always)]
    pub fn seen(self, row: usize) -> usize {
        if self.causal {
            (row % self.queries.max(1) + 1).min(self.keys)
        } else {
            self.keys
        }
    }
}
