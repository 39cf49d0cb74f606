"""CUDA availability, diagnostics and settings. None of these raises: on a machine without a
usable GPU `is_available()` is False and `diagnostics()` says why. `TLRS_CUDA_EMULATOR=1` makes
`cuda:0` a host emulator of the CUDA backend (its kernels compiled by the C++ compiler), for
testing the CUDA path on machines without a GPU.

Before the first probe, CUDA libraries installed from pip (`nvidia-cublas`, `nvidia-cuda-nvrtc`,
and `nvidia-nccl-cu13` for tlrs.distributed's NCCL backend) are loaded by full path, since the system loader does not search site-packages.
"""

from __future__ import annotations

import ctypes
import os
import pathlib

from . import _core

_PRELOADED: list[str] = []


def _preload_pip_libraries() -> None:
    """Load the CUDA libraries of pip wheels so the native probe finds them (opt out with
    TLRS_NO_PRELOAD=1)."""
    if _PRELOADED or os.environ.get("TLRS_NO_PRELOAD") == "1":
        return
    try:
        from cuda import pathfinder  # type: ignore[import-not-found,import-untyped,unused-ignore]

        for lib in ("cublas", "cublasLt", "nvrtc", "nccl"):
            try:
                loaded = pathfinder.load_nvidia_dynamic_lib(lib)
                _PRELOADED.append(str(getattr(loaded, "abs_path", lib)))
            except Exception:  # noqa: BLE001 - a missing library is reported by the probe
                pass
        return
    except ImportError:
        pass
    try:
        import nvidia  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return
    for root in getattr(nvidia, "__path__", []):
        for pattern in ("*/lib/libnvrtc.so.*", "*/lib/libcublasLt.so.*", "*/lib/libcublas.so.*",
                        "*/lib/libnccl.so.*"):
            for path in sorted(pathlib.Path(root).glob(pattern)):
                try:
                    ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                    _PRELOADED.append(str(path))
                except OSError:
                    pass


def is_available() -> bool:
    """Whether tlrs can run tensors on a CUDA device here (never raises)."""
    _preload_pip_libraries()
    return _core.cuda_status()[0]


def unavailable_reason() -> str:
    """Why CUDA cannot be used (names the missing libraries or device, and the fix)."""
    _preload_pip_libraries()
    return _core.cuda_status()[1]


def device_count() -> int:
    """The number of CUDA devices the driver reports (0 without a driver)."""
    _preload_pip_libraries()
    return _core.cuda_device_count()


def allow_tf32(on: bool) -> None:
    """Allow TF32 tensor-core math for float32 GPU matmuls on the calling thread (off unless
    asked; a Module follows its own `Options.tf32`)."""
    _core.cuda_set_tf32(bool(on))


def synchronize() -> None:
    """Wait until every kernel and copy queued on the CUDA devices in use has finished (kernels
    run asynchronously; time GPU work with this, as with `torch.cuda.synchronize()`)."""
    _core.cuda_synchronize()


def set_matmul_precision(precision: str) -> None:
    """Compute the calling thread's later GPU matmuls with SGEMM ('fp32', the default) or DGEMM
    ('fp64'), whatever the tensors' dtype. Raises ValueError for another name."""
    _core.cuda_set_matmul_precision(precision)


def tf32_allowed() -> bool:
    """Whether the calling thread allows TF32 (`allow_tf32(True)`)."""
    return _core.get_kernel_settings()[2]


def diagnostics() -> dict[str, str]:
    """Binding level, libraries found, driver version, device name and compute capability, the
    TF32 flag and the libraries preloaded from pip wheels."""
    _preload_pip_libraries()
    out = dict(_core.cuda_diagnostics())
    out["tf32"] = "allowed" if tf32_allowed() else "off"
    out["preloaded from pip"] = ", ".join(_PRELOADED) or "none"
    return out
