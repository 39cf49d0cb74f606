//! NCCL collectives on device buffers, through libnccl loaded at run time (`nccl_lib`; the
//! `nvidia-nccl-cu13` wheel supplies libnccl.so.2). A communicator joins `size` ranks that share
//! one unique id (rank 0 makes it; the Python side sends it over MPI). Every collective runs on
//! the device's tlrs stream, after the kernels that produced its input. No reduction here sums
//! in NCCL's order unless asked (`all_reduce_sum`): data parallelism gathers and folds itself.

use std::sync::Arc;

use super::nccl_lib::{self, NcclLib, RawComm, UniqueId};
use super::{emulated, gpu, DeviceBuffer, Gpu};
use crate::{DType, Error, Result};

pub use super::nccl_lib::UNIQUE_ID_BYTES;

const NCCL_HINT: &str = "`pip install nvidia-nccl-cu13` (NVIDIA's NCCL wheel), or add the \
directory holding libnccl.so.2 to LD_LIBRARY_PATH";

fn unavailable(msg: impl Into<String>) -> Error {
    Error::CudaUnavailable(format!("NCCL is not available: {}", msg.into()))
}

/// The loaded library, once cuda:0 is usable and libnccl loads.
fn loaded() -> Result<&'static NcclLib> {
    if emulated() {
        return Err(unavailable(
            "the CUDA emulator (TLRS_CUDA_EMULATOR=1) has no NCCL; NCCL needs a real GPU",
        ));
    }
    gpu(0).map_err(|e| unavailable(format!("it needs a usable CUDA device: {e}")))?;
    nccl_lib::lib().map_err(|e| unavailable(format!("{e}; fix: {NCCL_HINT}")))
}

/// NCCL's version (e.g. 22803 for 2.28.3) when NCCL can be used with cuda:0, else why not: the
/// emulator has no NCCL, CUDA itself may be unusable, or libnccl.so.2 may be missing.
pub fn probe() -> Result<i32> {
    usable().map(|(_, version)| version)
}

/// The library and its version, once NCCL is known to be usable with cuda:0 (`probe`).
fn usable() -> Result<(&'static NcclLib, i32)> {
    let lib = loaded()?;
    let mut v = 0;
    // SAFETY: ncclGetVersion writes one int.
    let code = unsafe { (lib.get_version)(&mut v) };
    lib.check("ncclGetVersion", code, std::ptr::null_mut())
        .map_err(Error::Cuda)?;
    Ok((lib, v))
}

/// Where the libnccl in use was loaded from (after a successful `probe`).
pub fn library_path() -> Option<String> {
    nccl_lib::lib().ok().map(|l| l.path.clone())
}

/// A new unique id (rank 0 calls this and sends the bytes to the other ranks).
pub fn unique_id() -> Result<Vec<u8>> {
    let (lib, _) = usable()?;
    let mut id = UniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    // SAFETY: ncclGetUniqueId fills the 128-byte id.
    let code = unsafe { (lib.get_unique_id)(&mut id) };
    lib.check("ncclGetUniqueId", code, std::ptr::null_mut())
        .map_err(Error::Cuda)?;
    Ok(id.internal.iter().map(|&c| c as u8).collect())
}

/// One rank's communicator on one device.
pub struct Comm {
    lib: &'static NcclLib,
    raw: RawComm,
    gpu: Arc<Gpu>,
    rank: usize,
    size: usize,
}

// NCCL communicators may be used from any thread, one call at a time; the Python side holds
// the communicator behind a lock.
unsafe impl Send for Comm {}
unsafe impl Sync for Comm {}

fn nccl_type(dtype: DType) -> std::ffi::c_int {
    match dtype {
        DType::F32 => nccl_lib::NCCL_FLOAT32,
        DType::F64 => nccl_lib::NCCL_FLOAT64,
        _ => unreachable!("device buffers are float only (Gpu::alloc refuses other dtypes)"),
    }
}

impl Comm {
    /// Joins the communicator of `size` ranks with this `id` as `rank`, on device `ordinal`.
    /// Blocks until every rank has joined (NCCL's own behaviour).
    pub fn init(ordinal: usize, size: usize, rank: usize, id: &[u8]) -> Result<Comm> {
        let (lib, _) = usable()?;
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
        let mut uid = UniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        for (dst, &b) in uid.internal.iter_mut().zip(id) {
            *dst = b as std::ffi::c_char;
        }
        let g = gpu(ordinal)?;
        let (n, r) = (
            i32::try_from(size).map_err(|_| Error::arg("nccl", format!("world size {size}")))?,
            rank as i32,
        );
        let mut raw: RawComm = std::ptr::null_mut();
        let joined = g.with_raw_stream(|_| {
            // SAFETY: `raw` receives the communicator; the id came from ncclGetUniqueId.
            let code = unsafe { (lib.comm_init_rank)(&mut raw, n, uid, r) };
            lib.check("ncclCommInitRank", code, std::ptr::null_mut())
                .map_err(Error::Cuda)
        });
        joined.unwrap_or_else(|| Err(unavailable("the CUDA emulator has no NCCL")))?;
        Ok(Comm {
            lib,
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
                expected: format!("cuda:{} (the communicator's device)", self.gpu.ordinal()),
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
            *mut std::ffi::c_void,
        ) -> std::ffi::c_int,
    ) -> Result<DeviceBuffer> {
        self.check(buf, op)?;
        let out = self.gpu.alloc(buf.dtype(), out_len)?;
        let (send, recv) = (buf.address() as *const _, out.address() as *mut _);
        self.gpu
            .with_raw_stream(|stream| {
                let code = call(send, recv, stream as *mut std::ffi::c_void);
                self.lib.check(what, code, self.raw).map_err(Error::Cuda)
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
            |send, recv, stream| unsafe {
                (self.lib.all_gather)(send, recv, n, dt, self.raw, stream)
            },
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
                (self.lib.broadcast)(send, recv, n, dt, root as i32, self.raw, stream)
            },
        )
    }

    /// The elementwise sum over ranks in NCCL's own order (fast; its bits may depend on the
    /// world size and topology).
    pub fn all_reduce_sum(&self, buf: &DeviceBuffer) -> Result<DeviceBuffer> {
        let (n, dt) = (buf.len(), nccl_type(buf.dtype()));
        let sum = nccl_lib::NCCL_SUM;
        // SAFETY: both buffers hold n elements on this device.
        self.collective(
            "all_reduce",
            "ncclAllReduce",
            buf,
            n,
            |send, recv, stream| unsafe {
                (self.lib.all_reduce)(send, recv, n, dt, sum, self.raw, stream)
            },
        )
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // SAFETY: the communicator is live and dropped once.
        unsafe { (self.lib.comm_destroy)(self.raw) };
    }
}
