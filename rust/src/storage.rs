//! Where a tensor's elements live: one enum over the devices, each variant a backend's storage
//! (backend/cpu/storage.rs, backend/cuda/storage.rs). Matching on it here, once per operation,
//! is the one place the device is chosen (see `Storage::unary` and friends). New storage on a
//! given device is made here too (`Storage::full`, `Storage::filled`, `Storage::to_device`), and
//! code elsewhere that must know whether CPU-only kernels apply asks `Storage::on_host`: outside
//! this file, the device's definition, the backends and the bindings, nothing names a device
//! (tests/test_layering.py checks it).

use crate::backend::cuda::{gpu, ops as cuda_ops, DeviceBuffer};
use crate::backend::BackendStorage;
use crate::geometry::{Activation, ConvDims, PlaneDims, PoolDims};
use crate::op_table::{BinaryOp, UnaryOp};
use crate::{DType, Device, Error, Result, Shape};
use std::borrow::Cow;
use std::sync::Arc;

impl From<CpuStorage> for Storage {
    fn from(s: CpuStorage) -> Self {
        Storage::Cpu(s)
    }
}
impl From<CudaStorage> for Storage {
    fn from(s: CudaStorage) -> Self {
        Storage::Cuda(s)
    }
}
impl From<DeviceBuffer> for Storage {
    fn from(b: DeviceBuffer) -> Self {
        Storage::Cuda(CudaStorage::new(b))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Storage {
    Cpu(CpuStorage),
    Cuda(CudaStorage),
}

pub use crate::alloc::{check_alloc, check_bytes, try_alloc};
pub use crate::backend::cpu::{CpuElem, CpuStorage};
pub use crate::backend::cuda::CudaStorage;
pub use crate::error::dtype_mismatch;

impl Storage {
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(c) => c.dtype(),
            Storage::Cuda(c) => c.dtype(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(c) => c.len(),
            Storage::Cuda(c) => c.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(c) => Device::Cuda(c.ordinal()),
        }
    }
    /// The CPU values; a device tensor is an error here (callers that accept either use `host`).
    pub fn cpu(&self) -> Result<&CpuStorage> {
        match self {
            Storage::Cpu(c) => Ok(c),
            Storage::Cuda(c) => Err(Error::Device {
                op: "cpu",
                expected: "the CPU for this operation (it has no CUDA kernel; move the tensor \
                           with .to('cpu'))"
                    .into(),
                got: format!("a tensor on cuda:{}", c.ordinal()),
            }),
        }
    }
    fn as_cpu(&self) -> Option<&CpuStorage> {
        match self {
            Storage::Cpu(c) => Some(c),
            Storage::Cuda(_) => None,
        }
    }
    fn as_cuda(&self) -> Option<&CudaStorage> {
        match self {
            Storage::Cuda(c) => Some(c),
            Storage::Cpu(_) => None,
        }
    }
    /// The values on the host: borrowed on the CPU, copied back from a device.
    pub fn host(&self) -> Result<Cow<'_, CpuStorage>> {
        match self {
            Storage::Cpu(c) => Ok(Cow::Borrowed(c)),
            Storage::Cuda(c) => Ok(Cow::Owned(c.download()?)),
        }
    }
    /// Whether the elements are in host memory, where the CPU-only paths (the fused chains, the
    /// per-image batch norm, the optimisers' in-place updates) read them.
    pub fn on_host(&self) -> bool {
        matches!(self, Storage::Cpu(_))
    }
    /// A copy of these values on `device`, through the host (copied back from a device first).
    /// Inverted dropout's scale on `device`: 1 / keep where keep > the counter-based uniform of
    /// (key, i), else 0; `host` makes it on the CPU, a kernel with the same bits on a device.
    pub(crate) fn dropout_scale(
        device: Device,
        dtype: DType,
        n: usize,
        (key, keep): (u64, f64),
        host: impl FnOnce() -> CpuStorage,
    ) -> Result<Storage> {
        let Device::Cuda(ordinal) = device else {
            return Ok(Storage::Cpu(host()));
        };
        Ok(cuda_ops::dropout_mask(&gpu(ordinal)?, dtype, n, key, keep)?.into())
    }

