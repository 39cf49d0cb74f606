"""Composite ops (losses in loss_ops, reduce_ops, spatial_ops) against PyTorch: values in float64
(tight) and float32 (looser), gradients of every float input, each reduction, and the errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tlrs
from tlrs import loss_ops as L
from tlrs import reduce_ops as R
from tlrs import spatial_ops as S

TOL = {"float64": {"rtol": 1e-12, "atol": 1e-12}, "float32": {"rtol": 2e-5, "atol": 2e-6}}
DTYPES = ("float64", "float32")


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def check(ours: Callable[..., Any], theirs: Callable[..., Any], arrays: list[np.ndarray], dtype: str = "float64",
          grad: bool = True, fixed: tuple[int, ...] = ()) -> None:
    """ours(*tlrs tensors) against theirs(*torch tensors): the values, then the gradients of
    every input (but those numbered in `fixed`) after backpropagating one random cotangent
    through both."""
    needs = [grad and i not in fixed for i in range(len(arrays))]
    tl = [tlrs.tensor(a.astype(dtype), requires_grad=r) for a, r in zip(arrays, needs)]
    th = [torch.tensor(a.astype(dtype), requires_grad=r) for a, r in zip(arrays, needs)]
    got, want = ours(*tl), theirs(*th)
    tol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got.numpy()), want.detach().numpy(), equal_nan=True, **tol)
    if not grad:
        return
    cot = _rng(99).standard_normal(want.shape).astype(dtype)
    tl, th = [t for t, r in zip(tl, needs) if r], [t for t, r in zip(th, needs) if r]
    arrays = [a for a, r in zip(arrays, needs) if r]
    g_ours = tlrs.grad([got], tl, [tlrs.tensor(cot)], allow_unused=True)
    g_theirs = torch.autograd.grad([want], th, [torch.tensor(cot)], allow_unused=True)
    for i, (g, w) in enumerate(zip(g_ours, g_theirs)):
        w_np = np.zeros(arrays[i].shape) if w is None else w.numpy()
        g_np = np.zeros(arrays[i].shape) if g is None else np.asarray(g.numpy())
        np.testing.assert_allclose(g_np, w_np, equal_nan=True, err_msg=f"gradient of input {i}", **tol)


def _raises(exc: type[BaseException], match: str, fn: Callable[[], Any]) -> None:
    with pytest.raises(exc, match=match):
        fn()


# ---- losses ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(dtype, reduction):
    rng = _rng(1)
    logp = np.log(rng.dirichlet(np.ones(4), 6))
    t = np.array([0, 3, -100, 2, 1, 3])
    w = rng.random(4) + 0.5
    check(lambda x, w_: L.nll_loss(x, t, w_, reduction=reduction),
          lambda x, w_: F.nll_loss(x, torch.tensor(t), w_, reduction=reduction), [logp, w], dtype, fixed=(1,))
    t3 = t.clip(0)
    check(lambda x: L.nll_loss(x, t3, ignore_index=3, reduction=reduction),
          lambda x: F.nll_loss(x, torch.tensor(t3), ignore_index=3, reduction=reduction), [logp], dtype)
    x4, t4 = rng.standard_normal((2, 4, 3, 2)), rng.integers(0, 4, (2, 3, 2))
    check(lambda x: L.nll_loss(x, t4, reduction=reduction),
          lambda x: F.nll_loss(x, torch.tensor(t4), reduction=reduction), [x4], dtype)
    check(lambda x: L.nll_loss(x, np.array(2), reduction=reduction),
          lambda x: F.nll_loss(x, torch.tensor(2), reduction=reduction), [logp[0]], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nll_loss_int_tensor_labels(dtype):
    """int64 tensor labels with the default options take the one-op path (the labels kept as
    the record's input): values and gradients as PyTorch, ignored rows included."""
    rng = _rng(2)
    logp = np.log(rng.dirichlet(np.ones(5), 7))
    t = np.array([0, 4, -100, 2, 1, 3, -100])
    check(lambda x: L.nll_loss(x, tlrs.tensor(t)), lambda x: F.nll_loss(x, torch.tensor(t)), [logp], dtype)
    check(lambda x: L.nll_loss(x, tlrs.tensor(t.clip(0)), ignore_index=4),
          lambda x: F.nll_loss(x, torch.tensor(t.clip(0)), ignore_index=4), [logp], dtype)
    check(lambda x: L.nll_loss(x, tlrs.tensor(np.array(3))),
          lambda x: F.nll_loss(x, torch.tensor(3)), [logp[0]], dtype)
    x = tlrs.tensor(logp.astype(dtype))
    _raises(IndexError, "nll_loss: index 5 is out of range", lambda: L.nll_loss(x, tlrs.tensor(np.array([5] * 7))))
    _raises(tlrs.ShapeError, "nll_loss: expected 7 class indices", lambda: L.nll_loss(x, tlrs.tensor(np.zeros(3, np.int64))))
    assert np.isnan(L.nll_loss(x, tlrs.tensor(np.full(7, -100))).item())  # 0 / 0, as PyTorch


def test_nll_loss_errors():
    x = tlrs.tensor(np.zeros((3, 4)))
    _raises(IndexError, "nll_loss: class index 4", lambda: L.nll_loss(x, [0, 1, 4]))
    _raises(tlrs.ShapeError, "nll_loss: expected class labels of shape", lambda: L.nll_loss(x, [0, 1]))
    _raises(TypeError, "nll_loss: expected integer class labels", lambda: L.nll_loss(x, np.zeros(3)))
    _raises(TypeError, "nll_loss: expected integer class labels", lambda: L.nll_loss(x, x))
    _raises(tlrs.ShapeError, "nll_loss: expected a weight of shape", lambda: L.nll_loss(x, [0, 1, 2], x))
    _raises(ValueError, "nll_loss: reduction must be one of", lambda: L.nll_loss(x, [0, 1, 2], reduction="avg"))
    assert np.isnan(L.nll_loss(x, [-100, -100, -100]).item())  # 0 / 0, as PyTorch


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(dtype, reduction):
    rng = _rng(2)
    p, t, w = rng.uniform(0.05, 0.95, (3, 4)), rng.random((3, 4)), rng.random(4)
    check(lambda p_, t_, w_: L.binary_cross_entropy(p_, t_, w_, reduction=reduction),
          lambda p_, t_, w_: F.binary_cross_entropy(p_, t_, w_, reduction=reduction), [p, t, w], dtype,
          fixed=(2,))
    # log(0) clamps at -100: the values (not the gradient, which is infinite there) match
    edge = np.array([0.0, 1.0, 0.5])
    check(lambda p_, t_: L.binary_cross_entropy(p_, t_, reduction=reduction),
          lambda p_, t_: F.binary_cross_entropy(p_, t_, reduction=reduction), [edge, np.array([0.3, 0.6, 1.0])],
          dtype, grad=False)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(dtype, reduction):
    rng = _rng(3)
    z = rng.standard_normal((3, 4)) * 5
    z[0, :3] = [0.0, -60.0, 60.0]  # the gradient at 0 is sigmoid's; far logits stay finite
    t, w, pw = rng.random((3, 4)), rng.random(4), rng.random(4) * 3
    check(lambda z_, t_: L.binary_cross_entropy_with_logits(z_, t_, reduction=reduction),
          lambda z_, t_: F.binary_cross_entropy_with_logits(z_, t_, reduction=reduction), [z, t], dtype)
    check(lambda z_, t_, w_, p_: L.binary_cross_entropy_with_logits(z_, t_, w_, reduction=reduction, pos_weight=p_),
          lambda z_, t_, w_, p_: F.binary_cross_entropy_with_logits(z_, t_, w_, reduction=reduction, pos_weight=p_),
          [z, t, w, pw], dtype, fixed=(2, 3))
    big = tlrs.tensor(np.array([-1000.0, 1000.0]))
    got = L.binary_cross_entropy_with_logits(big, tlrs.tensor(np.array([1.0, 0.0])), reduction="none")
    np.testing.assert_array_equal(got.numpy(), [1000.0, 1000.0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_l1_smooth_l1_huber(dtype, reduction):
    rng = _rng(4)
    a, b, w = rng.standard_normal((3, 5)) * 2, rng.standard_normal((3, 5)), rng.random((3, 5))
    a[0, 0] = b[0, 0]  # |d| = 0: gradient 0, as sign(0)
    check(lambda x, y: L.l1_loss(x, y, reduction=reduction),
          lambda x, y: F.l1_loss(x, y, reduction=reduction), [a, b], dtype)
    check(lambda x, y, w_: L.l1_loss(x, y, reduction=reduction, weight=w_),
          lambda x, y, w_: F.l1_loss(x, y, reduction=reduction, weight=w_), [a, b, w], dtype)
    for beta in (0.0, 0.5, 1.0, 3.0):
        check(lambda x, y: L.smooth_l1_loss(x, y, reduction=reduction, beta=beta),
              lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction, beta=beta), [a, b], dtype)
    for delta in (0.5, 1.0, 3.0):
        check(lambda x, y: L.huber_loss(x, y, reduction=reduction, delta=delta),
              lambda x, y: F.huber_loss(x, y, reduction=reduction, delta=delta), [a, b], dtype)
        check(lambda x, y, w_: L.huber_loss(x, y, reduction, delta, w_),
              lambda x, y, w_: F.huber_loss(x, y, reduction, delta, w_), [a, b, w], dtype)


def test_pointwise_loss_errors():
    a, b = tlrs.tensor(np.zeros((2, 3))), tlrs.tensor(np.zeros(3))
    for fn in (L.l1_loss, L.smooth_l1_loss, L.huber_loss, L.binary_cross_entropy, L.binary_cross_entropy_with_logits):
        name = fn.__name__
        _raises(tlrs.ShapeError, f"{name}: expected a target of the input's shape", lambda: fn(a, b))
        _raises(TypeError, f"{name}: expected target to be a Tensor", lambda: fn(a, np.zeros((2, 3))))
        _raises(ValueError, f"{name}: reduction must be one of", lambda: fn(a, a, reduction="avg"))
    _raises(ValueError, "smooth_l1_loss: beta must be a number >= 0", lambda: L.smooth_l1_loss(a, a, beta=-1.0))
    _raises(ValueError, "huber_loss: delta must be a number > 0", lambda: L.huber_loss(a, a, delta=0.0))
    _raises(tlrs.ShapeError, "l1_loss: expected a weight of the input's shape",
            lambda: L.l1_loss(a, a, weight=b))
    _raises(tlrs.ShapeError, "binary_cross_entropy_with_logits: pos_weight",
            lambda: L.binary_cross_entropy_with_logits(b, b, pos_weight=a))
    _raises(ValueError, "l1_loss: size_average and reduce are deprecated", lambda: L.l1_loss(a, a, True))


# ---- reductions ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_logsumexp(dtype):
    x = _rng(5).standard_normal((3, 4, 5)) * 10
    for dim, keep in ((0, False), (-1, True), ((0, 2), False), ((1, 2), True), (None, False)):
        check(lambda t: R.logsumexp(t, dim, keep), lambda t: torch.logsumexp(t, dim if dim is not None
                                                                                 else (0, 1, 2), keep), [x], dtype)


def test_logsumexp_infinities_and_empty():
    x = np.zeros((3, 4))
    x[0] = -np.inf
    x[1, 2] = np.inf
    x[2, 1] = -np.inf
    np.testing.assert_allclose(R.logsumexp(tlrs.tensor(x), 1).numpy(), torch.logsumexp(torch.tensor(x), 1).numpy(),
                               rtol=1e-15)
    big = np.array([1e308, 1e308])
    assert R.logsumexp(tlrs.tensor(big), 0).item() == torch.logsumexp(torch.tensor(big), 0).item()
    empty = R.logsumexp(tlrs.tensor(np.zeros((0, 3))), 0)
    np.testing.assert_array_equal(empty.numpy(), [-np.inf] * 3)
    assert R.logsumexp(tlrs.tensor(np.array(2.5)), 0).item() == 2.5


@pytest.mark.parametrize("dtype", DTYPES)
def test_var_std(dtype):
    x = _rng(6).standard_normal((3, 4, 5)) + 3.0
    cases: list[tuple[Any, dict[str, Any]]] = [
        (None, {}), (1, {}), ((0, 2), {"keepdim": True}), (-1, {"correction": 0}), ((1,), {"correction": 2.5}),
    ]
    for dim, kw in cases:
        for ours, theirs in ((R.var, torch.var), (R.std, torch.std)):
            check(lambda t: ours(t, dim, **kw), lambda t: theirs(t, dim, **kw), [x], dtype)
    check(lambda t: R.var(t, 1, False, True), lambda t: torch.var(t, 1, False, True), [x], dtype)
    check(lambda t: R.std(t, unbiased=False), lambda t: torch.std(t, unbiased=False), [x], dtype)
    check(lambda t: R.var(t, False), lambda t: torch.var(t, False), [x], dtype)
    one = tlrs.tensor(np.ones((1, 3)))
    assert np.isnan(R.var(one, 0).numpy()).all()  # 0 / max(0, 1 - 1), as PyTorch


@pytest.mark.parametrize("dtype", DTYPES)
def test_var_logsumexp_over_axes_keep_the_axis_by_axis_bits(dtype):
    """Over several axes var and logsumexp are one recorded op each; their values keep the bits
    of the definition, folds one axis at a time from the last, written here with single-axis
    ops."""
    from tlrs import _core
    x = tlrs.tensor((_rng(9).standard_normal((6, 7, 33)) * 3 + 1).astype(dtype))

    def fold(fn: Any, t: Any, axes: tuple[int, ...]) -> Any:
        for a in reversed(axes):
            t = fn(t, a, True)
        return t

    def scalar(v: float) -> Any:
        return _core.full([], v, x.dtype)

    for axes in ((0, 2), (1, 2), (0, 1, 2)):
        n = int(np.prod([x.shape[a] for a in axes]))
        d = _core.sub(x, _core.div(fold(_core.sum, x, axes), scalar(n)))
        want_var = _core.div(fold(_core.sum, _core.mul(d, d), axes), scalar(n - 1))
        m = _core.clamp(fold(_core.max, x, axes), -float(np.finfo(dtype).max), float(np.finfo(dtype).max))
        want_lse = _core.add(_core.log(fold(_core.sum, _core.exp(_core.sub(x, m)), axes)), m)
        for got, want in ((R.var(x, axes, keepdim=True), want_var), (R.logsumexp(x, axes, True), want_lse)):
            np.testing.assert_array_equal(got.numpy().view(np.uint8), want.numpy().view(np.uint8))


@pytest.mark.parametrize("dtype", DTYPES)
def test_amin_min(dtype):
    x = _rng(7).standard_normal((3, 4, 5))
    for dim, keep in ((0, False), ((1, 2), True), ((), False), (-1, True)):
        check(lambda t: R.amin(t, dim, keep), lambda t: torch.amin(t, dim, keep), [x], dtype)
    check(lambda t: R.min(t), lambda t: torch.min(t), [x], dtype)
    check(lambda t: R.min(t, 1, True), lambda t: torch.min(t, 1, True).values, [x], dtype)
    y = x[::-1].copy()
    check(lambda a, b: R.min(a, b), lambda a, b: torch.min(a, b), [x, y], dtype)
    z = tlrs.tensor(np.array([0.0, -0.0, 0.0]))
    assert np.signbit(R.amin(z).item())  # -0 beats +0, as PyTorch
    assert np.isnan(R.amin(tlrs.tensor(np.array([1.0, np.nan, 0.0]))).item())


@pytest.mark.parametrize("dtype", DTYPES)
def test_prod(dtype):
    x = _rng(8).uniform(0.5, 1.5, (3, 7, 4))
    x[1, 3, 2] = 0.0  # the gradient through a zero (and a row with two zeros)
    x[2, 1, 1] = x[2, 5, 1] = 0.0
    for dim, keep in ((1, False), (0, True), (-1, False)):
        check(lambda t: R.prod(t, dim, keep), lambda t: torch.prod(t, dim, keep), [x], dtype)
    check(lambda t: R.prod(t), lambda t: torch.prod(t), [x[:, :3, :2]], dtype)
    np.testing.assert_array_equal(R.prod(tlrs.tensor(np.zeros((0, 2))), 0).numpy(), [1.0, 1.0])


def test_reduction_errors():
    x = tlrs.tensor(np.zeros((2, 3)))
    _raises(IndexError, "logsumexp: dim 2 is out of range", lambda: R.logsumexp(x, 2))
    _raises(ValueError, "var: dim \\[1, -1\\] names an axis twice", lambda: R.var(x, (1, -1)))
    _raises(TypeError, "std: expected dim to be an int", lambda: R.std(x, "a"))
    _raises(ValueError, "var: pass either correction or unbiased", lambda: R.var(x, 0, True, correction=1))
    _raises(TypeError, "amin: expected a Tensor", lambda: R.amin(np.zeros(3)))
    _raises(tlrs.ShapeError, "amin: cannot reduce an empty tensor", lambda: R.amin(tlrs.tensor(np.zeros((0, 3)))))
    _raises(TypeError, "min: expected dim to be an int", lambda: R.min(x, (0, 1)))
    _raises(TypeError, "prod: expected dim to be an int", lambda: R.prod(x, (0,)))


# ---- spatial ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
def test_conv1d(dtype):
    rng = _rng(9)
    x, w, b = rng.standard_normal((2, 4, 9)), rng.standard_normal((6, 4, 3)), rng.standard_normal(6)
    for kw in ({}, {"stride": 2}, {"padding": 2}, {"padding": "same"}, {"padding": "valid"}, {"stride": (3,)}):
        check(lambda x_, w_, b_: S.conv1d(x_, w_, b_, **kw), lambda x_, w_, b_: F.conv1d(x_, w_, b_, **kw),
              [x, w, b], dtype)
    we = rng.standard_normal((6, 4, 4))  # even kernel with 'same': one more on the right
    check(lambda x_, w_: S.conv1d(x_, w_, padding="same"), lambda x_, w_: F.conv1d(x_, w_, padding="same"),
          [x, we], dtype)
    wg = rng.standard_normal((6, 2, 3))
    check(lambda x_, w_, b_: S.conv1d(x_, w_, b_, 2, 1, 1, 2), lambda x_, w_, b_: F.conv1d(x_, w_, b_, 2, 1, 1, 2),
          [x, wg, b], dtype)
    check(lambda x_, w_: S.conv1d(x_, w_), lambda x_, w_: F.conv1d(x_, w_), [x[0], w], dtype)
    check(lambda x_, w_, b_: S.conv1d(x_, w_, b_, 1, "same", 2, 2), lambda x_, w_, b_: F.conv1d(x_, w_, b_, 1, "same", 2, 2),
          [x, wg, b], dtype)
    check(lambda x_, w_: S.conv1d(x_, w_, None, 3, 2, 3), lambda x_, w_: F.conv1d(x_, w_, None, 3, 2, 3), [x, w], dtype)


def test_conv1d_errors():
    x, w = tlrs.tensor(np.zeros((1, 4, 9))), tlrs.tensor(np.zeros((6, 4, 3)))
    _raises(ValueError, "conv1d: dilation must be positive", lambda: S.conv1d(x, w, dilation=0))
    _raises(ValueError, "conv1d: padding='same' needs stride 1", lambda: S.conv1d(x, w, stride=2, padding="same"))
    _raises(ValueError, "conv1d: padding must be a size", lambda: S.conv1d(x, w, padding="full"))
    _raises(tlrs.ShapeError, "conv1d: expected input", lambda: S.conv1d(tlrs.tensor(np.zeros((1, 1, 4, 9))), w))
    _raises(ValueError, "conv1d: stride: expected an int or a sequence of one int", lambda: S.conv1d(x, w, stride=(1, 2)))
    _raises(ValueError, "conv1d: padding: expected an integer in \\[0, 2\\*\\*63\\)", lambda: S.conv1d(x, w, padding=2**70))
    _raises(tlrs.ShapeError, "conv1d: expected groups dividing", lambda: S.conv1d(x, w, groups=3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(dtype, mode):
    x = _rng(10).standard_normal((2, 3, 4, 5))
    for p in ((2, 1, 3, 1), (-1, 2, 1, -2), (3, 3, 2, 2), *([(1, 2)] if mode == "constant" else [])):
        check(lambda t: S.pad(t, p, mode), lambda t: F.pad(t, p, mode), [x], dtype)
    check(lambda t: S.pad(t, (2, 1), mode), lambda t: F.pad(t, (2, 1), mode), [x[0, 0]], dtype)
    check(lambda t: S.pad(t, (1, 1, 1, 1, 1, 1), mode), lambda t: F.pad(t, (1, 1, 1, 1, 1, 1), mode), [x], dtype)
    check(lambda t: S.pad(t, (1, 2), mode), lambda t: F.pad(t, (1, 2), mode), [x[0]], dtype)
    if mode == "constant":
        check(lambda t: S.pad(t, [1, 0, 0, 2, 1, 1, 2, 0], value=-2.5),
              lambda t: F.pad(t, [1, 0, 0, 2, 1, 1, 2, 0], value=-2.5), [x], dtype)


def test_pad_errors():
    x = tlrs.tensor(np.zeros((1, 2, 3, 4)))
    _raises(ValueError, "pad: expected a sequence of an even number", lambda: S.pad(x, (1, 2, 3)))
    _raises(ValueError, "pad: 10 padding sizes are too many", lambda: S.pad(x, (1,) * 10))
    _raises(NotImplementedError, "pad: mode must be", lambda: S.pad(x, (1, 1), "wrap"))
    _raises(ValueError, "pad: reflect padding \\(3, 0\\) must be smaller than the axis size 3",
            lambda: S.pad(x, (0, 0, 3, 0), "reflect"))
    _raises(ValueError, "pad: circular padding", lambda: S.pad(x, (5, 0), "circular"))
    _raises(ValueError, "pad: reflect padding takes 2, 4 or 6 sizes", lambda: S.pad(x, (1, 1), "reflect"))
    _raises(tlrs.ShapeError, "pad: an output of shape", lambda: S.pad(x, (2**70, 0)))
    _raises(ValueError, "pad: padding \\(-3, -2\\) leaves a negative size", lambda: S.pad(x, (-3, -2)))
    _raises(TypeError, "pad: pad: expected an int", lambda: S.pad(x, (1.5, 1)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate(dtype, mode):
    x = _rng(11).standard_normal((2, 3, 4, 5))
    for kw in ({"size": 7}, {"size": (3, 9)}, {"scale_factor": 1.7}, {"scale_factor": (0.5, 2.3)},
               {"scale_factor": 2}, {"scale_factor": 0.3, "recompute_scale_factor": True}, {"size": (4, 5)}):
        check(lambda t: S.interpolate(t, mode=mode, **kw), lambda t: F.interpolate(t, mode=mode, **kw), [x], dtype)
    check(lambda t: S.interpolate(t, scale_factor=2.5, mode=mode),
          lambda t: F.interpolate(t, scale_factor=2.5, mode=mode), [x[0]], dtype)
    x5 = x.reshape(1, 2, 3, 4, 5)
    check(lambda t: S.interpolate(t, size=(2, 5, 3), mode=mode),
          lambda t: F.interpolate(t, size=(2, 5, 3), mode=mode), [x5], dtype)


def test_interpolate_errors():
    x = tlrs.tensor(np.zeros((1, 2, 3, 4)))
    _raises(NotImplementedError, "interpolate: mode 'bicubic' is not supported",
            lambda: S.interpolate(x, size=4, mode="bicubic"))
    _raises(ValueError, "interpolate: expected exactly one of size and scale_factor", lambda: S.interpolate(x))
    _raises(ValueError, "interpolate: expected 2 output sizes", lambda: S.interpolate(x, size=(1, 2, 3)))
    _raises(ValueError, "interpolate: align_corners", lambda: S.interpolate(x, size=4, align_corners=True))
    _raises(tlrs.ShapeError, "interpolate: expected a 3-D, 4-D or 5-D input",
            lambda: S.interpolate(tlrs.tensor(np.zeros(3)), size=4))
    _raises(ValueError, "interpolate: scale factors must be positive", lambda: S.interpolate(x, scale_factor=-1.0))
    _raises(ValueError, "interpolate: scale factors must be positive", lambda: S.interpolate(x, scale_factor=np.inf))
    _raises(tlrs.ShapeError, "interpolate: an output of shape", lambda: S.interpolate(x, size=2**40))


@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool2d(dtype):
    x = _rng(12).standard_normal((2, 3, 6, 7))
    for size in (1, 2, 3, (3, 4), (None, 2), (6, 7), 5, (9, 10)):
        check(lambda t: S.adaptive_avg_pool2d(t, size), lambda t: F.adaptive_avg_pool2d(t, size), [x], dtype)
    check(lambda t: S.adaptive_avg_pool2d(t, (4, 3)), lambda t: F.adaptive_avg_pool2d(t, (4, 3)), [x[0]], dtype)
    inf = x.copy()
    inf[0, 0, 0, 0] = np.inf  # only the windows holding it
    for size in (3, (4, 5), (9, 10)):  # slices, the short-window sums, both
        check(lambda t: S.adaptive_avg_pool2d(t, size), lambda t: F.adaptive_avg_pool2d(t, size), [inf], dtype,
              grad=False)


def test_adaptive_avg_pool2d_errors():
    x = tlrs.tensor(np.zeros((1, 2, 3, 4)))
    _raises(ValueError, "adaptive_avg_pool2d: output sizes must be positive", lambda: S.adaptive_avg_pool2d(x, 0))
    _raises(ValueError, "adaptive_avg_pool2d: expected an int or a pair", lambda: S.adaptive_avg_pool2d(x, (1, 2, 3)))
    _raises(tlrs.ShapeError, "adaptive_avg_pool2d: an output of shape", lambda: S.adaptive_avg_pool2d(x, 2**70))
    _raises(tlrs.ShapeError, "adaptive_avg_pool2d: expected a non-empty",
            lambda: S.adaptive_avg_pool2d(tlrs.tensor(np.zeros((2, 3))), 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm(dtype):
    rng = _rng(13)
    x, w, b = rng.standard_normal((2, 6, 3, 4)) * 3 + 1, rng.standard_normal(6), rng.standard_normal(6)
    for g in (1, 2, 3, 6):
        check(lambda x_, w_, b_: S.group_norm(x_, g, w_, b_), lambda x_, w_, b_: F.group_norm(x_, g, w_, b_),
              [x, w, b], dtype)
    check(lambda x_: S.group_norm(x_, 2, eps=0.1), lambda x_: F.group_norm(x_, 2, eps=0.1), [x[:, :, 0]], dtype)
    check(lambda x_: S.group_norm(x_, 3), lambda x_: F.group_norm(x_, 3), [x[:, :, 0, 0]], dtype)


def test_group_norm_errors():
    x = tlrs.tensor(np.zeros((2, 6, 3)))
    _raises(ValueError, "group_norm: expected num_groups dividing the 6 channels, got 4", lambda: S.group_norm(x, 4))
    _raises(tlrs.ShapeError, "group_norm: expected a weight of shape \\[6\\]",
            lambda: S.group_norm(x, 2, tlrs.tensor(np.ones(3))))
    _raises(TypeError, "group_norm: num_groups: expected an int", lambda: S.group_norm(x, 2.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scaled_dot_product_attention(dtype):
    rng = _rng(14)
    q, k, v = rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 5, 8)), rng.standard_normal((2, 3, 5, 6))
    sdpa, ref = S.scaled_dot_product_attention, F.scaled_dot_product_attention
    check(sdpa, ref, [q, k, v], dtype)
    check(lambda *a: sdpa(*a, is_causal=True, scale=0.7), lambda *a: ref(*a, is_causal=True, scale=0.7),
          [q, k, v], dtype)
    m = rng.random((4, 5)) > 0.4
    m[1] = False  # a query that sees nothing: zeros, as PyTorch
    check(lambda *a: sdpa(*a, attn_mask=m), lambda *a: ref(*a, attn_mask=torch.tensor(m)), [q, k, v], dtype)
    fm = rng.standard_normal((3, 1, 5))
    fm[0, 0, 2] = -np.inf
    check(lambda a, b, c, d: sdpa(a, b, c, attn_mask=d), lambda a, b, c, d: ref(a, b, c, attn_mask=d),
          [q, k, v, fm], dtype)
    fm2 = np.zeros((4, 5))
    fm2[2] = -np.inf
    check(lambda a, b, c: sdpa(a, b, c, attn_mask=tlrs.tensor(fm2.astype(dtype))),
          lambda a, b, c: ref(a, b, c, attn_mask=torch.tensor(fm2.astype(dtype))), [q, k, v], dtype)
    kg, vg = k[:, :1], v[:, :1]
    check(lambda *a: sdpa(*a, enable_gqa=True), lambda *a: ref(*a, enable_gqa=True), [q, kg, vg], dtype)
    check(sdpa, ref, [q[0, 0], k[0, 0], v[0, 0]], dtype)


def test_scaled_dot_product_attention_dropout():
    rng = _rng(15)
    q, k, v = (tlrs.tensor(rng.standard_normal((2, 4, 8))) for _ in range(3))
    a = S.scaled_dot_product_attention(q, k, v, dropout_p=0.5, dropout_key=7)
    b = S.scaled_dot_product_attention(q, k, v, dropout_p=0.5, dropout_key=7)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    full = S.scaled_dot_product_attention(q, k, v)
    assert not np.allclose(a.numpy(), full.numpy())


def test_scaled_dot_product_attention_dropout_without_a_key_follows_the_seed_stream():
    """No key: the mask comes from the global seed stream as ops.dropout's, so a seed repeats it,
    and the output is torch's math (softmax, inverted dropout, product) with that mask."""
    rng = _rng(16)
    qn, kn, vn = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
    q, k, v = (tlrs.tensor(a) for a in (qn, kn, vn))
    tlrs.manual_seed(11)
    a = S.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)
    b = S.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)
    tlrs.manual_seed(11)
    a_again = S.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)
    tlrs.manual_seed(11)
    kept = tlrs.ops.dropout(tlrs.ones([2, 3, 5, 5], dtype="float64"), 0.3).numpy() != 0
    np.testing.assert_array_equal(a.numpy(), a_again.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())  # the next draw: another mask
    assert 0 < kept.mean() < 1
    tq, tk, tv = (torch.from_numpy(x) for x in (qn, kn, vn))
    scores = (tq @ tk.transpose(-2, -1)) / 2.0
    scores = scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
    ref = (torch.softmax(scores, -1) * torch.from_numpy(kept) / 0.7) @ tv
    np.testing.assert_allclose(a.numpy(), ref.numpy(), rtol=1e-12, atol=1e-14)


def test_scaled_dot_product_attention_errors():
    q = tlrs.tensor(np.zeros((2, 4, 8)))
    sdpa = S.scaled_dot_product_attention
    _raises(ValueError, "scaled_dot_product_attention: pass either attn_mask or is_causal",
            lambda: sdpa(q, q, q, np.ones((4, 4), bool), is_causal=True))
    _raises(TypeError, "scaled_dot_product_attention: expected attn_mask to be a boolean",
            lambda: sdpa(q, q, q, np.ones((4, 4))))
    _raises(tlrs.ShapeError, "scaled_dot_product_attention: attn_mask \\[3, 4\\] does not broadcast",
            lambda: sdpa(q, q, q, np.ones((3, 4), bool)))
    _raises(tlrs.ShapeError, "scaled_dot_product_attention: expected query",
            lambda: sdpa(q, tlrs.tensor(np.zeros((2, 4, 7))), q))
    _raises(TypeError, "scaled_dot_product_attention: expected key to be a Tensor", lambda: sdpa(q, 1.0, q))
    _raises(ValueError, "scaled_dot_product_attention: dropout_key must be an integer",
            lambda: sdpa(q, q, q, dropout_p=0.5, dropout_key=-1))
    _raises(ValueError, "scaled_dot_product_attention: dropout_p must be in", lambda: sdpa(q, q, q, dropout_p=1.5))
