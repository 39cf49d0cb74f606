//! Ops that move data without arithmetic: reshape, flatten, permute/transpose, concat, slice,
//! index_select. Reshape shares storage; on the CPU permute and slice return views of their
//! input (no copy until an op needs row-major values); the others copy into row-major order.

use crate::autograd::record::{first, need, Attr, Record};
use crate::storage::Storage;
use crate::{Error, Result, Shape, Tensor};
use std::sync::Arc;

/// Reshape; one dimension may be -1 (inferred).
pub fn reshape(x: &Tensor, dims: &[isize]) -> Result<Tensor> {
    let shape = infer_shape(x, dims)?;
    Ok(reshape_to(x, shape))
}

pub(crate) fn reshape_to(x: &Tensor, shape: Shape) -> Tensor {
    if &shape == x.shape() {
        return x.clone();
    }
    // A view (a slice of heads from a fused qkv, a transpose) whose elements need not move is
    // read as the new shape in place, as PyTorch's `view`; otherwise its values are copied once.
    if !x.is_contiguous() && x.viewable() {
        if let Some(layout) = x.strided().reshaped(x.dims(), shape.dims()) {
            return x.view_as(shape, layout, Reshape { x: x.clone() });
        }
    }
    x.share_storage(shape, Reshape { x: x.clone() })
}

/// `x` in row-major storage of its own: a view's values copied (once), any other tensor as is.
/// Differentiable (recorded as a reshape to the same shape).
pub fn contiguous(x: &Tensor) -> Tensor {
    if x.is_contiguous() {
        return x.clone();
    }
    x.share_storage(x.shape().clone(), Reshape { x: x.clone() })
}

fn infer_shape(x: &Tensor, dims: &[isize]) -> Result<Shape> {
    let bad = || {
        Error::shape(
            "reshape",
            format!(
                "cannot reshape {} ({} elements) to {:?}",
                x.shape(),
                x.numel(),
                dims
            ),
        )
    };
    let mut infer = None;
    let mut known = 1usize;
    let mut out = Vec::with_capacity(dims.len());
    for (i, &d) in dims.iter().enumerate() {
        if d == -1 {
            if infer.replace(i).is_some() {
                return Err(Error::arg(
                    "reshape",
                    format!("only one dimension can be -1, got {dims:?}"),
                ));
            }
            out.push(0);
        } else if d < 0 {
            return Err(Error::arg(
                "reshape",
                format!("dimensions must be >= 0 or -1, got {dims:?}"),
            ));
        } else {
            known = known.checked_mul(d as usize).ok_or_else(bad)?;
            out.push(d as usize);
        }
    }
    if let Some(i) = infer {
        if known == 0 || !x.numel().is_multiple_of(known) {
            return Err(bad());
        }
        out[i] = x.numel() / known;
    }
    let shape = Shape(out);
    // Zero-size shapes too must stay addressable ([0, 2^40, 2^40] is not).
    if shape.checked_numel().map_err(|_| bad())? != x.numel() {
        return Err(bad());
    }
    Ok(shape)
}

/// Flattens axes start..=end into one (PyTorch `flatten`).
pub fn flatten(x: &Tensor, start: isize, end: isize) -> Result<Tensor> {
    if x.rank() == 0 {
        return Ok(reshape_to(x, Shape(vec![1])));
    }
    let s = x.shape().axis("flatten", start)?;
    let e = x.shape().axis("flatten", end)?;
    if s > e {
        return Err(Error::arg(
            "flatten",
            format!("start axis {start} comes after end axis {end}"),
        ));
    }
    let d = x.dims();
    let mut out = d[..s].to_vec();
    out.push(d[s..=e].iter().product());
    out.extend_from_slice(&d[e + 1..]);
    Ok(reshape_to(x, Shape(out)))
}

pub fn permute(x: &Tensor, perm: &[isize]) -> Result<Tensor> {
    let r = x.rank();
    if perm.len() != r {
        return Err(Error::arg(
            "permute",
            format!("expected {r} axes for shape {}, got {perm:?}", x.shape()),
        ));
    }
    let mut p = Vec::with_capacity(r);
    let mut seen = vec![false; r];
    for &a in perm {
        let a = x.shape().axis("permute", a)?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(Error::arg(
                "permute",
                format!("axis {a} repeats in {perm:?}"),
            ));
        }
        p.push(a);
    }
    permute_raw(x, p)
}

