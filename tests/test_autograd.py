"""Reverse-mode gradients of every op against central finite differences computed here (NumPy-side
perturbation of the inputs, float64, tolerance 1e-6), plus the autograd API: accumulation,
tlrs.grad, no_grad and the errors."""

import math

import numpy as np
import pytest

import tlrs
from tlrs import ops

H = 1e-6
TOL = 1e-6


def T(a, rg=False):
    # from_numpy of a C-ordered copy (tlrs.tensor of a 0-d array gives shape [1], see test_tensor.py)
    return tlrs.from_numpy(np.array(a, dtype=np.float64, order="C"), requires_grad=rg)


def numeric_grads(f, arrays):
    """Central differences of the scalar f(*tensors) with respect to every element of each array."""
    def value(arrs):
        return float(f(*[T(a) for a in arrs]).item())
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[i][idx] += H
            minus[i][idx] -= H
            g[idx] = (value(plus) - value(minus)) / (2 * H)
        grads.append(g)
    return grads


def weighted(y, seed=99):
    """sum(y * W) for a fixed random W, so every output element has its own weight."""
    w = np.random.default_rng(seed).uniform(-1.0, 1.0, size=tuple(y.shape))
    return ops.sum(ops.mul(y, T(w)))


def rnd(shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def assert_grads(f, arrays):
    leaves = [T(a, rg=True) for a in arrays]
    loss = f(*leaves)
    assert list(loss.shape) == []
    loss.backward()
    expected = numeric_grads(f, arrays)
    for leaf, g in zip(leaves, expected):
        assert leaf.grad is not None
        assert list(leaf.grad.shape) == list(g.shape)
        np.testing.assert_allclose(leaf.grad.numpy(), g, rtol=TOL, atol=TOL)
    fresh = [T(a, rg=True) for a in arrays]
    via_grad = tlrs.grad(f(*fresh), fresh)
    assert len(via_grad) == len(arrays)
    for g, e in zip(via_grad, expected):
        np.testing.assert_allclose(g.numpy(), e, rtol=TOL, atol=TOL)


def fresh_grads(f, arrays):
    leaves = [T(a, rg=True) for a in arrays]
    gs = tlrs.grad(f(*leaves), leaves)
    for leaf in leaves:
        assert leaf.grad is None
    expected = numeric_grads(f, arrays)
    for g, e in zip(gs, expected):
        np.testing.assert_allclose(g.numpy(), e, rtol=TOL, atol=TOL)


BINARY = {"add": ops.add, "sub": ops.sub, "mul": ops.mul, "div": ops.div,
          "maximum": ops.maximum, "minimum": ops.minimum}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("sa, sb", [([2, 3], [2, 3]), ([3, 1], [4]), ([2, 3, 4], [3, 1]), ([4], [])])
def test_binary_grads(name, sa, sb):
    fn = BINARY[name]
    a, b = rnd(sa, 0.5, 2.0, 1), rnd(sb, 0.5, 2.0, 2)
    assert_grads(lambda x, y: weighted(fn(x, y)), [a, b])


UNARY = {
    "neg": (ops.neg, (-2, 2)), "exp": (ops.exp, (-2, 2)), "log": (ops.log, (0.3, 3)),
    "sqrt": (ops.sqrt, (0.3, 3)), "abs": (ops.abs, (0.2, 2)), "relu": (ops.relu, (0.2, 2)),
    "tanh": (ops.tanh, (-2, 2)), "sigmoid": (ops.sigmoid, (-3, 3)), "gelu": (ops.gelu, (-3, 3)),
    "softplus": (ops.softplus, (-3, 3)),
    "pow2": (lambda x: ops.pow(x, 2), (-2, 2)), "pow1.5": (lambda x: ops.pow(x, 1.5), (0.3, 2)),
    "pow-1": (lambda x: ops.pow(x, -1.0), (0.5, 2)),
    "clamp": (lambda x: ops.clamp(x, -1.0, 1.0), (-2, 2)),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_grads(name):
    fn, (lo, hi) = UNARY[name]
    a = rnd([3, 4], lo, hi, 3)
    if name == "abs":
        a = a * np.array([1, -1, 1, -1])
    if name == "relu":
        a = a * np.array([1, -1, 1, -1])
    if name == "clamp":  # keep every value away from the kinks at +-1
        a = np.where(np.abs(np.abs(a) - 1) < 0.05, a * 0.5, a)
    assert_grads(lambda x: weighted(fn(x)), [a])


def test_relu_abs_clamp_hand_values():
    x = T([-2.0, 0.5, 3.0], rg=True)
    ops.sum(ops.relu(x)).backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0]
    x = T([-2.0, 0.5, 3.0], rg=True)
    ops.sum(ops.abs(x)).backward()
    assert x.grad.tolist() == [-1.0, 1.0, 1.0]
    x = T([-2.0, 0.5, 3.0], rg=True)
    ops.sum(ops.clamp(x, -1.0, 1.0)).backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("name", ["sum", "mean", "max"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), (1, True), (-1, False), (-3, True)])
