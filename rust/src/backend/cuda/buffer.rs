//! Device memory and kernel arguments. A `DeviceBuffer` is untyped bytes on one GPU (or in the
//! emulator's host memory) tagged with the element type; storage is immutable once filled, like
//! CPU storage, so a buffer is shared through an `Arc` and never written after its kernel ran.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr};

use super::gpu::Gpu;
use crate::backend::cpu::host_buf::Owner;
use crate::{DType, Error, Result};

/// Most dimensions a strided kernel indexes (the kernels' `Gather` holds this many).
pub const MAX_RANK: usize = 8;

/// A strided view for kernels: element `i` of a row-major array of shape `dims[..rank]` lives at
/// `offset + Σ index_d · strides[d]` in the source. Passed to kernels by value.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gather {
    pub rank: u64,
    pub offset: u64,
    pub dims: [u64; MAX_RANK],
    pub strides: [u64; MAX_RANK],
}

// SAFETY: plain old data of u64s with the C layout the kernels declare.
unsafe impl DeviceRepr for Gather {}

impl Gather {
    /// A view of `dims` with `strides` starting at `offset`; more than MAX_RANK dims is an error.
    pub fn new(op: &'static str, dims: &[usize], strides: &[usize], offset: usize) -> Result<Self> {
        if dims.len() > MAX_RANK || strides.len() != dims.len() {
            return Err(Error::arg(
                op,
                format!(
                    "CUDA kernels index at most {MAX_RANK} dimensions, got a rank-{} tensor",
                    dims.len()
                ),
            ));
        }
        let mut g = Gather {
            rank: dims.len() as u64,
            offset: offset as u64,
            dims: [1; MAX_RANK],
            strides: [0; MAX_RANK],
        };
        for (d, (&n, &s)) in dims.iter().zip(strides).enumerate() {
            g.dims[d] = n as u64;
            g.strides[d] = s as u64;
        }
        Ok(g)
    }

    /// The contiguous row-major view of `dims`.
    pub fn contiguous(op: &'static str, dims: &[usize]) -> Result<Self> {
        let mut strides = vec![0; dims.len()];
        let mut s = 1;
        for d in (0..dims.len()).rev() {
            strides[d] = s;
            s *= dims[d];
        }
        Gather::new(op, dims, &strides, 0)
    }

    /// Where element `i` (row-major over `dims`) lives; the kernels' `gather_offset`.
    pub fn offset_of(&self, mut i: u64) -> u64 {
        let mut off = self.offset;
        for d in (0..self.rank as usize).rev() {
            let q = i / self.dims[d];
            off += (i - q * self.dims[d]) * self.strides[d];
            i = q;
        }
        off
    }
}

pub(crate) enum Mem {
    Real(CudaSlice<u8>),
    /// The emulator's memory: u64 words so every element type is aligned.
    Emu(Box<[u64]>),
    /// Another library's memory (imported through DLPack) at this address: device memory on a
    /// GPU, host memory in the emulator; `owner` keeps it allocated and is never written through.
    Borrowed {
        addr: u64,
        _owner: Owner,
    },
}

/// `len` elements of `dtype` on `gpu`.
pub struct DeviceBuffer {
    gpu: Arc<Gpu>,
    pub(crate) mem: Mem,
    dtype: DType,
    len: usize,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer({} x {} on cuda:{})",
            self.len,
            self.dtype,
            self.gpu.ordinal()
        )
    }
}

/// The bytes one element of `dtype` takes; index buffers use `DType::F64`'s width for u64.
pub fn elem_bytes(dtype: DType) -> usize {
    dtype.size_in_bytes()
}

impl DeviceBuffer {
    pub(crate) fn from_parts(gpu: Arc<Gpu>, mem: Mem, dtype: DType, len: usize) -> Self {
        DeviceBuffer {
            gpu,
            mem,
            dtype,
            len,
        }
    }
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The address kernels receive (a device pointer, or a host pointer in the emulator).
    pub fn address(&self) -> u64 {
        match &self.mem {
            Mem::Real(s) => {
                let (ptr, _sync) = s.device_ptr(s.stream());
                ptr
            }
            Mem::Emu(words) => words.as_ptr() as u64,
            Mem::Borrowed { addr, .. } => *addr,
        }
    }
    /// `len` elements of `dtype` at `addr` on `gpu`, owned by another library.
    ///
    /// # Safety
    /// `addr` must be valid for reads of `len` elements of `dtype` on `gpu` (host memory in the
    /// emulator), aligned for the dtype, for as long as `owner` lives, and not written meanwhile.
    pub unsafe fn borrowed(
        gpu: Arc<Gpu>,
        addr: u64,
        dtype: DType,
        len: usize,
        owner: Owner,
    ) -> Self {
        DeviceBuffer::from_parts(
            gpu,
            Mem::Borrowed {
                addr,
                _owner: owner,
            },
            dtype,
            len,
        )
    }
}

