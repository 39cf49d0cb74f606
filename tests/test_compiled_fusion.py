"""The compiled backend's fusion pass (rust/src/graph/fuse.rs): runs of elementwise table ops
become one `fused_chain` node, and the loss and every gradient stay bit for bit those of the
eager ops one by one (the eager autograd on the reference kernels is the oracle). Each test
also checks how many ops the plan runs, so a pass that fused nothing cannot pass silently.

Every test runs on the CPU and, marked `cuda`, on a CUDA device (the emulator in CI), where the
graph replays on the device and each chain is one generated kernel (backend/cuda/ops/chain.rs):
there the oracle is eager on the same device, and with reference kernels the CPU's bits too."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import _core, ops, optim
from tlrs.compiled import CompiledLoss
from tlrs.config import Backend, Options

UNARY = [row[0] for row in _core._elementwise_table() if row[1] == "unary"]
# Non-default parameters, so a step that dropped them would show.
PARAMS = {"leaky_relu": (0.2,), "elu": (1.5,), "hardtanh": (-0.5, 2.0), "softplus": (2.0, 1.5)}
# Ops defined on positive values only get inputs in (0.5, 2.5).
POSITIVE = {"log", "sqrt", "rsqrt", "log1p"}


DEVICE = "cpu"


@pytest.fixture(autouse=True, params=["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda, pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")])])
def _device(request):
    """Runs each test on the CPU and on CUDA (`DEVICE` says which)."""
    global DEVICE
    DEVICE = request.param
    yield
    DEVICE = "cpu"


def bits(a: np.ndarray) -> np.ndarray:
    if DEVICE != "cpu":  # NaNs compare as one value: their payloads are the platform's.
        a = np.where(np.isnan(a), np.array(np.nan, dtype=a.dtype), a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def eager_value_and_grads(loss, params: list[np.ndarray], inputs: list[np.ndarray], device: str, fast: bool):
    ps = [tlrs.tensor(p, device=device, requires_grad=True) for p in params]
    xs = [tlrs.tensor(x, device=device) for x in inputs]
    with tlrs.fast_kernels(fast):
        value = loss(ps, xs)
        return value, tlrs.autograd.grad(value, ps)


def check(loss: Callable[[Sequence[tlrs.Tensor], Sequence[tlrs.Tensor]], tlrs.Tensor],
          params: list[np.ndarray], inputs: list[np.ndarray], fused_away: int, fast: bool = False) -> str:
    """Compiled loss and gradients equal eager's bit for bit, both on the reference kernels or
    both on the fast ones; the plan runs `fused_away` ops fewer than the trace. Returns the
    plan's listing."""
    dtype = str(params[0].dtype)
    compiled = CompiledLoss(loss, [p.shape for p in params], [x.shape for x in inputs], dtype)
    graph = compiled.graph_for([x.shape for x in inputs])
    assert graph.op_count - graph.plan_op_count == fused_away, graph.describe()
    oracles = [eager_value_and_grads(loss, params, inputs, DEVICE, fast)]
    if DEVICE != "cpu" and not fast:
        oracles.append(eager_value_and_grads(loss, params, inputs, "cpu", fast))
    xs = [tlrs.tensor(x, device=DEVICE) for x in inputs]
    for g in (graph, graph.without_fusion()):
        value, grads = g.loss_and_grads([tlrs.tensor(p, device=DEVICE) for p in params], [True] * len(params), xs,
                                        fast=fast)
        assert value.device == tlrs.tensor(0.0, device=DEVICE).device
        for eager_loss, eager_grads in oracles:
            assert np.array_equal(bits(value.numpy()), bits(eager_loss.numpy()))
            for got, want in zip(grads, eager_grads, strict=True):
                assert np.array_equal(bits(got.numpy()), bits(want.numpy()))
    return str(graph.describe())


def rng_arrays(dtype: str, *shapes: tuple[int, ...], lo: float = -2.0, hi: float = 2.0,
               seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, size=s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY)
