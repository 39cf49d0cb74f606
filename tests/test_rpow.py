"""`number ** tensor` follows IEEE `pow` (NumPy's `np.power`, bit for bit on the reference
kernels), including negative bases with integral exponents and zero bases; its gradient is
`base ** t * ln(base)`; `pow(t, e, m)` is refused."""

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import ops

EXPONENTS = np.array([2.0, 0.0, -1.0, 0.5, 3.0, -3.0, 1e-300, np.nan, np.inf, -np.inf, 1e10])


@pytest.mark.parametrize("base", [-0.5, -2.0, 0.0, -0.0, 1.0, 2.0, 1e-300, np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rpow_equals_numpy_power_bit_for_bit(base, dtype):
    x = EXPONENTS.astype(dtype)
    got = (base ** tlrs.tensor(x, dtype=dtype)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(np.asarray(base, dtype=dtype), x)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes(), (got, want)


def test_rpow_gradient_matches_finite_differences():
    t = tlrs.tensor([1.5, -0.25, 2.0], requires_grad=True)
    (g,) = tlrs.grad(ops.sum(3.0 ** t), [t])
    x, eps = np.array([1.5, -0.25, 2.0]), 1e-6
    fd = (3.0 ** (x + eps) - 3.0 ** (x - eps)) / (2 * eps)
    np.testing.assert_allclose(g.numpy(), fd, rtol=1e-8)


def test_rpow_compiles_and_equals_eager():
    defn = tlrs.ModuleDef([[3]], [[3]], lambda ps, xs: ops.sum(2.0 ** (ps[0] * xs[0])))
    x = [tlrs.tensor([0.5, -1.0, 2.0])]
    eager = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
    compiled = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend="compiled"))
    assert compiled.forward(x).numpy().tobytes() == eager.forward(x).numpy().tobytes()
    assert [g.numpy().tobytes() for g in compiled.backward(x)] == [
        g.numpy().tobytes() for g in eager.backward(x)]


def test_three_argument_pow_is_refused():
    with pytest.raises(TypeError, match="modulus"):
        pow(tlrs.tensor([2.0]), 2, 5)


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
def test_rpow_on_the_device_matches_the_cpu():
    x = tlrs.tensor(EXPONENTS[np.isfinite(EXPONENTS)])
    cpu = ((-0.5) ** x).numpy(), (2.0 ** x).numpy()
    dev = x.to("cuda")
    got = ((-0.5) ** dev).cpu().numpy(), (2.0 ** dev).cpu().numpy()
    for a, b in zip(got, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-15)
