//! One CUDA device as the backend uses it: memory, transfers, kernel launches and cuBLAS GEMMs,
//! on a real GPU through cudarc or, with `TLRS_CUDA_EMULATOR=1`, on the host through the
//! emulator (the same CUDA C kernels compiled by the host C++ compiler; for testing the backend
//! on machines without a GPU). Everything runs on one stream, in launch order.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cublas::{result as blas_result, sys as blas_sys, CudaBlas};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

use super::blas::{GemmCall, Operand};
use super::buffer::{elem_bytes, resolve, Arg, DeviceBuffer, IndexBuffer, Mem, Value};
use super::emu::Emulator;
use super::kernels::{self, dtype_suffix};
use crate::{DType, Error, Result};

/// The environment variable that selects the emulator for `cuda:0`.
pub const EMULATOR_ENV: &str = "TLRS_CUDA_EMULATOR";

/// Whether `cuda` devices are served by the host emulator in this process.
pub fn emulated() -> bool {
    std::env::var(EMULATOR_ENV).is_ok_and(|v| v == "1")
}

struct Real {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    arch: String,
    functions: Mutex<HashMap<String, CudaFunction>>,
}

enum Backend {
    Real(Box<Real>),
    Emu(Emulator),
}

pub struct Gpu {
    ordinal: usize,
    backend: Backend,
}

/// Waits for all work queued on every device opened so far (a no-op on the emulator).
pub fn synchronize_all() -> Result<()> {
    let gpus: Vec<Arc<Gpu>> = match registry().lock() {
        Ok(g) => g.values().cloned().collect(),
        Err(_) => return Err(cuda_err("device registry", "poisoned lock")),
    };
    gpus.iter().try_for_each(|g| g.synchronize())
}

fn registry() -> &'static Mutex<HashMap<usize, Arc<Gpu>>> {
    static GPUS: OnceLock<Mutex<HashMap<usize, Arc<Gpu>>>> = OnceLock::new();
    GPUS.get_or_init(Default::default)
}

/// Allows TF32 tensor-core math for this thread's later f32 GEMMs (off unless asked).
pub fn set_tf32(on: bool) {
    crate::backend::settings::update(|s| s.tf32 = on);
}

/// Whether this thread allows TF32.
pub fn tf32_allowed() -> bool {
    crate::backend::settings::current().tf32
}

fn cuda_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Cuda(format!("CUDA {what} failed: {e}"))
}

fn caught<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(cuda_err(what, "cudarc panicked")))
}

/// The device `cuda:ordinal`, opened once per process.
pub fn gpu(ordinal: usize) -> Result<Arc<Gpu>> {
    let mut gpus = registry()
        .lock()
        .map_err(|_| cuda_err("device registry", "poisoned lock"))?;
    if let Some(g) = gpus.get(&ordinal) {
        return Ok(g.clone());
    }
    let g = Arc::new(open(ordinal)?);
    gpus.insert(ordinal, g.clone());
    Ok(g)
}

fn open(ordinal: usize) -> Result<Gpu> {
    if emulated() {
        if ordinal != 0 {
            return Err(Error::CudaUnavailable(format!(
                "the CUDA emulator ({EMULATOR_ENV}=1) has one device, cuda:0; got cuda:{ordinal}"
            )));
        }
        return Ok(Gpu {
            ordinal,
            backend: Backend::Emu(Emulator::new()?),
        });
    }
    let info = super::probe::probe().map_err(Error::from)?;
    if ordinal >= info.device_count {
        return Err(Error::CudaUnavailable(format!(
            "cuda:{ordinal} does not exist: the driver reports {} device(s)",
            info.device_count
        )));
    }
    let ctx = if ordinal == 0 {
        super::probe::context().map_err(Error::from)?
    } else {
        caught("context creation", || {
            CudaContext::new(ordinal).map_err(|e| cuda_err("context creation", e))
        })?
    };
    // Everything runs on one stream, in order, so the per-buffer events cudarc records for
    // cross-stream synchronisation would only cost two cuEventCreate calls per allocation.
    // SAFETY: no second stream is ever created on this context.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.default_stream();
    let blas = caught("cuBLAS init", || {
        CudaBlas::new(stream.clone()).map_err(|e| cuda_err("cuBLAS init", e))
    })?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| cuda_err("compute capability query", e))?;
    Ok(Gpu {
        ordinal,
        backend: Backend::Real(Box::new(Real {
            ctx,
            stream,
            blas,
            arch: format!("sm_{major}{minor}"),
            functions: Mutex::new(HashMap::new()),
        })),
    })
}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: f32/f64/u64 have no padding and any byte pattern is a valid u8.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// What the emulator fills new device memory with: a quiet NaN read as f64, and read as either
/// f32 half, so a kernel reading memory that nothing wrote shows up as NaN in the results
/// (a real GPU leaves it uninitialised; zeros would hide the bug).
pub const EMU_POISON: u64 = 0x7FFC_DEAD_7FFC_DEAD;

