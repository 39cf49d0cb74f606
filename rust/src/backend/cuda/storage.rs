//! Device storage: one immutable buffer on a CUDA device (or the emulator), shared by reference.

use super::{gpu, DeviceBuffer};
use crate::backend::cpu::CpuStorage;
use crate::op_table::{ChainGrad, ChainStep};
use crate::{DType, Result};
use std::sync::Arc;

/// A device buffer shared by the tensors that hold it.
#[derive(Clone)]
pub struct CudaStorage(pub Arc<DeviceBuffer>);

impl std::fmt::Debug for CudaStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Device buffers compare by identity: comparing contents would need a copy to the host.
impl PartialEq for CudaStorage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl CudaStorage {
    pub fn new(buf: DeviceBuffer) -> Self {
        CudaStorage(Arc::new(buf))
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn ordinal(&self) -> usize {
        self.0.gpu().ordinal()
    }
    /// The values copied to the host.
    pub fn download(&self) -> Result<CpuStorage> {
        let gpu = self.0.gpu();
        Ok(match self.dtype() {
            DType::F32 => CpuStorage::F32((gpu.download::<f32>(&self.0)?).into()),
            DType::F64 => CpuStorage::F64((gpu.download::<f64>(&self.0)?).into()),
            DType::I64 => CpuStorage::I64((gpu.download::<i64>(&self.0)?).into()),
            // Uploaded from bools, so every byte is 0 or 1.
            DType::Bool => CpuStorage::Bool(
                (gpu.download::<u8>(&self.0)?)
                    .into_iter()
                    .map(|b| b != 0)
                    .collect::<Vec<_>>()
                    .into(),
            ),
        })
    }
    /// A fused chain of elementwise steps over `inputs` (on this device; the op layer checked
    /// the steps and shapes), `n` output elements.
    pub fn chain(
        steps: &[ChainStep],
        inputs: &[&CudaStorage],
        head: usize,
        n: usize,
    ) -> Result<Self> {
        let bufs: Vec<&DeviceBuffer> = inputs.iter().map(|s| &*s.0).collect();
        super::ops::chain_forward(steps, &bufs, head, n).map(CudaStorage::new)
    }
    /// Full-size gradients of a fused chain's inputs marked in `want`, from the upstream `g`.
    pub fn chain_grads(
        steps: &[ChainStep],
        inputs: &[&CudaStorage],
        head: usize,
        g: &CudaStorage,
        want: &[bool],
    ) -> Result<Vec<ChainGrad<CudaStorage>>> {
        let bufs: Vec<&DeviceBuffer> = inputs.iter().map(|s| &*s.0).collect();
        Ok(super::ops::chain_backward(steps, &bufs, head, &g.0, want)?
            .into_iter()
            .map(|v| v.map(CudaStorage::new))
            .collect())
    }
    /// Copies host values to device `ordinal`.
    pub fn upload(ordinal: usize, s: &CpuStorage) -> Result<Self> {
        let gpu = gpu(ordinal)?;
        let buf = match s {
            CpuStorage::F32(v) => gpu.upload(DType::F32, v)?,
            CpuStorage::F64(v) => gpu.upload(DType::F64, v)?,
            CpuStorage::I64(v) => gpu.upload(DType::I64, v)?,
            CpuStorage::Bool(v) => gpu.upload(DType::Bool, v)?,
        };
        Ok(CudaStorage::new(buf))
    }
}
