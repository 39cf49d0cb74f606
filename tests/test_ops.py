"""Every op in tlrs.ops (and the Tensor methods) against an independent NumPy computation written
here: float64 within 1e-12 relative, float32 within 1e-5 relative. The elementwise tests run
from one body on the CPU reference kernels, the CPU fast kernels and CUDA (`device_kind`)."""

import math

import numpy as np
import pytest

import tlrs
from tlrs import ops

DTYPES = ["float32", "float64"]


def tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-30} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-300}


def check(t, expected, dtype, atol=None):
    assert isinstance(t, tlrs.Tensor)
    assert t.dtype == dtype
    expected = np.asarray(expected, dtype=np.float64)
    assert list(t.shape) == list(expected.shape)
    kw = tol(dtype) if atol is None else dict(tol(dtype), atol=atol)
    np.testing.assert_allclose(t.numpy().astype(np.float64), expected, **kw)


def data(shape, dtype, lo=-3.0, hi=3.0, seed=0):
    """An array in `dtype` plus the same values widened to float64 for the reference."""
    a = np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)
    return a, a.astype(np.float64)


def T(a):
    return tlrs.tensor(a)


# ---------------------------------------------------------------- elementwise binary

BINARY = {
    "add": (ops.add, lambda a, b: a + b),
    "sub": (ops.sub, lambda a, b: a - b),
    "mul": (ops.mul, lambda a, b: a * b),
    "div": (ops.div, lambda a, b: a / b),
    "maximum": (ops.maximum, np.maximum),
    "minimum": (ops.minimum, np.minimum),
}
BROADCAST = [
    ([2, 3], [2, 3]),
    ([3, 1], [4]),
    ([2, 3, 4], [3, 1]),
    ([4], []),
    ([1, 4], [3, 1]),
    ([2, 1, 4], [3, 1]),
    ([], [2, 2]),
]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("sa, sb", BROADCAST)
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_broadcasting(name, sa, sb, dtype, device_kind):
    fn, ref = BINARY[name]
    a, a64 = data(sa, dtype, 0.5, 2.0, seed=1)
    b, b64 = data(sb, dtype, 0.5, 2.0, seed=2)
    expected = ref(a64, b64)
    ta, tb = device_kind.tensor(a), device_kind.tensor(b)
    with device_kind.run():
        check(fn(ta, tb), expected, dtype)
        check(fn(tb, ta), ref(b64, a64), dtype)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_with_python_scalar(name, dtype):
    fn, ref = BINARY[name]
    a, a64 = data([2, 3], dtype, 0.5, 2.0)
    s = np.float64(np.array(1.7, dtype=dtype))  # the scalar as the dtype sees it
    check(fn(T(a), 1.7), ref(a64, s), dtype)


def test_maximum_minimum_ties_and_signs():
    a = np.array([1.0, -2.0, 3.0, 0.0])
    b = np.array([1.0, 2.0, -3.0, -1.0])
    assert ops.maximum(T(a), T(b)).tolist() == [1.0, 2.0, 3.0, 0.0]
    assert ops.minimum(T(a), T(b)).tolist() == [1.0, -2.0, -3.0, -1.0]


# ---------------------------------------------------------------- elementwise unary


def _gelu(x):
    return np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.reshape(-1)]).reshape(x.shape)


UNARY = {
    "neg": (ops.neg, lambda x: -x, None),
    "exp": (ops.exp, np.exp, None),
    "log": (ops.log, np.log, (0.1, 5.0)),
    "sqrt": (ops.sqrt, np.sqrt, (0.0, 5.0)),
    "abs": (ops.abs, np.abs, None),
    "relu": (ops.relu, lambda x: np.where(x > 0, x, 0.0), None),
    "tanh": (ops.tanh, np.tanh, None),
    "sigmoid": (ops.sigmoid, lambda x: 1.0 / (1.0 + np.exp(-x)), None),
    "gelu": (ops.gelu, _gelu, None),
    "softplus": (ops.softplus, lambda x: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))), None),
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(name, dtype, device_kind):
    fn, ref, rng = UNARY[name]
    lo, hi = rng or (-3.0, 3.0)
    a, a64 = data([3, 5], dtype, lo, hi)
    # The fast kernels' float32 GELU is within 3e-7 * max(1, |x|) (docs/numerics.md): absolute,
    # so a small output in the negative tail can miss the relative 1e-5.
    atol = 3e-7 * 3.0 if (name == "gelu" and device_kind.fast and dtype == "float32") else None
    with device_kind.run():
        check(fn(device_kind.tensor(a)), ref(a64), dtype, atol=atol)