impl Gpu {
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
    pub fn is_emulated(&self) -> bool {
        matches!(self.backend, Backend::Emu(_))
    }

    /// `len` uninitialised elements of `dtype` (every kernel writes all of its output).
    pub fn alloc(self: &Arc<Self>, dtype: DType, len: usize) -> Result<DeviceBuffer> {
        let bytes = len
            .checked_mul(elem_bytes(dtype))
            .ok_or_else(|| Error::OutOfMemory(format!("cannot allocate {len} elements")))?;
        let mem = match &self.backend {
            Backend::Real(r) => {
                // SAFETY: the buffer is only read after a kernel or a copy has filled it.
                let s = unsafe { r.stream.alloc::<u8>(bytes.max(8)) }.map_err(|e| {
                    Error::OutOfMemory(format!(
                        "cuda:{}: cannot allocate {bytes} bytes: {e}",
                        self.ordinal
                    ))
                })?;
                Mem::Real(s)
            }
            Backend::Emu(_) => {
                let words = bytes.div_ceil(8).max(1);
                let mut v: Vec<u64> = crate::alloc::try_alloc(words)?;
                // Poison, not zeros: a kernel that reads memory nothing wrote sees NaN.
                v.resize(words, EMU_POISON);
                Mem::Emu(v.into_boxed_slice())
            }
        };
        Ok(DeviceBuffer::from_parts(self.clone(), mem, dtype, len))
    }

