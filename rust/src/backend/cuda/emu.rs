//! The CUDA emulator: runs the backend's CUDA C kernels on the host so that the whole CUDA path
//! (buffers, argument lists, launch geometry, the op layer, cuBLAS call mapping) is exercised
//! on machines without a GPU. Each kernel family is compiled by the host C++ compiler with a
//! prelude that defines CUDA's built-ins, plus one wrapper per kernel that takes the argument
//! array CUDA's launch API takes (`void**`) and runs every block and thread of the grid in turn.
//! Kernels use no atomics. Most use no barriers either, so running each thread to its end is a
//! valid schedule; a kernel that calls `__syncthreads()` runs each thread of a block as a fiber
//! (ucontext) that yields at the barrier, every thread reaching it before any goes on, with the
//! block's `__shared__` arrays shared by its fibers.

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use super::blas::{GemmCall, Op};
use super::buffer::Value;
use super::kernels::{self, dtype_suffix};
use crate::{DType, Error, Result};

const HOST_PRELUDE: &str = r#"// Host build of tlrs CUDA kernels (emulator).
#include <math.h>
#include <string.h>
struct tlrs_dim3 { unsigned x, y, z; };
static thread_local tlrs_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__ static
#define __forceinline__ inline
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static inline long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }
// Barriers: the threads of a block as fibers on this OS thread, which share its thread_local
// storage (so `__shared__` arrays are the block's); a barrier switches back to the scheduler.
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#define __shared__ static thread_local
static thread_local ucontext_t tlrs_sched_ctx;
static thread_local ucontext_t* tlrs_fiber_ctx;
static thread_local char* tlrs_fiber_done;
static thread_local unsigned tlrs_fiber_index;
static thread_local void (*tlrs_fiber_body)();
static thread_local unsigned long long* tlrs_fiber_barriers;
static inline void __syncthreads() {
    if (!tlrs_fiber_ctx) {
        fprintf(stderr, "tlrs CUDA emulator: __syncthreads() outside a kernel run as fibers\n");
        abort();
    }
    ++tlrs_fiber_barriers[tlrs_fiber_index];
    swapcontext(tlrs_fiber_ctx, &tlrs_sched_ctx);
}
static void tlrs_fiber_entry() { tlrs_fiber_body(); tlrs_fiber_done[tlrs_fiber_index] = 1; }
// Runs `body` as `block` threads of the current block: in rounds, each live thread runs until
// its next barrier or its end, until all have ended. Rounds alternate the threads' order, so a
// missing barrier shows whichever way its race runs; threads that pass different numbers of
// barriers (undefined on a GPU) abort the run.
// The fibers' stacks and contexts, kept per OS thread for every later block and launch (the
// pages stay mapped).
static thread_local char* tlrs_fiber_stacks;
static thread_local ucontext_t* tlrs_fiber_ctxs;
static thread_local char* tlrs_fiber_flags;
static thread_local unsigned long long* tlrs_fiber_counts;
static thread_local unsigned tlrs_fiber_capacity;
static void tlrs_run_block_fibers(unsigned block, void (*body)()) {
    const size_t stack = 64 * 1024;
    if (block > tlrs_fiber_capacity) {
        free(tlrs_fiber_stacks);
        free(tlrs_fiber_ctxs);
        free(tlrs_fiber_flags);
        free(tlrs_fiber_counts);
        tlrs_fiber_stacks = (char*)malloc(stack * block);
        tlrs_fiber_ctxs = (ucontext_t*)malloc(sizeof(ucontext_t) * block);
        tlrs_fiber_flags = (char*)malloc(block);
        tlrs_fiber_counts = (unsigned long long*)malloc(sizeof(unsigned long long) * block);
        if (!tlrs_fiber_stacks || !tlrs_fiber_ctxs || !tlrs_fiber_flags || !tlrs_fiber_counts) abort();
        tlrs_fiber_capacity = block;
    }
    char* stacks = tlrs_fiber_stacks;
    ucontext_t* ctx = tlrs_fiber_ctxs;
    char* done = tlrs_fiber_flags;
    memset(done, 0, block);
    memset(tlrs_fiber_counts, 0, sizeof(unsigned long long) * block);
    tlrs_fiber_body = body;
    tlrs_fiber_done = done;
    tlrs_fiber_barriers = tlrs_fiber_counts;
    for (unsigned t = 0; t < block; ++t) {
        getcontext(&ctx[t]);
        ctx[t].uc_stack.ss_sp = stacks + (size_t)t * stack;
        ctx[t].uc_stack.ss_size = stack;
        ctx[t].uc_link = &tlrs_sched_ctx;
        makecontext(&ctx[t], tlrs_fiber_entry, 0);
    }
    for (bool live = true, reverse = false; live; reverse = !reverse) {
        live = false;
        for (unsigned u = 0; u < block; ++u) {
            const unsigned t = reverse ? block - 1 - u : u;
            if (done[t]) continue;
            live = true;
            threadIdx.x = t;
            tlrs_fiber_index = t;
            tlrs_fiber_ctx = &ctx[t];
            swapcontext(&tlrs_sched_ctx, &ctx[t]);
        }
    }
    tlrs_fiber_ctx = 0;
    for (unsigned t = 1; t < block; ++t) {
        if (tlrs_fiber_counts[t] != tlrs_fiber_counts[0]) {
            fprintf(stderr, "tlrs CUDA emulator: threads 0 and %u of a block passed %llu and %llu "
                    "barriers\n", t, tlrs_fiber_counts[0], tlrs_fiber_counts[t]);
            abort();
        }
    }
}
"#;

