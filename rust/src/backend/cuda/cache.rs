//! An on-disk cache of compiled kernel images, so a new process does not pay NVRTC's seconds per
//! kernel family again. Keyed by the source text, the architecture, the NVRTC version and the
//! tlrs version; written atomically (temporary file, then rename), and any read or write failure
//! just means compiling again. `TLRS_KERNEL_CACHE=0` turns it off; `TLRS_CACHE_DIR` moves it
//! (default `$XDG_CACHE_HOME/tlrs/kernels` or `~/.cache/tlrs/kernels`).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

/// The folder cached images live in, or None when caching is off or there is no home.
pub fn dir() -> Option<PathBuf> {
    if std::env::var("TLRS_KERNEL_CACHE").is_ok_and(|v| v == "0") {
        return None;
    }
    if let Ok(d) = std::env::var("TLRS_CACHE_DIR") {
        return Some(PathBuf::from(d).join("kernels"));
    }
    let base = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok()?;
    Some(base.join("tlrs").join("kernels"))
}

/// The file name for one compiled image: a hash of everything the image depends on.
pub fn key(source: &str, arch: &str, compiler: &str) -> String {
    // SipHash with fixed keys: the same inputs give the same name in every process.
    let mut h = DefaultHasher::new();
    (source, arch, compiler, env!("CARGO_PKG_VERSION")).hash(&mut h);
    format!("{arch}-{:016x}.cubin", h.finish())
}

/// The cached image, if one is there and readable.
pub fn load(name: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(dir()?.join(name)).ok()?;
    // A CUBIN is an ELF file; anything else (a truncated or foreign file) is ignored.
    (bytes.len() > 4 && &bytes[..4] == b"\x7fELF").then_some(bytes)
}

/// Stores an image; failures are ignored (the cache is an optimisation only).
pub fn store(name: &str, image: &[u8]) {
    let Some(d) = dir() else { return };
    if std::fs::create_dir_all(&d).is_err() {
        return;
    }
    let tmp = d.join(format!("{name}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, image).is_ok() && std::fs::rename(&tmp, d.join(name)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_every_input_and_images_round_trip() {
        let k = key("src", "sm_90", "nvrtc 13.0");
        assert_eq!(k, key("src", "sm_90", "nvrtc 13.0"));
        assert_ne!(k, key("src2", "sm_90", "nvrtc 13.0"));
        assert_ne!(k, key("src", "sm_80", "nvrtc 13.0"));
        assert_ne!(k, key("src", "sm_90", "nvrtc 13.1"));
        assert!(k.starts_with("sm_90-") && k.ends_with(".cubin"));

        let d = std::env::temp_dir().join(format!("tlrs-cache-test-{}", std::process::id()));
        std::env::set_var("TLRS_CACHE_DIR", &d);
        let image = b"\x7fELF and the rest".to_vec();
        store("a.cubin", &image);
        assert_eq!(load("a.cubin"), Some(image));
        std::fs::write(d.join("kernels").join("b.cubin"), b"junk").unwrap();
        assert_eq!(load("b.cubin"), None, "a non-ELF file is not an image");
        assert_eq!(load("missing.cubin"), None);
        std::env::set_var("TLRS_KERNEL_CACHE", "0");
        assert_eq!(load("a.cubin"), None, "caching can be turned off");
        std::env::remove_var("TLRS_KERNEL_CACHE");
        std::env::remove_var("TLRS_CACHE_DIR");
        let _ = std::fs::remove_dir_all(&d);
    }
}