def test_softplus_extremes():
    x = np.array([-40.0, -20.0, 0.0, 19.5, 20.0, 20.5, 50.0])
    expected = [math.log1p(math.exp(v)) if v <= 20 else v for v in x]
    check(ops.softplus(T(x)), expected, "float64")


def test_unary_special_values():
    assert ops.relu(T([-0.0, 0.0, -1.0, 2.0])).tolist() == [0.0, 0.0, 0.0, 2.0]
    assert ops.sqrt(T([4.0, 0.0])).tolist() == [2.0, 0.0]
    out = ops.log(T([0.0, -1.0])).numpy()
    assert out[0] == -np.inf and np.isnan(out[1])
    assert ops.exp(T([0.0])).tolist() == [1.0]


@pytest.mark.parametrize("exponent", [2, 3.0, 0.5, -1.0, 1.5, 0.0])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pow(exponent, dtype):
    a, a64 = data([4, 3], dtype, 0.5, 2.5)
    check(ops.pow(T(a), exponent), a64**exponent, dtype)


def test_pow_negative_base_integer_exponent():
    check(ops.pow(T([-2.0, -0.5, 3.0]), 3), [-8.0, -0.125, 27.0], "float64")


@pytest.mark.parametrize("lo, hi", [(-1.0, 1.0), (None, 0.5), (-0.5, None), (None, None)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp(lo, hi, dtype):
    a, a64 = data([3, 4], dtype)
    expected = a64
    if lo is not None:
        expected = np.maximum(expected, lo)
    if hi is not None:
        expected = np.minimum(expected, hi)
    check(ops.clamp(T(a), lo, hi), expected, dtype)
    check(ops.clamp(T(a), min=lo, max=hi), expected, dtype)


# ---------------------------------------------------------------- reductions


def _left_fold_sum(x, axis):
    """sum by an explicit loop along `axis` (independent of numpy's pairwise summation)."""
    x = np.moveaxis(x, axis, 0)
    acc = np.zeros(x.shape[1:])
    for row in x:
        acc = acc + row
    return acc


@pytest.mark.parametrize("name", ["sum", "mean", "max"])
@pytest.mark.parametrize("dim", [None, 0, 1, 2, -1, -3])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions(name, dim, keepdim, dtype):
    lo = 0.5 if name != "max" else -3.0
    a, a64 = data([2, 3, 4], dtype, lo, 2.0)
    if name == "max":
        expected = a64.max(axis=dim, keepdims=keepdim)
    else:
        s = _left_fold_sum(a64.reshape(-1), 0) if dim is None else _left_fold_sum(a64, dim)
        if name == "mean":
            s = s / (a64.size if dim is None else a64.shape[dim])
        if keepdim:
            s = np.reshape(s, [1] * 3) if dim is None else np.expand_dims(s, dim)
        expected = s
    check(getattr(ops, name)(T(a), dim, keepdim), expected, dtype)
    check(getattr(ops, name)(T(a), dim=dim, keepdim=keepdim), expected, dtype)


def test_reduction_hand_values():
    x = T([[1.0, 5.0, -2.0], [4.0, 0.5, 3.0]])
    assert ops.sum(x).item() == 11.5
    assert ops.sum(x, 0).tolist() == [5.0, 5.5, 1.0]
    assert ops.mean(x, 1).tolist() == [4.0 / 3.0, 7.5 / 3.0]
    assert ops.max(x).item() == 5.0
    assert ops.max(x, -1, keepdim=True).tolist() == [[5.0], [4.0]]
    assert list(ops.sum(x).shape) == []


# ---------------------------------------------------------------- layout


@pytest.mark.parametrize("shape", [[4, 6], [2, -1], [-1, 3], [24], [-1], [2, 3, 4], [1, 24, 1]])
def test_reshape(shape):
    a = np.arange(24.0).reshape(2, 12)
    out = ops.reshape(T(a), shape)
    np.testing.assert_array_equal(out.numpy(), a.reshape(shape))


@pytest.mark.parametrize("start, end", [(0, -1), (1, -1), (0, 1), (1, 2), (-2, -1)])
def test_flatten(start, end):
    a = np.arange(120.0).reshape(2, 3, 4, 5)
    s, e = start % 4, end % 4
    expected = a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1 :])
    np.testing.assert_array_equal(ops.flatten(T(a), start, end).numpy(), expected)


def test_flatten_default():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(ops.flatten(T(a)).numpy(), a.reshape(-1))


@pytest.mark.parametrize("dims", [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0], [-1, 0, 1]])
@pytest.mark.parametrize("dtype", DTYPES)
def test_permute(dims, dtype):
    a, a64 = data([2, 3, 4], dtype)
    check(ops.permute(T(a), dims), np.transpose(a64, dims), dtype)


