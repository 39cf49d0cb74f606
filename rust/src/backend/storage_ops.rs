//! The operations every device implements on its own storage. `Storage` (storage.rs) matches on
//! the device once and calls these; the op layer (ops/) checks arguments and records autograd
//! and never looks at the device itself. Implementations: backend/cpu/storage_ops.rs and
//! backend/cuda/storage_ops.rs.
//!
//! Operands arrive checked: one device, one dtype, shapes that broadcast to `out`.

use crate::geometry::{Activation, ConvDims, LossTerm, MatmulDims, PoolDims};
use crate::op_table::{BinaryOp, UnaryOp};
use crate::{Result, Shape};

pub trait BackendStorage: Sized {
    /// Where max and max pooling keep their winners for backward (host indices on the CPU,
    /// device memory on CUDA, so the forward pass never waits for a copy).
    type Winners;

    /// `op` on every element.
    fn unary(&self, op: UnaryOp) -> Result<Self>;
    /// d(op)/dx times `g`, from the input (`self`) or the output `y`, as the op table says.
    fn unary_grad(&self, op: UnaryOp, y: &Self, g: &Self) -> Result<Self>;
    /// `op` on every element and the intermediate its gradient reuses
    /// (`UnaryOp::saves_intermediate`), or None where this device keeps none (the gradient
    /// then computes it again, from the input).
    fn unary_keeping(&self, _op: UnaryOp) -> Result<Option<(Self, Self)>> {
        Ok(None)
    }
    /// `unary_grad` at the input `self` from the intermediate `kept` that `unary_keeping`
    /// returned (only called with one it returned).
    fn unary_grad_kept(&self, op: UnaryOp, _kept: &Self, _g: &Self) -> Result<Self> {
        Err(crate::Error::arg(
            op.name(),
            "expected an intermediate kept by this device's forward pass, got none",
        ))
    }
    /// `op` over `self` (shaped `shape`) and `rhs` (shaped `rhs_shape`) broadcast to `out`.
    fn binary(
        &self,
        op: BinaryOp,
        shape: &Shape,
        rhs: &Self,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Self>;
    /// `self op s`, or `s op self` when `scalar_left`, for a scalar passed by value.
    fn binary_scalar(&self, op: BinaryOp, s: f64, scalar_left: bool) -> Result<Self>;
    /// maximum/minimum gradient weights of `self` against `rhs`: 1 wins (or NaN), 0.5 ties,
    /// 0 loses, over the broadcast shape `out`.
    fn select_weight(
        &self,
        max: bool,
        shape: &Shape,
        rhs: &Self,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Self>;
    /// `x ** e` for a scalar exponent (libm `pow`).
    fn pow(&self, e: f64) -> Result<Self>;
    /// `g * (e * x^(e-1))`, with `e - 1` rounded to the element type once.
    fn pow_grad(&self, e: f64, g: &Self) -> Result<Self>;
    /// Clamped to [lo, hi], either side open; NaN stays NaN.
    fn clamp(&self, lo: Option<f64>, hi: Option<f64>) -> Result<Self>;
    /// `g` where `lo <= x <= hi`, else 0.
    fn clamp_grad(&self, lo: Option<f64>, hi: Option<f64>, g: &Self) -> Result<Self>;

    /// The sum of all elements (`axis` None, one element) or over one axis of `shape`, each a
    /// left fold from 0 in index order.
    fn sum(&self, shape: &Shape, axis: Option<usize>) -> Result<Self>;
    /// `self` (shaped `from`) summed over the axes that broadcasting `to` to `from` expanded.
    fn sum_to_shape(&self, from: &Shape, to: &Shape) -> Result<Self>;
    /// `self` (shaped `from`) repeated along broadcast axes to `to`.
    fn broadcast_to(&self, from: &Shape, to: &Shape) -> Result<Self>;

    /// The axes of `self` (shaped `dims`) reordered: output axis k is input axis `perm[k]`.
    fn permute(&self, dims: &[usize], perm: &[usize]) -> Result<Self>;
    /// Entries start..end of the middle axis of `self` viewed as [outer, len, inner].
    fn slice(
        &self,
        outer: usize,
        len: usize,
        inner: usize,
        start: usize,
        end: usize,
    ) -> Result<Self>;
    /// The slice's gradient: `self` (the slice's shape) placed at start..end of zeros
    /// [outer, len, inner].
    fn unslice(
        &self,
        outer: usize,
        len: usize,
        inner: usize,
        start: usize,
        end: usize,
    ) -> Result<Self>;
    /// Entries `idx` of the middle axis of `self` viewed as [outer, len, inner].
    fn index_select(&self, outer: usize, len: usize, inner: usize, idx: &[usize]) -> Result<Self>;
    /// The index_select gradient: `self` ([outer, idx.len(), inner]) summed into zeros
    /// [outer, len, inner] at `idx`, repeats folded in order.
    fn index_add(&self, outer: usize, len: usize, inner: usize, idx: &[usize]) -> Result<Self>;

    /// The `parts` (each with its length along the axis) joined along the middle axis of
    /// [outer, len, inner]; all of one dtype.
    fn concat(parts: &[(&Self, usize)], outer: usize, inner: usize) -> Result<Self>;
    /// `y[i] = self[offsets[i]]` (offsets planned by the op layer).
    fn take(&self, offsets: &[usize]) -> Result<Self>;
    /// `base` (or zeros of `n`) with `self[i]` added at `offsets[i]`, in index order.
    fn scatter_add(&self, base: Option<&Self>, offsets: &[usize], n: usize) -> Result<Self>;
    /// `value` where `mask` (one flag per element) is set, else the element.
    fn masked_fill(&self, mask: &[bool], value: f64) -> Result<Self>;

    /// The batched product of `self` and `rhs` (`d` says the sizes, layouts and batch strides).
    fn matmul(&self, rhs: &Self, d: MatmulDims) -> Result<Self>;

    /// -mean over rows of `self[r, target[r]]`, `self` being log-probabilities [rows, classes]
    /// (one element). A row whose target is `IGNORED_ROW` counts for nothing (`geometry::IGNORED_ROW`): not in the sum,
    /// not in the divisor (all rows ignored: 0 / 0, NaN, as PyTorch).
    fn nll(&self, rows: usize, classes: usize, target: &[usize]) -> Result<Self>;
    /// The nll gradient [rows, classes] from the upstream gradient `self` (one element); an
    /// ignored row's gradient is 0.
    fn nll_grad(&self, rows: usize, classes: usize, target: &[usize]) -> Result<Self>;
    /// Cross-entropy's gradient for the logits, from the log-probabilities `self` ([rows,
    /// classes]) and the loss's gradient `g` (one element): nll's gradient through log-softmax's.
    /// This default runs the two; the CPU the same operations in one pass, so the same bits.
    fn cross_entropy_grad(
        &self,
        g: &Self,
        rows: usize,
        classes: usize,
        target: &[usize],
    ) -> Result<Self> {
        let nll = g.nll_grad(rows, classes, target)?;
        self.softmax_grad(&nll, rows, classes, 1, true)
    }

    /// Cross-entropy of the logits `self` against probability targets `p` (both [rows,
    /// classes]): the log-probabilities (log-softmax over each row), and the loss, the rows'
    /// -(sum_j p_j * logp_j) (each a left fold from 0 in index order) summed from 0 in row
    /// order, divided by `rows` (one element). This default runs the operations one by one; the
    /// CPU the same ones a block of rows at a time, so the same bits.
    fn cross_entropy_probs(&self, p: &Self, rows: usize, classes: usize) -> Result<(Self, Self)> {
        let shape = Shape(vec![rows, classes]);
        let logp = self.softmax(rows, classes, 1, true)?;
        let terms = p.binary(BinaryOp::Mul, &shape, &logp, &shape, &shape)?;
        let per_row = terms.sum(&shape, Some(1))?.unary(UnaryOp::Neg)?;
        let loss = per_row.sum(&Shape(vec![rows]), None)?.binary_scalar(
            BinaryOp::Div,
            rows as f64,
            false,
        )?;
        Ok((logp, loss))
    }
    /// The gradient of `cross_entropy_probs` for the logits, from the log-probabilities
    /// `self`, the targets `p` and the loss's gradient `g` (one element): with w = -(g / rows),
    /// log-softmax's gradient of w * p. The CPU runs it a block of rows at a time, the same
    /// bits.
    fn cross_entropy_probs_grad(
        &self,
        p: &Self,
        g: &Self,
        rows: usize,
        classes: usize,
    ) -> Result<Self> {
        let shape = Shape(vec![rows, classes]);
        let w = g
            .binary_scalar(BinaryOp::Div, rows as f64, false)?
            .unary(UnaryOp::Neg)?;
        let d = w.binary(BinaryOp::Mul, &Shape(vec![]), p, &shape, &shape)?;
        self.softmax_grad(&d, rows, classes, 1, true)
    }

    /// A pointwise loss's sum (`LossTerm`): over all elements of `shape`, the term of `self`
    /// and `t`, each operation rounded, summed as `sum` sums a whole tensor (one element).
    /// This default runs the ops one by one; the CPU the same operations in one pass, so the
    /// same bits.
    fn pointwise_loss_sum(&self, t: &Self, term: LossTerm, shape: &Shape) -> Result<Self> {
        let terms = match term {
            LossTerm::BceWithLogits => {
                // ((1 - t) * x) - logsigmoid(x)
                let kept = t.binary_scalar(BinaryOp::Sub, 1.0, true)?;
                let a = kept.binary(BinaryOp::Mul, shape, self, shape, shape)?;
                let ls = self.unary(UnaryOp::Logsigmoid)?;
                a.binary(BinaryOp::Sub, shape, &ls, shape, shape)?
            }
            _ => {
                let d = self.binary(BinaryOp::Sub, shape, t, shape, shape)?;
                match term.table_op() {
                    None => d.binary(BinaryOp::Mul, shape, &d, shape, shape)?,
                    Some(op) => d.unary(op)?,
                }
            }
        };
        terms.sum(shape, None)
    }
    /// That loss's gradient for `self` from the mean's gradient `w` (one element, g / count),
    /// as the recorded ops give it: with d = self - t, (w * d) + (w * d) for the square (mul's
    /// gradients for its two operands, accumulated), or the table op's gradient at d with
    /// upstream w; for the logits, w * (1 - t) plus logsigmoid's gradient with upstream -w.
    /// The CPU runs it in one pass.
    fn pointwise_loss_grad(
        &self,
        t: &Self,
        w: &Self,
        term: LossTerm,
        shape: &Shape,
    ) -> Result<Self> {
        let scalar = Shape(vec![]);
        if term == LossTerm::BceWithLogits {
            let up = w.unary(UnaryOp::Neg)?.broadcast_to(&scalar, shape)?;
            // logsigmoid's gradient reads its input: x stands for the output too.
            let from_ls = self.unary_grad(UnaryOp::Logsigmoid, self, &up)?;
            let kept = t.binary_scalar(BinaryOp::Sub, 1.0, true)?;
            let from_mul = w.binary(BinaryOp::Mul, &scalar, &kept, shape, shape)?;
            return from_mul.binary(BinaryOp::Add, shape, &from_ls, shape, shape);
        }
        let d = self.binary(BinaryOp::Sub, shape, t, shape, shape)?;
        match term.table_op() {
            None => {
                let p = w.binary(BinaryOp::Mul, &scalar, &d, shape, shape)?;
                p.binary(BinaryOp::Add, shape, &p, shape, shape)
            }
            // The table ops' gradients (abs, smooth_l1, huber) read their input: d stands
            // for the output too.
            Some(op) => d.unary_grad(op, &d, &w.broadcast_to(&scalar, shape)?),
        }
    }

    /// Cross-correlation of `self` [N, C, H, W] with `w` [OC, C, KH, KW], plus `b` [OC].
    /// conv2d, then `act` on each output.
    fn conv2d(&self, w: &Self, b: Option<&Self>, d: ConvDims, act: Activation) -> Result<Self>;
    /// The conv2d gradients (gX, gW, gB) from the upstream gradient `g`; `need` = [input,
    /// weight, bias]: a backend may leave an unneeded one empty (or compute it anyway).
    fn conv2d_grads(&self, w: &Self, g: &Self, d: ConvDims, need: [bool; 3]) -> Result<[Self; 3]>;
    /// Average pooling (padding cells count in the divisor).
    fn avg_pool2d(&self, d: PoolDims) -> Result<Self>;
    /// The average-pooling gradient from the upstream gradient `self`.
    fn avg_pool2d_grad(&self, d: PoolDims) -> Result<Self>;

    /// Running sums along the middle axis of [outer, len, inner], in index order (from the
    /// far end when `reverse`).
    fn cumsum(&self, outer: usize, len: usize, inner: usize, reverse: bool) -> Result<Self>;
    /// Max over the middle axis of [outer, len, inner] and the index of each lane's first
    /// maximum (a NaN wins).
    fn max_axis(&self, outer: usize, len: usize, inner: usize) -> Result<(Self, Self::Winners)>;
    /// The max gradient: `self` (the upstream gradient) placed at the winners of zeros.
    fn max_axis_grad(
        &self,
        winners: &Self::Winners,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<Self>;
    /// Max pooling and the winner of each window (padding cells never win).
    fn max_pool2d(&self, d: PoolDims) -> Result<(Self, Self::Winners)>;
    /// The max-pooling gradient from the upstream gradient `self`.
    fn max_pool2d_grad(&self, winners: &Self::Winners, d: PoolDims) -> Result<Self>;

    /// Softmax (or log-softmax) over the middle axis of `self` viewed as [outer, len, inner].
    fn softmax(&self, outer: usize, len: usize, inner: usize, log: bool) -> Result<Self>;
    /// The softmax gradient from its output `self` and the upstream gradient `g`.
    fn softmax_grad(
        &self,
        g: &Self,
        outer: usize,
        len: usize,
        inner: usize,
        log: bool,
    ) -> Result<Self>;

    /// log(sum(exp(x - m))) + m over the middle axis of `self` viewed as [outer, len] + [inner]
    /// (len >= 1), m the lane's maximum (NaN propagating) clamped to [-big, big] (the dtype's
    /// largest finite value): one value per (outer, inner) lane. The sum is a left fold in index
    /// order. This default composes the other operations (each its own pass); the CPU runs it
    /// in one pass per row with the same operations, so the same bits.
    fn logsumexp(&self, outer: usize, len: usize, inner: usize, big: f64) -> Result<Self> {
        let shape = Shape(vec![outer, len, inner]);
        let lanes = Shape(vec![outer, 1, inner]);
        let (m, _) = self.max_axis(outer, len, inner)?;
        let m = m.clamp(Some(-big), Some(big))?;
        let e = self
            .binary(BinaryOp::Sub, &shape, &m, &lanes, &shape)?
            .unary(UnaryOp::Exp)?;
        let s = e.sum(&shape, Some(1))?.unary(UnaryOp::Log)?;
        s.binary(BinaryOp::Add, &lanes, &m, &lanes, &lanes)
    }

    /// The product over the middle axis of `self` viewed as [outer, len, inner] (len >= 1) by
    /// halving: each level multiplies the axis's first half by its second (y[i] = x[i] *
    /// x[i + h], h = n / 2), the odd last entry carried on, until one entry is left. This
    /// default runs the slices, multiplies and concatenations; the CPU the same products in
    /// place, so the same bits.
    fn prod(&self, outer: usize, len: usize, inner: usize) -> Result<Self> {
        let mut level: Option<Self> = None;
        let mut n = len;
        while n > 1 {
            let x = level.as_ref().unwrap_or(self);
            level = Some(halve(x, outer, n, inner)?);
            n = n / 2 + n % 2;
        }
        match level {
            Some(top) => Ok(top),
            None => self.slice(outer, 1, inner, 0, 1),
        }
    }

    /// The gradient of `prod` for `self` (the input) given `g` ([outer, inner]): every level's
    /// values, then from the top each pair's product rule, g * b for a and g * a for b, and the
    /// carried entry's gradient passed down.
    fn prod_grad(&self, g: &Self, outer: usize, len: usize, inner: usize) -> Result<Self> {
        let mut levels: Vec<(Self, usize)> = Vec::new();
        let mut n = len;
        while n > 1 {
            let x = levels.last().map(|(l, _)| l).unwrap_or(self);
            let next = halve(x, outer, n, inner)?;
            levels.push((next, n / 2 + n % 2));
            n = n / 2 + n % 2;
        }
        let mut grad: Option<Self> = None;
        for k in (0..levels.len()).rev() {
            let (below, n) = if k == 0 {
                (self, len)
            } else {
                (&levels[k - 1].0, levels[k - 1].1)
            };
            let above = grad.as_ref().unwrap_or(g);
            let h = n / 2;
            let m = h + n % 2;
            let half = Shape(vec![outer, h, inner]);
            let (a, b) = (
                below.slice(outer, n, inner, 0, h)?,
                below.slice(outer, n, inner, h, 2 * h)?,
            );
            let top = if n % 2 == 1 {
                above.slice(outer, m, inner, 0, h)?
            } else {
                above.slice(outer, m, inner, 0, m)?
            };
            let ga = top.binary(BinaryOp::Mul, &half, &b, &half, &half)?;
            let gb = top.binary(BinaryOp::Mul, &half, &a, &half, &half)?;
            grad = Some(if n % 2 == 1 {
                let carried = above.slice(outer, m, inner, h, m)?;
                Self::concat(&[(&ga, h), (&gb, h), (&carried, 1)], outer, inner)?
            } else {
                Self::concat(&[(&ga, h), (&gb, h)], outer, inner)?
            });
        }
        match grad {
            Some(grad) => Ok(grad),
            None => g.slice(outer, 1, inner, 0, 1),
        }
    }

    /// The variance over the middle axis of `self` viewed as [outer, len, inner] (len >= 1),
    /// and the mean: mean = sum / len, then sum((x - mean)²) / divisor, each sum a left fold in
    /// index order; one of each per (outer, inner) lane. This default composes the other
    /// operations; the CPU runs the same operations in two passes, so the same bits.
    fn var(&self, outer: usize, len: usize, inner: usize, divisor: f64) -> Result<(Self, Self)> {
        let shape = Shape(vec![outer, len, inner]);
        let lanes = Shape(vec![outer, 1, inner]);
        let mean = self
            .sum(&shape, Some(1))?
            .binary_scalar(BinaryOp::Div, len as f64, false)?;
        let d = self.binary(BinaryOp::Sub, &shape, &mean, &lanes, &shape)?;
        let squares = d.binary(BinaryOp::Mul, &shape, &d, &shape, &shape)?;
        let var = squares
            .sum(&shape, Some(1))?
            .binary_scalar(BinaryOp::Div, divisor, false)?;
        Ok((var, mean))
    }
}

/// One level of the product's halving: [outer, n, inner] to [outer, n / 2 + n % 2, inner].
fn halve<S: BackendStorage>(x: &S, outer: usize, n: usize, inner: usize) -> Result<S> {
    let h = n / 2;
    let half = Shape(vec![outer, h, inner]);
    let (a, b) = (
        x.slice(outer, n, inner, 0, h)?,
        x.slice(outer, n, inner, h, 2 * h)?,
    );
    let pair = a.binary(BinaryOp::Mul, &half, &b, &half, &half)?;
    if n.is_multiple_of(2) {
        return Ok(pair);
    }
    let carried = x.slice(outer, n, inner, 2 * h, n)?;
    S::concat(&[(&pair, h), (&carried, 1)], outer, inner)
}
