//! Decides once per process whether CUDA is usable here, and says why not when it is not.
//! cudarc panics when a library cannot be loaded, so every library is checked with
//! `is_culib_present()` before any call that would load it, and `catch_unwind` backs that up.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use cudarc::driver::result::DriverError;
use cudarc::driver::{sys as driver_sys, CudaContext};

/// The cudarc binding level compiled in; must match the `cuda-XXXXX` feature in Cargo.toml
/// (cudarc does not expose it, and it decides which sonames are searched: `.so.13` for 13000).
pub const BINDING_LEVEL: &str = "cuda-13000";

/// What the probe learnt about device 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaInfo {
    pub device_name: String,
    /// (major, minor), e.g. (9, 0) on an H100/H200.
    pub compute_capability: (i32, i32),
    /// As the driver reports it: 1000 * major + 10 * minor (13000 is CUDA 13.0).
    pub driver_version: i32,
    pub device_count: usize,
}

impl CudaInfo {
    /// The NVRTC architecture flag for this device, e.g. "sm_90".
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// One CUDA library that could not be loaded, with what was tried and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingLibrary {
    /// cudarc's name for it: "cuda" (the driver), "cublas" or "nvrtc".
    pub lib: &'static str,
    /// The file names the loader was asked for, in order.
    pub searched: Vec<String>,
    pub hint: &'static str,
}

/// Why CUDA cannot be used. The Display text is what a user sees (tlrs.CudaUnavailableError).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaUnavailable {
    /// One or more shared libraries are not loadable; `ld_library_path` is the value seen.
    MissingLibraries {
        missing: Vec<MissingLibrary>,
        ld_library_path: Option<String>,
    },
    /// The driver loaded but refused a call, e.g. CUDA_ERROR_NO_DEVICE on a machine without GPU.
    Driver { call: &'static str, message: String },
    /// The driver works but reports no device.
    NoDevice,
    /// cudarc panicked despite the checks above (a bug or an unforeseen library state).
    Panicked(String),
}

const DRIVER_HINT: &str = "install the NVIDIA driver (libcuda.so.1 comes with it, not with pip)";
const WHEEL_HINT: &str =
    "`pip install tlrs[cuda]` (NVIDIA's CUDA 13 wheels), or add the directory \
holding the CUDA 13 library to LD_LIBRARY_PATH";

impl fmt::Display for CudaUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaUnavailable::MissingLibraries {
                missing,
                ld_library_path,
            } => {
                let names: Vec<&str> = missing.iter().map(|m| m.lib).collect();
                write!(f, "CUDA is not available: cannot load {}", names.join(", "))?;
                for m in missing {
                    write!(
                        f,
                        "\n  {}: searched {}; fix: {}",
                        m.lib,
                        m.searched.join(", "),
                        m.hint
                    )?;
                }
                match ld_library_path {
                    Some(p) => write!(f, "\n  LD_LIBRARY_PATH={p}"),
                    None => write!(f, "\n  LD_LIBRARY_PATH is not set"),
                }
            }
            CudaUnavailable::Driver { call, message } => {
                write!(f, "CUDA is not available: {call} failed: {message}")
            }
            CudaUnavailable::NoDevice => {
                write!(
                    f,
                    "CUDA is not available: the driver reports no CUDA device"
                )
            }
            CudaUnavailable::Panicked(msg) => {
                write!(f, "CUDA is not available: the CUDA bindings failed: {msg}")
            }
        }
    }
}

impl std::error::Error for CudaUnavailable {}

impl From<CudaUnavailable> for crate::error::Error {
    fn from(e: CudaUnavailable) -> Self {
        crate::error::Error::CudaUnavailable(e.to_string())
    }
}

/// True when cudarc would find library `lib` ("cuda", "cublas" or "nvrtc").
pub fn library_present(lib: &str) -> bool {
    // SAFETY: each is_culib_present only dlopens candidate names and closes them again; it runs
    // no library code besides the loader's. A panic is impossible there but costs nothing to catch.
    catch_unwind(|| unsafe {
        match lib {
            "cuda" => driver_sys::is_culib_present(),
            "cublas" => cudarc::cublas::sys::is_culib_present(),
            "nvrtc" => cudarc::nvrtc::sys::is_culib_present(),
            _ => false,
        }
    })
    .unwrap_or(false)
}

