"""Which CPU kernels run (reference or fast) and on how many threads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from . import _core


def set_fast_kernels(on: bool) -> None:
    """Selects fast kernels (FMA, blocked GEMM) or the bit-reproducible reference kernels."""
    _core.set_fast_kernels(bool(on))


def get_fast_kernels() -> bool:
    """Whether fast kernels are selected."""
    return _core.get_fast_kernels()


@contextlib.contextmanager
def fast_kernels(on: bool = True) -> Iterator[None]:
    """Within the block, use fast kernels (or reference kernels with on=False)."""
    previous = _core.get_fast_kernels()
    _core.set_fast_kernels(bool(on))
    try:
        yield
    finally:
        _core.set_fast_kernels(previous)


def set_num_threads(n: int) -> None:
    """Sets the number of CPU threads kernels use (n >= 1; default: all cores)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"set_num_threads: expected an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads: expected a thread count >= 1, got {n}")
    _core.set_num_threads(n)


def get_num_threads() -> int:
    """The number of CPU threads kernels use."""
    return _core.get_num_threads()