    /// The values converted to `dtype` (each rounded once), on this storage's device.
    pub fn to_dtype(&self, dtype: DType) -> Result<Storage> {
        if dtype == DType::I64 && self.dtype().is_float() {
            // Truncation toward zero, as NumPy and PyTorch cast; a value with no int64 (NaN,
            // an infinity, beyond 2**63) is refused rather than saturated.
            const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2**63
            let host = self.host()?;
            let bad = host
                .to_f64_vec()
                .into_iter()
                .find(|v| !(v.is_finite() && *v >= -LIMIT && *v < LIMIT));
            if let Some(v) = bad {
                return Err(Error::arg(
                    "to",
                    format!(
                        "cannot convert {v} to int64: expected finite values within int64's range"
                    ),
                ));
            }
        }
        Ok(match self {
            Storage::Cpu(c) => c.to_dtype(dtype).into(),
            // Casts from or to integer and bool values run on the host, then come back.
            Storage::Cuda(c) if !dtype.is_float() || !c.dtype().is_float() => {
                CudaStorage::upload(c.ordinal(), &c.download()?.to_dtype(dtype))?.into()
            }
            Storage::Cuda(c) => cuda_ops::cast_buffer(&c.0, dtype)?.into(),
        })
    }

    pub fn to_device(&self, device: Device) -> Result<Storage> {
        let host = self.host()?;
        Ok(match device {
            Device::Cpu => host.into_owned().into(),
            Device::Cuda(n) => CudaStorage::upload(n, &host)?.into(),
        })
    }
    /// `n` elements of `dtype`, each `value`, on `device` (filled there by a kernel on a CUDA
    /// device). A failed allocation is an error, not an abort.
    pub fn full(device: Device, dtype: DType, n: usize, value: f64) -> Result<Storage> {
        match device {
            Device::Cpu => CpuStorage::try_full(dtype, n, value).map(Storage::Cpu),
            // Integer and bool values are made on the host (the device kernels are float only).
            Device::Cuda(ordinal) if !dtype.is_float() => {
                CudaStorage::upload(ordinal, &CpuStorage::try_full(dtype, n, value)?)
                    .map(Storage::Cuda)
            }
            Device::Cuda(ordinal) => {
                let buf = gpu(ordinal)?.alloc(dtype, n)?;
                cuda_ops::fill_into(&buf, value)?;
                Ok(buf.into())
            }
        }
    }
    /// `n` elements of `dtype` on `device` as `fill` describes them. On the CPU they are the
    /// values `host` computes (init.rs's binary64 and binary32 formulas). On a CUDA device a
    /// kernel makes constant and sampled fills there, with no host copy and the same bits as
    /// `host` (rust/tests/cuda_emu_ops.rs checks it), and a payload is rounded to `dtype` and
    /// uploaded.
    pub(crate) fn filled(
        device: Device,
        dtype: DType,
        n: usize,
        fill: Fill<'_>,
        host: impl FnOnce() -> CpuStorage,
    ) -> Result<Storage> {
        let Device::Cuda(ordinal) = device else {
            return Ok(Storage::Cpu(host()));
        };
        let g = gpu(ordinal)?;
        let buf = match fill {
            Fill::Constant(c) => return Storage::full(device, dtype, n, c),
            Fill::Payload(v) => match dtype {
                DType::F64 => g.upload(dtype, v)?,
                DType::F32 => g.upload(dtype, &v.iter().map(|&x| x as f32).collect::<Vec<_>>())?,
                other => return Err(crate::error::not_float("init", other)),
            },
            Fill::Sampled { lo, hi, seed } => {
                cuda_ops::init_uniform(&g, dtype, n, crate::rng::key_of(seed, 0), lo, hi - lo)?
            }
        };
        Ok(buf.into())
    }
}

