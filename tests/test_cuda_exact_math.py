"""The CUDA kernels' transcendentals are the CPU's (the libm crate's algorithms as device
functions, backend/cuda/cu/libm.cu): exp, log, expm1, log1p, tanh and erf, float32 and float64,
give the CPU reference kernels' bits on a sweep of each function's domain, special values
included. On the emulator in CI (the same kernel source, compiled for the host); on a GPU by
scripts/gpu-check.sh."""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
from tlrs import ops

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")]

FUNCTIONS = ("exp", "log", "expm1", "log1p", "tanh", "erf", "sigmoid", "softplus")


def _values(dtype: str) -> np.ndarray:
    """Random bit patterns (every exponent), a dense stretch near each branch point, and the
    special values, all finite and non-finite."""
    rng = np.random.default_rng(7)
    if dtype == "float32":
        bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
        rand = bits.view(np.float32)
    else:
        rand = rng.integers(0, 2**64, 200_000, dtype=np.uint64).view(np.float64)
    near = np.concatenate([np.linspace(a, b, 20_000) for a, b in
                           [(-110, 110), (-8, 8), (-1.5, 1.5), (-0.3, 0.3), (-1e-6, 1e-6), (0.7, 1.5)]])
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72, -87.33, -103.97, 709.78, -745.13,
               np.finfo(dtype).tiny, np.finfo(dtype).tiny / 4, np.finfo(dtype).max, -np.finfo(dtype).max]
    with np.errstate(invalid="ignore", over="ignore"):
        return np.concatenate([rand, near, special]).astype(dtype)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bit equality, any NaN equal to any NaN (payloads are the platform's)."""
    return (np.isnan(a) & np.isnan(b)) | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_device_transcendentals_give_the_cpu_bits(name, dtype):
    x = _values(dtype)
    with np.errstate(all="ignore"):
        cpu = getattr(ops, name)(tlrs.tensor(x)).numpy()
        dev = getattr(ops, name)(tlrs.tensor(x, device="cuda")).numpy()
    same = _same(cpu, dev)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, (f"{name} {dtype}: {bad.size} of {x.size} differ, e.g. x={x[bad[0]]!r} "
                           f"cpu={cpu[bad[0]]!r} cuda={dev[bad[0]]!r}")