    /// Copies host values to a new device buffer of `dtype` (whose element size `T` must have).
    pub fn upload<T: Copy>(self: &Arc<Self>, dtype: DType, host: &[T]) -> Result<DeviceBuffer> {
        debug_assert_eq!(std::mem::size_of::<T>(), elem_bytes(dtype));
        let mut buf = self.alloc(dtype, host.len())?;
        let src = as_bytes(host);
        match (&self.backend, &mut buf.mem) {
            (Backend::Real(r), Mem::Real(dst)) => {
                if !src.is_empty() {
                    let mut view = dst.slice_mut(0..src.len());
                    r.stream
                        .memcpy_htod(src, &mut view)
                        .map_err(|e| cuda_err("host-to-device copy", e))?;
                }
            }
            (Backend::Emu(_), Mem::Emu(words)) => {
                // SAFETY: `words` holds at least src.len() bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.as_ptr(),
                        words.as_mut_ptr() as *mut u8,
                        src.len(),
                    )
                };
            }
            _ => {
                return Err(cuda_err(
                    "copy",
                    "the buffer belongs to another device backend",
                ))
            }
        }
        Ok(buf)
    }

    /// An index buffer (u64 per entry), e.g. gather offsets computed on the host.
    pub fn upload_indices(self: &Arc<Self>, idx: &[usize]) -> Result<IndexBuffer> {
        let v: Vec<u64> = idx.iter().map(|&i| i as u64).collect();
        // F64 only sizes the words (8 bytes each); the buffer is never read as floats.
        self.upload(DType::F64, &v).map(IndexBuffer::from_words)
    }

    /// `len` uninitialised indices, for a kernel to write (argmax winners).
    pub fn alloc_indices(self: &Arc<Self>, len: usize) -> Result<IndexBuffer> {
        self.alloc(DType::F64, len).map(IndexBuffer::from_words)
    }

    /// The indices copied back to the host.
    pub fn download_indices(&self, buf: &IndexBuffer) -> Result<Vec<u64>> {
        self.download::<u64>(buf.words())
    }

    /// Copies a device buffer back into host values of its element size.
    pub fn download<T: Copy + Default>(&self, buf: &DeviceBuffer) -> Result<Vec<T>> {
        debug_assert_eq!(std::mem::size_of::<T>(), elem_bytes(buf.dtype()));
        let mut out: Vec<T> = crate::alloc::try_alloc(buf.len())?;
        out.resize(buf.len(), T::default());
        let bytes = std::mem::size_of_val(out.as_slice());
        // SAFETY: T is a plain numeric type; the byte view covers exactly `out`.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, bytes) };
        match (&self.backend, &buf.mem) {
            (Backend::Real(r), Mem::Real(src)) => {
                if bytes > 0 {
                    r.stream
                        .memcpy_dtoh(&src.slice(0..bytes), dst)
                        .map_err(|e| cuda_err("device-to-host copy", e))?;
                }
                r.stream
                    .synchronize()
                    .map_err(|e| cuda_err("synchronize", e))?;
            }
            (Backend::Emu(_), Mem::Emu(words)) => {
                // SAFETY: the buffer holds at least `bytes` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        words.as_ptr() as *const u8,
                        dst.as_mut_ptr(),
                        bytes,
                    )
                };
            }
            (Backend::Real(r), Mem::Borrowed { addr, .. }) => {
                if bytes > 0 {
                    // SAFETY: the borrowed buffer holds `bytes` bytes at `addr` (its contract).
                    unsafe {
                        cudarc::driver::result::memcpy_dtoh_async(dst, *addr, r.stream.cu_stream())
                    }
                    .map_err(|e| cuda_err("device-to-host copy", e))?;
                }
                r.stream
                    .synchronize()
                    .map_err(|e| cuda_err("synchronize", e))?;
            }
            (Backend::Emu(_), Mem::Borrowed { addr, .. }) => {
                // SAFETY: in the emulator a borrowed buffer is host memory of `bytes` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(*addr as *const u8, dst.as_mut_ptr(), bytes)
                };
            }
            _ => {
                return Err(cuda_err(
                    "copy",
                    "the buffer belongs to another device backend",
                ))
            }
        }
        Ok(out)
    }

    /// Runs `f` with this device's context bound to the calling thread and the stream every
    /// tlrs kernel runs on (for libraries that take a raw stream: NCCL). None on the emulator.
    pub fn with_raw_stream<R>(
        &self,
        f: impl FnOnce(cudarc::driver::sys::CUstream) -> Result<R>,
    ) -> Option<Result<R>> {
        match &self.backend {
            Backend::Real(r) => Some(
                r.ctx
                    .bind_to_thread()
                    .map_err(|e| cuda_err("binding the CUDA context", e))
                    .and_then(|_| f(r.stream.cu_stream())),
            ),
            Backend::Emu(_) => None,
        }
    }

    /// Waits for every launched kernel (real GPU); reports asynchronous launch failures.
    pub fn synchronize(&self) -> Result<()> {
        match &self.backend {
            Backend::Real(r) => r
                .stream
                .synchronize()
                .map_err(|e| cuda_err("synchronize", e)),
            Backend::Emu(_) => Ok(()),
        }
    }

    /// Runs `kernel` of `family` compiled for `dtype` (e.g. "exp" runs "exp_f32"), with one
    /// thread per item of `n` (grid-stride loops cover the rest). Nothing runs when n == 0.
    pub fn launch(
        &self,
        family: &str,
        kernel: &str,
        dtype: DType,
        n: usize,
        args: &[Arg<'_>],
    ) -> Result<()> {
        if !dtype.is_float() {
            // The kernels are float only; integer and bool tensors move through the host
            // (storage.rs), so this is a float-only op given one of them.
            return Err(Error::DType {
                op: "cuda",
                expected: format!("a float32 or float64 tensor for the CUDA kernel {kernel}"),
                got: dtype.to_string(),
            });
        }
        let Some(cfg) = kernels::launch_config(n) else {
            return Ok(());
        };
        let values = resolve(args, dtype);
        let kernel = &format!("{kernel}_{}", dtype_suffix(dtype));
        match &self.backend {
            Backend::Emu(e) => e.launch(
                family,
                kernel,
                dtype,
                cfg.grid_dim.0,
                cfg.block_dim.0,
                &values,
            ),
            Backend::Real(r) => r.launch(family, kernel, dtype, cfg, &values),
        }
    }

    /// C = op(A)·op(B) as cuBLAS's column-major `call` (from `RowMajorMatmul::to_gemm`), in
    /// `dtype` arithmetic (SGEMM for f32, DGEMM for f64); all three buffers have that dtype.
    pub fn gemm(
        &self,
        call: &GemmCall,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
        c: &DeviceBuffer,
    ) -> Result<()> {
        if call.m == 0 || call.n == 0 || call.batch == 0 {
            return Ok(());
        }
        let (first, second) = match call.first {
            Operand::A => (a, b),
            Operand::B => (b, a),
        };
        let dtype = c.dtype();
        match &self.backend {
            Backend::Emu(_) => {
                super::emu::gemm(call, dtype, first.address(), second.address(), c.address());
                Ok(())
            }
            Backend::Real(r) => {
                let tf32 = tf32_allowed();
                r.gemm(
                    call,
                    dtype,
                    first.address(),
                    second.address(),
                    c.address(),
                    tf32,
                )
            }
        }
    }

    /// One line for diagnostics: which backend serves this device.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Real(r) => format!("cuda:{} ({}, kernels built by NVRTC)", self.ordinal, r.arch),
            Backend::Emu(_) => format!(
                "cuda:{} emulated on the host ({EMULATOR_ENV}=1; kernels built by the C++ compiler)",
                self.ordinal
            ),
        }
    }
}

fn int(what: &'static str, v: usize) -> Result<i32> {
    i32::try_from(v)
        .map_err(|_| Error::arg("matmul", format!("{what} = {v} is too large for cuBLAS")))
}

