//! Bindings for NCCL (`tlrs.distributed` with backend "nccl"): the probe, unique ids and a
//! communicator whose collectives take and give CUDA tensors.

use super::errors::guard;
use super::tensor::PyTensor;
use crate::backend::cuda::nccl::{self, Comm};
use crate::storage::{CudaStorage, Storage};
use crate::{Error, Shape, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Mutex;

/// (usable, NCCL's version and library such as "2.28.9 (/path/libnccl.so.2)", or why it cannot
/// be used).
#[pyfunction]
pub fn nccl_probe() -> (bool, String) {
    match nccl::probe() {
        Ok(v) => (
            true,
            format!(
                "{}.{}.{} ({})",
                v / 10000,
                (v / 100) % 100,
                v % 100,
                nccl::library_path().unwrap_or_default()
            ),
        ),
        Err(e) => (false, e.to_string()),
    }
}

/// A new NCCL unique id (128 bytes) for rank 0 to send to the others.
#[pyfunction]
pub fn nccl_unique_id<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
    let id = guard(nccl::unique_id)?;
    Ok(PyBytes::new(py, &id))
}

#[pyclass(name = "NcclComm", module = "tlrs._core", frozen)]
pub struct PyNcclComm(Mutex<Comm>);

fn device_buffer(t: &Tensor, op: &'static str) -> crate::Result<CudaStorage> {
    match t.storage() {
        Storage::Cuda(c) => Ok(c.clone()),
        Storage::Cpu(_) => Err(Error::Device {
            op,
            expected: "a CUDA device (NCCL moves device memory; CPU tensors go over MPI)".into(),
            got: "cpu".into(),
        }),
    }
}

impl PyNcclComm {
    fn with<R>(&self, f: impl FnOnce(&Comm) -> crate::Result<R>) -> PyResult<R> {
        let comm = self.0.lock().map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err("NCCL communicator lock poisoned")
        })?;
        guard(|| f(&comm))
    }
}

#[pymethods]
impl PyNcclComm {
    /// Joins the communicator of `size` ranks sharing `unique_id`, as `rank`, on cuda:`ordinal`.
    #[new]
    fn new(
        py: Python<'_>,
        ordinal: usize,
        size: usize,
        rank: usize,
        unique_id: Vec<u8>,
    ) -> PyResult<Self> {
        py.detach(|| guard(|| Comm::init(ordinal, size, rank, &unique_id)))
            .map(|c| PyNcclComm(Mutex::new(c)))
    }
    #[getter]
    fn rank(&self) -> PyResult<usize> {
        self.with(|c| Ok(c.rank()))
    }
    #[getter]
    fn size(&self) -> PyResult<usize> {
        self.with(|c| Ok(c.size()))
    }
    /// Every rank's tensor stacked in rank order: shape [size, *t.shape], on the device.
    fn all_gather(&self, py: Python<'_>, t: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let t = t.inner.clone();
        py.detach(|| {
            self.with(|c| {
                let buf = device_buffer(&t, "all_gather")?;
                let out = c.all_gather(&buf.0)?;
                let mut dims = vec![c.size()];
                dims.extend_from_slice(t.dims());
                Tensor::from_storage(CudaStorage::new(out), Shape(dims))
            })
        })
        .map(PyTensor::new)
    }
    /// Rank `root`'s tensor on every rank.
    fn broadcast(&self, py: Python<'_>, t: PyRef<'_, PyTensor>, root: usize) -> PyResult<PyTensor> {
        let t = t.inner.clone();
        py.detach(|| {
            self.with(|c| {
                let out = c.broadcast(&device_buffer(&t, "broadcast")?.0, root)?;
                Tensor::from_storage(CudaStorage::new(out), t.shape().clone())
            })
        })
        .map(PyTensor::new)
    }
    /// The sum over ranks in NCCL's own order.
    fn all_reduce_sum(&self, py: Python<'_>, t: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let t = t.inner.clone();
        py.detach(|| {
            self.with(|c| {
                let out = c.all_reduce_sum(&device_buffer(&t, "all_reduce")?.0)?;
                Tensor::from_storage(CudaStorage::new(out), t.shape().clone())
            })
        })
        .map(PyTensor::new)
    }
}