/// What an initialiser puts in each element (`Storage::filled`), with the Xavier/Kaiming bounds
/// already worked out.
pub(crate) enum Fill<'a> {
    /// Every element this value.
    Constant(f64),
    /// These values, row-major, rounded once to the dtype.
    Payload(&'a [f64]),
    /// Uniform on [lo, hi) from the runtime-init sampler (`rng::runtime_init_unit*`) with `seed`.
    Sampled { lo: f64, hi: f64, seed: u64 },
}

/// A gradient on another device than the winners its forward kept.
fn winners_elsewhere(op: &'static str, g: &Storage) -> Error {
    Error::Device {
        op,
        expected: "the gradient on the device of the forward pass".into(),
        got: format!("a gradient on {}", g.device()),
    }
}

/// Operands on two devices where one was expected.
fn device_mismatch(op: &'static str, a: &Storage, b: &Storage) -> Error {
    Error::Device {
        op,
        expected: format!("one device ({})", a.device()),
        got: format!("{} and {}", a.device(), b.device()),
    }
}

// The one place an operation picks its device: each method matches the storages once and
// calls that backend's `BackendStorage` implementation (backend/storage_ops.rs).
macro_rules! on_one_device {
    ($op:expr, ($first:expr $(, $other:expr)*), |$s:ident $(, $o:ident)*| $call:expr) => {
        match ($first, $($other),*) {
            (Storage::Cpu($s), $(Storage::Cpu($o)),*) => $call.map(Storage::Cpu),
            // Integer and bool values on a device move through the host (the kernels are
            // float only): the CPU's operation, its result copied back.
            (Storage::Cuda($s), $(Storage::Cuda($o)),*)
                if !$s.dtype().is_float() $(&& $s.ordinal() == $o.ordinal())* =>
            {
                let ordinal = $s.ordinal();
                let $s = &$s.download()?;
                $( let $o = &$o.download()?; )*
                $call.and_then(|c| CudaStorage::upload(ordinal, &c)).map(Storage::Cuda)
            }
            (Storage::Cuda($s), $(Storage::Cuda($o)),*)
                if true $(&& $s.ordinal() == $o.ordinal())* => $call.map(Storage::Cuda),
            #[allow(unreachable_patterns)]
            _ => {
                let first: &Storage = $first;
                let other = [$($other),*]
                    .into_iter()
                    .find(|o: &&Storage| o.device() != first.device())
                    .unwrap_or(first);
                Err(device_mismatch($op, first, other))
            }
        }
    };
}

/// Where a max or max pooling kept its winners for backward, on the device that computed them.
#[derive(Clone)]
pub enum Winners {
    Cpu(Arc<Vec<usize>>),
    Cuda(Arc<crate::backend::cuda::IndexBuffer>),
}

impl Winners {
    /// The winners as host indices (`usize::MAX` where a window had none).
    pub fn to_host(&self) -> Result<Vec<usize>> {
        match self {
            Winners::Cpu(w) => Ok(w.to_vec()),
            Winners::Cuda(w) => Ok(w
                .gpu()
                .download_indices(w)?
                .into_iter()
                .map(|a| usize::try_from(a).unwrap_or(usize::MAX))
                .collect()),
        }
    }
}

impl Storage {
    /// `self op other` elementwise (one dtype, one shape, one device): a bool mask. Masks live
    /// in host memory in this version (the index ops read them there), so CUDA operands are
    /// compared after a copy back, and the mask is a CPU tensor.
    pub fn compare(&self, op: crate::op_table::CompareOp, other: &Storage) -> Result<Storage> {
        if self.device() != other.device() {
            return Err(device_mismatch(op.name(), self, other));
        }
        let (a, b) = (self.host()?, other.host()?);
        a.compare(op, &b).map(Storage::Cpu)
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
    /// output elements. CPU only; the op layer runs the steps one by one on devices.
    pub fn chain(
        &self,
        steps: &[crate::op_table::ChainStep],
        inputs: &[&Storage],
        head: usize,
        n: usize,
    ) -> Result<Storage> {
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