/// cudarc's candidate file names for `lib`, without its repeats (it lists some names 3 times).
pub fn candidates(lib: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates(lib) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

fn missing_libraries() -> Vec<MissingLibrary> {
    let libs: [(&'static str, &'static str); 3] = [
        ("cuda", DRIVER_HINT),
        ("cublas", WHEEL_HINT),
        ("nvrtc", WHEEL_HINT),
    ];
    libs.iter()
        .filter(|(lib, _)| !library_present(lib))
        .map(|&(lib, hint)| MissingLibrary {
            lib,
            searched: candidates(lib),
            hint,
        })
        .collect()
}

/// "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", from the driver's own tables.
fn driver_message(e: DriverError) -> String {
    let name = e
        .error_name()
        .ok()
        .map(|s| s.to_string_lossy().into_owned());
    let text = e
        .error_string()
        .ok()
        .map(|s| s.to_string_lossy().into_owned());
    match (name, text) {
        (Some(n), Some(t)) => format!("{n}: {t}"),
        (Some(n), None) => n,
        _ => format!("{:?}", e.0),
    }
}

fn driver_err(call: &'static str) -> impl Fn(DriverError) -> CudaUnavailable {
    move |e| CudaUnavailable::Driver {
        call,
        message: driver_message(e),
    }
}

/// cuDriverGetVersion works before cuInit; only call it once the driver library is known present.
fn driver_version() -> Result<i32, CudaUnavailable> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: `v` is a valid out-pointer for the duration of the call.
    unsafe { driver_sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(driver_err("cuDriverGetVersion"))?;
    Ok(v)
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    match (p.downcast_ref::<&str>(), p.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_string(),
        (_, Some(s)) => s.clone(),
        _ => "unknown panic".to_string(),
    }
}

struct Probed {
    info: CudaInfo,
    // Kept so the primary context is retained once, not torn down and rebuilt at first use.
    ctx: Arc<CudaContext>,
}

fn probe_uncached(ordinal: usize) -> Result<Probed, CudaUnavailable> {
    let missing = missing_libraries();
    if !missing.is_empty() {
        return Err(CudaUnavailable::MissingLibraries {
            missing,
            ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
        });
    }
    let count = CudaContext::device_count().map_err(driver_err("cuDeviceGetCount"))?;
    let device_count = usize::try_from(count).unwrap_or(0);
    if device_count == 0 {
        return Err(CudaUnavailable::NoDevice);
    }
    let ctx = CudaContext::new(ordinal).map_err(driver_err("cuDevicePrimaryCtxRetain"))?;
    let info = CudaInfo {
        device_name: ctx.name().map_err(driver_err("cuDeviceGetName"))?,
        compute_capability: ctx
            .compute_capability()
            .map_err(driver_err("cuDeviceGetAttribute"))?,
        driver_version: driver_version()?,
        device_count,
    };
    Ok(Probed { info, ctx })
}

fn probed() -> &'static Result<Probed, CudaUnavailable> {
    static PROBE: OnceLock<Result<Probed, CudaUnavailable>> = OnceLock::new();
    PROBE.get_or_init(|| {
        catch_unwind(AssertUnwindSafe(|| probe_uncached(0)))
            .unwrap_or_else(|p| Err(CudaUnavailable::Panicked(panic_text(p))))
    })
}

/// Whether CUDA device 0 is usable, probed once per process; never panics.
pub fn probe() -> Result<CudaInfo, CudaUnavailable> {
    probed()
        .as_ref()
        .map(|p| p.info.clone())
        .map_err(Clone::clone)
}

/// The context the probe retained on device 0, for the backend to run on.
pub fn context() -> Result<Arc<CudaContext>, CudaUnavailable> {
    probed()
        .as_ref()
        .map(|p| p.ctx.clone())
        .map_err(Clone::clone)
}

/// Number of CUDA devices, 0 when CUDA is unavailable for any reason.
pub fn device_count() -> usize {
    probe().map(|i| i.device_count).unwrap_or(0)
}

/// Where library `lib` is mapped into this process (Linux), e.g. a pip wheel's copy: the first
/// of `loaded_paths`.
pub fn loaded_path(lib: &str) -> Option<String> {
    loaded_paths(lib).into_iter().next()
}

/// Every file named lib`lib`.so* mapped into this process, each once, in map order. More than
/// one means two copies of the library in one process (a system one beside pip's), which for
/// NCCL broke every communicator.
pub fn loaded_paths(lib: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps")
        .map(|maps| mapped_paths(&maps, lib))
        .unwrap_or_default()
}

/// `loaded_paths` over the text of a /proc/<pid>/maps file.
fn mapped_paths(maps: &str, lib: &str) -> Vec<String> {
    let prefix = format!("lib{lib}.so");
    let mut paths: Vec<String> = Vec::new();
    for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        let named = std::path::Path::new(path)
            .file_name()
            .and_then(|f| f.to_str())
            .is_some_and(|f| f.starts_with(&prefix));
        if named && !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
        }
    }
    paths
}

