//! NCCL collectives on device buffers, through cudarc's NCCL bindings loaded at run time (the
//! `nvidia-nccl-cu13` wheel supplies libnccl.so.2). A communicator joins `size` ranks that share
//! one unique id (rank 0 makes it; the Python side sends it over MPI). Every collective runs on
//! the device's tlrs stream, after the kernels that produced its input. No reduction here sums
//! in NCCL's order unless asked (`all_reduce_sum`): data parallelism gathers and folds itself.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::nccl::{result, sys};

use super::{emulated, gpu, DeviceBuffer, Gpu};
use crate::{DType, Error, Result};

/// Bytes of an NCCL unique id.
pub const UNIQUE_ID_BYTES: usize = 128;

const NCCL_HINT: &str = "`pip install nvidia-nccl-cu13` (NVIDIA's NCCL wheel), or add the \
directory holding libnccl.so.2 to LD_LIBRARY_PATH";

fn unavailable(msg: impl Into<String>) -> Error {
    Error::CudaUnavailable(format!("NCCL is not available: {}", msg.into()))
}

fn nccl_err(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Cuda(format!("NCCL {what} failed: {e:?}"))
}

/// Runs a call that loads libnccl: cudarc panics when the library is missing.
fn caught<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(unavailable(format!(
            "{what}: cudarc panicked loading libnccl"
        )))
    })
}

/// NCCL's version (e.g. 22803 for 2.28.3) when NCCL can be used with cuda:0, else why not: the
/// emulator has no NCCL, CUDA itself may be unusable, or libnccl.so.2 may be missing.
pub fn probe() -> Result<i32> {
    if emulated() {
        return Err(unavailable(
            "the CUDA emulator (TLRS_CUDA_EMULATOR=1) has no NCCL; NCCL needs a real GPU",
        ));
    }
    gpu(0).map_err(|e| unavailable(format!("it needs a usable CUDA device: {e}")))?;
    // SAFETY: only tries to open the library by its candidate names.
    let present = catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
    if !present {
        return Err(unavailable(format!(
            "cannot load libnccl.so.2; fix: {NCCL_HINT}"
        )));
    }
    caught("ncclGetVersion", || {
        result::get_nccl_version().map_err(|e| nccl_err("ncclGetVersion", e))
    })
}

/// A new unique id (rank 0 calls this and sends the bytes to the other ranks).
pub fn unique_id() -> Result<Vec<u8>> {
    probe()?;
    let id = caught("ncclGetUniqueId", || {
        result::get_uniqueid().map_err(|e| nccl_err("ncclGetUniqueId", e))
    })?;
    Ok(id.internal.iter().map(|&c| c as u8).collect())
}

/// One rank's communicator on one device.
pub struct Comm {
    raw: sys::ncclComm_t,
    gpu: Arc<Gpu>,
    rank: usize,
    size: usize,
}

// NCCL communicators may be used from any thread, one call at a time; the Python side holds
// the communicator behind a lock.
unsafe impl Send for Comm {}
unsafe impl Sync for Comm {}

fn nccl_type(dtype: DType) -> sys::ncclDataType_t {
    match dtype {
        DType::F32 => sys::ncclDataType_t::ncclFloat32,
        DType::F64 => sys::ncclDataType_t::ncclFloat64,
    }
}

impl Comm {
    /// Joins the communicator of `size` ranks with this `id` as `rank`, on device `ordinal`.
    /// Blocks until every rank has joined (NCCL's own behaviour).
    pub fn init(ordinal: usize, size: usize, rank: usize, id: &[u8]) -> Result<Comm> {
        probe()?;
        if id.len() != UNIQUE_ID_BYTES {
            return Err(Error::arg(
                "nccl",
                format!(
                    "expected a {UNIQUE_ID_BYTES}-byte unique id, got {} bytes",
                    id.len()
                ),
            ));
        }
        if rank >= size {
            return Err(Error::arg(
                "nccl",
                format!("rank {rank} is not below the world size {size}"),
            ));
        }
        let mut uid = sys::ncclUniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        for (dst, &b) in uid.internal.iter_mut().zip(id) {
            *dst = b as std::ffi::c_char;
        }
        let g = gpu(ordinal)?;
        let mut raw: sys::ncclComm_t = std::ptr::null_mut();
        let joined = g.with_raw_stream(|_| {
            caught("ncclCommInitRank", || {
                // SAFETY: `raw` receives the communicator; the id came from ncclGetUniqueId.
                unsafe { result::comm_init_rank(&mut raw, size as i32, uid, rank as i32) }
                    .map(|_| ())
                    .map_err(|e| nccl_err("ncclCommInitRank", e))
            })
        });
        joined.unwrap_or_else(|| Err(unavailable("the CUDA emulator has no NCCL")))?;
        Ok(Comm {
            raw,
            gpu: g,
            rank,
            size,
        })
    }
    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn ordinal(&self) -> usize {
        self.gpu.ordinal()
    }

