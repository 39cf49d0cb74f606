"""trunc, floor, floor_divide, div_trunc, softplus(beta, threshold) and gelu(approximate=...) against
PyTorch, float32 and float64, values and gradients, on the CPU reference kernels, the CPU fast
kernels and CUDA (`device_kind`, tests/conftest.py).

How each is compared:
- trunc, floor, floor_divide, div_trunc and their (zero) gradients: bit for bit. They are exact IEEE
  operations (roundings, fmod, one division and the fix-ups of c10::div_floor_floating), so
  PyTorch's CPU computes the same bits; torch.div(a, b, rounding_mode='trunc') is trunc(a / b)
  and rounding_mode='floor' is floor_divide, bit for bit too.
- softplus and gelu(approximate='tanh'): torch.testing.assert_close defaults. tlrs takes exp,
  log1p and tanh from the libm crate and PyTorch from glibc or Sleef, so the last bit may
  differ. Where softplus returns x itself (x * beta > threshold) the value is compared bit for
  bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tlrs
from tlrs import _core, ops

DTYPES = ["float32", "float64"]
NAN, INF = float("nan"), float("inf")
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1e-30, -1e-30, 3e7, -3e7, INF, -INF, NAN]


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32 if a.dtype == np.float32 else np.uint64)


def same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, what
    # NaN's sign and payload are not part of the contract: any NaN matches any NaN.
    both_nan = np.isnan(got) & np.isnan(want)
    mismatch = (bits(got) != bits(want)) & ~both_nan
    assert not mismatch.any(), f"{what}: at {np.argwhere(mismatch)[:5].tolist()}: {got[mismatch][:5]} vs {want[mismatch][:5]}"


def unary_inputs(dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-6, 6, 200), rng.uniform(-1e6, 1e6, 40), SPECIAL])
    return x.astype(dtype)


def tlrs_value_and_grads(fn, arrays, g, device_kind):
    """fn's value and the gradients of sum(fn(...) * g) for every input, as NumPy arrays."""
    with device_kind.run():
        xs = [device_kind.tensor(a, requires_grad=True) for a in arrays]
        y = fn(*xs)
        grads = tlrs.grad([ops.sum(y * device_kind.tensor(g))], xs)
    assert y.device.startswith(device_kind.device)
    return y.numpy(), [gr.numpy() for gr in grads]


def torch_value_and_grads(fn, arrays, g):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*xs)
    grads = torch.autograd.grad((y * torch.tensor(g)).sum(), xs)
    return y.detach().numpy(), [gr.numpy() for gr in grads]


# ---- trunc and floor: bit for bit, zero gradients even where g is NaN or infinite

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["trunc", "floor"])
def test_trunc_and_floor_equal_pytorch_bit_for_bit(name, dtype, device_kind):
    x = unary_inputs(dtype)
    g = np.random.default_rng(1).uniform(-1, 1, x.shape).astype(dtype)
    g[:3] = [NAN, INF, -INF]
    y, (dx,) = tlrs_value_and_grads(getattr(ops, name), [x], g, device_kind)
    ty, (tdx,) = torch_value_and_grads(getattr(torch, name), [x], g)
    same_bits(y, ty, f"{name} value")
    same_bits(dx, tdx, f"{name} gradient")
    assert not dx.any() and not np.signbit(dx).any()


def test_trunc_and_floor_tensor_methods():
    x = tlrs.tensor([-1.5, 1.5])
    assert x.trunc().tolist() == [-1.0, 1.0] and x.floor().tolist() == [-2.0, 1.0]


# ---- floor_divide: PyTorch's fmod-based algorithm, bit for bit