@pytest.mark.parametrize("d0, d1", [(0, 1), (0, 2), (-1, -2), (1, 1)])
def test_transpose(d0, d1):
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(ops.transpose(T(a), d0, d1).numpy(), np.swapaxes(a, d0, d1))


def test_T_property():
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(T(a).T.numpy(), a.T)
    b = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(T(b).T.numpy(), np.swapaxes(b, -1, -2))


@pytest.mark.parametrize("fn", [ops.concat, ops.cat])
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_concat(fn, dim):
    rng = np.random.default_rng(0)
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    shapes[0][dim] = 1
    shapes[2][dim] = 3
    arrs = [rng.normal(size=s) for s in shapes]
    np.testing.assert_array_equal(fn([T(x) for x in arrs], dim).numpy(), np.concatenate(arrs, axis=dim))


def test_concat_default_dim_and_tuple():
    a, b = np.ones((1, 2)), np.zeros((2, 2))
    np.testing.assert_array_equal(ops.concat((T(a), T(b))).numpy(), np.concatenate([a, b]))


@pytest.mark.parametrize("dim, start, end", [(0, 1, 3), (1, -3, -1), (-1, 0, -2), (1, 0, 4), (0, -4, 4), (2, 2, 3)])
def test_slice(dim, start, end):
    a = np.arange(60.0).reshape(4, 5, 3)
    idx = [slice(None)] * 3
    idx[dim] = slice(start, end)
    np.testing.assert_array_equal(ops.slice(T(a), dim, start, end).numpy(), a[tuple(idx)])


@pytest.mark.parametrize(
    "index",
    [
        [2, 0, 2],
        np.array([1, 3], dtype=np.int64),
        np.array([3, 0, 1], dtype=np.int32),
        np.array([[0], [2]], dtype=np.int64),
        [0],
        np.uint8(1),
    ],
)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(index, dim):
    a = np.arange(64.0).reshape(4, 4, 4)
    flat = np.asarray(index).reshape(-1)
    np.testing.assert_array_equal(ops.index_select(T(a), dim, index).numpy(), np.take(a, flat, axis=dim))


# ---------------------------------------------------------------- matmul, linear

MATMUL = [
    ([3, 4], [4, 5]),
    ([1, 1], [1, 1]),
    ([2, 3, 4], [2, 4, 5]),
    ([2, 3, 4], [4, 5]),
    ([3, 4], [2, 4, 5]),
    ([4], [4, 5]),
    ([3, 4], [4]),
    ([4], [4]),
    ([2, 3, 4], [4]),
    ([4], [2, 4, 5]),
    ([17, 33], [33, 9]),
    ([2, 2, 3, 4], [2, 2, 4, 5]),
]


@pytest.mark.parametrize("sa, sb", MATMUL)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul(sa, sb, dtype):
    a, a64 = data(sa, dtype, 0.5, 2.0, seed=3)
    b, b64 = data(sb, dtype, 0.5, 2.0, seed=4)
    expected = np.matmul(a64, b64)
    check(ops.matmul(T(a), T(b)), expected, dtype)
    check(T(a) @ T(b), expected, dtype)
    check(T(a).matmul(T(b)), expected, dtype)


@pytest.mark.parametrize("xshape", [[5, 4], [2, 5, 4], [4]])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_linear(xshape, bias, dtype):
    x, x64 = data(xshape, dtype, 0.5, 2.0, seed=5)
    w, w64 = data([3, 4], dtype, 0.5, 2.0, seed=6)
    b, b64 = data([3], dtype, 0.5, 2.0, seed=7)
    expected = np.matmul(x64, w64.T) + (b64 if bias else 0.0)
    check(ops.linear(T(x), T(w), T(b) if bias else None), expected, dtype)


# ---------------------------------------------------------------- softmax and losses


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dim", [-1, 0, 1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_log_softmax(dim, dtype):
    a, a64 = data([2, 3, 4], dtype, -5.0, 5.0)
    check(ops.softmax(T(a), dim), _softmax(a64, dim), dtype)
    m = a64.max(axis=dim, keepdims=True)
    expected_log = (a64 - m) - np.log(np.exp(a64 - m).sum(axis=dim, keepdims=True))
    # (x - max) - log(sum) cancels near 0: float32 is held to an absolute 1e-6 there.
    check(ops.log_softmax(T(a), dim), expected_log, dtype, atol=1e-6 if dtype == "float32" else None)