def test_reduction_grads(name, dim, keepdim):
    fn = getattr(ops, name)
    a = rnd([2, 3, 4], seed=4)
    assert_grads(lambda x: weighted(fn(x, dim, keepdim)), [a])


def test_max_grad_goes_to_first_maximum():
    x = T([[1.0, 3.0, 3.0], [5.0, 5.0, 2.0]], rg=True)
    ops.sum(ops.max(x, 1)).backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    x = T([1.0, 3.0, 3.0], rg=True)
    ops.max(x).backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


def test_maximum_minimum_ties_split():
    a, b = T([1.0, 2.0, 5.0], rg=True), T([1.0, 3.0, 4.0], rg=True)
    ops.sum(ops.maximum(a, b)).backward()
    assert a.grad.tolist() == [0.5, 0.0, 1.0]
    assert b.grad.tolist() == [0.5, 1.0, 0.0]
    a, b = T([1.0, 2.0, 5.0], rg=True), T([1.0, 3.0, 4.0], rg=True)
    ops.sum(ops.minimum(a, b)).backward()
    assert a.grad.tolist() == [0.5, 1.0, 0.0]
    assert b.grad.tolist() == [0.5, 0.0, 1.0]


LAYOUT = {
    "reshape": lambda x: ops.reshape(x, [4, -1]),
    "flatten": lambda x: ops.flatten(x, 1, 2),
    "permute": lambda x: ops.permute(x, [2, 0, 1]),
    "transpose": lambda x: ops.transpose(x, 0, 2),
    "T": lambda x: x.T,
    "slice": lambda x: ops.slice(x, 2, -3, -1),
    "index_select": lambda x: ops.index_select(x, 1, [2, 0, 2, 2]),
    "index_select_np": lambda x: ops.index_select(x, -1, np.array([3, 3, 1], dtype=np.int32)),
    "softmax": lambda x: ops.softmax(x, -1),
    "softmax0": lambda x: ops.softmax(x, 0),
    "log_softmax": lambda x: ops.log_softmax(x, 1),
}


@pytest.mark.parametrize("name", list(LAYOUT))
def test_layout_and_softmax_grads(name):
    assert_grads(lambda x: weighted(LAYOUT[name](x)), [rnd([2, 3, 4], seed=5)])


def test_concat_grads():
    arrs = [rnd([2, 1, 3], seed=6), rnd([2, 2, 3], seed=7), rnd([2, 3, 3], seed=8)]
    assert_grads(lambda a, b, c: weighted(ops.concat([a, b, c], 1)), arrs)


@pytest.mark.parametrize("sa, sb", [
    ([3, 4], [4, 5]), ([2, 3, 4], [2, 4, 5]), ([2, 3, 4], [4, 5]), ([3, 4], [2, 4, 5]), ([3, 4], [4]), ([4], [4]),
    ([4], [4, 5]), ([4], [2, 4, 5]),
])
def test_matmul_grads(sa, sb):
    assert_grads(lambda x, y: weighted(ops.matmul(x, y)), [rnd(sa, seed=9), rnd(sb, seed=10)])


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xshape", [[5, 4], [2, 3, 4], [4]])
def test_linear_grads(bias, xshape):
    arrs = [rnd(xshape, seed=11), rnd([3, 4], seed=12)] + ([rnd([3], seed=13)] if bias else [])
    assert_grads(lambda x, w, *b: weighted(ops.linear(x, w, b[0] if b else None)), arrs)


@pytest.mark.parametrize("target", [[2, 0, 3], np.array([1, 1, 0], dtype=np.int64)])
def test_cross_entropy_indices_grads(target):
    assert_grads(lambda x: ops.cross_entropy(x, target), [rnd([3, 4], seed=14)])