def divide_inputs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.uniform(-50, 50, 300), rng.integers(-20, 20, 100).astype(float)])
    b = np.concatenate([rng.uniform(-5, 5, 300), rng.choice([-3.0, -2.0, -0.5, 0.5, 2.0, 3.0, 0.1], 100)])
    # Every special value against every other: b == 0, signed zeros, infinities, NaN.
    sa, sb = np.meshgrid(SPECIAL, SPECIAL)
    return np.concatenate([a, sa.ravel()]).astype(dtype), np.concatenate([b, sb.ravel()]).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_floor_divide_equals_pytorch_bit_for_bit(dtype, device_kind):
    a, b = divide_inputs(dtype)
    g = np.random.default_rng(3).uniform(-1, 1, a.shape).astype(dtype)
    g[:2] = [NAN, INF]
    y, (da, db) = tlrs_value_and_grads(ops.floor_divide, [a, b], g, device_kind)
    ty, (tda, tdb) = torch_value_and_grads(lambda p, q: torch.div(p, q, rounding_mode="floor"), [a, b], g)
    same_bits(y, ty, "floor_divide value")
    same_bits(y, torch.floor_divide(torch.tensor(a), torch.tensor(b)).numpy(), "torch.floor_divide")
    # PyTorch's gradient of div(..., rounding_mode=...) is zeros for both operands.
    same_bits(da, tda, "floor_divide gradient of a")
    same_bits(db, tdb, "floor_divide gradient of b")
    assert not da.any() and not db.any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_div_trunc_equals_pytorch_bit_for_bit(dtype, device_kind):
    """div(..., rounding_mode='trunc') is one op: PyTorch's values bit for bit (b == 0, signed
    zeros, infinities and NaN included) and its zero gradients, NaN or infinite g included."""
    a, b = divide_inputs(dtype)
    g = np.random.default_rng(5).uniform(-1, 1, a.shape).astype(dtype)
    g[:2] = [NAN, INF]
    trunc_div = lambda p, q: ops.div(p, q, rounding_mode="trunc")  # noqa: E731
    y, (da, db) = tlrs_value_and_grads(trunc_div, [a, b], g, device_kind)
    ty, (tda, tdb) = torch_value_and_grads(lambda p, q: torch.div(p, q, rounding_mode="trunc"), [a, b], g)
    same_bits(y, ty, "div trunc value")
    same_bits(da, tda, "div trunc gradient of a")
    same_bits(db, tdb, "div trunc gradient of b")
    assert not da.any() and not db.any()
    # A number as the dividend.
    want = torch.div(torch.tensor(7.5, dtype=getattr(torch, dtype)), torch.tensor(b), rounding_mode="trunc")
    same_bits(ops.div_trunc(7.5, tlrs.tensor(b)).numpy(), want.numpy(), "number / tensor")


