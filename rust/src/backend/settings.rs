//! The kernel settings of the calling thread: reference or fast CPU kernels, the GPU matmul
//! precision and TF32. They are per thread, so one thread's choice never changes the numbers
//! another thread computes; a new thread starts from the defaults (exact reference kernels,
//! SGEMM, no TF32).

use std::cell::Cell;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelSettings {
    /// FMA + blocked GEMM CPU kernels instead of the bit-reproducible reference ones.
    pub fast: bool,
    /// DGEMM for GPU matmuls whatever the dtype (else SGEMM).
    pub gpu_fp64: bool,
    /// TF32 tensor-core math for float32 GPU matmuls.
    pub tf32: bool,
}

thread_local! {
    static CURRENT: Cell<KernelSettings> = const {
        Cell::new(KernelSettings { fast: false, gpu_fp64: false, tf32: false })
    };
}

/// This thread's settings.
pub fn current() -> KernelSettings {
    CURRENT.with(|c| c.get())
}

/// Replaces this thread's settings.
pub fn set(s: KernelSettings) {
    CURRENT.with(|c| c.set(s));
}

/// Changes this thread's settings with `f`.
pub fn update(f: impl FnOnce(&mut KernelSettings)) {
    let mut s = current();
    f(&mut s);
    set(s);
}

/// Restores the settings it was made with when dropped (also when unwinding).
struct Restore(KernelSettings);

impl Drop for Restore {
    fn drop(&mut self) {
        set(self.0);
    }
}

/// Runs `f` with this thread's settings replaced by `s`, then restores them.
pub fn with_settings<R>(s: KernelSettings, f: impl FnOnce() -> R) -> R {
    let _restore = Restore(current());
    set(s);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_per_thread_and_scoped() {
        let fast = KernelSettings {
            fast: true,
            ..Default::default()
        };
        set(fast);
        let other = std::thread::spawn(current).join().unwrap_or(fast);
        assert_eq!(other, KernelSettings::default());
        let inner = with_settings(KernelSettings::default(), current);
        assert_eq!(inner, KernelSettings::default());
        assert_eq!(current(), fast);
        set(KernelSettings::default());
    }
}