pub(crate) fn permute_raw(x: &Tensor, p: Vec<usize>) -> Result<Tensor> {
    if p.iter().enumerate().all(|(i, &a)| i == a) {
        return Ok(x.clone());
    }
    let shape = Shape(p.iter().map(|&a| x.dims()[a]).collect());
    if x.viewable() {
        let layout = x.strided().permuted(&p);
        return Ok(x.view_as(
            shape,
            layout,
            Permute {
                x: x.clone(),
                perm: p,
            },
        ));
    }
    let s = x.storage().permute(x.dims(), &p)?;
    Ok(Tensor::from_op(
        s,
        shape,
        Permute {
            x: x.clone(),
            perm: p,
        },
    ))
}

/// Swaps two axes.
pub fn transpose(x: &Tensor, a: isize, b: isize) -> Result<Tensor> {
    let a = x.shape().axis("transpose", a)?;
    let b = x.shape().axis("transpose", b)?;
    let mut p: Vec<usize> = (0..x.rank()).collect();
    p.swap(a, b);
    permute_raw(x, p)
}

pub fn concat(xs: &[Tensor], axis: isize) -> Result<Tensor> {
    let first = xs
        .first()
        .ok_or_else(|| Error::arg("concat", "expected at least one tensor, got none"))?;
    let ax = first.shape().axis("concat", axis)?;
    for t in xs {
        let ok = t.rank() == first.rank()
            && t.dims()
                .iter()
                .zip(first.dims())
                .enumerate()
                .all(|(i, (a, b))| i == ax || a == b);
        if !ok {
            return Err(Error::shape(
                "concat",
                format!(
                    "shapes {} and {} differ outside axis {ax}",
                    first.shape(),
                    t.shape()
                ),
            ));
        }
        if t.dtype() != first.dtype() {
            return Err(crate::storage::dtype_mismatch(
                "concat",
                first.dtype(),
                t.dtype(),
            ));
        }
    }
    let (outer, _, inner) = first.shape().split_at_axis(ax);
    let lens: Vec<usize> = xs.iter().map(|t| t.dims()[ax]).collect();
    let mut dims = first.dims().to_vec();
    dims[ax] = lens
        .iter()
        .try_fold(0usize, |a, &l| a.checked_add(l))
        .ok_or_else(|| Error::shape("concat", "the result has too many elements to address"))?;
    crate::storage::check_alloc("concat", &Shape(dims.clone()))?;
    let parts: Vec<(&Storage, usize)> = xs.iter().map(|t| t.storage()).zip(lens).collect();
    // An empty result is no work, however many empty rows it has ([2^40, 0] along axis 1).
    let outer = if dims.contains(&0) { 0 } else { outer };
    let s = Storage::concat(&parts, outer, inner)?;
    Ok(Tensor::from_op(
        s,
        Shape(dims),
        Concat {
            xs: xs.to_vec(),
            axis: ax,
        },
    ))
}

/// Elements start..end along `axis` (negative bounds count from the end, as in Python).
pub fn slice(x: &Tensor, axis: isize, start: isize, end: isize) -> Result<Tensor> {
    let ax = x.shape().axis("slice", axis)?;
    let len = x.dims()[ax] as isize;
    let clampi = |v: isize| if v < 0 { (v + len).max(0) } else { v.min(len) };
    let (s0, e0) = (clampi(start) as usize, clampi(end) as usize);
    let e0 = e0.max(s0);
    let (outer, l, inner) = x.shape().split_at_axis(ax);
    let mut dims = x.dims().to_vec();
    dims[ax] = e0 - s0;
    let op = Slice {
        x: x.clone(),
        axis: ax,
        start: s0,
        end: e0,
    };
    // An empty result is no view: its offset may sit at the base's end (x[:, 5:5] of [5, 5, 5]),
    // past where a strided reader (NumPy) accepts one.
    if x.viewable() && !dims.contains(&0) {
        let layout = x.strided().sliced(ax, s0);
        return Ok(x.view_as(Shape(dims), layout, op));
    }
    let s = if dims.contains(&0) {
        empty_storage(x)?
    } else {
        x.storage().slice(outer, l, inner, s0, e0)?
    };
    Ok(Tensor::from_op(s, Shape(dims), op))
}