def test_every_unary_op_inside_a_chain(name, dtype):
    """x*w + b -> op -> * 0.75 -> sum: the four elementwise ops become one node."""
    fn = getattr(ops, name)
    extra = PARAMS.get(name, ())
    lo = 0.5 if name in POSITIVE else -2.0

    def loss(p, x):
        w, b = p
        return ops.sum(fn(x[0] * w + b, *extra) * 0.75)

    w, b = rng_arrays(dtype, (6, 9), (9,), lo=0.5, hi=1.0, seed=1)
    (x,) = rng_arrays(dtype, (6, 9), lo=lo, hi=lo + 2.0, seed=2)
    listing = check(loss, [w, b], [x], fused_away=3)
    assert f"fused_chain[mul(_, #1) add(_, #2) {name} mul(_, #3)]" in listing


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_running_value_on_the_right_and_division_both_ways(dtype):
    """(c - x*w) / v, then w2 / that: the gradient rules of sub and div for either operand."""
    def loss(p, x):
        w, v, w2 = p
        y = w2 / ((1.5 - x[0] * w) / v)
        return ops.sum(ops.tanh(y))

    w, v, w2 = rng_arrays(dtype, (5, 8), (5, 8), (8,), lo=0.5, hi=1.2, seed=3)
    (x,) = rng_arrays(dtype, (5, 8), lo=-0.5, hi=0.5, seed=4)
    listing = check(loss, [w, v, w2], [x], fused_away=4)
    assert "fused_chain[mul(_, #3) sub(#1, _) div(_, #4) div(#0, _) tanh]" in listing


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_divide_replays_bit_for_bit_beside_a_trunc_division_chain(dtype):
    """floor_divide is no chain step (its gradient is not one of the fused rules): it replays
    as an op of its own, between chains; trunc(a / b) and gelu(approximate='tanh') fuse."""
    def loss(p, x):
        w, b, v = p
        q = ops.floor_divide(x[0] * 4.0, b)
        t = ops.gelu(ops.trunc(x[0] * 3.0 / v) * 0.5, approximate="tanh")
        return ops.sum(q * w + t)

    w, b, v = rng_arrays(dtype, (4, 6), (4, 6), (4, 6), lo=0.5, hi=1.5, seed=5)
    (x,) = rng_arrays(dtype, (4, 6), seed=6)
    listing = check(loss, [w, b, v], [x], fused_away=5)
    assert "floor_divide(%2, %3)" in listing
    assert "fused_chain[mul(_, #1) div(_, #2) trunc mul(_, #3) gelu_tanh]" in listing


def test_an_input_read_at_two_steps_is_read_by_one_only():
    """x feeds the first and the last step: the fused kernel reads each input at one step,
    so the chain starts after the first read."""
    def loss(p, x):
        (w,) = p
        return ops.sum(ops.tanh(1.5 - x[0] * w) * x[0])

    (w,) = rng_arrays("float32", (5, 8), seed=3)
    (x,) = rng_arrays("float32", (5, 8), seed=4)
    listing = check(loss, [w], [x], fused_away=2)
    assert "fused_chain[sub(#0, _) tanh mul(_, #2)]" in listing


@pytest.mark.parametrize("shape", [(300, 7), (64, 1000), (3, 5, 1, 2)])
def test_blocks_threads_and_operands_that_repeat(shape):
    """Sizes across the kernel's 512-element blocks and its thread split; a bias over the last
    axis (7 does not divide a block, so it wraps inside one), a [1, d] row and a scalar param."""
    dtype = "float64"
    d = shape[-1]

    def loss(p, x):
        bias, row, s = p
        y = ops.relu(x[0] + bias) * row - s
        return ops.mean(ops.sigmoid(y) * x[0])

    bias, row, s = rng_arrays(dtype, (d,), (1, d), (), seed=5)
    (x,) = rng_arrays(dtype, shape, seed=6)
    check(loss, [bias, row, s], [x], fused_away=4)


def test_an_operand_that_does_not_repeat_over_the_trailing_axes_stays_out():
    """A [n, 1] column broadcasts over the rows, not the trailing axes: its add is not a step,
    the chain starts after it."""
    def loss(p, x):
        col, w = p
        return ops.sum(ops.exp(ops.relu(x[0] + col) * w))

    col, w = rng_arrays("float64", (4, 1), (4, 6), seed=7)
    (x,) = rng_arrays("float64", (4, 6), seed=8)
    listing = check(loss, [col, w], [x], fused_away=2)
    assert "fused_chain[relu mul(_, #1) exp]" in listing


def test_shared_values_limit_the_chain():
    """An interior value read twice ends the chain there; a parameter read by three ops (its
    gradient a sum of three terms, whose order fusion could change) is not fused in."""
    def loss(p, x):
        w, b = p
        h = ops.relu(x[0] * w)              # h is read twice below
        y = ops.tanh(h + b) + h
        z = ops.sigmoid(x[0] * b) * b      # b is read three times in all
        return ops.sum(y * z)

    w, b = rng_arrays("float64", (3, 4), (3, 4), seed=9)
    (x,) = rng_arrays("float64", (3, 4), seed=10)
    listing = check(loss, [w, b], [x], fused_away=3)
    # h's chain ends at h; b's three readers (add, both muls) stay separate ops, so the last
    # chain starts at tanh, reading the add's result, h and z.
    assert "fused_chain[mul(_, #1) relu]" in listing
    assert "fused_chain[tanh add(_, #1) mul(_, #2)]" in listing
    assert "sigmoid(" in listing


