//! Checkpoints in the safetensors format: named f32/f64 (and complex64, C64) tensors plus string
//! metadata. Writes
//! are atomic (a temporary file in the same folder, synced, then renamed), and a truncated or
//! corrupt file is an error before any tensor is returned.

use crate::storage::CpuStorage;
use crate::{Error, Result, Tensor};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

fn io_err(path: &Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::Io(format!("{what} {}: {e}", path.display()))
}

fn bytes_of(t: &Tensor, complex: bool) -> Result<(Dtype, Vec<u8>)> {
    if complex {
        // A complex64 tensor travels as float32 [..., 2] (re, im): C64's own layout.
        return match &*t.host()? {
            CpuStorage::F32(v) if t.dims().last() == Some(&2) => {
                Ok((Dtype::C64, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
            }
            _ => Err(Error::arg(
                "save",
                format!(
                    "a complex64 tensor is float32 [..., 2] (re, im), got {} {}",
                    t.dtype(),
                    t.shape()
                ),
            )),
        };
    }
    Ok(match &*t.host()? {
        CpuStorage::F32(v) => (Dtype::F32, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        CpuStorage::F64(v) => (Dtype::F64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        CpuStorage::I64(v) => (Dtype::I64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        CpuStorage::Bool(v) => (Dtype::BOOL, v.iter().map(|&x| x as u8).collect()),
    })
}

/// Writes `tensors` under `names` with `metadata` to `path`, atomically.
pub fn save(
    path: &Path,
    names: &[String],
    tensors: &[Tensor],
    metadata: HashMap<String, String>,
) -> Result<()> {
    save_with_complex(path, names, tensors, &vec![false; tensors.len()], metadata)
}

/// `save`, where a tensor flagged in `complex` is a complex64 one given as float32 [..., 2]
/// (re, im) and is written as C64 of shape [...].
pub fn save_with_complex(
    path: &Path,
    names: &[String],
    tensors: &[Tensor],
    complex: &[bool],
    metadata: HashMap<String, String>,
) -> Result<()> {
    if names.len() != tensors.len() || complex.len() != tensors.len() {
        return Err(Error::arg(
            "save",
            format!(
                "expected one name per tensor, got {} names for {} tensors",
                names.len(),
                tensors.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(Error::arg(
            "save",
            format!("expected distinct tensor names, got '{dup}' twice"),
        ));
    }
    let mut data = Vec::with_capacity(tensors.len());
    for (t, &c) in tensors.iter().zip(complex) {
        data.push(bytes_of(t, c)?);
    }
    let mut views = Vec::with_capacity(tensors.len());
    for ((name, t), (dtype, bytes)) in names.iter().zip(tensors).zip(&data) {
        let dims = t.dims();
        let shape = if *dtype == Dtype::C64 {
            dims[..dims.len() - 1].to_vec()
        } else {
            dims.to_vec()
        };
        let view =
            TensorView::new(*dtype, shape, bytes).map_err(|e| io_err(path, "cannot encode", e))?;
        views.push((name.clone(), view));
    }
    let buf = safetensors::serialize(views, Some(metadata))
        .map_err(|e| io_err(path, "cannot encode", e))?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .ok_or_else(|| io_err(path, "cannot write", "not a file path"))?;
    remove_stale_temps(path);
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        "{}{}-{n}",
        temp_prefix(file_name),
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&buf)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(path, "cannot write", e)
    })
}

/// Temporary files of `target` are `.<name>.tmp-<pid>-<n>` beside it.
fn temp_prefix(file_name: &std::ffi::OsStr) -> String {
    format!(".{}.tmp-", file_name.to_string_lossy())
}

/// Removes the temporary files a killed writer left beside `target` (those whose process is
/// gone), so an interrupted save leaves no litter once the target is saved or loaded again.
fn remove_stale_temps(target: &Path) {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = temp_prefix(name);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let alive = pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists();
        // Without /proc (not Linux) liveness is unknown: leave the file alone.
        if !alive && Path::new("/proc/self").exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Named tensors in file order, and the string metadata.
pub type Loaded = (Vec<(String, Tensor)>, HashMap<String, String>);
/// Named tensors in file order, each flagged when complex64 (as float32 [..., 2]), and the
/// string metadata.
pub type LoadedWithComplex = (Vec<(String, Tensor, bool)>, HashMap<String, String>);

/// Reads a checkpoint of real tensors: (name, tensor) pairs in file order, and the metadata; a
/// complex tensor in it is an error naming it.
pub fn load(path: &Path) -> Result<Loaded> {
    let (tensors, metadata) = load_with_complex(path)?;
    let mut out = Vec::with_capacity(tensors.len());
    for (name, t, complex) in tensors {
        if complex {
            return Err(io_err(
                path,
                "unsupported tensor dtype in",
                format!("{name} is complex64 (C64); read it with tlrs.complex.load"),
            ));
        }
        out.push((name, t));
    }
    Ok((out, metadata))
}

/// Reads a checkpoint whose tensors may be complex64 (C64): each such one comes as float32
/// [..., 2] (re, im), flagged.
pub fn load_with_complex(path: &Path) -> Result<LoadedWithComplex> {
    remove_stale_temps(path);
    let buf = std::fs::read(path).map_err(|e| io_err(path, "cannot read", e))?;
    let st = SafeTensors::deserialize(&buf)
        .map_err(|e| io_err(path, "corrupt or truncated checkpoint", e))?;
    let (_, meta) = SafeTensors::read_metadata(&buf)
        .map_err(|e| io_err(path, "corrupt or truncated checkpoint", e))?;
    let metadata = meta.metadata().clone().unwrap_or_default();
    let mut out = Vec::new();
    for (name, view) in st.tensors() {
        let bytes = view.data();
        let mut shape = view.shape().to_vec();
        let complex = view.dtype() == Dtype::C64;
        let storage = match view.dtype() {
            Dtype::C64 => {
                shape.push(2);
                CpuStorage::F32(
                    bytes
                        .chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect(),
                )
            }
            Dtype::F32 => CpuStorage::F32(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            Dtype::F64 => CpuStorage::F64(
                bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect(),
            ),
            other => {
                return Err(io_err(
                    path,
                    "unsupported tensor dtype in",
                    format!("{name} is {other:?}"),
                ))
            }
        };
        let t = Tensor::from_cpu(storage, shape)
            .map_err(|e| io_err(path, "invalid tensor in", format!("{name}: {e}")))?;
        out.push((name, t, complex));
    }
    Ok((out, metadata))
}