@pytest.mark.parametrize("shape, dim", [([600, 16], -1), ([37, 13, 7], 1), ([9, 3000], 0)])
def test_softmax_over_many_rows_in_groups_across_threads(shape, dim):
    # Large enough that groups of rows run on the thread team; each row's result is its own, so
    # one thread and two give the same bits, and both match NumPy.
    a, a64 = data(shape, "float64", -5.0, 5.0)
    r = np.random.default_rng(5).uniform(-1, 1, size=shape)
    m = a64.max(axis=dim, keepdims=True)
    lse = m + np.log(np.exp(a64 - m).sum(axis=dim, keepdims=True))
    p = np.exp(a64 - lse)
    before = tlrs.get_num_threads()
    try:
        for log in (False, True):
            runs = []
            for threads in (1, 2):
                tlrs.set_num_threads(threads)
                x = tlrs.tensor(a, requires_grad=True)
                y = (ops.log_softmax if log else ops.softmax)(x, dim)
                (g,) = tlrs.grad(ops.sum(ops.mul(y, T(r))), [x])
                runs.append((y.numpy(), g.numpy()))
            want_y = (a64 - lse) if log else p
            # d/dx of sum(y * r): r - p * sum(r) for log-softmax, p * (r - sum(r * p)) for softmax.
            want_g = r - p * r.sum(axis=dim, keepdims=True) if log else p * (r - (r * p).sum(axis=dim, keepdims=True))
            for y, g in runs:
                np.testing.assert_allclose(y, want_y, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(g, want_g, rtol=1e-10, atol=1e-12)
            np.testing.assert_array_equal(runs[0][0], runs[1][0])
            np.testing.assert_array_equal(runs[0][1], runs[1][1])
    finally:
        tlrs.set_num_threads(before)


@pytest.mark.parametrize("dtype", DTYPES)
def test_minimum_and_maximum_of_zeros_follow_ieee_2019(dtype):
    # minimum(-0, +0) = -0 and maximum(-0, +0) = +0 in either order; NaN propagates.
    a = np.array([-0.0, 0.0, -0.0, 0.0, np.nan, 1.0], dtype)
    b = np.array([0.0, -0.0, -0.0, 0.0, 1.0, np.nan], dtype)
    lo, hi = ops.minimum(T(a), T(b)).numpy(), ops.maximum(T(a), T(b)).numpy()
    assert list(np.signbit(lo[:4])) == [True, True, True, False]
    assert list(np.signbit(hi[:4])) == [False, False, True, False]
    assert np.isnan(lo[4:]).all() and np.isnan(hi[4:]).all()
    # Against a scalar operand too.
    assert np.signbit(ops.minimum(T(np.zeros(3, dtype)), T(np.array(-0.0, dtype))).numpy()).all()
    assert not np.signbit(ops.maximum(T(-np.zeros(3, dtype)), T(np.array(0.0, dtype))).numpy()).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_reduction_and_max_pool_follow_ieee_2019_on_zeros(dtype, device_kind):
    # max is a left fold of IEEE 754-2019 maximum (+0 beats -0 in either order, NaN
    # propagates), and the gradient goes to the first element holding the result.
    dk = device_kind
    a = np.array([[-0.0, 0.0, -0.0], [0.0, -0.0, 0.0], [-0.0, -0.0, -0.0], [-0.0, np.nan, 0.0]], dtype)
    with dk.run():
        x = dk.tensor(a, requires_grad=True)
        y = ops.max(x, 1, False)
        got = y.numpy()
        assert list(np.signbit(got[:3])) == [False, False, True] and np.isnan(got[3])
        (g,) = tlrs.grad(ops.sum(y), [x])
        assert g.numpy().tolist() == [[0, 1, 0], [1, 0, 0], [1, 0, 0], [0, 1, 0]]
        # Over all elements (the rows without NaN): the first +0, at (0, 1).
        whole = dk.tensor(a[:3], requires_grad=True)
        m = ops.max(whole, None, False)
        assert m.numpy() == 0 and not np.signbit(m.numpy())
        (gw,) = tlrs.grad(m, [whole])
        assert np.argwhere(gw.numpy()).tolist() == [[0, 1]]
        # Max pooling, 2x2 windows: [[-0, +0], [+0, -0]] and [[-0, -0], [-0, +0]].
        p = np.array([[[[-0.0, 0.0, -0.0, -0.0], [0.0, -0.0, -0.0, 0.0]]]], dtype)
        xp = dk.tensor(p, requires_grad=True)
        yp = ops.max_pool2d(xp, 2, 2, 0)
        assert not np.signbit(yp.numpy()).any()
        (gp,) = tlrs.grad(ops.sum(yp), [xp])
        assert gp.numpy()[0, 0].tolist() == [[0, 1, 0, 0], [0, 0, 0, 1]]


def test_softmax_large_logits_stable():
    x = T([[1000.0, 1000.0, 999.0]])
    e = math.exp(-1.0)
    check(ops.softmax(x, -1), [[1 / (2 + e), 1 / (2 + e), e / (2 + e)]], "float64")
    check(ops.log_softmax(x, -1), [[-math.log(2 + e), -math.log(2 + e), -1 - math.log(2 + e)]], "float64")


def _ce_indices(x, labels):
    return np.mean([-(x[i, k] - x[i].max() - math.log(np.exp(x[i] - x[i].max()).sum())) for i, k in enumerate(labels)])


@pytest.mark.parametrize("kind", ["list", "int64", "int32"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_indices(kind, dtype):
    a, a64 = data([5, 4], dtype, -3.0, 3.0)
    labels = [3, 0, 1, 3, 2]
    target = labels if kind == "list" else np.array(labels, dtype=kind)
    out = ops.cross_entropy(T(a), target)
    assert list(out.shape) == []
    check(out, _ce_indices(a64, labels), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_one_hot_and_probs(dtype):
    a, a64 = data([5, 4], dtype, -3.0, 3.0)
    labels = [3, 0, 1, 3, 2]
    onehot = np.eye(4, dtype=dtype)[labels]
    check(ops.cross_entropy(T(a), T(onehot)), _ce_indices(a64, labels), dtype)
    p, p64 = data([5, 4], dtype, 0.1, 1.0, seed=9)
    lsm = a64 - a64.max(1, keepdims=True)
    lsm = lsm - np.log(np.exp(lsm).sum(1, keepdims=True))
    check(ops.cross_entropy(T(a), T(p)), np.mean(-(p64 * lsm).sum(1)), dtype)


def test_cross_entropy_hand_value():
    # Two equal logits: loss is log 2 whatever the label.
    check(ops.cross_entropy(T([[0.0, 0.0], [3.0, 3.0]]), [1, 0]), math.log(2.0), "float64")


def test_cross_entropy_single_row():
    x = np.array([1.0, 2.0, 0.5])
    out = ops.cross_entropy(T(x), [1])
    expected = -(2.0 - math.log(math.exp(1.0) + math.exp(2.0) + math.exp(0.5)))
    check(out, expected, "float64")


@pytest.mark.parametrize("shape", [[5], [3, 4], [2, 3, 2]])
@pytest.mark.parametrize("dtype", DTYPES)
def test_mse_loss(shape, dtype):
    a, a64 = data(shape, dtype, seed=1)
    b, b64 = data(shape, dtype, seed=2)
    d = (a64 - b64).reshape(-1)
    check(ops.mse_loss(T(a), T(b)), sum(v * v for v in d) / d.size, dtype)


# ---------------------------------------------------------------- Tensor methods


def test_tensor_methods():
    a, a64 = data([2, 3], "float64", 0.5, 2.0)
    x = T(a)
    check(x.sum(1), a64.sum(1), "float64")
    check(x.sum(), a64.sum(), "float64")
    check(x.sum(dim=0, keepdim=True), a64.sum(0, keepdims=True), "float64")
    check(x.mean(), a64.mean(), "float64")
    check(x.mean(-1), a64.mean(-1), "float64")
    check(x.max(0), a64.max(0), "float64")
    check(x.exp(), np.exp(a64), "float64")
    check(x.log(), np.log(a64), "float64")
    check(x.sqrt(), np.sqrt(a64), "float64")
    check((-x).abs(), a64, "float64")
    check((-x).relu(), np.zeros_like(a64), "float64")
    check(x.tanh(), np.tanh(a64), "float64")
    check(x.sigmoid(), 1 / (1 + np.exp(-a64)), "float64")
    check(x.reshape(3, -1), a64.reshape(3, -1), "float64")
    check(x.reshape((3, -1)), a64.reshape(3, -1), "float64")
    check(x.reshape([6]), a64.reshape(6), "float64")
    check(x.permute(1, 0), a64.T, "float64")
    check(x.transpose(0, 1), a64.T, "float64")
    check(x.flatten(), a64.reshape(-1), "float64")
    check(x.softmax(-1), _softmax(a64, -1), "float64")
    check(x.log_softmax(0), np.log(_softmax(a64, 0)), "float64")
    check(x.clamp(0.8, 1.5), np.clip(a64, 0.8, 1.5), "float64")
    check(x.clamp(min=1.0), np.maximum(a64, 1.0), "float64")
    check(x.pow(2), a64**2, "float64")
    assert x.numel() == 6
