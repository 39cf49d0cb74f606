//! Loads libnccl once and holds the few entry points tlrs calls. tlrs loads it itself, not
//! through cudarc, to choose *which* copy: cudarc asks the system loader for `libnccl.so` first,
//! which on a machine with both a system NCCL and pip's `nvidia-nccl-cu13` (what PyTorch uses,
//! and what `tlrs.cuda` preloads) maps a second NCCL into the process. NCCL's exported calls
//! then resolve partly into one copy and partly into the other, and a communicator made by one
//! is "corrupted" to the other (seen on an H200: ncclCommInitRank 2.28.3, collectives
//! ncclInvalidArgument). Order here: a libnccl already mapped into the process (opening it by
//! its path returns the same copy), then the soname `libnccl.so.2`, then `libnccl.so`. The
//! Python side loads pip's copy before the first probe (`tlrs.distributed._nccl.probe`).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use libloading::os::unix::{Library as UnixLibrary, RTLD_LOCAL, RTLD_NOW};
use libloading::Library;

/// NCCL's unique id, passed by value to ncclCommInitRank.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId {
    pub internal: [c_char; UNIQUE_ID_BYTES],
}

/// Bytes of an NCCL unique id.
pub const UNIQUE_ID_BYTES: usize = 128;

/// An opaque communicator handle.
pub type RawComm = *mut c_void;

/// ncclDataType_t values (stable across NCCL 2.x).
pub const NCCL_FLOAT32: c_int = 7;
pub const NCCL_FLOAT64: c_int = 8;
/// ncclRedOp_t's sum.
pub const NCCL_SUM: c_int = 0;

const SUCCESS: c_int = 0;

type Status = c_int;

/// The entry points, typed as NCCL's header declares them (enums as int: a value this build
/// does not know stays a number instead of an invalid Rust enum).
pub struct NcclLib {
    pub path: String,
    pub get_version: unsafe extern "C" fn(*mut c_int) -> Status,
    pub get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> Status,
    pub comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, UniqueId, c_int) -> Status,
    pub comm_destroy: unsafe extern "C" fn(RawComm) -> Status,
    pub all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        RawComm,
        *mut c_void,
    ) -> Status,
    pub broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        RawComm,
        *mut c_void,
    ) -> Status,
    pub all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        RawComm,
        *mut c_void,
    ) -> Status,
    get_error_string: unsafe extern "C" fn(Status) -> *const c_char,
    /// NCCL 2.13 and later.
    get_last_error: Option<unsafe extern "C" fn(RawComm) -> *const c_char>,
    // Kept open for the life of the process (the function pointers point into it).
    _lib: Library,
}

/// The names tried, in order (the mapped copy, when there is one, comes first).
pub fn candidates() -> Vec<String> {
    let mut names: Vec<String> = super::probe::loaded_path("nccl").into_iter().collect();
    names.extend(["libnccl.so.2".to_string(), "libnccl.so".to_string()]);
    names
}

fn open() -> Result<NcclLib, String> {
    let names = candidates();
    let mut tried = Vec::new();
    for name in &names {
        // RTLD_NOW binds every NCCL-internal call to an exported NCCL symbol now, so a second
        // copy loaded later with RTLD_GLOBAL cannot interpose on them.
        // SAFETY: loading NCCL runs only its initialisers, which have no preconditions.
        let opened = unsafe { UnixLibrary::open(Some(name), RTLD_NOW | RTLD_LOCAL) };
        match opened {
            Ok(lib) => return bind(lib.into(), name),
            Err(e) => tried.push(format!("{name}: {e}")),
        }
    }
    Err(format!("cannot load libnccl ({})", tried.join("; ")))
}

