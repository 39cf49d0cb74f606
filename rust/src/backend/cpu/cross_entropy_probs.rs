//! Cross-entropy of logits against probability targets, forward and gradient, each one pass over
//! blocks of sixteen rows. They run the operations of the storage default's composition
//! (backend/storage_ops.rs: log-softmax, p * logp, row sums, negation, a sum over the rows and
//! one division; for the gradient -(g / rows) * p through log-softmax's gradient) in the same
//! order, so they give its bits; a block's rows stay in the cache between the steps.

use super::exp_lanes::ExpRow;
use super::parallel::for_each_chunk;
use super::row_folds::{fold_rows, LANES};
use super::simd::wide_fn;
use super::softmax::{softmax_grad_rows_body, softmax_rows_body};
use super::storage::{CpuElem, CpuStorage};
use super::uninit::{assume_init, filled, written};
use crate::{DType, Result};
use std::mem::MaybeUninit;

/// Blocks of `LANES` rows a thread's chunk holds.
const BLOCKS_PER_CHUNK: usize = 8;
/// Operations an element costs, for the parallel loop's worth-it test (an exponential).
const ELEM_COST: usize = 16;

/// One block: log-softmax of `x` into `out`, then each row's -(sum of p * logp), folded from 0 in
/// index order, into `per_row`. `terms` is scratch of a block's size.
#[inline(always)]
fn forward_block_body<T: ExpRow>(
    x: &[T],
    p: &[T],
    out: &mut [MaybeUninit<T>],
    per_row: &mut [T],
    terms: &mut [T],
    classes: usize,
) {
    softmax_rows_body(x, out, classes, true);
    // SAFETY: softmax_rows_body writes every element of `out`.
    let logp = unsafe { assume_init(out) };
    let terms = &mut terms[..p.len()];
    for ((t, &pv), &lv) in terms.iter_mut().zip(p).zip(logp.iter()) {
        *t = pv * lv;
    }
    let sums = fold_rows([T::ZERO; LANES], terms, classes, false);
    for (o, s) in per_row.iter_mut().zip(sums) {
        *o = -s;
    }
}

wide_fn!(
    /// `forward_block_body` on the widest vectors this CPU has.
    fn forward_block<T: ExpRow>(
        x: &[T], p: &[T], out: &mut [MaybeUninit<T>], per_row: &mut [T], terms: &mut [T], classes: usize,
    ) = forward_block_body
);

/// The log-probabilities of `x` ([rows, classes]) and the loss: the rows' -(sum_j p_j * logp_j)
/// summed from 0 in row order, divided by `rows` (0 / 0, NaN, for no rows).
pub fn cross_entropy_probs<T: ExpRow>(
    x: &[T],
    p: &[T],
    rows: usize,
    classes: usize,
) -> (Vec<T>, T) {
    debug_assert_eq!(x.len(), rows * classes);
    let block = LANES * classes;
    let mut per_row = vec![T::ZERO; rows];
    let logp = written(x.len(), |out| {
        if classes == 0 {
            return;
        }
        let mut blocks: Vec<_> = out
            .chunks_mut(block)
            .zip(per_row.chunks_mut(LANES))
            .enumerate()
            .collect();
        for_each_chunk(
            &mut blocks,
            BLOCKS_PER_CHUNK,
            x.len() * ELEM_COST,
            |_, part| {
                let mut terms = vec![T::ZERO; block];
                for (b, (out, per_row)) in part.iter_mut() {
                    let at = *b * block..*b * block + out.len();
                    forward_block(&x[at.clone()], &p[at], out, per_row, &mut terms, classes);
                }
            },
        );
    });
    let total = per_row.iter().fold(T::ZERO, |a, &v| a + v);
    (logp, total / T::from_f64(rows as f64))
}

/// One block of the gradient: d = w * p, then log-softmax's gradient d - exp(logp) * sum(d).
#[inline(always)]
fn grad_block_body<T: ExpRow>(
    logp: &[T],
    p: &[T],
    w: T,
    out: &mut [MaybeUninit<T>],
    d: &mut [T],
    classes: usize,
) {
    let d = &mut d[..p.len()];
    for (d, &pv) in d.iter_mut().zip(p) {
        *d = w * pv;
    }
    softmax_grad_rows_body(logp, d, out, classes, true);
}

wide_fn!(
    /// `grad_block_body` on the widest vectors this CPU has.
    fn grad_block<T: ExpRow>(
        logp: &[T], p: &[T], w: T, out: &mut [MaybeUninit<T>], d: &mut [T], classes: usize,
    ) = grad_block_body
);

/// The gradient for the logits [rows, classes] from the log-probabilities `logp`, the targets
/// `p` and the loss's gradient `g`: with w = -(g / rows), log-softmax's gradient of w * p.
pub fn cross_entropy_probs_grad<T: ExpRow>(
    logp: &[T],
    p: &[T],
    g: T,
    rows: usize,
    classes: usize,
) -> Vec<T> {
    let w = -(g / T::from_f64(rows as f64));
    let block = LANES * classes.max(1);
    let per = block * BLOCKS_PER_CHUNK;
    filled(logp.len(), per, logp.len() * ELEM_COST, |ci, out| {
        let mut d = vec![T::ZERO; block];
        for (k, out) in out.chunks_mut(block).enumerate() {
            let at = ci * per + k * block..ci * per + k * block + out.len();
            grad_block(&logp[at.clone()], &p[at], w, out, &mut d, classes);
        }
    })
}