fn found(lib: &str) -> String {
    if library_present(lib) {
        match loaded_paths(lib).as_slice() {
            [] => "found by the system loader".to_string(),
            [one] => format!("found: {one}"),
            [first, rest @ ..] => format!(
                "found: {first} (also mapped: {}; two copies of one library in a process can \
                 mix their versions)",
                rest.join(", ")
            ),
        }
    } else {
        format!("not found (searched {})", candidates(lib).join(", "))
    }
}

/// Name/value lines for `tlrs info` and `tlrs.cuda.diagnostics()`; never panics.
pub fn diagnostics() -> Vec<(String, String)> {
    let mut out = vec![("binding".to_string(), BINDING_LEVEL.to_string())];
    for (key, lib) in [
        ("driver library", "cuda"),
        ("cublas library", "cublas"),
        ("nvrtc library", "nvrtc"),
    ] {
        out.push((key.to_string(), found(lib)));
    }
    out.push((
        "LD_LIBRARY_PATH".to_string(),
        std::env::var("LD_LIBRARY_PATH").unwrap_or_else(|_| "(not set)".to_string()),
    ));
    // The driver version is useful even when no device works (it tells which CUDA it supports).
    let version = if library_present("cuda") {
        catch_unwind(driver_version)
            .unwrap_or_else(|p| Err(CudaUnavailable::Panicked(panic_text(p))))
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
            .unwrap_or_else(|e| e.to_string())
    } else {
        "unavailable (no driver library)".to_string()
    };
    out.push(("driver version".to_string(), version));
    match probe() {
        Ok(info) => {
            out.push(("status".to_string(), "available".to_string()));
            out.push(("device count".to_string(), info.device_count.to_string()));
            out.push(("device 0".to_string(), info.device_name.clone()));
            let (major, minor) = info.compute_capability;
            out.push((
                "compute capability".to_string(),
                format!("{major}.{minor} ({})", info.arch()),
            ));
        }
        Err(e) => {
            out.push(("status".to_string(), e.to_string()));
            out.push(("device count".to_string(), "0".to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_message_names_library_candidates_and_fix() {
        let e = CudaUnavailable::MissingLibraries {
            missing: vec![MissingLibrary {
                lib: "cublas",
                searched: vec!["libcublas.so".into(), "libcublas.so.13".into()],
                hint: WHEEL_HINT,
            }],
            ld_library_path: Some("/opt/x".into()),
        };
        let s = e.to_string();
        assert!(s.contains("cannot load cublas"), "{s}");
        assert!(s.contains("libcublas.so, libcublas.so.13"), "{s}");
        assert!(s.contains("pip install tlrs[cuda]"), "{s}");
        assert!(s.contains("LD_LIBRARY_PATH=/opt/x"), "{s}");
    }

    #[test]
    fn candidates_follow_the_binding_level() {
        // cuda-13000 bakes major version 13 into the soname list.
        assert!(cudarc::get_lib_name_candidates("cublas").contains(&"libcublas.so.13".to_string()));
        assert!(cudarc::get_lib_name_candidates("cuda").contains(&"libcuda.so.1".to_string()));
    }

    #[test]
    fn mapped_paths_lists_each_copy_once_in_order() {
        let maps = "7f00-7f01 r--p 00000000 08:01 1 /usr/lib/libcublas.so.13.1.0.3\n\
                    7f01-7f02 r-xp 00001000 08:01 1 /usr/lib/libcublas.so.13.1.0.3\n\
                    7f02-7f03 r--p 00000000 08:01 2 /site/nvidia/cu13/lib/libcublas.so.13\n\
                    7f03-7f04 r--p 00000000 08:01 3 /site/nvidia/cu13/lib/libcublasLt.so.13\n\
                    7f04-7f05 rw-p 00000000 00:00 0\n";
        assert_eq!(
            mapped_paths(maps, "cublas"),
            [
                "/usr/lib/libcublas.so.13.1.0.3",
                "/site/nvidia/cu13/lib/libcublas.so.13"
            ]
        );
        assert_eq!(
            mapped_paths(maps, "cublasLt"),
            ["/site/nvidia/cu13/lib/libcublasLt.so.13"]
        );
        assert!(mapped_paths(maps, "nccl").is_empty());
    }

    #[test]
    fn candidates_drop_repeats_and_keep_order() {
        let c = candidates("nvrtc");
        let raw = cudarc::get_lib_name_candidates("nvrtc");
        assert!(c.len() < raw.len());
        assert_eq!(c[0], raw[0]);
        for (i, name) in c.iter().enumerate() {
            assert!(!c[i + 1..].contains(name), "{name} repeated");
        }
    }

    #[test]
    fn arch_is_sm_major_minor() {
        let info = CudaInfo {
            device_name: "x".into(),
            compute_capability: (9, 0),
            driver_version: 13000,
            device_count: 1,
        };
        assert_eq!(info.arch(), "sm_90");
    }
}
