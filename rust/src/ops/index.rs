//! Indexed ops: gather and scatter_add along an axis (PyTorch semantics), embedding lookup,
//! and masked_fill (used for attention masks).

use crate::autograd::record::{first, need, Attr, Record};
use crate::ops::layout::{check_indices, index_select, reshape_to};
use crate::shape::broadcast_strides;
use crate::{Error, Result, Shape, Tensor};
use std::sync::Arc;

/// For each position of `index_shape` (row-major), the flat offset into a tensor of `shape`
/// with the `axis` coordinate replaced by the index value.
fn offsets(shape: &Shape, index_shape: &Shape, axis: usize, idx: &[usize]) -> Vec<usize> {
    let strides = shape.strides();
    let dims = index_shape.dims();
    let mut out = Vec::with_capacity(idx.len());
    let mut pos = vec![0usize; dims.len()];
    for &v in idx {
        let mut off = 0;
        for d in 0..dims.len() {
            off += if d == axis { v } else { pos[d] } * strides[d];
        }
        out.push(off);
        for d in (0..dims.len()).rev() {
            pos[d] += 1;
            if pos[d] < dims[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    out
}

fn check_index_shape(op: &'static str, x: &Tensor, axis: usize, index_shape: &Shape) -> Result<()> {
    let ok = index_shape.rank() == x.rank()
        && index_shape
            .dims()
            .iter()
            .zip(x.dims())
            .enumerate()
            .all(|(d, (&i, &s))| d == axis || i <= s);
    if !ok {
        return Err(Error::shape(
            op,
            format!(
                "index of shape {index_shape} does not fit input {} along axis {axis}",
                x.shape()
            ),
        ));
    }
    Ok(())
}

/// out[...i...] = input[...index[...i...]...] along `axis` (PyTorch `gather`).
pub fn gather(x: &Tensor, axis: isize, index: &[i64], index_shape: &[usize]) -> Result<Tensor> {
    let ax = x.shape().axis("gather", axis)?;
    let ishape = Shape(index_shape.to_vec());
    if numel("gather", &ishape)? != index.len() {
        return Err(Error::shape(
            "gather",
            format!("index has {} values but shape {}", index.len(), ishape),
        ));
    }
    check_index_shape("gather", x, ax, &ishape)?;
    let idx = check_indices("gather", index, x.dims()[ax])?;
    let offs = offsets(x.shape(), &ishape, ax, &idx);
    let s = x.storage().take(&offs)?;
    Ok(Tensor::from_op(
        s,
        ishape.clone(),
        Gather {
            x: x.clone(),
            axis: ax,
            index: Arc::new(idx),
            index_shape: ishape,
        },
    ))
}

/// Adds `src` values into a zero tensor of `shape` at the gather offsets, in index order.
pub(crate) fn scatter_into(
    shape: &Shape,
    axis: usize,
    idx: &[usize],
    index_shape: &Shape,
    src: &Tensor,
    base: Option<&Tensor>,
) -> Result<Tensor> {
    let offs = offsets(shape, index_shape, axis, idx);
    let s = src
        .storage()
        .scatter_add(base.map(|b| b.storage()), &offs, shape.numel())?;
    Tensor::from_storage(s, shape.clone())
}

/// out = input; out[...index[...i...]...] += src[...i...] along `axis`, in index order
/// (PyTorch `scatter_add`). `index` has `src`'s shape.
pub fn scatter_add(x: &Tensor, axis: isize, index: &[i64], src: &Tensor) -> Result<Tensor> {
    let ax = x.shape().axis("scatter_add", axis)?;
    if index.len() != src.numel() {
        return Err(Error::shape(
            "scatter_add",
            format!(
                "index has {} values but src has shape {}",
                index.len(),
                src.shape()
            ),
        ));
    }
    check_index_shape("scatter_add", x, ax, src.shape())?;
    if x.dtype() != src.dtype() {
        return Err(crate::storage::dtype_mismatch(
            "scatter_add",
            x.dtype(),
            src.dtype(),
        ));
    }
    let idx = check_indices("scatter_add", index, x.dims()[ax])?;
    let out = scatter_into(x.shape(), ax, &idx, src.shape(), src, Some(x))?;
    let s = out.storage().clone();
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        ScatterAdd {
            x: x.clone(),
            src: src.clone(),
            axis: ax,
            index: Arc::new(idx),
        },
    ))
}

/// `embedding` with the indices an int64 tensor of any shape (kept as the record's input, so a
/// compiled graph reads each step's token ids).
pub fn embedding_t(indices: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let flat = reshape_to(indices, Shape(vec![indices.numel()]));
    embedding_rows(weight, indices.dims(), |w| {
        crate::ops::layout::index_select_t(w, 0, &flat)
    })
}

/// Rows of `weight` [num, dim] for each index; output shape is the index shape + [dim].
pub fn embedding(indices: &[i64], indices_shape: &[usize], weight: &Tensor) -> Result<Tensor> {
    if numel("embedding", &Shape(indices_shape.to_vec()))? != indices.len() {
        return Err(Error::shape(
            "embedding",
            format!(
                "{} indices cannot have shape {:?}",
                indices.len(),
                indices_shape
            ),
        ));
    }
    embedding_rows(weight, indices_shape, |w| index_select(w, 0, indices))
}

/// The rows `select` picks from `weight`, shaped as the indices plus [dim].
fn embedding_rows(
    weight: &Tensor,
    indices_shape: &[usize],
    select: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    if weight.rank() != 2 {
        return Err(Error::shape(
            "embedding",
            format!(
                "expected weight [num_embeddings, dim], got {}",
                weight.shape()
            ),
        ));
    }
    let mut d = indices_shape.to_vec();
    d.push(weight.dims()[1]);
    let d = Shape(d);
    // Named here, not as index_select's: a long index list makes a result larger than both.
    crate::storage::check_alloc("embedding", &d)?;
    let rows = select(weight).map_err(|e| match e {
        Error::Index { index, bound, .. } => Error::Index {
            op: "embedding",
            index,
            bound,
        },
        e => e,
    })?;
    Ok(reshape_to(&rows, d))
}

/// The element count of a user-given shape, or a shape error naming `op` (a product that
/// overflows must not wrap to match a short value list).
fn numel(op: &'static str, shape: &Shape) -> Result<usize> {
    shape.checked_numel().map_err(|_| {
        Error::shape(
            op,
            format!("shape {shape} has too many elements to address"),
        )
    })
}

/// `value` where `mask` is true, `x` elsewhere; `mask` (row-major, of `mask_shape`) broadcasts
/// against `x`. No gradient flows to filled positions.
pub fn masked_fill(x: &Tensor, mask: &[bool], mask_shape: &[usize], value: f64) -> Result<Tensor> {
    let ms = Shape(mask_shape.to_vec());
    if numel("masked_fill", &ms)? != mask.len() {
        return Err(Error::shape(
            "masked_fill",
            format!("{} mask values cannot have shape {}", mask.len(), ms),
        ));
    }
    let out = crate::shape::broadcast_shapes("masked_fill", x.shape(), &ms)?;
    if &out != x.shape() {
        return Err(Error::shape(
            "masked_fill",
            format!("mask {} does not broadcast to input {}", ms, x.shape()),
        ));
    }
    let strides = broadcast_strides(&ms, x.shape());
    let full = expand_mask(mask, &strides, x.dims());
    let s = x.storage().masked_fill(&full, value)?;
    Ok(Tensor::from_op(
        s,
        x.shape().clone(),
        MaskedFill {
            x: x.clone(),
            mask: Arc::new(full),
            value,
        },
    ))
}

/// The mask broadcast to `dims` (`strides`: the mask's element strides, 0 on broadcast axes),
/// built a row of the last axis at a time: a mask row is copied whole, a broadcast row is one
/// value repeated (a causal mask [1, 1, T, T] over [B, H, T, T] is B*H*T row copies).
fn expand_mask(mask: &[bool], strides: &[usize], dims: &[usize]) -> Vec<bool> {
    let n: usize = dims.iter().product();
    if n == mask.len() {
        return mask.to_vec(); // the same shape: nothing to broadcast
    }
    let mut out = Vec::with_capacity(n);
    let Some((&row, outer_dims)) = dims.split_last() else {
        return out;
    };
    let inner = strides[dims.len() - 1];
    if row == 0 {
        return out;
    }
    let mut pos = vec![0usize; outer_dims.len()];
    for _ in 0..n / row {
        let base: usize = pos.iter().zip(strides).map(|(p, s)| p * s).sum();
        match inner {
            1 => out.extend_from_slice(&mask[base..base + row]),
            0 => out.resize(out.len() + row, mask[base]),
            s => out.extend((0..row).map(|j| mask[base + j * s])),
        }
        for d in (0..outer_dims.len()).rev() {
            pos[d] += 1;
            if pos[d] < outer_dims[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    out
}

pub(crate) fn masked_fill_grad(mask: &[bool], g: &Tensor) -> Result<Tensor> {
    let s = g.storage().masked_fill(mask, 0.0)?;
    Tensor::from_storage(s, g.shape().clone())
}

/// Used by gather's backward: `g` scattered into zeros of `x`'s shape.
pub(crate) fn gather_grad(
    x: &Tensor,
    axis: usize,
    idx: &[usize],
    index_shape: &Shape,
    g: &Tensor,
) -> Result<Tensor> {
    scatter_into(x.shape(), axis, idx, index_shape, g, None)
}

/// Used by scatter_add's backward for `src`: g gathered at the same offsets.
pub(crate) fn scatter_src_grad(
    x: &Tensor,
    axis: usize,
    idx: &[usize],
    src: &Tensor,
    g: &Tensor,
) -> Result<Tensor> {
    let offs = offsets(x.shape(), src.shape(), axis, idx);
    let s = g.storage().take(&offs)?;
    Tensor::from_storage(s, src.shape().clone())
}

fn as_i64(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&i| i as i64).collect()
}

/// `x` gathered along `axis` at `index` (of shape `index_shape`).
#[derive(Clone)]
pub struct Gather {
    pub x: Tensor,
    pub axis: usize,
    pub index: Arc<Vec<usize>>,
    pub index_shape: Shape,
}

impl Record for Gather {
    crate::autograd::record::named!("gather");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("axis", Attr::Count(Some(self.axis))),
            ("index", Attr::List(self.index.to_vec())),
            ("index_shape", Attr::List(self.index_shape.dims().to_vec())),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (x, axis) = (&self.x, self.axis);
        let grad = gather_grad(x, axis, &self.index, &self.index_shape, g)?;
        Ok(vec![Some(grad)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let x = first("gather", xs)?;
        gather(
            x,
            self.axis as isize,
            &as_i64(&self.index),
            self.index_shape.dims(),
        )
    }
}

/// `x` with `src` added at `index` along `axis`.
#[derive(Clone)]
pub struct ScatterAdd {
    pub x: Tensor,
    pub src: Tensor,
    pub axis: usize,
    pub index: Arc<Vec<usize>>,
}

impl Record for ScatterAdd {
    crate::autograd::record::named!("scatter_add");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x, &self.src]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("axis", Attr::Count(Some(self.axis))),
            ("index", Attr::List(self.index.to_vec())),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (x, src) = (&self.x, &self.src);
        let src_grad = need(src)
            .then(|| scatter_src_grad(x, self.axis, &self.index, src, g))
            .transpose()?;
        Ok(vec![Some(g.clone()), src_grad])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        match xs {
            [x, src, ..] => scatter_add(x, self.axis as isize, &as_i64(&self.index), src),
            _ => Err(Error::arg("graph", "scatter_add needs two inputs")),
        }
    }
}

/// `x` with `value` where `mask` (broadcast to `x`'s shape) is set.
#[derive(Clone)]
pub struct MaskedFill {
    pub x: Tensor,
    pub mask: Arc<Vec<bool>>,
    pub value: f64,
}

impl Record for MaskedFill {
    crate::autograd::record::named!("masked_fill");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("mask", Attr::Mask(self.mask.to_vec())),
            ("value", Attr::Float(Some(self.value))),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(masked_fill_grad(&self.mask, g)?)])
    }
    fn replay(&self, xs: &[Tensor], out: &Shape) -> Result<Tensor> {
        masked_fill(
            first("masked_fill", xs)?,
            &self.mask,
            out.dims(),
            self.value,
        )
    }
}
