//! The geometry of matrix products and windowed ops (convolution, pooling): sizes and the window
//! arithmetic, shared by the op layer, autograd records and both backends.

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

/// Sizes of one pooling op over [N*C, H, W] planes.
#[derive(Debug, Clone, Copy)]
pub struct PoolDims {
    pub planes: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub stride: usize,
    pub pad: usize,
    pub oh: usize,
    pub ow: usize,
}

impl PoolDims {
    /// Input rows/cols of the window at (oy, ox), clipped to the image.
    pub(crate) fn window(
        &self,
        oy: usize,
        ox: usize,
    ) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let clip = |o: usize, k: usize, n: usize| {
            let start = (o * self.stride) as isize - self.pad as isize;
            let lo = start.max(0) as usize;
            let hi = ((start + k as isize).max(0) as usize).min(n);
            lo..hi.max(lo)
        };
        (clip(oy, self.kh, self.h), clip(ox, self.kw, self.w))
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
/// `p % channels`, each `hw` elements long.
#[derive(Clone, Copy, Debug)]
pub struct PlaneDims {
    pub planes: usize,
    pub channels: usize,
    pub hw: usize,
}
