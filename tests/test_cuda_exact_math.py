"""The CUDA kernels' transcendentals are the CPU's (the libm crate's algorithms as device
functions, backend/cuda/cu/libm_f32.cu, libm_f64.cu, libm_pow_f64.cu and libm_rem_pio2_large.cu):
exp, log, expm1, log1p, tanh, erf, sin, cos, atan2 and pow, float32 and float64, give the CPU
reference kernels' bits on a sweep of each function's domain, special values included (sin and
cos also beyond 2^28·π/2 in float32 and 2^20·π/2 in float64, libm's multi-precision reduction;
atan2 on pairs of random bit patterns, a dense grid and every pair of special values; pow with
scalar exponents over the same sweep, and tensor ** tensor on pairs of random bit patterns,
positive bases against moderate exponents, negative bases against integer exponents, bases near
1 against huge exponents, the edges of overflow and underflow and every pair of special values).
On the emulator in CI (the same kernel source, compiled for the host); on a GPU by
scripts/gpu-check.sh."""

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


def _pow_exponents(dtype: str) -> list[float]:
    """Scalar exponents for pow: libm's special cases (0, ±1, 2, 0.5), integers, fractions,
    and huge and tiny ones (past 2^27 in float32 and 2^31 and 2^64 in float64, subnormal)."""
    fi = np.finfo(dtype)
    return [0.5, 2.0, 3.0, -1.0, 1.5, 1 / 3, 10.0, -2.5, 0.0, -0.0, 1.0, -0.5, -2.0, 7.0, 0.1, -1 / 3,
            2.0**31 + 1, 3e9, -3e9, 1e19, -1e19, 1e30, -1e30, float(fi.max), -float(fi.max),
            float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_device_pow_gives_the_cpu_bits(dtype):
    x = _values(dtype)
    cx, dx = tlrs.tensor(x), tlrs.tensor(x, device="cuda")
    for e in _pow_exponents(dtype):
        with np.errstate(all="ignore"):
            cpu = ops.pow(cx, e).numpy()
            dev = ops.pow(dx, e).numpy()
        bad = np.flatnonzero(~_same(cpu, dev))
        assert bad.size == 0, (f"pow {dtype} e={e!r}: {bad.size} of {x.size} differ, e.g. x={x[bad[0]]!r} "
                               f"cpu={cpu[bad[0]]!r} cuda={dev[bad[0]]!r}")
    # tensor ** tensor (the op table's tensor_pow)
    a, b = _pow_pairs(dtype)
    with np.errstate(all="ignore"):
        cpu = (tlrs.tensor(a) ** tlrs.tensor(b)).numpy()
        dev = (tlrs.tensor(a, device="cuda") ** tlrs.tensor(b, device="cuda")).numpy()
    bad = np.flatnonzero(~_same(cpu, dev))
    assert bad.size == 0, (f"tensor_pow {dtype}: {bad.size} of {a.size} differ, e.g. x={a[bad[0]]!r} "
                           f"y={b[bad[0]]!r} cpu={cpu[bad[0]]!r} cuda={dev[bad[0]]!r}")


def _pow_pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs for tensor ** tensor: random bit patterns for both operands (every exponent),
    positive bases in [0.01, 100] against exponents in [-20, 20], negative bases against integer
    exponents, bases near 1 against huge exponents, the edges of overflow and underflow, and
    every pair of special values."""
    rng = np.random.default_rng(13)
    fi = np.finfo(dtype)
    n = 200_000
    if dtype == "float32":
        ra = rng.integers(0, 2**32, (2, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        ra = rng.integers(0, 2**64, (2, n), dtype=np.uint64).view(np.float64)
    pos_x = np.exp(rng.uniform(np.log(0.01), np.log(100.0), n))
    pos_y = rng.uniform(-20.0, 20.0, n)
    # Negative bases: moderate ones and random bit patterns (NaN and infinity included).
    with np.errstate(invalid="ignore"):  # casting a signalling NaN
        neg_x = np.concatenate([-np.exp(rng.uniform(np.log(0.01), np.log(100.0), n // 2)),
                                -np.abs(ra[0][: n // 2]).astype(np.float64)])
    neg_y = np.concatenate([rng.integers(-40, 41, n // 2), rng.integers(-200, 201, n // 2)]).astype(np.float64)
    # Bases within a few ulps of 1 against huge exponents (libm's |y| > 2^27 or 2^31 branch).
    u = f"u{fi.bits // 8}"
    one_bits = np.array(1.0, dtype).view(u).astype(np.int64)
    near_one = np.concatenate([(one_bits + np.arange(-20, 21)).astype(u).view(dtype),
                               (1.0 + rng.uniform(-2.0**-19, 2.0**-19, 200)).astype(dtype)])
    huge_y = np.array([2.0**27 + 8, 2.0**31 + 1, 3e9, 1e12, 2.0**64 + 2**12, 1e20], dtype=dtype)
    huge_y = np.concatenate([huge_y, -huge_y])
    hx, hy = np.meshgrid(near_one, huge_y)
    # The edges of overflow and underflow: y * log2(x) near 128 and -150 (float32), 1024 and
    # -1075 (float64).
    top, bottom = (128.0, -150.0) if dtype == "float32" else (1024.0, -1075.0)
    edge_z = np.concatenate([np.linspace(top - 2, top + 2, 2000), np.linspace(bottom - 2, bottom + 2, 2001)])
    ints = np.concatenate([np.arange(top - 3, top + 4), np.arange(bottom - 3, bottom + 4)])
    bases = np.array([2.0, 0.5, 10.0, 3.0, 1.5])
    edge_x = np.concatenate([np.repeat(bases, edge_z.size), np.repeat([2.0, -2.0, 0.5, -0.5], ints.size)])
    edge_y = np.concatenate([(edge_z / np.log2(bases)[:, None]).ravel(), np.tile(ints, 2), -np.tile(ints, 2)])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, fi.tiny, -fi.tiny, fi.smallest_subnormal,
                        -fi.smallest_subnormal, fi.max, -fi.max, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1.5], dtype=dtype)
    sx, sy = np.meshgrid(special, special)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.concatenate([ra[0], pos_x, neg_x, hx.ravel(), edge_x, sx.ravel()]).astype(dtype)
        b = np.concatenate([ra[1], pos_y, neg_y, hy.ravel(), edge_y, sy.ravel()]).astype(dtype)
    return a, b
