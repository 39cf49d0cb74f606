//! The CUDA `BackendStorage`: each op launches its kernel (ops/) on the buffer's GPU and wraps
//! the new buffer. The kernels repeat the CPU formulas term for term (no fused multiply-add).

use super::blas::RowMajorMatmul;
use super::ops as cu;
use super::storage::CudaStorage;
use super::IndexBuffer;
use crate::backend::storage_ops::BackendStorage;
use crate::geometry::{Activation, ConvDims, MatmulDims, PoolDims};
use crate::op_table::{BinaryOp, UnaryOp};
use crate::{Result, Shape};

fn params(op: UnaryOp) -> Vec<f64> {
    op.params().into_iter().map(|(_, v)| v).collect()
}

impl BackendStorage for CudaStorage {
    type Winners = IndexBuffer;

    fn unary(&self, op: UnaryOp) -> Result<Self> {
        cu::unary(op.name(), &self.0, &params(op)).map(CudaStorage::new)
    }

    fn unary_grad(&self, op: UnaryOp, y: &Self, g: &Self) -> Result<Self> {
        cu::unary_grad(op.name(), &self.0, &y.0, &g.0, &params(op)).map(CudaStorage::new)
    }

    fn binary(
        &self,
        op: BinaryOp,
        shape: &Shape,
        rhs: &Self,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Self> {
        cu::binary(op.name(), &self.0, shape, &rhs.0, rhs_shape, out).map(CudaStorage::new)
    }

    fn binary_scalar(&self, op: BinaryOp, s: f64, scalar_left: bool) -> Result<Self> {
        cu::binary_scalar(op.name(), &self.0, s, scalar_left).map(CudaStorage::new)
    }

    fn select_weight(
        &self,
        max: bool,
        shape: &Shape,
        rhs: &Self,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Self> {
        cu::select_weight(max, &self.0, shape, &rhs.0, rhs_shape, out).map(CudaStorage::new)
    }

    fn pow(&self, e: f64) -> Result<Self> {
        cu::pow(&self.0, e).map(CudaStorage::new)
    }

    fn pow_grad(&self, e: f64, g: &Self) -> Result<Self> {
        cu::pow_grad(&self.0, &g.0, e).map(CudaStorage::new)
    }

    fn clamp(&self, lo: Option<f64>, hi: Option<f64>) -> Result<Self> {
        cu::clamp(&self.0, lo, hi).map(CudaStorage::new)
    }

    fn clamp_grad(&self, lo: Option<f64>, hi: Option<f64>, g: &Self) -> Result<Self> {
        cu::clamp_grad(&self.0, &g.0, lo, hi).map(CudaStorage::new)
    }

    fn sum(&self, shape: &Shape, axis: Option<usize>) -> Result<Self> {
        match axis {
            None => cu::sum_all(&self.0),
            Some(a) => {
                let (o, l, i) = shape.split_at_axis(a);
                cu::sum_axis(&self.0, o, l, i)
            }
        }
        .map(CudaStorage::new)
    }

    fn sum_to_shape(&self, from: &Shape, to: &Shape) -> Result<Self> {
        cu::sum_to_shape(&self.0, from, to).map(CudaStorage::new)
    }

    fn broadcast_to(&self, from: &Shape, to: &Shape) -> Result<Self> {
        cu::broadcast_to(&self.0, from, to).map(CudaStorage::new)
    }

    fn permute(&self, dims: &[usize], perm: &[usize]) -> Result<Self> {
        cu::permute(&self.0, dims, perm).map(CudaStorage::new)
    }

    fn slice(
        &self,
        outer: usize,
        len: usize,
        inner: usize,
        start: usize,
        end: usize,
    ) -> Result<Self> {
        cu::slice(&self.0, outer, len, inner, start, end).map(CudaStorage::new)
    }

    fn unslice(
        &self,
        outer: usize,
        len: usize,
        inner: usize,
        start: usize,
        end: usize,
    ) -> Result<Self> {
        cu::unslice(&self.0, outer, len, inner, start, end).map(CudaStorage::new)
    }

    fn index_select(&self, outer: usize, len: usize, inner: usize, idx: &[usize]) -> Result<Self> {
        cu::take(&self.0, &cu::select_offsets(outer, len, inner, idx)).map(CudaStorage::new)
    }

    fn index_add(&self, outer: usize, len: usize, inner: usize, idx: &[usize]) -> Result<Self> {
        let targets = cu::select_offsets(outer, len, inner, idx);
        cu::scatter_add(None, &self.0, &targets, outer * len * inner).map(CudaStorage::new)
    }

    fn concat(parts: &[(&Self, usize)], outer: usize, inner: usize) -> Result<Self> {
        let pieces: Vec<_> = parts.iter().map(|(p, len)| (&*p.0, *len)).collect();
        cu::concat(&pieces, outer, inner).map(CudaStorage::new)
    }

    fn take(&self, offsets: &[usize]) -> Result<Self> {
        cu::take(&self.0, offsets).map(CudaStorage::new)
    }

    fn scatter_add(&self, base: Option<&Self>, offsets: &[usize], n: usize) -> Result<Self> {
        cu::scatter_add(base.map(|b| &*b.0), &self.0, offsets, n).map(CudaStorage::new)
    }

    fn masked_fill(&self, mask: &[bool], value: f64) -> Result<Self> {
        cu::masked_fill(&self.0, mask, value).map(CudaStorage::new)
    }

    fn matmul(&self, rhs: &Self, d: MatmulDims) -> Result<Self> {
        let mm = RowMajorMatmul::new(d.m, d.n, d.k, d.ta, d.tb).batched(
            d.batch,
            d.a_batch_stride,
            d.b_batch_stride,
            d.m * d.n,
        );
        cu::gemm(&self.0, &rhs.0, mm).map(CudaStorage::new)
    }

    fn nll(&self, rows: usize, classes: usize, target: &[usize]) -> Result<Self> {
        cu::nll(&self.0, rows, classes, target).map(CudaStorage::new)
    }

    fn nll_grad(&self, rows: usize, classes: usize, target: &[usize]) -> Result<Self> {
        cu::nll_grad(rows, classes, target, &self.0).map(CudaStorage::new)
    }

    fn conv2d(&self, w: &Self, b: Option<&Self>, d: ConvDims, act: Activation) -> Result<Self> {
        let y = cu::conv2d(&self.0, &w.0, b.map(|b| &*b.0), d).map(CudaStorage::new)?;
        // The activation runs as its own kernel here: the `relu` op's, so the bits are the same.
        match act {
            Activation::None => Ok(y),
            Activation::Relu => y.unary(UnaryOp::Relu),
        }
    }

    fn conv2d_grads(&self, w: &Self, g: &Self, d: ConvDims, _need: [bool; 3]) -> Result<[Self; 3]> {
        let [gx, gw, gb] = cu::conv2d_grads(&self.0, &w.0, &g.0, d)?;
        Ok([gx, gw, gb].map(CudaStorage::new))
    }

    fn avg_pool2d(&self, d: PoolDims) -> Result<Self> {
        cu::avg_pool2d(&self.0, d).map(CudaStorage::new)
    }

    fn avg_pool2d_grad(&self, d: PoolDims) -> Result<Self> {
        cu::avg_pool2d_grad(&self.0, d).map(CudaStorage::new)
    }

    fn cumsum(&self, outer: usize, len: usize, inner: usize, reverse: bool) -> Result<Self> {
        cu::cumsum(&self.0, outer, len, inner, reverse).map(CudaStorage::new)
    }

    fn max_axis(&self, outer: usize, len: usize, inner: usize) -> Result<(Self, IndexBuffer)> {
        let (y, a) = cu::max_axis(&self.0, outer, len, inner)?;
        Ok((CudaStorage::new(y), a))
    }

    fn max_axis_grad(
        &self,
        winners: &IndexBuffer,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<Self> {
        cu::max_grad(&self.0, winners, outer, len, inner).map(CudaStorage::new)
    }

    fn max_pool2d(&self, d: PoolDims) -> Result<(Self, IndexBuffer)> {
        let (y, a) = cu::max_pool2d_on_device(&self.0, d)?;
        Ok((CudaStorage::new(y), a))
    }

    fn max_pool2d_grad(&self, winners: &IndexBuffer, d: PoolDims) -> Result<Self> {
        cu::max_pool2d_grad_on_device(&self.0, winners, d).map(CudaStorage::new)
    }

    fn softmax(&self, outer: usize, len: usize, inner: usize, log: bool) -> Result<Self> {
        cu::softmax(&self.0, outer, len, inner, log).map(CudaStorage::new)
    }

    fn softmax_grad(
        &self,
        g: &Self,
        outer: usize,
        len: usize,
        inner: usize,
        log: bool,
    ) -> Result<Self> {
        cu::softmax_grad(&self.0, &g.0, outer, len, inner, log).map(CudaStorage::new)
    }
}
