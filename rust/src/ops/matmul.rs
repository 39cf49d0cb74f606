//! Matrix products (2-D, batched, with transpose flags so backward never copies) and `linear`.

use crate::autograd::record::{need, Attr, Record};
use crate::geometry::{MatOperand, MatmulDims};
use crate::ops::elementwise::{add, check_same_device, check_same_dtype};
use crate::ops::layout::reshape_to;
use crate::{Error, Result, Shape, Tensor};

/// Matrix product with NumPy `matmul` rules for 1-D operands; batch axes broadcast (a plain
/// matrix is shared by every batch).
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.rank() == 0 || b.rank() == 0 {
        return Err(Error::shape(
            "matmul",
            format!(
                "both operands need at least one axis, got {} @ {}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let a2 = if a.rank() == 1 {
        reshape_to(a, Shape(vec![1, a.dims()[0]]))
    } else {
        a.clone()
    };
    let b2 = if b.rank() == 1 {
        reshape_to(b, Shape(vec![b.dims()[0], 1]))
    } else {
        b.clone()
    };
    // Name the user's shapes, not the internal 2-D views of 1-D operands.
    let out = matmul_t(&a2, &b2, false, false).map_err(|e| match e {
        Error::Shape { .. } if a.rank() == 1 || b.rank() == 1 => Error::shape(
            "matmul",
            format!("inner dimensions differ: {} @ {}", a.shape(), b.shape()),
        ),
        e => e,
    })?;
    if a.rank() == 1 || b.rank() == 1 {
        // Drop the unit axes the 1-D operands were given: n for b, then m for a.
        let mut d = out.dims().to_vec();
        if b.rank() == 1 {
            d.pop();
        }
        if a.rank() == 1 {
            let m_axis = if b.rank() == 1 {
                d.len() - 1
            } else {
                d.len() - 2
            };
            d.remove(m_axis);
        }
        return Ok(reshape_to(&out, Shape(d)));
    }
    Ok(out)
}

/// op(a) @ op(b), where op transposes the last two axes when its flag is set.
pub fn matmul_t(a: &Tensor, b: &Tensor, ta: bool, tb: bool) -> Result<Tensor> {
    check_same_device("matmul", a, b)?;
    let bad = || {
        Error::shape(
            "matmul",
            format!("inner dimensions differ: {} @ {}", a.shape(), b.shape()),
        )
    };
    if a.rank() < 2 || b.rank() < 2 {
        return Err(bad());
    }
    let (ad, bd) = (a.dims(), b.dims());
    let (ra, rb) = (ad.len(), bd.len());
    let (m, ka) = if ta {
        (ad[ra - 1], ad[ra - 2])
    } else {
        (ad[ra - 2], ad[ra - 1])
    };
    let (kb, n) = if tb {
        (bd[rb - 1], bd[rb - 2])
    } else {
        (bd[rb - 2], bd[rb - 1])
    };
    if ka != kb {
        return Err(bad());
    }
    let (abatch, bbatch) = (&ad[..ra - 2], &bd[..rb - 2]);
    let batch_dims = if abatch == bbatch || bbatch.is_empty() {
        abatch
    } else if abatch.is_empty() {
        bbatch
    } else {
        // Batch axes that broadcast (torch.matmul's rule, [5, 5, 5] @ [1, 5, 5]): each operand
        // as a broadcast view of the common batch shape (its gradient sums back).
        let full = crate::shape::broadcast_shapes(
            "matmul",
            &Shape(abatch.to_vec()),
            &Shape(bbatch.to_vec()),
        )
        .map_err(|_| {
            Error::shape(
                "matmul",
                format!("batch axes differ: {} @ {}", a.shape(), b.shape()),
            )
        })?;
        let widen = |t: &Tensor, last: &[usize]| {
            let mut dims = full.dims().to_vec();
            dims.extend_from_slice(last);
            crate::storage::check_alloc("matmul", &Shape(dims.clone()))?;
            crate::ops::reduce::broadcast_to(t, &Shape(dims))
        };
        let a = widen(a, &ad[ra - 2..])?;
        let b = widen(b, &bd[rb - 2..])?;
        return matmul_t(&a, &b, ta, tb);
    };
    let rows = batch_dims.iter().try_fold(m, |r, &d| r.checked_mul(d));
    if let (true, false, false, Some(rows)) = (bbatch.is_empty(), abatch.is_empty(), ta, rows) {
        // [..., m, k] @ [k, n] (a linear layer over a batch of sequences) is one product over
        // all rows: each output's fold over k is the same, and b's gradient becomes one
        // product whose fold runs over every row in order (as PyTorch's linear flattens),
        // not per batch with the partial products summed after: one fast product instead of
        // many thin ones and a reduction.
        let flat = reshape_to(a, Shape(vec![rows, ka]));
        let y = matmul_t(&flat, b, false, tb)?;
        let mut dims = batch_dims.to_vec();
        dims.extend([m, n]);
        return Ok(reshape_to(&y, Shape(dims)));
    }
    let batch: usize = batch_dims.iter().product();
    let d = MatmulDims {
        batch,
        m,
        n,
        k: ka,
        ta,
        tb,
        a_batch_stride: if abatch.is_empty() { 0 } else { m * ka },
        b_batch_stride: if bbatch.is_empty() { 0 } else { ka * n },
    };
    let mut dims = batch_dims.to_vec();
    dims.extend([m, n]);
    crate::storage::check_alloc("matmul", &Shape(dims.clone()))?;
    check_same_device("matmul", a, b)?;
    check_same_dtype("matmul", &[a, b])?;
    let s = if dims.contains(&0) {
        // No products to run, however many empty ones the batch has ([2^40, 0, k] @ [k, n]):
        // the kernels would size per-product offsets by the batch.
        crate::ops::layout::empty_storage(a)?
    } else if a.viewable() && b.viewable() && !(a.is_contiguous() && b.is_contiguous()) {
        // A view (a permuted or sliced operand) is read in place through its strides.
        let (ao, bo) = (operand(a, ta, batch_dims), operand(b, tb, batch_dims));
        a.base_storage()
            .matmul_strided(&ao, b.base_storage(), &bo, [m, n, ka])?
    } else {
        a.storage().matmul(b.storage(), d)?
    };
    Ok(Tensor::from_op(
        s,
        Shape(dims),
        Matmul {
            a: a.clone(),
            b: b.clone(),
            ta,
            tb,
        },
    ))
}

/// `x`'s matrices as a product operand read in place (transposed when `t`): one offset per
/// product of the batch `batch`, which `x`'s own batch axes are, or which it has none of.
fn operand(x: &Tensor, t: bool, batch: &[usize]) -> MatOperand {
    let layout = x.strided();
    let r = x.rank();
    let (sr, sc) = (layout.strides[r - 2], layout.strides[r - 1]);
    let own = &layout.strides[..r - 2];
    let count: usize = batch.iter().product();
    let offsets = (0..count)
        .map(|bi| {
            // bi's index along each batch axis, the last fastest.
            let (mut rest, mut at) = (bi, layout.offset);
            for (&len, &stride) in batch.iter().zip(own).rev() {
                at += rest % len * stride;
                rest /= len;
            }
            at
        })
        .collect();
    let (rs, cs) = if t { (sc, sr) } else { (sr, sc) };
    MatOperand { offsets, rs, cs }
}

/// y = x @ weightᵀ + bias, with weight [out, in] (PyTorch `linear`).
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let mut all = vec![x, weight];
    all.extend(bias);
    crate::ops::elementwise::check_same_dtype("linear", &all)?;
    if weight.rank() != 2 {
        return Err(Error::shape(
            "linear",
            format!(
                "expected a weight of shape [out, in], got {}",
                weight.shape()
            ),
        ));
    }
    let (out_f, in_f) = (weight.dims()[0], weight.dims()[1]);
    if x.rank() == 0 || x.dims()[x.rank() - 1] != in_f {
        return Err(Error::shape(
            "linear",
            format!(
                "input {} does not end in {in_f} features (weight {})",
                x.shape(),
                weight.shape()
            ),
        ));
    }
    if let Some(b) = bias {
        if b.dims() != [out_f] {
            return Err(Error::shape(
                "linear",
                format!("expected a bias of shape [{out_f}], got {}", b.shape()),
            ));
        }
    }
    let x2 = if x.rank() == 1 {
        reshape_to(x, Shape(vec![1, in_f]))
    } else {
        x.clone()
    };
    let mut y = matmul_t(&x2, weight, false, true)?;
    if let Some(b) = bias {
        y = add(&y, b)?;
    }
    if x.rank() == 1 {
        y = reshape_to(&y, Shape(vec![out_f]));
    }
    Ok(y)
}

/// `a @ b`, either operand's matrices transposed (`ta`, `tb`), batch axes broadcast.
#[derive(Clone)]
pub struct Matmul {
    pub a: Tensor,
    pub b: Tensor,
    pub ta: bool,
    pub tb: bool,
}

impl Record for Matmul {
    crate::autograd::record::named!("matmul");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.a, &self.b]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("transpose_a", Attr::Flag(self.ta)),
            ("transpose_b", Attr::Flag(self.tb)),
        ]
    }
    /// Each operand's gradient as a product with `g`, summed over the batches it was
    /// broadcast across.
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (a, b, ta, tb) = (&self.a, &self.b, self.ta, self.tb);
        let ga = need(a)
            .then(|| {
                if ta {
                    matmul_t(b, g, tb, true)
                } else {
                    matmul_t(g, b, false, !tb)
                }
            })
            .transpose()?;
        let gb = need(b)
            .then(|| {
                if tb {
                    matmul_t(g, a, true, ta)
                } else {
                    matmul_t(a, g, !ta, false)
                }
            })
            .transpose()?;
        let fit = |t: Tensor, like: &Tensor| crate::ops::sum_to_shape(&t, like.shape());
        Ok(vec![
            ga.map(|t| fit(t, a)).transpose()?,
            gb.map(|t| fit(t, b)).transpose()?,
        ])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        match xs {
            [a, b, ..] => matmul_t(a, b, self.ta, self.tb),
            _ => Err(Error::arg("graph", "matmul needs two inputs")),
        }
    }
}
