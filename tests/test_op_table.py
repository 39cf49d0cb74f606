"""The ops added through the elementwise op table (rust/src/op_table/): forward against NumPy and
`math` oracles and f64 gradients against central differences, each from one body on the CPU
reference kernels, the CPU fast kernels and CUDA (`device_kind`, tests/conftest.py); hand values
at the kinks, parameter checks, the Tensor methods, the compiled backend, and the stub generated
from the table."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import tlrs
from tlrs import ops
from tlrs.config import Options

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_stub  # noqa: E402

DTYPES = ["float32", "float64"]
TOL = {"float32": 2e-6, "float64": 1e-14}
_erf = np.vectorize(math.erf)

# name -> (call with parameters, NumPy/math oracle with the same parameters, input range)
NEW = {
    "silu": (ops.silu, lambda x: x / (1.0 + np.exp(-x)), (-6, 6)),
    "leaky_relu": (ops.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x), (-3, 3)),
    "leaky_relu 0.2": (lambda t: ops.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), (-3, 3)),
    "elu": (ops.elu, lambda x: np.where(x > 0, x, np.expm1(x)), (-4, 3)),
    "elu 1.5": (lambda t: ops.elu(t, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)), (-4, 3)),
    "hardtanh": (ops.hardtanh, lambda x: np.clip(x, -1.0, 1.0), (-3, 3)),
    "hardtanh -0.5 2": (lambda t: ops.hardtanh(t, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0), (-3, 3)),
    "log1p": (ops.log1p, np.log1p, (-0.9, 4)),
    "expm1": (ops.expm1, np.expm1, (-3, 3)),
    "rsqrt": (ops.rsqrt, lambda x: 1.0 / np.sqrt(x), (0.05, 5)),
    "erf": (ops.erf, _erf, (-3, 3)),
    "sin": (ops.sin, np.sin, (-7, 7)),
    "cos": (ops.cos, np.cos, (-7, 7)),
    "smooth_l1": (ops.smooth_l1, lambda x: np.where(abs(x) < 1, 0.5 * x * x, abs(x) - 0.5), (-3, 3)),
    "smooth_l1 0.5": (lambda t: ops.smooth_l1(t, 0.5), lambda x: np.where(abs(x) < 0.5, x * x, abs(x) - 0.25),
                      (-3, 3)),
    "huber": (ops.huber, lambda x: np.where(abs(x) < 1, 0.5 * x * x, abs(x) - 0.5), (-3, 3)),
    "huber 2": (lambda t: ops.huber(t, 2.0), lambda x: np.where(abs(x) < 2, 0.5 * x * x, 2 * (abs(x) - 1)), (-5, 5)),
    "logsigmoid": (ops.logsigmoid, lambda x: np.minimum(x, 0) - np.log1p(np.exp(-abs(x))), (-30, 30)),
}


def _data(dtype, lo, hi, shape=(4, 5), seed=0):
    a = np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)
    return a, a.astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(NEW))
def test_forward_matches_the_oracle_on_every_device(name, dtype, device_kind):
    fn, ref, (lo, hi) = NEW[name]
    a, a64 = _data(dtype, lo, hi)
    with device_kind.run():
        y = fn(device_kind.tensor(a))
    assert y.dtype == dtype and list(y.shape) == list(a.shape)
    assert y.device.startswith(device_kind.device)
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref(a64), rtol=TOL[dtype], atol=TOL[dtype])


def test_values_near_zero_keep_their_precision():
    x = tlrs.tensor(np.array([1e-10, -1e-12, 3e-300]))
    np.testing.assert_array_equal(ops.log1p(x).numpy(), np.log1p(x.numpy()))
    np.testing.assert_array_equal(ops.expm1(x).numpy(), np.expm1(x.numpy()))


def test_special_values():
    nan, inf = float("nan"), float("inf")
    x = tlrs.tensor(np.array([nan, inf, -inf, 0.0, -0.0]))
    # NaN stays NaN through every op; infinities go where the limits say.
    assert np.isnan(ops.hardtanh(x).numpy()[0]) and ops.hardtanh(x).numpy()[1:3].tolist() == [1.0, -1.0]
    # silu is x / (1 + e^-x), PyTorch's formula: -inf / inf is NaN there too.
    assert ops.silu(x).numpy()[1] == inf and np.isnan(ops.silu(x).numpy()[2])
    assert ops.elu(x).numpy()[1:3].tolist() == [inf, -1.0]
    assert ops.leaky_relu(x).numpy()[1:3].tolist() == [inf, -inf]
    assert ops.erf(x).numpy()[1:].tolist() == [1.0, -1.0, 0.0, -0.0]
    r = ops.rsqrt(x).numpy()
    assert r[1] == 0.0 and np.isnan(r[2]) and r[3] == inf and r[4] == -inf
    assert np.isnan(ops.rsqrt(tlrs.tensor([-1.0])).numpy()[0])
    for fn in (ops.silu, ops.elu, ops.leaky_relu, ops.log1p, ops.expm1, ops.rsqrt, ops.erf):
        assert np.isnan(fn(x).numpy()[0]), fn.__name__


def _numeric_grad(f, a, h=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, dn = a.copy(), a.copy()
        up[i] += h
        dn[i] -= h
        g[i] = (f(up) - f(dn)) / (2 * h)
    return g


def _away_from(a, kinks, gap=0.05):
    for k in kinks:
        a = np.where(np.abs(a - k) < gap, a + 2 * gap, a)
    return a


KINKS = {"leaky_relu": [0.0], "leaky_relu 0.2": [0.0], "elu": [0.0], "elu 1.5": [0.0],
         "hardtanh": [-1.0, 1.0], "hardtanh -0.5 2": [-0.5, 2.0], "smooth_l1": [-1.0, 1.0],
         "smooth_l1 0.5": [-0.5, 0.5], "huber": [-1.0, 1.0], "huber 2": [-2.0, 2.0]}


@pytest.mark.parametrize("name", list(NEW))
def test_f64_gradients_match_central_differences_on_every_device(name, device_kind):
    fn, _ref, (lo, hi) = NEW[name]
    a = _away_from(np.random.default_rng(1).uniform(lo, hi, size=(3, 4)), KINKS.get(name, []))
    w = np.random.default_rng(2).uniform(-1, 1, size=a.shape)

    def loss(arr):
        return float(ops.sum(fn(tlrs.tensor(arr)) * tlrs.tensor(w)).item())

    with device_kind.run():
        x = device_kind.tensor(a, requires_grad=True)
        (g,) = tlrs.grad([ops.sum(fn(x) * device_kind.tensor(w))], [x])
    assert g.device.startswith(device_kind.device)
    np.testing.assert_allclose(g.numpy(), _numeric_grad(loss, a), rtol=1e-7, atol=1e-8)


def _grad(fn, values):
    x = tlrs.tensor(np.array(values), requires_grad=True)
    ops.sum(fn(x)).backward()
    return x.grad.tolist()


def test_gradients_at_the_kinks_follow_pytorch():
    # PyTorch: leaky_relu and elu take the negative branch at 0; hardtanh's gradient is 0 on
    # and beyond its bounds.
    assert _grad(lambda t: ops.leaky_relu(t, 0.2), [-1.0, 0.0, 2.0]) == [0.2, 0.2, 1.0]
    assert _grad(lambda t: ops.elu(t, 2.0), [0.0, 1.0]) == [2.0, 1.0]
    assert _grad(ops.hardtanh, [-2.0, -1.0, 0.5, 1.0, 3.0]) == [0.0, 0.0, 1.0, 0.0, 0.0]
    # smooth_l1 and huber: x / beta and x inside the bounds, the bounds' sign (times delta) on
    # and beyond them (both sides agree on them).
    assert _grad(lambda t: ops.smooth_l1(t, 0.5), [-2.0, -0.5, 0.25, 0.5, 3.0]) == [-1.0, -1.0, 0.5, 1.0, 1.0]
    assert _grad(lambda t: ops.huber(t, 2.0), [-3.0, -2.0, 0.5, 2.0, 3.0]) == [-2.0, -2.0, 0.5, 2.0, 2.0]
    # Hand-derived: silu'(0) = 1/2, erf'(0) = 2/sqrt(pi), rsqrt'(4) = -1/16, log1p'(1) = 1/2,
    # expm1'(0) = 1.
    assert _grad(ops.silu, [0.0]) == [0.5]
    assert _grad(ops.erf, [0.0]) == [2.0 / math.sqrt(math.pi)]
    assert _grad(ops.rsqrt, [4.0]) == [-1.0 / 16.0]
    assert _grad(ops.log1p, [1.0]) == [0.5]
    assert _grad(ops.expm1, [0.0]) == [1.0]


def test_defaults_are_pytorchs():
    x = tlrs.tensor(np.linspace(-3, 3, 13))
    assert ops.leaky_relu(x).tolist() == ops.leaky_relu(x, 0.01).tolist()
    assert ops.elu(x).tolist() == ops.elu(x, 1.0).tolist()
    assert ops.hardtanh(x).tolist() == ops.hardtanh(x, -1.0, 1.0).tolist()
    assert ops.hardtanh(x, min_val=-2.0).tolist() == np.clip(x.numpy(), -2, 1).tolist()


def test_bad_parameters_are_refused_naming_what_was_expected():
    x = tlrs.tensor([0.5])
    with pytest.raises(ValueError, match=r"hardtanh: expected min_val <= max_val, got min_val=1, max_val=-1"):
        ops.hardtanh(x, 1.0, -1.0)
    with pytest.raises(ValueError, match="leaky_relu: expected negative_slope to be a number, got nan"):
        ops.leaky_relu(x, float("nan"))
    with pytest.raises(ValueError, match="elu: expected alpha to be a number, got nan"):
        ops.elu(x, float("nan"))
    with pytest.raises(TypeError):
        ops.elu(x, "1.0")
    with pytest.raises(TypeError):
        ops.silu([0.5])


@pytest.mark.parametrize("name", ["log1p", "expm1", "rsqrt", "erf", "neg"])
def test_tensor_methods_equal_the_functions(name):
    x = tlrs.tensor(np.array([0.25, 0.5, 2.0]))
    assert getattr(x, name)().tolist() == getattr(ops, name)(x).tolist()


def test_float32_stays_float32_and_dtypes_are_not_mixed():
    x = tlrs.tensor(np.array([0.5, -0.5], dtype=np.float32))
    for name in ("silu", "leaky_relu", "elu", "hardtanh", "log1p", "expm1", "rsqrt", "erf"):
        assert getattr(ops, name)(x).dtype == "float32", name


def _model(act):
    return tlrs.ModuleDef([[3, 2]], [[4, 3]], lambda ps, xs: ops.sum(act(ops.matmul(xs[0], ps[0]))))


@pytest.mark.parametrize("act", [ops.silu, lambda t: ops.leaky_relu(t, 0.1), ops.elu,
                                 lambda t: ops.hardtanh(t, -0.5, 0.5), ops.erf],
                         ids=["silu", "leaky_relu", "elu", "hardtanh", "erf"])
def test_compiled_equals_eager_bit_for_bit(act):
    eager = tlrs.instantiate_with_options(_model(act), "float64", Options())
    compiled = tlrs.instantiate_with_options(_model(act), "float64", Options(backend="compiled"))
    x = [tlrs.tensor(np.random.default_rng(3).uniform(-2, 2, size=(4, 3)))]
    assert compiled.forward(x).numpy().tobytes() == eager.forward(x).numpy().tobytes()
    gc, ge = compiled.backward(x), eager.backward(x)
    assert [g.numpy().tobytes() for g in gc] == [g.numpy().tobytes() for g in ge]


def test_a_parameter_that_changes_between_traces_is_refused():
    slopes = iter([0.1, 0.2, 0.3, 0.4])
    defn = _model(lambda t: ops.leaky_relu(t, next(slopes)))
    with pytest.raises(tlrs.TraceError, match="attribute `negative_slope` differs between two traces"):
        tlrs.instantiate_with_options(defn, "float64", Options(backend="compiled"))


def test_every_table_op_is_public_and_tested():
    table = tlrs._core._elementwise_table()
    # tests/test_table_ops_torch.py: trunc, floor, floor_divide, div_trunc, gelu_tanh, atan2 (and softplus's
    # parameters) against PyTorch.
    tested_elsewhere = {"neg", "exp", "log", "sqrt", "abs", "relu", "tanh", "sigmoid", "gelu",
                        "softplus", "add", "sub", "mul", "div", "maximum", "minimum", "tensor_pow",
                        "pow_slope_base", "pow_slope_exponent",  # test_torch_arguments.py
                        "trunc", "floor", "floor_divide", "div_trunc", "gelu_tanh", "atan2", "atan2_slope"}
    here = {n.split()[0] for n in NEW}
    for name, _kind, *_rest, py in table:
        assert name in here | tested_elsewhere, f"{name} has no test"
        if py != "none":
            assert callable(getattr(ops, name)), name
            assert name in ops.__all__, name


def test_the_stub_is_generated_from_the_table():
    table = [tuple(r) for r in tlrs._core._elementwise_table()]
    text = gen_stub.STUB.read_text(encoding="utf-8")
    assert gen_stub.render(text, table) == text, "run `python scripts/gen_stub.py`"
    assert "def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:" in text
    assert "def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:" in text
    assert "def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:" in text
    assert 'def gelu(input: Tensor, approximate: str = "none") -> Tensor:' in text


def test_hand_written_bindings_match_the_stub_generators_list():
    """A table op whose binding is hand-written (py/elementwise.rs `HAND_WRITTEN`) takes the
    keywords gen_stub.HAND_WRITTEN writes into the stub, after the table's parameters."""
    table = {r[0]: r for r in tlrs._core._elementwise_table()}
    for name, extra in gen_stub.HAND_WRITTEN.items():
        params = [p for p, _ in table[name][2]]
        keywords = [e.split(":")[0] for e in extra]
        defaults = [e.split("= ")[1].strip('"') for e in extra]
        want = ", ".join(["input", *params, *(f'{k}="{d}"' for k, d in zip(keywords, defaults))])
        assert getattr(tlrs._core, name).__text_signature__ == f"({want})", name