/// `cross_entropy_probs` on CPU storage of one float dtype: (log-probabilities, loss).
pub fn on_storage(
    x: &CpuStorage,
    p: &CpuStorage,
    rows: usize,
    classes: usize,
) -> Result<(CpuStorage, CpuStorage)> {
    fn go<T: CpuElem + ExpRow>(
        x: &CpuStorage,
        p: &CpuStorage,
        rows: usize,
        classes: usize,
    ) -> Result<(CpuStorage, CpuStorage)> {
        let (x, p) = (
            x.typed::<T>("cross_entropy")?,
            p.typed::<T>("cross_entropy")?,
        );
        let (logp, loss) = cross_entropy_probs(x, p, rows, classes);
        Ok((T::wrap(logp), T::wrap(vec![loss])))
    }
    match x.dtype() {
        DType::F32 => go::<f32>(x, p, rows, classes),
        DType::F64 => go::<f64>(x, p, rows, classes),
        d => Err(crate::error::not_float("cross_entropy", d)),
    }
}

/// `cross_entropy_probs_grad` on CPU storage of one float dtype (`g` one element).
pub fn grad_on_storage(
    logp: &CpuStorage,
    p: &CpuStorage,
    g: &CpuStorage,
    rows: usize,
    classes: usize,
) -> Result<CpuStorage> {
    fn go<T: CpuElem + ExpRow>(
        logp: &CpuStorage,
        p: &CpuStorage,
        g: &CpuStorage,
        rows: usize,
        classes: usize,
    ) -> Result<CpuStorage> {
        let (logp, p) = (
            logp.typed::<T>("cross_entropy")?,
            p.typed::<T>("cross_entropy")?,
        );
        let g = g.typed::<T>("cross_entropy")?[0];
        Ok(T::wrap(cross_entropy_probs_grad(logp, p, g, rows, classes)))
    }
    match logp.dtype() {
        DType::F32 => go::<f32>(logp, p, g, rows, classes),
        DType::F64 => go::<f64>(logp, p, g, rows, classes),
        d => Err(crate::error::not_float("cross_entropy", d)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::storage_ops::BackendStorage;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                match i % 41 {
                    3 => f32::NEG_INFINITY,
                    9 => 0.0,
                    _ => (s % 2000) as f32 / 97.0 - 10.0,
                }
            })
            .collect()
    }

    fn floats(s: &CpuStorage) -> Vec<f32> {
        s.typed::<f32>("test").unwrap().to_vec()
    }

    /// The fused passes against the storage default's composition (mul, row sums, neg, sum,
    /// div; the gradient's div, neg, mul and log-softmax gradient), run here as the CPU's own
    /// kernels one by one: every bit equal, for row counts around the block and chunk sizes.
    #[test]
    fn the_fused_passes_give_the_compositions_bits() {
        for (rows, classes) in [(1, 1), (5, 3), (16, 95), (150, 7), (300, 20)] {
            let n = rows * classes;
            let x = CpuStorage::F32(values(n, 7 + n as u64).into());
            let p = CpuStorage::F32(
                values(n, 99 + n as u64)
                    .iter()
                    .map(|v| v.abs() / 10.0)
                    .collect::<Vec<_>>()
                    .into(),
            );
            let (logp, loss) = cross_entropy_probs(&floats(&x), &floats(&p), rows, classes);
            let want_logp = x.softmax(rows, classes, 1, true).unwrap();
            assert_eq!(
                logp.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                floats(&want_logp)
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            );
            let shape = crate::Shape(vec![rows, classes]);
            let terms = p
                .binary(
                    crate::op_table::BinaryOp::Mul,
                    &shape,
                    &want_logp,
                    &shape,
                    &shape,
                )
                .unwrap();
            let per_row = terms
                .sum(&shape, Some(1))
                .unwrap()
                .unary(crate::op_table::UnaryOp::Neg)
                .unwrap();
            let want = per_row
                .sum(&crate::Shape(vec![rows]), None)
                .unwrap()
                .binary_scalar(crate::op_table::BinaryOp::Div, rows as f64, false)
                .unwrap();
            assert_eq!(
                loss.to_bits(),
                floats(&want)[0].to_bits(),
                "loss rows={rows} classes={classes}"
            );

            for g in [1.0f32, -0.37, 0.0] {
                let got = cross_entropy_probs_grad(&logp, &floats(&p), g, rows, classes);
                let gs = CpuStorage::F32(vec![g].into());
                let w = gs
                    .binary_scalar(crate::op_table::BinaryOp::Div, rows as f64, false)
                    .unwrap()
                    .unary(crate::op_table::UnaryOp::Neg)
                    .unwrap();
                let d = w
                    .binary(
                        crate::op_table::BinaryOp::Mul,
                        &crate::Shape(vec![]),
                        &p,
                        &shape,
                        &shape,
                    )
                    .unwrap();
                let want = floats(&want_logp_grad(&want_logp, &d, rows, classes));
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "grad rows={rows} classes={classes} g={g} at {i}: {a} vs {b}"
                    );
                }
            }
        }
    }

    fn want_logp_grad(
        logp: &CpuStorage,
        d: &CpuStorage,
        rows: usize,
        classes: usize,
    ) -> CpuStorage {
        logp.softmax_grad(d, rows, classes, 1, true).unwrap()
    }
}