def test_a_parameter_read_twice_is_fused_and_its_two_gradient_terms_add_up():
    def loss(p, x):
        (w,) = p
        return ops.sum(ops.softplus(x[0] * w) * w)

    (w,) = rng_arrays("float32", (7, 5), seed=11)
    (x,) = rng_arrays("float32", (7, 5), seed=12)
    check(loss, [w], [x], fused_away=1)


def test_training_with_fused_chains_matches_eager_bit_for_bit():
    """Ten Adam steps of a two-layer net whose hidden layer is one fused chain."""
    def loss(p, x):
        w1, b1, w2 = p
        h = ops.silu(ops.matmul(x[0], w1) + b1) * 0.5
        return ops.mean((ops.matmul(h, w2) - x[1]) ** 2)

    defn = tlrs.ModuleDef(param_shapes=[[3, 16], [16], [16, 2]], input_shapes=[[3], [2]], loss=loss)
    rng = np.random.default_rng(13)
    data = [[tlrs.tensor(rng.normal(size=(8, 3))), tlrs.tensor(rng.normal(size=(8, 2)))] for _ in range(3)]
    runs = []
    # Eager on the CPU, compiled on the test's device.
    for backend, device in (("eager", "cpu"), ("compiled", DEVICE)):
        m = tlrs.instantiate_with_options(defn, "float64", Options(backend=Backend(backend)).to_device(device))
        opt = optim.adam(0.01, 0.9, 0.999, 1e-8)
        m.train_with(opt, m.init_optim(opt), 10, data, log_every=0)
        runs.append([bits(p.numpy()) for p in m.params()])
        if backend == "compiled":
            assert m._compiled is not None
            assert "fused_chain[add(_, #1) silu mul(_, #2)]" in m._compiled.describe()
    assert all(np.array_equal(a, b) for a, b in zip(*runs))


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_relu_read_only_by_its_convolution_runs_inside_it(dtype, fast):
    """conv -> relu -> pool -> conv -> relu -> conv (no bias) -> relu: each ReLU becomes its
    convolution's epilogue (`conv2d_relu`), on shapes that take the direct kernel (32 output
    channels), the lowering per image (9x9 maps) and per group of images, with reference and
    fast kernels; the loss and every gradient keep the eager ops' bits (NaN and -0.0 are
    checked on the kernels, rust/src/backend/cpu/conv_act_tests.rs)."""
    def loss(p, x):
        w1, b1, w2, b2, w3 = p
        h = ops.relu(ops.conv2d(x[0], w1, b1, 1, 1))
        h = ops.max_pool2d(h, 2)
        h = ops.relu(ops.conv2d(h, w2, b2, 1, 1))
        h = ops.relu(ops.conv2d(h, w3, None, 1, 0))
        return ops.sum(h * 0.5)

    # conv2: 32 output channels, folds of 8 * 9 = 72 terms, rows of 9 at 4 images: the direct
    # kernel's conditions (backend/cpu/conv_direct/forward.rs, `forward_applies`).
    params = rng_arrays(dtype, (8, 3, 3, 3), (8,), (32, 8, 3, 3), (32,), (6, 32, 3, 3), seed=14)
    (x,) = rng_arrays(dtype, (4, 3, 18, 18), seed=15)
    listing = check(loss, params, [x], fused_away=3, fast=fast)
    assert listing.count("conv2d_relu(") == 3 and "= relu(" not in listing, listing


def test_a_convolution_read_twice_keeps_its_relu_apart():
    """The pre-activation is read by the ReLU and the loss: it must exist, so nothing fuses."""
    def loss(p, x):
        (w,) = p
        y = ops.conv2d(x[0], w, None, 1, 1)
        return ops.sum(ops.relu(y) * y)

    params = rng_arrays("float32", (4, 2, 3, 3), seed=16)
    (x,) = rng_arrays("float32", (2, 2, 6, 6), seed=17)
    listing = check(loss, params, [x], fused_away=0)
    assert "conv2d(" in listing and "conv2d_relu" not in listing, listing