@pytest.mark.parametrize("dtype", DTYPES)
def test_floor_divide_broadcasts_and_its_gradients_sum_back(dtype, device_kind):
    rng = np.random.default_rng(4)
    a = rng.uniform(-9, 9, (3, 4)).astype(dtype)
    b = rng.choice([-2.5, -1.0, 0.75, 2.0], (4,)).astype(dtype)
    g = np.ones((3, 4), dtype)
    y, (da, db) = tlrs_value_and_grads(ops.floor_divide, [a, b], g, device_kind)
    same_bits(y, torch.floor_divide(torch.tensor(a), torch.tensor(b)).numpy(), "broadcast floor_divide")
    assert da.shape == (3, 4) and db.shape == (4,) and not da.any() and not db.any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_floor_divide_is_pythons_floor_division(dtype):
    a, b = divide_inputs(dtype)
    y = ops.floor_divide(tlrs.tensor(a), tlrs.tensor(b)).numpy()
    if dtype == "float64":
        for u, v, got in zip(a.tolist(), b.tolist(), y.tolist(), strict=True):
            if v != 0 and not np.isnan([u, v]).any() and not np.isinf(u):
                want = u // v
                assert got == want and np.signbit(got) == np.signbit(want), (u, v, got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_trunc_of_a_quotient_is_pytorchs_trunc_rounding_mode(dtype, device_kind):
    """What ops.div(rounding_mode='trunc') is built from: trunc(a / b), bit for bit."""
    a, b = divide_inputs(dtype)
    with device_kind.run():
        y = ops.trunc(device_kind.tensor(a) / device_kind.tensor(b)).numpy()
    same_bits(y, torch.div(torch.tensor(a), torch.tensor(b), rounding_mode="trunc").numpy(), "trunc(a / b)")


# ---- softplus(beta, threshold): assert_close defaults; x itself above the threshold bit for bit

SOFTPLUS = [(1.0, 20.0), (2.0, 20.0), (0.5, 3.0), (3.0, 1.0), (1.0, 0.0), (-1.5, 2.0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta,threshold", SOFTPLUS)
def test_softplus_matches_pytorch(beta, threshold, dtype, device_kind):
    x = np.concatenate([np.random.default_rng(5).uniform(-30, 30, 300), [0.0, -0.0, 10.0, 20.0, 40.0]])
    x = x.astype(dtype)
    g = np.random.default_rng(6).uniform(-1, 1, x.shape).astype(dtype)
    y, (dx,) = tlrs_value_and_grads(lambda t: ops.softplus(t, beta, threshold), [x], g, device_kind)
    ty, (tdx,) = torch_value_and_grads(lambda t: torch.nn.functional.softplus(t, beta, threshold), [x], g)
    torch.testing.assert_close(torch.tensor(y), torch.tensor(ty))
    torch.testing.assert_close(torch.tensor(dx), torch.tensor(tdx))
    above = x * np.asarray(beta, dtype) > np.asarray(threshold, dtype)
    same_bits(y[above], x[above], "softplus above the threshold")
    same_bits(dx[above], g[above], "softplus gradient above the threshold")


@pytest.mark.parametrize("dtype", DTYPES)
def test_softplus_defaults_are_pytorchs_and_keywords_work(dtype):
    x = tlrs.tensor(np.linspace(-25, 25, 101), dtype=dtype)
    default = ops.softplus(x).numpy()
    same_bits(ops.softplus(x, 1.0, 20.0).numpy(), default, "positional defaults")
    same_bits(ops.softplus(x, beta=1.0, threshold=20.0).numpy(), default, "keyword defaults")
    with pytest.raises(ValueError, match="softplus: expected beta to be a number, got nan"):
        ops.softplus(x, beta=NAN)


# ---- gelu(approximate=...): 'none' unchanged, 'tanh' against PyTorch with assert_close defaults

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_pytorch(approximate, dtype, device_kind):
    x = np.concatenate([np.random.default_rng(7).uniform(-8, 8, 300), [0.0, -0.0, 1e-20, 30.0, -30.0]])
    x = x.astype(dtype)
    g = np.random.default_rng(8).uniform(-1, 1, x.shape).astype(dtype)
    y, (dx,) = tlrs_value_and_grads(lambda t: ops.gelu(t, approximate=approximate), [x], g, device_kind)
    ty, (tdx,) = torch_value_and_grads(lambda t: torch.nn.functional.gelu(t, approximate=approximate), [x], g)
    torch.testing.assert_close(torch.tensor(y), torch.tensor(ty))
    torch.testing.assert_close(torch.tensor(dx), torch.tensor(tdx))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_default_is_unchanged_and_tanh_is_the_table_op(dtype):
    x = tlrs.tensor(np.linspace(-4, 4, 41), dtype=dtype)
    same_bits(ops.gelu(x, "none").numpy(), ops.gelu(x).numpy(), "gelu(x, 'none')")
    same_bits(ops.gelu(x, approximate="tanh").numpy(), _core.gelu_tanh(x).numpy(), "gelu(x, 'tanh')")
    assert np.abs(ops.gelu(x, "tanh").numpy() - ops.gelu(x).numpy()).max() > 0


def test_gelu_refuses_an_unknown_approximation():
    x = tlrs.tensor([0.5])
    with pytest.raises(ValueError, match=r"gelu: expected approximate to be 'none' or 'tanh', got 'erf'"):
        ops.gelu(x, approximate="erf")
    with pytest.raises(TypeError):
        ops.gelu(x, approximate=1)  # type: ignore[arg-type]


# ---- atan2: libm's atan2 (PyTorch's is the platform's: equal within rounding), PyTorch's gradients

@pytest.mark.parametrize("dtype", DTYPES)
def test_atan2_matches_pytorch_values_specials_and_gradients(dtype, device_kind):
    a, b = divide_inputs(dtype)  # every special value against every other: zeros, infinities, NaN
    g = np.random.default_rng(5).uniform(-1, 1, a.shape).astype(dtype)
    y, (da, db) = tlrs_value_and_grads(ops.atan2, [a, b], g, device_kind)
    ty, (tda, tdb) = torch_value_and_grads(torch.atan2, [a, b], g)
    torch.testing.assert_close(torch.from_numpy(y), torch.from_numpy(ty), equal_nan=True)
    # The quadrant rules at signed zeros and infinities are IEEE's: the same bits as PyTorch.
    special = np.isin(a, [0.0, INF, -INF]) | np.isin(b, [0.0, INF, -INF])
    same_bits(y[special], ty[special], "atan2 at signed zeros and infinities")
    for got, want, what in ((da, tda, "a"), (db, tdb, "b")):
        torch.testing.assert_close(torch.from_numpy(got), torch.from_numpy(want), equal_nan=True, msg=what)
