//! The tensor handle: shape, dtype, device, shared storage, and the autograd record (the `Op`
//! that produced it). Cloning a `Tensor` clones a pointer; storage is never mutated while
//! shared (only a sole owner may write: `Tensor::cpu_mut`).
//!
//! A tensor's values are its own row-major storage, or (CPU permute, slice, broadcast_to) a
//! strided view of another tensor's: no copy is made until an op asks for row-major values
//! (`storage`), and then only once.

use crate::autograd::{grad_enabled, Op};
use crate::storage::{CpuStorage, CudaStorage, Storage};
use crate::strided::Strided;
use crate::{DType, Device, Error, Result, Shape};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Where a tensor's values are.
#[derive(Clone)]
enum Values {
    /// Its own storage, row-major, exactly its elements.
    Dense(Arc<Storage>),
    /// A view of CPU storage it shares (shared with its clones through `detach` and friends,
    /// so the row-major copy is made once for all of them).
    View(Arc<View>),
}

struct View {
    base: Arc<Storage>,
    layout: Strided,
    /// The view's values in row-major order, copied when first asked for.
    dense: OnceLock<Arc<Storage>>,
}

pub struct TensorInner {
    id: usize,
    shape: Shape,
    values: Values,
    op: Option<Op>,
    requires_grad: bool,
    /// Computed from a compiled trace's leaves (even through `detach` or `no_grad`): its values
    /// are the trace's, so Python must not read them and a graph must not keep them.
    traced: bool,
    grad: Mutex<Option<Tensor>>,
}

#[derive(Clone)]
pub struct Tensor(Arc<TensorInner>);

impl Drop for TensorInner {
    // Dropping a long chain recursively (each node dropping its inputs) would overflow the
    // stack; unlink the graph iteratively instead.
    fn drop(&mut self) {
        let Some(op) = self.op.take() else { return };
        let mut stack = op.into_inputs();
        while let Some(t) = stack.pop() {
            if let Ok(mut inner) = Arc::try_unwrap(t.0) {
                if let Some(op) = inner.op.take() {
                    stack.extend(op.into_inputs());
                }
            }
        }
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={}, dtype={}, device={})",
            self.shape(),
            self.dtype(),
            self.device()
        )
    }
}

