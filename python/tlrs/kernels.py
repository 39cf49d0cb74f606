"""Which kernels run (reference or fast CPU kernels, the GPU matmul precision, TF32) and on how
many CPU threads.

The kernel settings belong to the calling thread: one thread's choice never changes the numbers
another thread computes, and a new thread starts from the defaults (exact reference kernels,
SGEMM, no TF32). A `Module` runs every call under its own `Options`, whatever the thread's
settings are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from . import _core


def set_fast_kernels(on: bool) -> None:
    """Selects fast kernels (FMA, blocked GEMM) or the bit-reproducible reference kernels for the
    calling thread."""
    _core.set_fast_kernels(bool(on))


def get_fast_kernels() -> bool:
    """Whether the calling thread runs fast kernels."""
    return _core.get_fast_kernels()


@contextlib.contextmanager
def fast_kernels(on: bool = True) -> Iterator[None]:
    """Within the block, this thread uses fast kernels (or reference kernels with on=False)."""
    fast, gpu_fp64, tf32 = _core.get_kernel_settings()
    with kernel_settings(bool(on), gpu_fp64, tf32):
        yield


@contextlib.contextmanager
def kernel_settings(fast: bool, gpu_fp64: bool, tf32: bool) -> Iterator[None]:
    """Within the block, this thread runs with exactly these settings (restored afterwards)."""
    previous = _core.get_kernel_settings()
    _core.set_kernel_settings(bool(fast), bool(gpu_fp64), bool(tf32))
    try:
        yield
    finally:
        _core.set_kernel_settings(*previous)


def set_num_threads(n: int) -> None:
    """Sets the number of CPU threads kernels use (n >= 1; default: all cores; process-wide:
    the count changes speed only, never results)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"set_num_threads: expected an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads: expected a thread count >= 1, got {n}")
    _core.set_num_threads(n)


def get_num_threads() -> int:
    """The number of CPU threads kernels use."""
    return _core.get_num_threads()


def cached_memory() -> int:
    """Bytes of freed host buffers tlrs keeps for reuse. A training step frees and reallocates the
    same large buffers every step; reusing them spares the page faults of fresh memory. Buffers of
    256 KiB or more are kept, up to 1 GiB in all, the least recently freed returned first."""
    return _core.cached_memory()


def release_cached_memory() -> int:
    """Returns every kept buffer to the system (see `cached_memory`); the bytes returned."""
    return _core.release_cached_memory()
