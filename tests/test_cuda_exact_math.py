"""The CUDA kernels' transcendentals are the CPU's (the libm crate's algorithms as device
functions, backend/cuda/cu/libm_f32.cu, libm_f64.cu and libm_rem_pio2_large.cu): exp, log,
expm1, log1p, tanh, erf, sin, cos and atan2, float32 and float64, give the CPU reference kernels'
bits on a sweep of each function's domain, special values included (sin and cos also beyond
2^28·π/2 in float32 and 2^20·π/2 in float64, libm's multi-precision reduction; atan2 on pairs of
random bit patterns, a dense grid and every pair of special values). On the emulator in CI (the
same kernel source, compiled for the host); on a GPU by scripts/gpu-check.sh."""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
from tlrs import ops

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")]

FUNCTIONS = ("exp", "log", "expm1", "log1p", "tanh", "erf", "sin", "cos", "sigmoid", "softplus")


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
    # sin and cos: near multiples of π/2 and around the thresholds of libm's multi-precision
    # reduction (2^28·π/2 for float32, 2^20·π/2 for float64) and far beyond them.
    huge = [k * np.pi / 2 for k in (1, 2, 3, 4, 5, 9, 1e6, 2**20, 2**28, 2**40, 2**100)]
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72, -87.33, -103.97, 709.78, -745.13,
               np.finfo(dtype).tiny, np.finfo(dtype).tiny / 4, np.finfo(dtype).max, -np.finfo(dtype).max,
               *huge, *(-h for h in huge), 4.22e8, 1.7e6, 3.3e19, 1e30, 1e300]
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


def _pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs for atan2: random bit patterns for both operands (every exponent), a dense grid of
    moderate values, and every pair of special values."""
    rng = np.random.default_rng(11)
    if dtype == "float32":
        ra = rng.integers(0, 2**32, (2, 200_000), dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        ra = rng.integers(0, 2**64, (2, 200_000), dtype=np.uint64).view(np.float64)
    g = np.concatenate([np.linspace(-4, 4, 301), np.linspace(-1e-3, 1e-3, 101), [-1e6, 1e6]])
    gy, gx = np.meshgrid(g, g)
    fi = np.finfo(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, fi.tiny, -fi.tiny,
                        fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max], dtype=dtype)
    sy, sx = np.meshgrid(special, special)
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.concatenate([ra[0], gy.ravel(), sy.ravel()]).astype(dtype)
        x = np.concatenate([ra[1], gx.ravel(), sx.ravel()]).astype(dtype)
    return y, x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_device_atan2_gives_the_cpu_bits(dtype):
    y, x = _pairs(dtype)
    with np.errstate(all="ignore"):
        cpu = ops.atan2(tlrs.tensor(y), tlrs.tensor(x)).numpy()
        dev = ops.atan2(tlrs.tensor(y, device="cuda"), tlrs.tensor(x, device="cuda")).numpy()
    bad = np.flatnonzero(~_same(cpu, dev))
    assert bad.size == 0, (f"atan2 {dtype}: {bad.size} of {y.size} differ, e.g. y={y[bad[0]]!r} "
                           f"x={x[bad[0]]!r} cpu={cpu[bad[0]]!r} cuda={dev[bad[0]]!r}")