impl Tensor {
    fn build(shape: Shape, storage: Arc<Storage>, op: Option<Op>, requires_grad: bool) -> Tensor {
        Tensor::build_traced(shape, Values::Dense(storage), op, requires_grad, false)
    }
    fn build_traced(
        shape: Shape,
        values: Values,
        op: Option<Op>,
        requires_grad: bool,
        traced: bool,
    ) -> Tensor {
        Tensor(Arc::new(TensorInner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shape,
            values,
            op,
            requires_grad,
            traced,
            grad: Mutex::new(None),
        }))
    }

    /// A leaf tensor over CPU storage; the storage length must match the shape.
    pub fn from_cpu(storage: CpuStorage, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        // An unaddressable shape (possible with zero-size dims) is refused here, so no tensor
        // can reach NumPy or a kernel with strides that overflow.
        if storage.len() != shape.checked_numel()? {
            return Err(Error::shape(
                "tensor",
                format!(
                    "{} elements cannot have shape {} ({} elements)",
                    storage.len(),
                    shape,
                    shape.numel()
                ),
            ));
        }
        Ok(Tensor::build(
            shape,
            Arc::new(Storage::Cpu(storage)),
            None,
            false,
        ))
    }

    /// A leaf over any storage (CPU or device); the storage length must match the shape.
    pub fn from_storage(storage: impl Into<Storage>, shape: impl Into<Shape>) -> Result<Tensor> {
        let (storage, shape) = (storage.into(), shape.into());
        if storage.len() != shape.checked_numel()? {
            return Err(Error::shape(
                "tensor",
                format!("{} elements cannot have shape {}", storage.len(), shape),
            ));
        }
        Ok(Tensor::build(shape, Arc::new(storage), None, false))
    }

    pub fn from_vec_f64(v: Vec<f64>, shape: impl Into<Shape>) -> Result<Tensor> {
        Tensor::from_cpu(CpuStorage::F64((v).into()), shape)
    }
    pub fn from_vec_f32(v: Vec<f32>, shape: impl Into<Shape>) -> Result<Tensor> {
        Tensor::from_cpu(CpuStorage::F32((v).into()), shape)
    }

    pub fn zeros(shape: impl Into<Shape>, dtype: DType) -> Tensor {
        Tensor::full(shape, 0.0, dtype)
    }
    pub fn ones(shape: impl Into<Shape>, dtype: DType) -> Tensor {
        Tensor::full(shape, 1.0, dtype)
    }
    pub fn full(shape: impl Into<Shape>, value: f64, dtype: DType) -> Tensor {
        let shape = shape.into();
        let s = CpuStorage::full(dtype, shape.numel(), value);
        Tensor::build(shape, Arc::new(Storage::Cpu(s)), None, false)
    }
    /// Like `full` for user-given shapes: an overflowing shape or a failed allocation is an error.
    pub fn try_full(shape: impl Into<Shape>, value: f64, dtype: DType) -> Result<Tensor> {
        let shape = shape.into();
        let s = CpuStorage::try_full(dtype, shape.checked_numel()?, value)?;
        Tensor::from_cpu(s, shape)
    }
    /// `full` on `device` (filled there by a kernel for a CUDA device: `Storage::full`).
    pub fn full_on(
        shape: impl Into<Shape>,
        value: f64,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let shape = shape.into();
        let s = Storage::full(device, dtype, shape.checked_numel()?, value)?;
        Tensor::from_storage(s, shape)
    }
    pub fn scalar(value: f64, dtype: DType) -> Tensor {
        Tensor::full(Shape::scalar(), value, dtype)
    }

    /// The result of an op: records `op` only when grad mode is on and an input needs a grad.
    pub(crate) fn from_op(storage: impl Into<Storage>, shape: Shape, op: impl Into<Op>) -> Tensor {
        Tensor::from_op_values(Values::Dense(Arc::new(storage.into())), shape, op.into())
    }

    fn from_op_values(values: Values, shape: Shape, op: Op) -> Tensor {
        let track = grad_enabled() && op.inputs().iter().any(|t| t.requires_grad());
        let traced = op.inputs().iter().any(|t| t.traced());
        if track {
            Tensor::build_traced(shape, values, Some(op), true, traced)
        } else {
            Tensor::build_traced(shape, values, None, false, traced)
        }
    }

    /// The result of a layout op (recorded as `op`) that reads this tensor's elements through
    /// `layout`, given as a map from the new shape onto this tensor's own layout (`strided`): a
    /// view sharing the base storage, no copy. Only for CPU tensors (`viewable`).
    /// A layout that reads all of the base in order (a slice over a whole axis, a permute of
    /// axes of length 1) is the base's own values: the result is then row-major, sharing it.
    pub(crate) fn view_as(&self, shape: Shape, layout: Strided, op: impl Into<Op>) -> Tensor {
        let base = match &self.0.values {
            Values::Dense(s) => s,
            Values::View(v) => &v.base,
        };
        debug_assert!(layout.extent(shape.dims()) <= base.len());
        let values = if layout.is_whole(shape.dims(), base.len()) {
            Values::Dense(base.clone())
        } else {
            Values::View(Arc::new(View {
                base: base.clone(),
                layout,
                dense: OnceLock::new(),
            }))
        };
        Tensor::from_op_values(values, shape, op.into())
    }

    /// Whether layout ops may return views of this tensor: CPU tensors over memory tlrs owns. A
    /// device tensor's kernels read row-major buffers only; memory borrowed from NumPy or a
    /// DLPack producer may be written by its owner, and a view's row-major copy (made once)
    /// would then disagree with the ops that read the view in place, so those copy at once.
    pub(crate) fn viewable(&self) -> bool {
        match self.base_storage() {
            Storage::Cpu(c) => !c.is_borrowed(),
            Storage::Cuda(_) => false,
        }
    }

    /// Where this tensor's elements sit in the storage `base_storage` holds.
    pub fn strided(&self) -> Strided {
        match &self.0.values {
            Values::Dense(_) => Strided::row_major(self.shape()),
            Values::View(v) => v.layout.clone(),
        }
    }

    /// The storage this tensor's elements are read from through `strided`: its own, or for a
    /// view the viewed tensor's (no copy).
    pub fn base_storage(&self) -> &Storage {
        match &self.0.values {
            Values::Dense(s) => s,
            Values::View(v) => &v.base,
        }
    }

    /// Whether its storage holds exactly its elements in row-major order (false for a view
    /// that does not read all of its base in order).
    pub fn is_contiguous(&self) -> bool {
        matches!(self.0.values, Values::Dense(_))
    }

    /// The row-major values (for a view, copied on first use and kept).
    fn dense(&self) -> &Arc<Storage> {
        match &self.0.values {
            Values::Dense(s) => s,
            Values::View(v) => v.dense.get_or_init(|| {
                let Storage::Cpu(c) = &*v.base else {
                    unreachable!("views are made of CPU storage only (`viewable`)")
                };
                Arc::new(Storage::Cpu(c.gather(self.dims(), &v.layout)))
            }),
        }
    }

    /// Same storage, new shape (no copy of a row-major tensor); used by reshape.
    pub(crate) fn share_storage(&self, shape: Shape, op: impl Into<Op>) -> Tensor {
        let track = grad_enabled() && self.requires_grad();
        Tensor::build_traced(
            shape,
            Values::Dense(self.dense().clone()),
            if track { Some(op.into()) } else { None },
            track,
            self.traced(),
        )
    }

    pub fn id(&self) -> usize {
        self.0.id
    }
    pub fn shape(&self) -> &Shape {
        &self.0.shape
    }
    pub fn dims(&self) -> &[usize] {
        self.0.shape.dims()
    }
    pub fn rank(&self) -> usize {
        self.0.shape.rank()
    }
    pub fn numel(&self) -> usize {
        self.0.shape.numel()
    }
    pub fn dtype(&self) -> DType {
        self.base_storage().dtype()
    }
    pub fn device(&self) -> Device {
        self.base_storage().device()
    }
    /// Whether the elements are in host memory, where the CPU-only paths read them
    /// (`Storage::on_host`).
    pub fn on_host(&self) -> bool {
        self.base_storage().on_host()
    }
    /// The device storage, when the tensor lives on a CUDA device.
    pub fn cuda(&self) -> Option<&CudaStorage> {
        match self.base_storage() {
            Storage::Cuda(c) => Some(c),
            Storage::Cpu(_) => None,
        }
    }
    /// The values on the host (a copy back from a device tensor).
    pub fn host(&self) -> Result<std::borrow::Cow<'_, CpuStorage>> {
        self.dense().host()
    }
    /// The values in row-major order (a view is copied once, on first use).
    pub fn storage(&self) -> &Storage {
        self.dense()
    }
    pub fn cpu(&self) -> Result<&CpuStorage> {
        self.dense().cpu()
    }
    /// The CPU elements for writing in place, when nothing else can see them: this handle is
    /// the only one to its tensor, the tensor is a leaf, its storage is not shared with another
    /// tensor (a view, a detached copy) and tlrs owns the memory. `None` otherwise.
    pub fn cpu_mut(&mut self) -> Option<&mut CpuStorage> {
        let inner = Arc::get_mut(&mut self.0)?;
        if inner.op.is_some() {
            return None;
        }
        let Values::Dense(storage) = &mut inner.values else {
            return None;
        };
        match Arc::get_mut(storage)? {
            Storage::Cpu(c) => Some(c),
            Storage::Cuda(_) => None,
        }
    }
    pub fn op(&self) -> Option<&Op> {
        self.0.op.as_ref()
    }
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad
    }
    pub fn is_leaf(&self) -> bool {
        self.0.op.is_none()
    }
    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A new leaf sharing this tensor's storage, with the given `requires_grad`.
    pub fn detach_with_grad(&self, requires_grad: bool) -> Tensor {
        Tensor::build_traced(
            self.0.shape.clone(),
            self.0.values.clone(),
            None,
            requires_grad,
            self.traced(),
        )
    }
    /// A leaf of a compiled trace: requires grad, and everything computed from it is `traced`.
    pub fn trace_leaf(&self) -> Tensor {
        Tensor::build_traced(
            self.0.shape.clone(),
            self.0.values.clone(),
            None,
            true,
            true,
        )
    }
    /// This tensor (sharing storage) marked as computed from a trace's leaves when `traced`.
    pub(crate) fn with_traced(self, traced: bool) -> Tensor {
        if !traced || self.traced() {
            return self;
        }
        Tensor::build_traced(
            self.0.shape.clone(),
            self.0.values.clone(),
            self.0.op.clone(),
            self.0.requires_grad,
            true,
        )
    }
    pub fn traced(&self) -> bool {
        self.0.traced
    }
    pub fn detach(&self) -> Tensor {
        self.detach_with_grad(false)
    }

    pub fn grad(&self) -> Option<Tensor> {
        self.0.grad.lock().map(|g| g.clone()).unwrap_or(None)
    }
    pub fn set_grad(&self, g: Option<Tensor>) {
        if let Ok(mut slot) = self.0.grad.lock() {
            *slot = g;
        }
    }

    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        Ok(self.host()?.to_f64_vec())
    }

    /// The single value of a one-element tensor.
    pub fn item(&self) -> Result<f64> {
        if self.numel() != 1 {
            return Err(Error::shape(
                "item",
                format!(
                    "expected a tensor with one element, got shape {}",
                    self.shape()
                ),
            ));
        }
        Ok(self.host()?.to_f64_vec()[0])
    }

    /// Converts to `dtype` (a differentiable op; a no-op when it already has that dtype).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let s = self.storage().to_dtype(dtype)?;
        Ok(Tensor::from_op(
            s,
            self.shape().clone(),
            crate::ops::convert::Cast {
                x: self.clone(),
                to: dtype,
            },
        ))
    }

    /// Copies to `device` (a differentiable op; the same tensor when it is already there).
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        let s = self.storage().to_device(device)?;
        Ok(Tensor::from_op(
            s,
            self.shape().clone(),
            crate::ops::convert::ToDevice {
                x: self.clone(),
                to: device,
            },
        ))
    }
}