fn bind(lib: Library, path: &str) -> Result<NcclLib, String> {
    fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
        // SAFETY: each symbol is read with the type NCCL's header gives it.
        unsafe { lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("libnccl lacks {name}: {e}"))
    }
    let get_version: unsafe extern "C" fn(*mut c_int) -> Status = sym(&lib, "ncclGetVersion")?;
    Ok(NcclLib {
        path: file_of(get_version as *const c_void).unwrap_or_else(|| path.to_string()),
        get_version,
        get_unique_id: sym(&lib, "ncclGetUniqueId")?,
        comm_init_rank: sym(&lib, "ncclCommInitRank")?,
        comm_destroy: sym(&lib, "ncclCommDestroy")?,
        all_gather: sym(&lib, "ncclAllGather")?,
        broadcast: sym(&lib, "ncclBroadcast")?,
        all_reduce: sym(&lib, "ncclAllReduce")?,
        get_error_string: sym(&lib, "ncclGetErrorString")?,
        get_last_error: sym(&lib, "ncclGetLastError").ok(),
        _lib: lib,
    })
}

/// The file that holds `addr` (the copy whose symbols were bound, even if two are mapped).
fn file_of(addr: *const c_void) -> Option<String> {
    #[repr(C)]
    struct DlInfo {
        fname: *const c_char,
        fbase: *mut c_void,
        sname: *const c_char,
        saddr: *mut c_void,
    }
    extern "C" {
        fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
    }
    let mut info = DlInfo {
        fname: std::ptr::null(),
        fbase: std::ptr::null_mut(),
        sname: std::ptr::null(),
        saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    let found = unsafe { dladdr(addr, &mut info) } != 0;
    (found && !info.fname.is_null()).then(|| text(info.fname))
}

/// The library, loaded on first use; Err says what was tried.
pub fn lib() -> Result<&'static NcclLib, String> {
    static LIB: OnceLock<Result<NcclLib, String>> = OnceLock::new();
    LIB.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: NCCL returns NUL-terminated static or per-thread strings.
    unsafe { CStr::from_ptr(p) }
        .to_string_lossy()
        .trim_end()
        .to_string()
}

fn code_name(code: Status) -> String {
    match code {
        1 => "ncclUnhandledCudaError".into(),
        2 => "ncclSystemError".into(),
        3 => "ncclInternalError".into(),
        4 => "ncclInvalidArgument".into(),
        5 => "ncclInvalidUsage".into(),
        6 => "ncclRemoteError".into(),
        7 => "ncclInProgress".into(),
        other => format!("NCCL result {other}"),
    }
}

impl NcclLib {
    /// Ok for ncclSuccess; else the code's name, NCCL's text for it and its last error message
    /// (which names the cause: a CUDA call, a transport, a bad argument).
    pub fn check(&self, what: &str, code: Status, comm: RawComm) -> Result<(), String> {
        if code == SUCCESS {
            return Ok(());
        }
        // SAFETY: plain queries; `comm` is null or a live communicator.
        let (name, last) = unsafe {
            (
                text((self.get_error_string)(code)),
                self.get_last_error
                    .map_or_else(String::new, |f| text(f(comm))),
            )
        };
        let mut msg = format!("NCCL {what} failed: {}", code_name(code));
        if !name.is_empty() {
            msg.push_str(&format!(" ({name})"));
        }
        if !last.is_empty() {
            msg.push_str(&format!("; NCCL's last error: {last}"));
        }
        Err(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_names() {
        assert_eq!(code_name(4), "ncclInvalidArgument");
        assert_eq!(code_name(42), "NCCL result 42");
    }

    #[test]
    fn file_of_names_the_object_that_holds_a_function() {
        // A function of this test binary lies in the binary itself; a null address in none.
        let here = file_of(codes_have_names as *const c_void).expect("dladdr found no object");
        assert!(std::path::Path::new(&here).exists(), "{here}");
        assert_eq!(file_of(std::ptr::null()), None);
    }

    #[test]
    fn sonames_come_after_a_mapped_copy() {
        let names = candidates();
        let n = names.len();
        assert_eq!(&names[n - 2..], ["libnccl.so.2", "libnccl.so"]);
    }

    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        // Either NCCL loads here (then its version is positive) or the error names what was
        // tried; nothing panics.
        match lib() {
            Ok(l) => {
                let mut v = 0;
                // SAFETY: ncclGetVersion writes one int.
                let code = unsafe { (l.get_version)(&mut v) };
                assert_eq!(code, SUCCESS);
                assert!(v > 20000, "{v}");
            }
            Err(e) => assert!(e.contains("libnccl.so.2"), "{e}"),
        }
    }
}