pub(crate) fn unslice(
    x: &Tensor,
    axis: usize,
    start: usize,
    end: usize,
    g: &Tensor,
) -> Result<Tensor> {
    let (outer, l, inner) = x.shape().split_at_axis(axis);
    // No per-row work for an empty x ([2^40, 4, 0] has 2^40 empty rows).
    let s = if x.numel() == 0 {
        empty_storage(g)?
    } else {
        g.storage().unslice(outer, l, inner, start, end)?
    };
    Tensor::from_storage(s, x.shape().clone())
}

/// No elements, in `like`'s dtype on its device: the result of an op whose output is empty,
/// which the kernels need not walk.
pub(crate) fn empty_storage(like: &Tensor) -> Result<Storage> {
    let t = Tensor::full_on(Shape(vec![0]), 0.0, like.dtype(), like.device())?;
    Ok(t.storage().clone())
}

/// Checks integer indices against `bound`; negative indices are errors.
pub fn check_indices(op: &'static str, idx: &[i64], bound: usize) -> Result<Vec<usize>> {
    idx.iter()
        .map(|&i| {
            if i < 0 || i as u64 >= bound as u64 {
                Err(Error::Index {
                    op,
                    index: i,
                    bound,
                })
            } else {
                Ok(i as usize)
            }
        })
        .collect()
}

/// The values of an int64 index tensor, read on the host (index tensors live there).
pub fn host_ints(op: &'static str, index: &Tensor) -> Result<Vec<i64>> {
    Ok(index.host()?.ints(op)?.to_vec())
}

/// Entries `index` along `axis` (PyTorch `index_select`).
pub fn index_select(x: &Tensor, axis: isize, index: &[i64]) -> Result<Tensor> {
    index_select_from(x, axis, index, None)
}

/// `index_select` with the indices an int64 tensor of rank 1: the record keeps it as an input,
/// so a compiled graph reads each step's indices (token ids, labels) instead of the trace's.
pub fn index_select_t(x: &Tensor, axis: isize, index: &Tensor) -> Result<Tensor> {
    if index.rank() != 1 {
        return Err(Error::shape(
            "index_select",
            format!("expected a 1-d index tensor, got shape {}", index.shape()),
        ));
    }
    let values = host_ints("index_select", index)?;
    index_select_from(x, axis, &values, Some(index))
}

fn index_select_from(
    x: &Tensor,
    axis: isize,
    index: &[i64],
    tensor: Option<&Tensor>,
) -> Result<Tensor> {
    let ax = x.shape().axis("index_select", axis)?;
    let idx = check_indices("index_select", index, x.dims()[ax])?;
    let (outer, l, inner) = x.shape().split_at_axis(ax);
    let mut dims = x.dims().to_vec();
    dims[ax] = idx.len();
    // A long index list makes a result larger than x (and, on a device, as many host offsets).
    crate::storage::check_alloc("index_select", &Shape(dims.clone()))?;
    let s = if dims.contains(&0) {
        empty_storage(x)?
    } else {
        x.storage().index_select(outer, l, inner, &idx)?
    };
    Ok(Tensor::from_op(
        s,
        Shape(dims),
        IndexSelect {
            x: x.clone(),
            axis: ax,
            index: Arc::new(idx),
            index_tensor: tensor.cloned(),
        },
    ))
}

pub(crate) fn index_select_grad(
    x: &Tensor,
    axis: usize,
    idx: &[usize],
    g: &Tensor,
) -> Result<Tensor> {
    let (outer, l, inner) = x.shape().split_at_axis(axis);
    let s = if x.numel() == 0 {
        empty_storage(g)?
    } else {
        g.storage().index_add(outer, l, inner, idx)?
    };
    Tensor::from_storage(s, x.shape().clone())
}

/// `x` with a new shape (or its values made row-major, same shape).
#[derive(Clone)]
pub struct Reshape {
    pub x: Tensor,
}

impl Record for Reshape {
    crate::autograd::record::named!("reshape");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(reshape_to(g, self.x.shape().clone()))])
    }
    fn replay(&self, xs: &[Tensor], out: &Shape) -> Result<Tensor> {
        Ok(reshape_to(first("reshape", xs)?, out.clone()))
    }
}