type Entry = unsafe extern "C" fn(*mut *mut c_void, u32, u32);

pub struct Emulator {
    dir: PathBuf,
    libs: Mutex<HashMap<(String, DType), Arc<libloading::Library>>>,
}

/// The host translation unit for one family: prelude, the CUDA source, and launch wrappers.
pub fn host_source(family: &str, dtype: DType) -> Option<String> {
    let src = kernels::source(family, dtype)?;
    let mut out = format!("{HOST_PRELUDE}{src}\n");
    for (name, types) in kernels::signatures(&src) {
        let call: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, t)| format!("*({t}*)p[{i}]"))
            .collect();
        if uses_barriers(&src, &name) {
            out.push_str(&format!(
                "static thread_local void** tlrs_args_{name};\n\
                 static void tlrs_body_{name}() {{ void** p = tlrs_args_{name}; {name}({}); }}\n\
                 extern \"C\" void tlrs_emu_{name}(void** p, unsigned grid, unsigned block) {{\n\
                 \x20 gridDim.x = grid; gridDim.y = gridDim.z = 1; blockDim.x = block; blockDim.y = blockDim.z = 1;\n\
                 \x20 threadIdx.y = threadIdx.z = blockIdx.y = blockIdx.z = 0; tlrs_args_{name} = p;\n\
                 \x20 for (unsigned b = 0; b < grid; ++b) {{ blockIdx.x = b; tlrs_run_block_fibers(block, tlrs_body_{name}); }}\n}}\n",
                call.join(", ")
            ));
            continue;
        }
        out.push_str(&format!(
            "extern \"C\" void tlrs_emu_{name}(void** p, unsigned grid, unsigned block) {{\n\
             \x20 gridDim.x = grid; gridDim.y = gridDim.z = 1; blockDim.x = block; blockDim.y = blockDim.z = 1;\n\
             \x20 for (unsigned b = 0; b < grid; ++b) {{ blockIdx.x = b;\n\
             \x20   for (unsigned t = 0; t < block; ++t) {{ threadIdx.x = t; {name}({}); }} }}\n}}\n",
            call.join(", ")
        ));
    }
    Some(out)
}

/// Whether kernel `name`'s body (up to the next kernel) calls `__syncthreads()`.
fn uses_barriers(src: &str, name: &str) -> bool {
    let decl = format!("extern \"C\" __global__ void {name}(");
    let Some(at) = src.find(&decl) else {
        return false;
    };
    let body = &src[at + decl.len()..];
    let end = body.find("extern \"C\" __global__").unwrap_or(body.len());
    body[..end].contains("__syncthreads")
}

