//! The CPU's `BackendStorage`: each op runs its generic kernel on the storage's dtype. Each
//! element is one correctly rounded operation (or a libm call), so both kernel kinds agree.

use super::elementwise::{broadcast_map, map, zip_map};
use super::layout as lk;
use super::matmul::GemmElem;
use super::reduce as rk;
use super::softmax as sk;
use super::storage::{CpuElem, CpuStorage};
use super::table_kernels as tk;
use crate::backend::storage_ops::BackendStorage;
use crate::dtype::lit;
use crate::geometry::{Activation, ConvDims, LossTerm, MatmulDims, PoolDims};
use crate::op_table::{BinaryOp, UnaryOp};
use crate::shape::broadcast_strides;
use crate::{map_cpu, map_cpu2, map_cpu_any, DType, Result, Shape};

impl BackendStorage for CpuStorage {
    type Winners = Vec<usize>;

    fn unary(&self, op: UnaryOp) -> Result<Self> {
        Ok(map_cpu!(self, |v| tk::unary(op, v)))
    }

    fn unary_grad(&self, op: UnaryOp, y: &Self, g: &Self) -> Result<Self> {
        Ok(match (self, y, g) {
            (CpuStorage::F32(x), CpuStorage::F32(y), CpuStorage::F32(g)) => {
                CpuStorage::F32((tk::unary_grad(op, x, y, g)).into())
            }
            (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(g)) => {
                CpuStorage::F64((tk::unary_grad(op, x, y, g)).into())
            }
            _ => {
                return Err(crate::error::dtype_mismatch(
                    op.name(),
                    self.dtype(),
                    g.dtype(),
                ))
            }
        })
    }

    fn unary_keeping(&self, op: UnaryOp) -> Result<Option<(Self, Self)>> {
        Ok(super::kept_unary::forward_storage(op, self))
    }

    fn unary_grad_kept(&self, op: UnaryOp, kept: &Self, g: &Self) -> Result<Self> {
        super::kept_unary::grad_storage(op, self, kept, g)
    }