    fn check(&self, buf: &DeviceBuffer, op: &'static str) -> Result<()> {
        if buf.gpu().ordinal() != self.gpu.ordinal() {
            return Err(Error::Device {
                op,
                expected: format!(
                    "a tensor on cuda:{} (the communicator's device)",
                    self.gpu.ordinal()
                ),
                got: format!("cuda:{}", buf.gpu().ordinal()),
            });
        }
        Ok(())
    }

    /// Runs one collective from `buf` into a new buffer of `out_len` elements on this device,
    /// on the tlrs stream; `call(send, recv, stream)` is the NCCL call named `what`.
    fn collective(
        &self,
        op: &'static str,
        what: &str,
        buf: &DeviceBuffer,
        out_len: usize,
        call: impl FnOnce(
            *const std::ffi::c_void,
            *mut std::ffi::c_void,
            sys::cudaStream_t,
        ) -> std::result::Result<result::NcclStatus, result::NcclError>,
    ) -> Result<DeviceBuffer> {
        self.check(buf, op)?;
        let out = self.gpu.alloc(buf.dtype(), out_len)?;
        let (send, recv) = (buf.address() as *const _, out.address() as *mut _);
        self.gpu
            .with_raw_stream(|stream| {
                call(send, recv, stream as sys::cudaStream_t)
                    .map(|_| ())
                    .map_err(|e| nccl_err(what, e))
            })
            .unwrap_or_else(|| {
                Err(unavailable(format!(
                    "{what}: the CUDA emulator has no NCCL"
                )))
            })?;
        Ok(out)
    }

    /// Every rank's buffer, concatenated in rank order (`size * len` elements).
    pub fn all_gather(&self, buf: &DeviceBuffer) -> Result<DeviceBuffer> {
        let total = buf
            .len()
            .checked_mul(self.size)
            .ok_or_else(|| Error::OutOfMemory("all_gather: the result is too large".into()))?;
        let (n, dt) = (buf.len(), nccl_type(buf.dtype()));
        // SAFETY: `send` holds n elements and `recv` size * n, both on this device.
        self.collective(
            "all_gather",
            "ncclAllGather",
            buf,
            total,
            |send, recv, stream| unsafe { result::all_gather(send, recv, n, dt, self.raw, stream) },
        )
    }

    /// Rank `root`'s buffer on every rank (every rank passes a buffer of the same length).
    pub fn broadcast(&self, buf: &DeviceBuffer, root: usize) -> Result<DeviceBuffer> {
        let (n, dt) = (buf.len(), nccl_type(buf.dtype()));
        // SAFETY: both buffers hold n elements on this device.
        self.collective(
            "broadcast",
            "ncclBroadcast",
            buf,
            n,
            |send, recv, stream| unsafe {
                result::broadcast(send, recv, n, dt, root as i32, self.raw, stream)
            },
        )
    }

    /// The elementwise sum over ranks in NCCL's own order (fast; its bits may depend on the
    /// world size and topology).
    pub fn all_reduce_sum(&self, buf: &DeviceBuffer) -> Result<DeviceBuffer> {
        let (n, dt) = (buf.len(), nccl_type(buf.dtype()));
        let sum = sys::ncclRedOp_t::ncclSum;
        // SAFETY: both buffers hold n elements on this device.
        self.collective(
            "all_reduce",
            "ncclAllReduce",
            buf,
            n,
            |send, recv, stream| unsafe {
                result::all_reduce(send, recv, n, dt, sum, self.raw, stream)
            },
        )
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // SAFETY: the communicator is live and dropped once.
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
            result::comm_destroy(self.raw)
        }));
    }
}