impl Emulator {
    pub fn new() -> Result<Self> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tlrs-cuda-emu-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::Cuda(format!(
                "CUDA emulator: cannot create {}: {e}",
                dir.display()
            ))
        })?;
        Ok(Emulator {
            dir,
            libs: Mutex::new(HashMap::new()),
        })
    }

    fn library(&self, family: &str, dtype: DType) -> Result<Arc<libloading::Library>> {
        let mut libs = self
            .libs
            .lock()
            .map_err(|_| Error::Cuda("CUDA emulator: poisoned lock".into()))?;
        if let Some(l) = libs.get(&(family.to_string(), dtype)) {
            return Ok(l.clone());
        }
        let src = host_source(family, dtype)
            .ok_or_else(|| Error::Cuda(format!("CUDA emulator: unknown kernel family {family}")))?;
        let stem = format!("{family}_{}", dtype_suffix(dtype));
        let cpp = self.dir.join(format!("{stem}.cpp"));
        let so = self.dir.join(format!("lib{stem}.so"));
        std::fs::write(&cpp, src).map_err(|e| {
            Error::Cuda(format!(
                "CUDA emulator: cannot write {}: {e}",
                cpp.display()
            ))
        })?;
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
        // No contraction into FMA, like NVRTC's --fmad=false.
        let out = Command::new(&cxx)
            .args([
                "-std=c++14",
                "-O2",
                "-ffp-contract=off",
                "-shared",
                "-fPIC",
                "-o",
            ])
            .arg(&so)
            .arg(&cpp)
            .output()
            .map_err(|e| {
                Error::Cuda(format!(
                    "CUDA emulator: cannot run the C++ compiler '{cxx}': {e}"
                ))
            })?;
        if !out.status.success() {
            return Err(Error::Cuda(format!(
                "CUDA emulator: {stem} failed to compile:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        // SAFETY: the library is our own kernels with no load-time side effects.
        let lib = unsafe { libloading::Library::new(&so) }.map_err(|e| {
            Error::Cuda(format!("CUDA emulator: cannot load {}: {e}", so.display()))
        })?;
        let lib = Arc::new(lib);
        libs.insert((family.to_string(), dtype), lib.clone());
        Ok(lib)
    }

    pub(crate) fn launch(
        &self,
        family: &str,
        kernel: &str,
        dtype: DType,
        grid: u32,
        block: u32,
        values: &[Value],
    ) -> Result<()> {
        let lib = self.library(family, dtype)?;
        let symbol = format!("tlrs_emu_{kernel}");
        // SAFETY: the wrapper has the `Entry` signature (generated in `host_source`).
        let entry: libloading::Symbol<'_, Entry> =
            unsafe { lib.get(symbol.as_bytes()) }.map_err(|_| {
                Error::Cuda(format!(
                    "CUDA emulator: no kernel {kernel} in family {family}"
                ))
            })?;
        let mut params: Vec<*mut c_void> = values.iter().map(Value::as_param).collect();
        // SAFETY: `params` points at live values laid out as the kernel's parameters.
        unsafe { entry(params.as_mut_ptr(), grid, block) };
        Ok(())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// cuBLAS's strided batched GEMM on host memory, from its column-major definition:
/// C[i + j·ldc] = Σ_p op(X)(i, p) · op(Y)(p, j), folded in p order.
pub(crate) fn gemm(call: &GemmCall, dtype: DType, x: u64, y: u64, c: u64) {
    fn run<T: crate::dtype::Float>(call: &GemmCall, x: *const T, y: *const T, c: *mut T) {
        for b in 0..call.batch {
            let (xo, yo, co) = (b * call.stride_a, b * call.stride_b, b * call.stride_c);
            for j in 0..call.n {
                for i in 0..call.m {
                    let mut acc = T::ZERO;
                    for p in 0..call.k {
                        let xi = match call.transa {
                            Op::N => xo + i + p * call.lda,
                            Op::T => xo + p + i * call.lda,
                        };
                        let yi = match call.transb {
                            Op::N => yo + p + j * call.ldb,
                            Op::T => yo + j + p * call.ldb,
                        };
                        // SAFETY: the op layer sized the buffers for this call.
                        acc = acc + unsafe { *x.add(xi) * *y.add(yi) };
                    }
                    unsafe { *c.add(co + i + j * call.ldc) = acc };
                }
            }
        }
    }
    match dtype {
        DType::F32 => run::<f32>(call, x as *const f32, y as *const f32, c as *mut f32),
        DType::F64 => run::<f64>(call, x as *const f64, y as *const f64, c as *mut f64),
        _ => unreachable!("device buffers are float only (Gpu::alloc refuses other dtypes)"),
    }
}