/// `x`'s axes reordered: output axis i is input axis `perm[i]`.
#[derive(Clone)]
pub struct Permute {
    pub x: Tensor,
    pub perm: Vec<usize>,
}

impl Record for Permute {
    crate::autograd::record::named!("permute");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![("dims", Attr::List(self.perm.clone()))]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let mut inv = vec![0; self.perm.len()];
        for (i, &a) in self.perm.iter().enumerate() {
            inv[a] = i;
        }
        Ok(vec![Some(permute_raw(g, inv)?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        permute_raw(first("permute", xs)?, self.perm.clone())
    }
}

/// The inputs joined along `axis`.
#[derive(Clone)]
pub struct Concat {
    pub xs: Vec<Tensor>,
    pub axis: usize,
}

impl Record for Concat {
    crate::autograd::record::named!("concat");
    fn inputs(&self) -> Vec<&Tensor> {
        self.xs.iter().collect()
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![("axis", Attr::Count(Some(self.axis)))]
    }
    /// Each input's part of `g`, sliced back out in order.
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let mut start = 0isize;
        let mut out = Vec::with_capacity(self.xs.len());
        for x in &self.xs {
            let len = x.dims()[self.axis] as isize;
            let axis = self.axis as isize;
            out.push(
                need(x)
                    .then(|| slice(g, axis, start, start + len))
                    .transpose()?,
            );
            start += len;
        }
        Ok(out)
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        concat(xs, self.axis as isize)
    }
}

/// Elements `start..end` of `x` along `axis`.
#[derive(Clone)]
pub struct Slice {
    pub x: Tensor,
    pub axis: usize,
    pub start: usize,
    pub end: usize,
}

impl Record for Slice {
    crate::autograd::record::named!("slice");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("axis", Attr::Count(Some(self.axis))),
            ("start", Attr::Count(Some(self.start))),
            ("end", Attr::Count(Some(self.end))),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let grad = unslice(&self.x, self.axis, self.start, self.end, g)?;
        Ok(vec![Some(grad)])
    }
    fn accumulate_input_grad(&self, prev: &Tensor, g: &Tensor) -> Option<Result<Tensor>> {
        if prev.shape() != self.x.shape() || prev.dtype() != g.dtype() || self.x.numel() == 0 {
            return None;
        }
        let (outer, l, inner) = self.x.shape().split_at_axis(self.axis);
        Some(
            prev.storage()
                .add_unsliced(
                    g.storage(),
                    prev.shape(),
                    [outer, l, inner],
                    self.start,
                    self.end,
                )
                .and_then(|s| Tensor::from_storage(s, prev.shape().clone())),
        )
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let x = first("slice", xs)?;
        slice(
            x,
            self.axis as isize,
            self.start as isize,
            self.end as isize,
        )
    }
}

/// Entries `index` of `x` along `axis`.
#[derive(Clone)]
pub struct IndexSelect {
    pub x: Tensor,
    pub axis: usize,
    pub index: Arc<Vec<usize>>,
    /// The int64 tensor the indices came from, when given as one: then an input (read again on
    /// replay) rather than an attribute.
    pub index_tensor: Option<Tensor>,
}

impl Record for IndexSelect {
    crate::autograd::record::named!("index_select");
    fn inputs(&self) -> Vec<&Tensor> {
        let mut v = vec![&self.x];
        v.extend(&self.index_tensor);
        v
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        let mut a = vec![("axis", Attr::Count(Some(self.axis)))];
        if self.index_tensor.is_none() {
            a.push(("index", Attr::List(self.index.to_vec())));
        }
        a
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let grad = index_select_grad(&self.x, self.axis, &self.index, g)?;
        let mut grads = vec![Some(grad)];
        grads.extend(self.index_tensor.iter().map(|_| None));
        Ok(grads)
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        match (xs, &self.index_tensor) {
            ([x, index, ..], Some(_)) => index_select_t(x, self.axis as isize, index),
            _ => {
                let index: Vec<i64> = self.index.iter().map(|&i| i as i64).collect();
                index_select(first("index_select", xs)?, self.axis as isize, &index)
            }
        }
    }
}