def test_cross_entropy_indices_hand_gradient():
    x = rnd([3, 4], seed=15)
    labels = [1, 3, 0]
    t = T(x, rg=True)
    ops.cross_entropy(t, labels).backward()
    e = np.exp(x - x.max(1, keepdims=True))
    expected = (e / e.sum(1, keepdims=True) - np.eye(4)[labels]) / 3.0
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-12, atol=1e-15)


def test_cross_entropy_probs_and_mse_grads():
    p = rnd([3, 4], 0.1, 1.0, seed=16)
    assert_grads(lambda x, q: ops.cross_entropy(x, q), [rnd([3, 4], seed=17), p])
    assert_grads(lambda x, y: ops.mse_loss(x, y), [rnd([2, 3], seed=18), rnd([2, 3], seed=19)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("loss", ["mse", "l1", "smooth_l1", "huber", "bce_with_logits"])
def test_pointwise_losses_have_the_bits_of_their_composition(dtype, fast, loss):
    # Each one-op loss against its composition of recorded ops (mean(term(x - t)), or for
    # the logits mean((1 - t) * x - logsigmoid(x))): loss and both gradients bit for bit, past
    # fold_f32's blocks, a sum growing through binades, with an infinity and a NaN in the
    # input (and a NaN in the target) in a second run. Fast kernels change the sum's order in
    # both alike.
    def bce(x, t):
        return ops.sub(ops.mul(ops.sub(tlrs.tensor(np.array(1.0, dtype)), t), x), ops.logsigmoid(x))

    one_op, composed = {
        "mse": (ops.mse_loss, lambda x, t: ops.mul(ops.sub(x, t), ops.sub(x, t))),
        "l1": (ops.l1_loss, lambda x, t: ops.abs(ops.sub(x, t))),
        "smooth_l1": (lambda x, t: ops.smooth_l1_loss(x, t, beta=0.7), lambda x, t: ops.smooth_l1(ops.sub(x, t), 0.7)),
        "huber": (lambda x, t: ops.huber_loss(x, t, delta=1.3), lambda x, t: ops.huber(ops.sub(x, t), 1.3)),
        "bce_with_logits": (ops.binary_cross_entropy_with_logits, bce),
    }[loss]
    rng = np.random.default_rng(23)
    for special in (False, True):
        a = (rng.standard_normal([37, 301]) * 3).astype(dtype)
        b = rng.uniform(0, 1, [37, 301]).astype(dtype)
        if special:
            a[3, 7], a[20, 100], b[30, 200] = np.inf, np.nan, np.nan
        results = []
        for fused in (True, False):
            x, t = (tlrs.from_numpy(np.ascontiguousarray(v), requires_grad=True) for v in (a, b))
            with tlrs.fast_kernels(fast):
                out = one_op(x, t) if fused else ops.mean(composed(x, t))
                gx, gt = tlrs.grad(out, [x, t])
            results.append([np.atleast_1d(v.numpy()).view(np.uint8) for v in (out, gx, gt)])
        for got, want in zip(*results):
            np.testing.assert_array_equal(got, want)


def test_composite_graph_grads():
    def f(x, w, b):
        h = ops.tanh(ops.linear(x, w, b))
        return ops.mean(ops.mul(h, h)) + ops.sum(ops.exp(ops.slice(x, 1, 0, 2)))
    fresh_grads(f, [rnd([3, 4], seed=20), rnd([2, 4], seed=21), rnd([2], seed=22)])


# ---------------------------------------------------------------- the autograd API

def test_x_plus_x_gives_two():
    x = T([1.0, -2.0, 3.0], rg=True)
    ops.sum(x + x).backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    y = T([1.5, 2.0], rg=True)
    ops.sum(y * y).backward()  # d(y^2)/dy = 2y
    assert y.grad.tolist() == [3.0, 4.0]


def test_grads_accumulate_across_backward_calls():
    x = T([1.0, 2.0, -1.0], rg=True)
    ops.sum(x * 3.0).backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    ops.sum(x * x).backward()
    assert x.grad.tolist() == [5.0, 7.0, 1.0]
    x.grad = None
    ops.sum(x).backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_grad_function_refuses_unused_unless_allowed_and_leaves_grad_alone():
    x, unused = T([1.0, 2.0], rg=True), T([[5.0, 6.0, 7.0]], rg=True)
    x.grad = T([10.0, 10.0])
    with pytest.raises(tlrs.AutogradError, match="input 1 was not used"):
        tlrs.grad(ops.sum(ops.mul(x, x)), [x, unused])
    gx, gu = tlrs.grad(ops.sum(ops.mul(x, x)), [x, unused], allow_unused=True)
    assert gx.tolist() == [2.0, 4.0]
    assert gu is None
    assert x.grad.tolist() == [10.0, 10.0]
    assert unused.grad is None
    (g,) = tlrs.grad(ops.sum(x), x)  # a single tensor is accepted too
    assert g.tolist() == [1.0, 1.0]


def test_float32_grads_keep_dtype():
    x = tlrs.tensor([1.0, 2.0], dtype="float32", requires_grad=True)
    ops.sum(ops.mul(x, x)).backward()
    assert x.grad.dtype == "float32"
    assert x.grad.tolist() == [2.0, 4.0]


def test_no_grad():
    x = T([1.0, 2.0], rg=True)
    assert tlrs.is_grad_enabled()
    with tlrs.no_grad():
        assert not tlrs.is_grad_enabled()
        y = ops.mul(x, x)
        assert y.requires_grad is False
        with tlrs.no_grad():
            assert not tlrs.is_grad_enabled()
            assert (x * 2.0).requires_grad is False
        assert not tlrs.is_grad_enabled()
        assert (x + x).requires_grad is False
    assert tlrs.is_grad_enabled()
    assert (x * 2.0).requires_grad is True


def test_no_grad_restored_after_exception():
    x = T([1.0], rg=True)
    with pytest.raises(KeyError), tlrs.no_grad(), tlrs.no_grad():
        assert not tlrs.is_grad_enabled()
        raise KeyError("inside no_grad")
    assert tlrs.is_grad_enabled()
    assert (x * 2.0).requires_grad is True


def test_backward_on_non_scalar_raises():
    x = T(np.ones((2, 3)), rg=True)
    with pytest.raises(tlrs.AutogradError) as ei:
        ops.mul(x, x).backward()
    assert isinstance(ei.value, RuntimeError)
    assert "[2, 3]" in str(ei.value)
    with pytest.raises(tlrs.AutogradError) as ei:
        tlrs.grad(ops.mul(x, x), [x])
    assert "[2, 3]" in str(ei.value)


def test_backward_without_requires_grad_raises():
    with pytest.raises(tlrs.AutogradError):
        ops.sum(T([1.0, 2.0])).backward()


def test_requires_grad_setter_on_non_leaf():
    x = T([1.0, 2.0], rg=True)
    y = x * 2.0
    with pytest.raises(ValueError):
        y.requires_grad = False
    z = T([1.0])
    z.requires_grad = True
    ops.sum(z * 4.0).backward()
    assert z.grad.tolist() == [4.0]


def test_detach_stops_gradient():
    x = T([3.0], rg=True)
    ops.sum(x * x.detach()).backward()  # d/dx (x * c) = c
    assert x.grad.tolist() == [3.0]
    assert math.isclose(x.detach().item(), 3.0)


def _device_grads(fn, arrays, device_kind):
    """Gradients of sum(fn(*xs) * W) computed on `device_kind`, as NumPy arrays."""
    with device_kind.run():
        xs = [device_kind.tensor(a, requires_grad=True) for a in arrays]
        y = fn(*xs)
        w = np.random.default_rng(99).uniform(-1.0, 1.0, size=tuple(y.shape))
        grads = tlrs.grad([ops.sum(ops.mul(y, device_kind.tensor(w)))], xs)
    return [g.numpy() for g in grads]


@pytest.mark.parametrize("name", [n for n in UNARY if not n.startswith(("pow", "clamp"))] + list(BINARY))
def test_elementwise_grads_on_every_device(name, device_kind):
    """One body on cpu-ref, cpu-fast and CUDA: f64 gradients against central differences."""
    if name in BINARY:
        fn, arrays = BINARY[name], [rnd([3, 1], 0.5, 2.0, 1), rnd([4], 0.5, 2.0, 2)]
    else:
        fn, (lo, hi) = UNARY[name]
        a = rnd([3, 4], lo, hi, 3)
        arrays = [a * np.array([1, -1, 1, -1]) if name in ("abs", "relu") else a]
    got = _device_grads(fn, arrays, device_kind)
    expected = numeric_grads(lambda *ts: weighted(fn(*ts)), arrays)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=TOL, atol=TOL)