impl Real {
    fn function(&self, family: &str, kernel: &str, dtype: DType) -> Result<CudaFunction> {
        let mut fns = self
            .functions
            .lock()
            .map_err(|_| cuda_err("kernel cache", "poisoned lock"))?;
        if let Some(f) = fns.get(kernel) {
            return Ok(f.clone());
        }
        let src = kernels::source(family, dtype)
            .ok_or_else(|| cuda_err("kernel lookup", format!("unknown family {family}")))?;
        let name = format!("{family}_{}.cu", dtype_suffix(dtype));
        let image = kernels::compile_image(&name, &src, &self.arch).map_err(Error::Cuda)?;
        let module = self
            .ctx
            .load_module(image)
            .map_err(|e| cuda_err(&format!("loading {name}"), e))?;
        for k in kernels::kernel_names(family, dtype) {
            let f = module
                .load_function(&k)
                .map_err(|e| cuda_err(&format!("loading kernel {k}"), e))?;
            fns.insert(k, f);
        }
        fns.get(kernel)
            .cloned()
            .ok_or_else(|| cuda_err("kernel lookup", format!("{kernel} is not in {name}")))
    }

    fn launch(
        &self,
        family: &str,
        kernel: &str,
        dtype: DType,
        cfg: LaunchConfig,
        values: &[Value],
    ) -> Result<()> {
        let f = self.function(family, kernel, dtype)?;
        let mut b = self.stream.launch_builder(&f);
        for v in values {
            match v {
                Value::U64(x) => b.arg(x),
                Value::I64(x) => b.arg(x),
                Value::F32(x) => b.arg(x),
                Value::F64(x) => b.arg(x),
                Value::Gather(g) => b.arg(g),
            };
        }
        // SAFETY: the argument list matches the kernel's C signature (checked by the emulator
        // tests, which call the same sources through the same argument lists).
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| cuda_err(&format!("launching {kernel}"), e))
    }

    fn gemm(
        &self,
        call: &GemmCall,
        dtype: DType,
        x: u64,
        y: u64,
        c: u64,
        tf32: bool,
    ) -> Result<()> {
        let (m, n, k) = (int("m", call.m)?, int("n", call.n)?, int("k", call.k)?);
        let (lda, ldb, ldc) = (
            int("lda", call.lda.max(1))?,
            int("ldb", call.ldb.max(1))?,
            int("ldc", call.ldc.max(1))?,
        );
        let batch = int("batch", call.batch)?;
        let (sa, sb, sc) = (
            call.stride_a as i64,
            call.stride_b as i64,
            call.stride_c as i64,
        );
        // cuBLAS runs in the calling thread's current context, which cudarc binds lazily.
        self.ctx
            .bind_to_thread()
            .map_err(|e| cuda_err("binding the CUDA context", e))?;
        let handle = *self.blas.handle();
        let mode = if tf32 && dtype == DType::F32 {
            blas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        } else {
            // Pedantic: no reduced-precision shortcuts, whatever the environment says.
            blas_sys::cublasMath_t::CUBLAS_PEDANTIC_MATH
        };
        // SAFETY: the handle is live; the pointers are device buffers sized for this call by
        // the op layer (RowMajorMatmul's strides), on the handle's stream.
        unsafe {
            blas_sys::cublasSetMathMode(handle, mode)
                .result()
                .map_err(|e| cuda_err("cublasSetMathMode", e))?;
            match dtype {
                DType::F32 => {
                    let (alpha, beta) = (1.0f32, 0.0f32);
                    blas_result::sgemm_strided_batched(
                        handle,
                        call.transa.to_cublas(),
                        call.transb.to_cublas(),
                        m,
                        n,
                        k,
                        &alpha,
                        x as *const f32,
                        lda,
                        sa,
                        y as *const f32,
                        ldb,
                        sb,
                        &beta,
                        c as *mut f32,
                        ldc,
                        sc,
                        batch,
                    )
                }
                DType::F64 => {
                    let (alpha, beta) = (1.0f64, 0.0f64);
                    blas_result::dgemm_strided_batched(
                        handle,
                        call.transa.to_cublas(),
                        call.transb.to_cublas(),
                        m,
                        n,
                        k,
                        &alpha,
                        x as *const f64,
                        lda,
                        sa,
                        y as *const f64,
                        ldb,
                        sb,
                        &beta,
                        c as *mut f64,
                        ldc,
                        sc,
                        batch,
                    )
                }
                other => {
                    return Err(Error::DType {
                        op: "matmul",
                        expected: "float32 or float64 operands".into(),
                        got: other.to_string(),
                    })
                }
            }
        }
        .map_err(|e| cuda_err("cuBLAS GEMM", e))
    }
}