/// Device memory of u64 indices (gather offsets, masks, class targets, argmax winners): a type
/// of its own, so an index buffer cannot be read as floats or passed where values go. Kernels
/// take it as `const u64*` (or `u64*` where they write the winners).
pub struct IndexBuffer(DeviceBuffer);

impl IndexBuffer {
    /// Wraps 8-byte words; only `Gpu::alloc_indices`/`upload_indices` make one.
    pub(crate) fn from_words(words: DeviceBuffer) -> Self {
        IndexBuffer(words)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn gpu(&self) -> &Arc<Gpu> {
        self.0.gpu()
    }
    pub(crate) fn words(&self) -> &DeviceBuffer {
        &self.0
    }
}

impl std::fmt::Debug for IndexBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "IndexBuffer({} x u64 on cuda:{})",
            self.len(),
            self.gpu().ordinal()
        )
    }
}

/// One kernel argument. `Scalar` is converted to the kernel's element type.
pub enum Arg<'a> {
    Buf(&'a DeviceBuffer),
    /// An index buffer (`const u64*` / `u64*` in the kernel).
    Index(&'a IndexBuffer),
    /// A buffer that may be absent: a null pointer when `None`.
    OptBuf(Option<&'a DeviceBuffer>),
    U64(u64),
    I64(i64),
    Scalar(f64),
    /// A `double` parameter whatever the kernel's element type.
    F64(f64),
    Gather(Gather),
}

impl From<u64> for Arg<'_> {
    fn from(v: u64) -> Self {
        Arg::U64(v)
    }
}
impl From<usize> for Arg<'_> {
    fn from(v: usize) -> Self {
        Arg::U64(v as u64)
    }
}
impl<'a> From<&'a DeviceBuffer> for Arg<'a> {
    fn from(b: &'a DeviceBuffer) -> Self {
        Arg::Buf(b)
    }
}
impl<'a> From<&'a IndexBuffer> for Arg<'a> {
    fn from(b: &'a IndexBuffer) -> Self {
        Arg::Index(b)
    }
}
impl From<Gather> for Arg<'_> {
    fn from(g: Gather) -> Self {
        Arg::Gather(g)
    }
}

/// An argument resolved to the value the kernel reads, kept alive for the launch.
#[derive(Clone, Copy)]
pub(crate) enum Value {
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Gather(Gather),
}

pub(crate) fn resolve(args: &[Arg<'_>], dtype: DType) -> Vec<Value> {
    args.iter()
        .map(|a| match a {
            Arg::Buf(b) => Value::U64(b.address()),
            Arg::Index(b) => Value::U64(b.words().address()),
            Arg::OptBuf(b) => Value::U64(b.map_or(0, |b| b.address())),
            Arg::U64(v) => Value::U64(*v),
            Arg::I64(v) => Value::I64(*v),
            Arg::Scalar(v) => match dtype {
                DType::F32 => Value::F32(*v as f32),
                _ => Value::F64(*v),
            },
            Arg::F64(v) => Value::F64(*v),
            Arg::Gather(g) => Value::Gather(*g),
        })
        .collect()
}

impl Value {
    /// A pointer to the value, as the launch APIs take them (`void** kernelParams`).
    pub(crate) fn as_param(&self) -> *mut std::ffi::c_void {
        match self {
            Value::U64(v) => v as *const u64 as *mut _,
            Value::I64(v) => v as *const i64 as *mut _,
            Value::F32(v) => v as *const f32 as *mut _,
            Value::F64(v) => v as *const f64 as *mut _,
            Value::Gather(g) => g as *const Gather as *mut _,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_offsets_follow_strides() {
        // A [2, 3] view of a transposed [3, 2] array: element (i, j) lives at j*2 + i.
        let g = Gather::new("t", &[2, 3], &[1, 2], 0).unwrap();
        let offs: Vec<u64> = (0..6).map(|i| g.offset_of(i)).collect();
        assert_eq!(offs, vec![0, 2, 4, 1, 3, 5]);
        let c = Gather::contiguous("t", &[2, 3]).unwrap();
        assert_eq!(
            (0..6).map(|i| c.offset_of(i)).collect::<Vec<_>>(),
            (0..6).collect::<Vec<_>>()
        );
        let s = Gather::new("t", &[], &[], 7).unwrap();
        assert_eq!(s.offset_of(0), 7);
        assert!(Gather::contiguous("t", &[1; 9]).is_err());
    }
}