    fn binary(
        &self,
        op: BinaryOp,
        shape: &Shape,
        rhs: &Self,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Self> {
        let same = shape == rhs_shape;
        let (sa, sb) = (
            broadcast_strides(shape, out),
            broadcast_strides(rhs_shape, out),
        );
        map_cpu2!(op.name(), self, rhs, |x, y| tk::binary(
            op, x, &sa, y, &sb, out, same
        ))
    }

    fn binary_scalar(&self, op: BinaryOp, s: f64, scalar_left: bool) -> Result<Self> {
        Ok(map_cpu!(self, |v| tk::binary_scalar(
            op,
            v,
            lit(v, s),
            scalar_left
        )))
    }

    fn select_weight(
        &self,
        max: bool,
        shape: &Shape,
        rhs: &Self,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Self> {
        let (sa, sb) = (
            broadcast_strides(shape, out),
            broadcast_strides(rhs_shape, out),
        );
        let name = if max { "maximum" } else { "minimum" };
        map_cpu2!(name, self, rhs, |x, y| {
            let (zero, half, one) = (lit(x, 0.0), lit(x, 0.5), lit(x, 1.0));
            broadcast_map(x, &sa, y, &sb, out, |x, y| {
                let wins = if max { x > y } else { x < y };
                if x == y {
                    half
                } else if wins || x.is_nan() {
                    one
                } else {
                    zero
                }
            })
        })
    }

    fn pow(&self, e: f64) -> Result<Self> {
        Ok(map_cpu!(self, |v| {
            let e = lit(v, e);
            // `Float::powf` (the libm crate) by name: `x.powf` on a concrete f32/f64 is std's
            // inherent method, the platform's bits.
            super::pow_special::pow_by_scalar(v, e)
        }))
    }

    fn pow_grad(&self, e: f64, g: &Self) -> Result<Self> {
        map_cpu2!("pow", self, g, |x, g| {
            let (e, em1) = (lit(x, e), lit(x, e - 1.0));
            let p = super::pow_special::pow_by_scalar(x, em1);
            zip_map(g, &p, |g, p| g * (e * p))
        })
    }

    fn clamp(&self, lo: Option<f64>, hi: Option<f64>) -> Result<Self> {
        Ok(map_cpu!(self, |v| {
            let lo = lo.map(|m| lit(v, m));
            let hi = hi.map(|m| lit(v, m));
            map(v, |x| {
                let x = match lo {
                    Some(lo) if x < lo => lo,
                    _ => x,
                };
                match hi {
                    Some(hi) if x > hi => hi,
                    _ => x,
                }
            })
        }))
    }

    fn clamp_grad(&self, lo: Option<f64>, hi: Option<f64>, g: &Self) -> Result<Self> {
        map_cpu2!("clamp", self, g, |x, g| {
            let lo = lo.map(|m| lit(x, m));
            let hi = hi.map(|m| lit(x, m));
            let zero = lit(x, 0.0);
            zip_map(g, x, |g, x| {
                let inside = lo.is_none_or(|lo| x >= lo) && hi.is_none_or(|hi| x <= hi);
                if inside {
                    g
                } else {
                    zero
                }
            })
        })
    }

    fn sum(&self, shape: &Shape, axis: Option<usize>) -> Result<Self> {
        let fast = super::parallel::fast_kernels();
        Ok(match axis {
            None if fast => map_cpu!(self, |v| vec![rk::sum_fast(v)]),
            None => map_cpu!(self, |v| vec![rk::sum_all(v)]),
            Some(a) => {
                let (o, l, i) = shape.split_at_axis(a);
                map_cpu!(self, |v| rk::sum_axis(v, o, l, i))
            }
        })
    }

    fn sum_to_shape(&self, from: &Shape, to: &Shape) -> Result<Self> {
        Ok(map_cpu!(self, |v| rk::sum_to_shape(v, from, to)))
    }

    fn broadcast_to(&self, from: &Shape, to: &Shape) -> Result<Self> {
        if !self.dtype().is_float() {
            // Data movement only: a gather through the broadcast view.
            let view = crate::strided::Strided::row_major(from).broadcast(from, to);
            return Ok(map_cpu_any!(self, |v| lk::gather(v, to.dims(), &view)));
        }
        let sx = broadcast_strides(from, to);
        Ok(map_cpu!(self, |v| broadcast_map(
            v,
            &sx,
            v,
            &sx,
            to,
            |a, _| a
        )))
    }

    fn permute(&self, dims: &[usize], perm: &[usize]) -> Result<Self> {
        Ok(map_cpu_any!(self, |v| lk::permute(v, dims, perm)))
    }

    fn slice(
        &self,
        outer: usize,
        len: usize,
        inner: usize,
        start: usize,
        end: usize,
    ) -> Result<Self> {
        Ok(map_cpu_any!(self, |v| lk::slice(
            v, outer, len, inner, start, end
        )))
    }

    fn unslice(
        &self,
        outer: usize,
        len: usize,
        inner: usize,
        start: usize,
        end: usize,
    ) -> Result<Self> {
        Ok(map_cpu!(self, |v| lk::unslice(
            v, outer, len, inner, start, end
        )))
    }

    fn index_select(&self, outer: usize, len: usize, inner: usize, idx: &[usize]) -> Result<Self> {
        Ok(map_cpu_any!(self, |v| lk::index_select(
            v, outer, len, inner, idx
        )))
    }

    fn index_add(&self, outer: usize, len: usize, inner: usize, idx: &[usize]) -> Result<Self> {
        Ok(map_cpu!(self, |v| lk::index_add(v, outer, len, inner, idx)))
    }

    fn concat(parts: &[(&Self, usize)], outer: usize, inner: usize) -> Result<Self> {
        let Some((first, _)) = parts.first() else {
            return Ok(CpuStorage::F64(Vec::new().into()));
        };
        if let Some((p, _)) = parts.iter().find(|(p, _)| p.dtype() != first.dtype()) {
            return Err(crate::error::dtype_mismatch(
                "concat",
                first.dtype(),
                p.dtype(),
            ));
        }
        let lens: Vec<usize> = parts.iter().map(|p| p.1).collect();
        // Every part has `first`'s variant (checked above).
        macro_rules! join {
            ($variant:ident) => {{
                let views: Vec<&[_]> = parts
                    .iter()
                    .map(|(p, _)| match p {
                        CpuStorage::$variant(v) => &v[..],
                        _ => unreachable!("dtypes checked above"),
                    })
                    .collect();
                CpuStorage::$variant(lk::concat(&views, &lens, outer, inner).into())
            }};
        }
        Ok(match first {
            CpuStorage::F32(_) => join!(F32),
            CpuStorage::F64(_) => join!(F64),
            CpuStorage::I64(_) => join!(I64),
            CpuStorage::Bool(_) => join!(Bool),
        })
    }

    fn take(&self, offsets: &[usize]) -> Result<Self> {
        Ok(map_cpu_any!(self, |v| offsets
            .iter()
            .map(|&o| v[o])
            .collect::<Vec<_>>()))
    }

    fn scatter_add(&self, base: Option<&Self>, offsets: &[usize], n: usize) -> Result<Self> {
        fn go<T: crate::dtype::Float>(
            src: &[T],
            base: Option<&[T]>,
            offs: &[usize],
            n: usize,
        ) -> Vec<T> {
            let mut out = base.map_or_else(|| vec![T::ZERO; n], <[T]>::to_vec);
            for (&o, &v) in offs.iter().zip(src) {
                out[o] = out[o] + v;
            }
            out
        }
        Ok(match (self, base) {
            (CpuStorage::F32(s), None) => CpuStorage::F32((go(s, None, offsets, n)).into()),
            (CpuStorage::F64(s), None) => CpuStorage::F64((go(s, None, offsets, n)).into()),
            (CpuStorage::F32(s), Some(CpuStorage::F32(b))) => {
                CpuStorage::F32((go(s, Some(b), offsets, n)).into())
            }
            (CpuStorage::F64(s), Some(CpuStorage::F64(b))) => {
                CpuStorage::F64((go(s, Some(b), offsets, n)).into())
            }
            (s, None) => return Err(crate::error::not_float("scatter_add", s.dtype())),
            (s, Some(b)) => {
                return Err(crate::error::dtype_mismatch(
                    "scatter_add",
                    s.dtype(),
                    b.dtype(),
                ))
            }
        })
    }

    fn masked_fill(&self, mask: &[bool], value: f64) -> Result<Self> {
        const CHUNK: usize = 1 << 13;
        Ok(map_cpu!(self, |v| {
            let fill = lit(v, value);
            // Threaded over chunks, a select per element on the widest vectors.
            super::uninit::filled(v.len(), CHUNK, v.len(), |ci, o| {
                let at = ci * CHUNK;
                // The fill is moved in: a captured reference would become a gather.
                let f = move |x, m: bool| std::hint::select_unpredictable(m, fill, x);
                super::wide_rows::flag_row(&v[at..], &mask[at..], o, &f);
            })
        }))
    }

    fn matmul(&self, rhs: &Self, d: MatmulDims) -> Result<Self> {
        let fast = super::parallel::fast_kernels();
        map_cpu2!("matmul", self, rhs, |x, y| super::matmul::matmul(
            x, y, d, fast
        ))
    }

    fn nll(&self, _rows: usize, classes: usize, target: &[usize]) -> Result<Self> {
        Ok(map_cpu!(self, |v| super::loss::nll(v, classes, target)))
    }

    fn nll_grad(&self, rows: usize, classes: usize, target: &[usize]) -> Result<Self> {
        Ok(map_cpu!(self, |g| super::loss::nll_grad(
            g[0], rows, classes, target
        )))
    }

    fn cross_entropy_grad(
        &self,
        g: &Self,
        _rows: usize,
        classes: usize,
        target: &[usize],
    ) -> Result<Self> {
        map_cpu2!("cross_entropy", self, g, |logp, g| {
            super::loss::cross_entropy_grad(logp, g[0], classes, target)
        })
    }

    fn conv2d(&self, w: &Self, b: Option<&Self>, d: ConvDims, act: Activation) -> Result<Self> {
        fn go<T: CpuElem + GemmElem>(
            x: &CpuStorage,
            w: &CpuStorage,
            b: Option<&CpuStorage>,
            d: ConvDims,
            act: Activation,
        ) -> Result<CpuStorage> {
            let (xv, wv) = (x.typed::<T>("conv2d")?, w.typed::<T>("conv2d")?);
            let bv = b.map(|b| b.typed::<T>("conv2d")).transpose()?;
            Ok(T::wrap(super::conv::conv2d(
                xv,
                wv,
                bv,
                d,
                act,
                super::parallel::fast_kernels(),
            )))
        }
        match self.dtype() {
            DType::F32 => go::<f32>(self, w, b, d, act),
            DType::F64 => go::<f64>(self, w, b, d, act),
            other => Err(crate::error::not_float("this operation", other)),
        }
    }

    fn conv2d_grads(&self, w: &Self, g: &Self, d: ConvDims, need: [bool; 3]) -> Result<[Self; 3]> {
        fn go<T: CpuElem + GemmElem>(
            x: &CpuStorage,
            w: &CpuStorage,
            g: &CpuStorage,
            d: ConvDims,
            [need_x, need_w, need_b]: [bool; 3],
        ) -> Result<[CpuStorage; 3]> {
            let op = "conv2d";
            let (xv, wv, gv) = (x.typed::<T>(op)?, w.typed::<T>(op)?, g.typed::<T>(op)?);
            let fast = super::parallel::fast_kernels();
            let (gx, gw) = super::conv_grad::conv2d_grads(gv, xv, wv, d, fast, [need_x, need_w])?;
            // Without a bias (ResNet's convolutions) its pass over gY is skipped.
            let gb = if need_b {
                super::conv::conv2d_grad_bias(gv, d)
            } else {
                vec![]
            };
            Ok([gx, gw, Some(gb)].map(|v| T::wrap(v.unwrap_or_default())))
        }
        match self.dtype() {
            DType::F32 => go::<f32>(self, w, g, d, need),
            DType::F64 => go::<f64>(self, w, g, d, need),
            other => Err(crate::error::not_float("this operation", other)),
        }
    }

    fn avg_pool2d(&self, d: PoolDims) -> Result<Self> {
        Ok(map_cpu!(self, |v| super::pool::avg_pool(v, d)))
    }

    fn avg_pool2d_grad(&self, d: PoolDims) -> Result<Self> {
        Ok(map_cpu!(self, |v| super::pool::avg_pool_grad(v, d)))
    }

    fn cumsum(&self, outer: usize, len: usize, inner: usize, reverse: bool) -> Result<Self> {
        Ok(map_cpu!(self, |v| rk::cumsum(
            v, outer, len, inner, reverse
        )))
    }

    fn max_axis(&self, outer: usize, len: usize, inner: usize) -> Result<(Self, Vec<usize>)> {
        Ok(match self {
            CpuStorage::F32(v) => {
                let (y, a) = rk::max_axis(v, outer, len, inner);
                (CpuStorage::F32((y).into()), a)
            }
            CpuStorage::F64(v) => {
                let (y, a) = rk::max_axis(v, outer, len, inner);
                (CpuStorage::F64((y).into()), a)
            }
            other => return Err(crate::error::not_float("max", other.dtype())),
        })
    }

    fn max_axis_grad(
        &self,
        winners: &Vec<usize>,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<Self> {
        Ok(map_cpu!(self, |g| rk::max_axis_grad(
            g, winners, outer, len, inner
        )))
    }

    fn max_pool2d(&self, d: PoolDims) -> Result<(Self, Vec<usize>)> {
        Ok(match self {
            CpuStorage::F32(v) => {
                let (y, a) = super::pool::max_pool(v, d);
                (CpuStorage::F32((y).into()), a)
            }
            CpuStorage::F64(v) => {
                let (y, a) = super::pool::max_pool(v, d);
                (CpuStorage::F64((y).into()), a)
            }
            other => return Err(crate::error::not_float("max_pool2d", other.dtype())),
        })
    }

    fn max_pool2d_grad(&self, winners: &Vec<usize>, d: PoolDims) -> Result<Self> {
        Ok(map_cpu!(self, |g| super::pool::max_pool_grad(
            g, winners, d
        )))
    }

    fn cross_entropy_probs(&self, p: &Self, rows: usize, classes: usize) -> Result<(Self, Self)> {
        super::cross_entropy_probs::on_storage(self, p, rows, classes)
    }

    fn cross_entropy_probs_grad(
        &self,
        p: &Self,
        g: &Self,
        rows: usize,
        classes: usize,
    ) -> Result<Self> {
        super::cross_entropy_probs::grad_on_storage(self, p, g, rows, classes)
    }

    fn pointwise_loss_sum(&self, t: &Self, term: LossTerm, _: &Shape) -> Result<Self> {
        use super::pointwise_loss as pl;
        if super::parallel::fast_kernels() {
            return map_cpu2!("loss", self, t, |x, t| vec![rk::sum_fast(&pl::all_terms(
                x, t, term
            ))]);
        }
        map_cpu2!("loss", self, t, |x, t| vec![pl::sum(x, t, term)])
    }

    fn pointwise_loss_grad(&self, t: &Self, w: &Self, term: LossTerm, _: &Shape) -> Result<Self> {
        // The one element as f64 (exact from either float), back to the kernel's type.
        let w: f64 = match w {
            CpuStorage::F32(w) => w[0] as f64,
            CpuStorage::F64(w) => w[0],
            other => return Err(crate::error::not_float("loss", other.dtype())),
        };
        map_cpu2!("loss", self, t, |x, t| {
            super::pointwise_loss::grad(x, t, crate::dtype::Float::from_f64(w), term)
        })
    }

    fn softmax(&self, outer: usize, len: usize, inner: usize, log: bool) -> Result<Self> {
        Ok(map_cpu!(self, |v| sk::softmax(v, outer, len, inner, log)))
    }

    fn prod(&self, outer: usize, len: usize, inner: usize) -> Result<Self> {
        Ok(map_cpu!(self, |v| super::prod::prod(
            v,
            [outer, len, inner]
        )))
    }

    fn prod_grad(&self, g: &Self, outer: usize, len: usize, inner: usize) -> Result<Self> {
        map_cpu2!("prod", self, g, |x, g| super::prod::prod_grad(
            x,
            g,
            [outer, len, inner]
        ))
    }

    fn var(&self, outer: usize, len: usize, inner: usize, divisor: f64) -> Result<(Self, Self)> {
        fn pair<T: crate::dtype::Float>(
            v: &[T],
            dims: [usize; 3],
            divisor: f64,
        ) -> (super::host_buf::HostBuf<T>, super::host_buf::HostBuf<T>) {
            let (var, mean) = super::variance::var(v, dims, lit(v, divisor));
            (var.into(), mean.into())
        }
        let dims = [outer, len, inner];
        Ok(match self {
            CpuStorage::F32(v) => {
                let (var, mean) = pair(v, dims, divisor);
                (CpuStorage::F32(var), CpuStorage::F32(mean))
            }
            CpuStorage::F64(v) => {
                let (var, mean) = pair(v, dims, divisor);
                (CpuStorage::F64(var), CpuStorage::F64(mean))
            }
            other => return Err(crate::error::not_float("var", other.dtype())),
        })
    }

    fn logsumexp(&self, outer: usize, len: usize, inner: usize, big: f64) -> Result<Self> {
        Ok(map_cpu!(self, |v| super::logsumexp::logsumexp(
            v,
            [outer, len, inner],
            lit(v, big)
        )))
    }

    fn softmax_grad(
        &self,
        g: &Self,
        outer: usize,
        len: usize,
        inner: usize,
        log: bool,
    ) -> Result<Self> {
        map_cpu2!("softmax", self, g, |yv, gv| sk::softmax_grad(
            yv, gv, outer, len, inner, log
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scalar_by_value_equals_a_broadcast_scalar() {
        let x = CpuStorage::F64((vec![1.5, -2.0, 0.25]).into());
        let n = Shape(vec![3]);
        let s = CpuStorage::F64((vec![4.0]).into());
        let scalar = Shape(vec![]);
        for op in [
            BinaryOp::Sub,
            BinaryOp::Div,
            BinaryOp::Pow,
            BinaryOp::Maximum,
        ] {
            let right = x.binary_scalar(op, 4.0, false).unwrap();
            assert_eq!(right, x.binary(op, &n, &s, &scalar, &n).unwrap(), "{op:?}");
            let left = x.binary_scalar(op, 4.0, true).unwrap();
            assert_eq!(left, s.binary(op, &scalar, &x, &n, &n).unwrap(), "{op:?}");
        }
        // 4 - x by hand.
        let left = x.binary_scalar(BinaryOp::Sub, 4.0, true).unwrap();
        assert_eq!(left, CpuStorage::F64((vec![2.5, 6.0, 3.75]).into()));
    }
}
