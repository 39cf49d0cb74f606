//! The operations on `Storage`: each matches the storages once and calls that device's
//! `BackendStorage` implementation (`on_one_device!`, storage.rs), or, for the ones that keep
//! winners or take several kinds of operand, spells the match out.

use super::{device_mismatch, winners_elsewhere, CpuStorage, CudaStorage, Storage, Winners};
use crate::backend::BackendStorage;
use crate::geometry::{Activation, ConvDims, LossTerm, PlaneDims, PoolDims, ScoreRows};
use crate::op_table::{BinaryOp, UnaryOp};
use crate::{Error, Result, Shape};
use std::sync::Arc;

impl Storage {
    /// `self op other` elementwise (one dtype, one device; equal lengths, or `other` one value
    /// compared with every element): a bool mask. Masks live
    /// in host memory in this version (the index ops read them there), so CUDA operands are
    /// compared after a copy back, and the mask is a CPU tensor.
    pub fn compare(&self, op: crate::op_table::CompareOp, other: &Storage) -> Result<Storage> {
        if self.device() != other.device() {
            return Err(device_mismatch(op.name(), self, other));
        }
        let (a, b) = (self.host()?, other.host()?);
        a.compare(op, &b).map(Storage::Cpu)
    }
    /// The stable sorting positions of the first `k` values of every lane along the middle axis
    /// of [outer, n, inner] (`backend/cpu/sort.rs`), found on the host: a device's values are
    /// copied back.
    pub fn sorted_positions(
        &self,
        op: &'static str,
        dims: [usize; 3],
        descending: bool,
        k: usize,
    ) -> Result<Vec<i64>> {
        use crate::backend::cpu::sort::sorted_positions as positions;
        let host = self.host()?;
        Ok(match &*host {
            CpuStorage::F32(v) => positions(v, dims, descending, k),
            CpuStorage::F64(v) => positions(v, dims, descending, k),
            CpuStorage::I64(v) => positions(v, dims, descending, k),
            CpuStorage::Bool(_) => {
                return Err(Error::DType {
                    op,
                    expected: "a float or int64 tensor".into(),
                    got: "bool".into(),
                })
            }
        })
    }
    /// Int64 values in host memory (positions, indices).
    pub fn host_ints(v: Vec<i64>) -> Storage {
        Storage::Cpu(CpuStorage::I64(v.into()))
    }
    pub fn cumsum(&self, o: usize, l: usize, i: usize, reverse: bool) -> Result<Storage> {
        on_one_device!("cumsum", (self), |x| x.cumsum(o, l, i, reverse))
    }
    pub fn max_axis(&self, o: usize, l: usize, i: usize) -> Result<(Storage, Winners)> {
        Ok(match self {
            Storage::Cpu(x) => {
                let (y, w) = x.max_axis(o, l, i)?;
                (Storage::Cpu(y), Winners::Cpu(Arc::new(w)))
            }
            Storage::Cuda(x) => {
                let (y, w) = x.max_axis(o, l, i)?;
                (Storage::Cuda(y), Winners::Cuda(Arc::new(w)))
            }
        })
    }
    /// The max gradient from the upstream gradient `self` and the forward's winners.
    pub fn max_axis_grad(&self, w: &Winners, o: usize, l: usize, i: usize) -> Result<Storage> {
        match (self, w) {
            (Storage::Cpu(g), Winners::Cpu(w)) => g.max_axis_grad(w, o, l, i).map(Storage::Cpu),
            (Storage::Cuda(g), Winners::Cuda(w)) if g.ordinal() == w.gpu().ordinal() => {
                g.max_axis_grad(w, o, l, i).map(Storage::Cuda)
            }
            _ => Err(winners_elsewhere("max", self)),
        }
    }
    pub fn max_pool2d(&self, d: PoolDims) -> Result<(Storage, Winners)> {
        Ok(match self {
            Storage::Cpu(x) => {
                let (y, w) = x.max_pool2d(d)?;
                (Storage::Cpu(y), Winners::Cpu(Arc::new(w)))
            }
            Storage::Cuda(x) => {
                let (y, w) = x.max_pool2d(d)?;
                (Storage::Cuda(y), Winners::Cuda(Arc::new(w)))
            }
        })
    }
    pub fn max_pool2d_grad(&self, w: &Winners, d: PoolDims) -> Result<Storage> {
        match (self, w) {
            (Storage::Cpu(g), Winners::Cpu(w)) => g.max_pool2d_grad(w, d).map(Storage::Cpu),
            (Storage::Cuda(g), Winners::Cuda(w)) if g.ordinal() == w.gpu().ordinal() => {
                g.max_pool2d_grad(w, d).map(Storage::Cuda)
            }
            _ => Err(winners_elsewhere("max_pool2d", self)),
        }
    }
    pub fn unary(&self, op: UnaryOp) -> Result<Storage> {
        on_one_device!(op.name(), (self), |s| s.unary(op))
    }
    pub fn unary_grad(&self, op: UnaryOp, y: &Storage, g: &Storage) -> Result<Storage> {
        on_one_device!(op.name(), (self, y, g), |s, y, g| s.unary_grad(op, y, g))
    }
    /// `op` and the intermediate its gradient reuses, where the device keeps one.
    pub fn unary_keeping(&self, op: UnaryOp) -> Result<Option<(Storage, Storage)>> {
        Ok(match self {
            Storage::Cpu(x) => x.unary_keeping(op)?.map(|(y, k)| (y.into(), k.into())),
            Storage::Cuda(x) => x.unary_keeping(op)?.map(|(y, k)| (y.into(), k.into())),
        })
    }
    pub fn unary_grad_kept(&self, op: UnaryOp, kept: &Storage, g: &Storage) -> Result<Storage> {
        on_one_device!(op.name(), (self, kept, g), |s, k, g| s
            .unary_grad_kept(op, k, g))
    }
    pub fn binary(
        &self,
        op: BinaryOp,
        shape: &Shape,
        rhs: &Storage,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Storage> {
        on_one_device!(op.name(), (self, rhs), |a, b| a
            .binary(op, shape, b, rhs_shape, out))
    }
    pub fn binary_scalar(&self, op: BinaryOp, s: f64, scalar_left: bool) -> Result<Storage> {
        on_one_device!(op.name(), (self), |x| x.binary_scalar(op, s, scalar_left))
    }
    pub fn select_weight(
        &self,
        max: bool,
        shape: &Shape,
        rhs: &Storage,
        rhs_shape: &Shape,
        out: &Shape,
    ) -> Result<Storage> {
        let name = if max { "maximum" } else { "minimum" };
        on_one_device!(name, (self, rhs), |a, b| a
            .select_weight(max, shape, b, rhs_shape, out))
    }
    pub fn pow(&self, e: f64) -> Result<Storage> {
        on_one_device!("pow", (self), |x| x.pow(e))
    }
    pub fn pow_grad(&self, e: f64, g: &Storage) -> Result<Storage> {
        on_one_device!("pow", (self, g), |x, g| x.pow_grad(e, g))
    }
    pub fn clamp(&self, lo: Option<f64>, hi: Option<f64>) -> Result<Storage> {
        on_one_device!("clamp", (self), |x| x.clamp(lo, hi))
    }
    pub fn clamp_grad(&self, lo: Option<f64>, hi: Option<f64>, g: &Storage) -> Result<Storage> {
        on_one_device!("clamp", (self, g), |x, g| x.clamp_grad(lo, hi, g))
    }
    pub fn sum(&self, shape: &Shape, axis: Option<usize>) -> Result<Storage> {
        on_one_device!("sum", (self), |x| x.sum(shape, axis))
    }
    pub fn sum_to_shape(&self, from: &Shape, to: &Shape) -> Result<Storage> {
        on_one_device!("sum_to_shape", (self), |x| x.sum_to_shape(from, to))
    }
    pub fn broadcast_to(&self, from: &Shape, to: &Shape) -> Result<Storage> {
        on_one_device!("broadcast_to", (self), |x| x.broadcast_to(from, to))
    }
    pub fn permute(&self, dims: &[usize], perm: &[usize]) -> Result<Storage> {
        on_one_device!("permute", (self), |x| x.permute(dims, perm))
    }
    pub fn slice(&self, o: usize, l: usize, i: usize, start: usize, end: usize) -> Result<Storage> {
        on_one_device!("slice", (self), |x| x.slice(o, l, i, start, end))
    }
    pub fn unslice(
        &self,
        o: usize,
        l: usize,
        i: usize,
        start: usize,
        end: usize,
    ) -> Result<Storage> {
        on_one_device!("slice", (self), |x| x.unslice(o, l, i, start, end))
    }
    /// `self + unslice(g)` (see `unslice`) in one pass on the CPU; elsewhere the two ops.
    pub fn add_unsliced(
        &self,
        g: &Storage,
        shape: &Shape,
        [o, l, i]: [usize; 3],
        start: usize,
        end: usize,
    ) -> Result<Storage> {
        match (self, g) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                Ok(Storage::Cpu(p.add_unsliced(g, o, l, i, start, end)?))
            }
            _ => {
                let u = g.unslice(o, l, i, start, end)?;
                self.binary(BinaryOp::Add, shape, &u, shape, shape)
            }
        }
    }
    pub fn index_select(&self, o: usize, l: usize, i: usize, idx: &[usize]) -> Result<Storage> {
        on_one_device!("index_select", (self), |x| x.index_select(o, l, i, idx))
    }
    pub fn index_add(&self, o: usize, l: usize, i: usize, idx: &[usize]) -> Result<Storage> {
        on_one_device!("index_select", (self), |x| x.index_add(o, l, i, idx))
    }
    /// `parts` (with their lengths along the axis) joined; all on one device.
    pub fn concat(parts: &[(&Storage, usize)], outer: usize, inner: usize) -> Result<Storage> {
        let first = parts
            .first()
            .ok_or_else(|| Error::arg("concat", "expected at least one tensor, got none"))?
            .0;
        if let Some((other, _)) = parts.iter().find(|(p, _)| p.device() != first.device()) {
            return Err(device_mismatch("concat", first, other));
        }
        match first {
            Storage::Cpu(_) => {
                let cpu: Vec<_> = parts
                    .iter()
                    .filter_map(|(p, l)| Some((p.as_cpu()?, *l)))
                    .collect();
                CpuStorage::concat(&cpu, outer, inner).map(Storage::Cpu)
            }
            // Integer and bool values on a device join on the host (the kernels are float only).
            Storage::Cuda(c) if !c.dtype().is_float() => {
                let host = parts
                    .iter()
                    .map(|(p, l)| Ok((p.host()?.into_owned(), *l)))
                    .collect::<Result<Vec<_>>>()?;
                let refs: Vec<_> = host.iter().map(|(p, l)| (p, *l)).collect();
                let joined = CpuStorage::concat(&refs, outer, inner)?;
                CudaStorage::upload(c.ordinal(), &joined).map(Storage::Cuda)
            }
            Storage::Cuda(_) => {
                let dev: Vec<_> = parts
                    .iter()
                    .filter_map(|(p, l)| Some((p.as_cuda()?, *l)))
                    .collect();
                CudaStorage::concat(&dev, outer, inner).map(Storage::Cuda)
            }
        }
    }
    pub fn take(&self, offsets: &[usize]) -> Result<Storage> {
        on_one_device!("gather", (self), |x| x.take(offsets))
    }
    pub fn masked_fill(&self, mask: &[bool], value: f64) -> Result<Storage> {
        on_one_device!("masked_fill", (self), |x| x.masked_fill(mask, value))
    }
    /// `self` added into `base` (or zeros of `n`) at `offsets`; `base` on `self`'s device.
    pub fn scatter_add(
        &self,
        base: Option<&Storage>,
        offsets: &[usize],
        n: usize,
    ) -> Result<Storage> {
        match (self, base) {
            (Storage::Cpu(s), None) => s.scatter_add(None, offsets, n).map(Storage::Cpu),
            (Storage::Cpu(s), Some(Storage::Cpu(b))) => {
                s.scatter_add(Some(b), offsets, n).map(Storage::Cpu)
            }
            (Storage::Cuda(s), None) => s.scatter_add(None, offsets, n).map(Storage::Cuda),
            (Storage::Cuda(s), Some(Storage::Cuda(b))) if s.ordinal() == b.ordinal() => {
                s.scatter_add(Some(b), offsets, n).map(Storage::Cuda)
            }
            (_, Some(b)) => Err(device_mismatch("scatter_add", self, b)),
        }
    }
    pub fn matmul(&self, rhs: &Storage, d: crate::geometry::MatmulDims) -> Result<Storage> {
        on_one_device!("matmul", (self, rhs), |a, b| a.matmul(b, d))
    }
    /// The batch of products of `self` read as `a` and `rhs` read as `b` in place (the
    /// operands of views; CPU only, as views are).
    pub fn matmul_strided(
        &self,
        a: &crate::geometry::MatOperand,
        rhs: &Storage,
        b: &crate::geometry::MatOperand,
        mnk: [usize; 3],
    ) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(x), Storage::Cpu(y)) => x.matmul_strided(a, y, b, mnk).map(Storage::Cpu),
            _ => Err(device_mismatch("matmul", self, rhs)),
        }
    }
    pub fn nll(&self, rows: usize, classes: usize, target: &[usize]) -> Result<Storage> {
        on_one_device!("cross_entropy", (self), |x| x.nll(rows, classes, target))
    }
    pub fn cross_entropy_grad(
        &self,
        g: &Storage,
        rows: usize,
        classes: usize,
        target: &[usize],
    ) -> Result<Storage> {
        on_one_device!("cross_entropy", (self, g), |logp, g| logp
            .cross_entropy_grad(g, rows, classes, target))
    }
    /// The log-probabilities of the logits `self` and the cross-entropy against `p`.
    pub fn cross_entropy_probs(
        &self,
        p: &Storage,
        rows: usize,
        classes: usize,
    ) -> Result<(Storage, Storage)> {
        match (self, p) {
            (Storage::Cpu(x), Storage::Cpu(p)) => {
                let (logp, loss) = x.cross_entropy_probs(p, rows, classes)?;
                Ok((Storage::Cpu(logp), Storage::Cpu(loss)))
            }
            (Storage::Cuda(x), Storage::Cuda(pc)) if x.ordinal() == pc.ordinal() => {
                let (logp, loss) = x.cross_entropy_probs(pc, rows, classes)?;
                Ok((Storage::Cuda(logp), Storage::Cuda(loss)))
            }
            _ => Err(device_mismatch("cross_entropy", self, p)),
        }
    }
    pub fn cross_entropy_probs_grad(
        &self,
        p: &Storage,
        g: &Storage,
        rows: usize,
        classes: usize,
    ) -> Result<Storage> {
        on_one_device!("cross_entropy", (self, p, g), |logp, p, g| logp
            .cross_entropy_probs_grad(p, g, rows, classes))
    }
    /// A pointwise loss's sum of its terms of `self` and `t` (one element).
    pub fn pointwise_loss_sum(
        &self,
        t: &Storage,
        term: LossTerm,
        shape: &Shape,
    ) -> Result<Storage> {
        on_one_device!("loss", (self, t), |x, t| x
            .pointwise_loss_sum(t, term, shape))
    }
    /// That loss's gradient for `self` from the mean's gradient `w` (one element).
    pub fn pointwise_loss_grad(
        &self,
        t: &Storage,
        w: &Storage,
        term: LossTerm,
        shape: &Shape,
    ) -> Result<Storage> {
        on_one_device!("loss", (self, t, w), |x, t, w| x
            .pointwise_loss_grad(t, w, term, shape))
    }
    pub fn nll_grad(&self, rows: usize, classes: usize, target: &[usize]) -> Result<Storage> {
        on_one_device!("cross_entropy", (self), |g| g
            .nll_grad(rows, classes, target))
    }
    /// conv2d of `self` with `w` and the optional bias `b`, all on one device, then `act`.
    pub fn conv2d(
        &self,
        w: &Storage,
        b: Option<&Storage>,
        d: ConvDims,
        act: Activation,
    ) -> Result<Storage> {
        if let Some(b) = b.filter(|b| b.device() != self.device()) {
            return Err(device_mismatch("conv2d", self, b));
        }
        match (self, w) {
            // The bias was checked to be on this device, so the conversions below drop nothing.
            (Storage::Cpu(x), Storage::Cpu(w)) => x
                .conv2d(w, b.and_then(Storage::as_cpu), d, act)
                .map(Storage::Cpu),
            (Storage::Cuda(x), Storage::Cuda(wc)) if x.ordinal() == wc.ordinal() => x
                .conv2d(wc, b.and_then(Storage::as_cuda), d, act)
                .map(Storage::Cuda),
            _ => Err(device_mismatch("conv2d", self, w)),
        }
    }
    pub fn conv2d_grads(
        &self,
        w: &Storage,
        g: &Storage,
        d: ConvDims,
        need: [bool; 3],
    ) -> Result<[Storage; 3]> {
        match (self, w, g) {
            (Storage::Cpu(x), Storage::Cpu(w), Storage::Cpu(g)) => {
                Ok(x.conv2d_grads(w, g, d, need)?.map(Storage::Cpu))
            }
            (Storage::Cuda(x), Storage::Cuda(wc), Storage::Cuda(gc))
                if x.ordinal() == wc.ordinal() && x.ordinal() == gc.ordinal() =>
            {
                Ok(x.conv2d_grads(wc, gc, d, need)?.map(Storage::Cuda))
            }
            _ => {
                let other = if w.device() != self.device() { w } else { g };
                Err(device_mismatch("conv2d", self, other))
            }
        }
    }
    /// Attention's weights from its scores (backend/cpu/attention_softmax.rs). CPU only; the
    /// op layer composes them from mul, masked_fill and softmax on devices.
    pub fn attention_softmax(&self, d: ScoreRows, scale: f64) -> Result<Storage> {
        Ok(Storage::Cpu(self.cpu()?.attention_softmax(d, scale)?))
    }
    /// The gradient of `attention_softmax` (`self` its output); CPU only.
    pub fn attention_softmax_grad(&self, g: &Storage, d: ScoreRows, scale: f64) -> Result<Storage> {
        let g = self.same_cpu("attention_softmax", g)?;
        Ok(Storage::Cpu(
            self.cpu()?.attention_softmax_grad(g, d, scale)?,
        ))
    }
    /// The fused per-image batch norm: (y, per-plane statistics). CPU only; the op layer
    /// builds it from elementwise ops and reductions on devices.
    pub fn batch_norm_per_image(
        &self,
        w: Option<&Storage>,
        b: Option<&Storage>,
        d: PlaneDims,
        eps: f64,
    ) -> Result<(Storage, Storage)> {
        let (w, b) = (
            w.map(|t| self.same_cpu("batch_norm", t)).transpose()?,
            b.map(|t| self.same_cpu("batch_norm", t)).transpose()?,
        );
        let (y, st) = self.cpu()?.batch_norm_per_image(w, b, d, eps)?;
        Ok((Storage::Cpu(y), Storage::Cpu(st)))
    }
    /// Gradients (x, weight, bias) of the fused per-image batch norm of `self`; CPU only.
    pub fn batch_norm_per_image_grads(
        &self,
        w: Option<&Storage>,
        stats: &Storage,
        g: &Storage,
        d: PlaneDims,
        want: [bool; 3],
    ) -> Result<[Option<Storage>; 3]> {
        let w = w.map(|t| self.same_cpu("batch_norm", t)).transpose()?;
        let (st, g) = (
            self.same_cpu("batch_norm", stats)?,
            self.same_cpu("batch_norm", g)?,
        );
        Ok(self
            .cpu()?
            .batch_norm_per_image_grads(w, st, g, d, want)?
            .map(|v| v.map(Storage::Cpu)))
    }
    /// A fused chain of elementwise steps over `inputs` (`self` among them, at `head`): `n`
    /// output elements, on the inputs' device.
    pub fn chain(
        &self,
        steps: &[crate::op_table::ChainStep],
        inputs: &[&Storage],
        head: usize,
        n: usize,
    ) -> Result<Storage> {
        if let Storage::Cuda(_) = self {
            let dev = self.cuda_all("fused_chain", inputs)?;
            return CudaStorage::chain(steps, &dev, head, n).map(Storage::Cuda);
        }
        let cpu = self.cpu_all("fused_chain", inputs)?;
        Ok(Storage::Cpu(crate::backend::cpu::fused::chain_forward(
            steps, &cpu, head, n,
        )?))
    }
    /// Full-size gradients of a fused chain's inputs marked in `want`, from its output `y`
    /// and upstream `g`.
    pub fn chain_grads(
        &self,
        steps: &[crate::op_table::ChainStep],
        inputs: &[&Storage],
        head: usize,
        (y, g): (&Storage, &Storage),
        want: &[bool],
    ) -> Result<Vec<crate::op_table::ChainGrad<Storage>>> {
        if let Storage::Cuda(_) = self {
            let dev = self.cuda_all("fused_chain", inputs)?;
            let g = self.cuda_all("fused_chain", &[g])?[0];
            return Ok(CudaStorage::chain_grads(steps, &dev, head, g, want)?
                .into_iter()
                .map(|v| v.map(Storage::Cuda))
                .collect());
        }
        let cpu = self.cpu_all("fused_chain", inputs)?;
        let (y, g) = (
            self.same_cpu("fused_chain", y)?,
            self.same_cpu("fused_chain", g)?,
        );
        Ok(
            crate::backend::cpu::fused::chain_backward(steps, &cpu, head, y, g, want)?
                .into_iter()
                .map(|v| v.map(Storage::Cpu))
                .collect(),
        )
    }
    /// Every one of `inputs` on the device `self` is on (one ordinal).
    fn cuda_all<'a>(
        &self,
        op: &'static str,
        inputs: &[&'a Storage],
    ) -> Result<Vec<&'a CudaStorage>> {
        inputs
            .iter()
            .map(|t| match t.as_cuda() {
                Some(c) if t.device() == self.device() => Ok(c),
                _ => Err(device_mismatch(op, self, t)),
            })
            .collect()
    }
    /// Every one of `inputs` on the CPU, where `self` is.
    fn cpu_all<'a>(&self, op: &'static str, inputs: &[&'a Storage]) -> Result<Vec<&'a CpuStorage>> {
        self.cpu()?;
        inputs.iter().map(|t| self.same_cpu(op, t)).collect()
    }
    /// `other`'s CPU values, where `self` is on the CPU too.
    fn same_cpu<'a>(&self, op: &'static str, other: &'a Storage) -> Result<&'a CpuStorage> {
        match other {
            Storage::Cpu(c) => Ok(c),
            Storage::Cuda(_) => Err(device_mismatch(op, self, other)),
        }
    }
    pub fn avg_pool2d(&self, d: PoolDims) -> Result<Storage> {
        on_one_device!("avg_pool2d", (self), |x| x.avg_pool2d(d))
    }
    pub fn avg_pool2d_grad(&self, d: PoolDims) -> Result<Storage> {
        on_one_device!("avg_pool2d", (self), |g| g.avg_pool2d_grad(d))
    }
    pub fn softmax(&self, outer: usize, len: usize, inner: usize, log: bool) -> Result<Storage> {
        on_one_device!("softmax", (self), |x| x.softmax(outer, len, inner, log))
    }
    pub fn logsumexp(&self, outer: usize, len: usize, inner: usize, big: f64) -> Result<Storage> {
        on_one_device!("logsumexp", (self), |x| x.logsumexp(outer, len, inner, big))
    }
    pub fn prod(&self, outer: usize, len: usize, inner: usize) -> Result<Storage> {
        on_one_device!("prod", (self), |x| x.prod(outer, len, inner))
    }
    pub fn prod_grad(
        &self,
        g: &Storage,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<Storage> {
        on_one_device!("prod", (self, g), |x, g| x.prod_grad(g, outer, len, inner))
    }
    /// (variance, mean) over the middle axis of [outer, len, inner].
    pub fn var(
        &self,
        outer: usize,
        len: usize,
        inner: usize,
        divisor: f64,
    ) -> Result<(Storage, Storage)> {
        match self {
            Storage::Cpu(x) => {
                let (v, m) = x.var(outer, len, inner, divisor)?;
                Ok((Storage::Cpu(v), Storage::Cpu(m)))
            }
            Storage::Cuda(x) => {
                let (v, m) = x.var(outer, len, inner, divisor)?;
                Ok((Storage::Cuda(v), Storage::Cuda(m)))
            }
        }
    }
    pub fn softmax_grad(
        &self,
        g: &Storage,
        outer: usize,
        len: usize,
        inner: usize,
        log: bool,
    ) -> Result<Storage> {
        on_one_device!("softmax", (self, g), |y, g| y
            .softmax_grad(g, outer, len, inner, log))
    }
}
