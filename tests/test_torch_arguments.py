"""The argument forms PyTorch code passes to the existing ops, against PyTorch: numbers on
either side, `alpha=`, tensor exponents and bounds, several reduction axes, `max(a, b)`,
softmax's `dtype`, a 1-D `linear` weight, `masked_fill` with a tensor value or a wider mask.
(PyTorch's OpInfo samples cover them too, tests/test_opinfo.py; these pin the edges.)"""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import ops

torch = pytest.importorskip("torch")


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def grads(fn, *arrays, device="cpu"):
    xs = [tlrs.tensor(a, requires_grad=True, device=device) for a in arrays]
    y = fn(*xs)
    return [y.numpy(), *(g.numpy() for g in tlrs.grad(ops.sum(y), xs))]


def torch_grads(fn, *arrays):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*xs)
    return [y.detach().numpy(), *(g.numpy() for g in torch.autograd.grad(y.sum(), xs))]


# Bases and exponents with PyTorch's special cases: 0 ** 0, 0 ** 2, x ** 0, negative bases.
POW_BASE = np.array([0.0, 0.0, 2.0, 3.0, -2.0, 0.5, 1.0, 0.0])
POW_EXP = np.array([0.0, 2.0, 0.0, 1.5, 2.0, -1.0, 3.0, -1.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensor_exponents_give_pytorchs_values_and_gradients(dtype):
    a, b = POW_BASE.astype(dtype), POW_EXP.astype(dtype)
    got = grads(ops.pow, a, b)
    want = torch_grads(torch.pow, a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, equal_nan=True)
    # Where PyTorch's rules give an exact 0 (b = 0 for the base; a = 0, b >= 0 for the exponent)
    # tlrs gives 0 too, not 0 * inf = NaN.
    assert got[1][0] == 0 and got[1][2] == 0
    assert got[2][0] == 0 and got[2][1] == 0
    # A number base with a tensor exponent, and the operator form.
    np.testing.assert_allclose(grads(lambda e: ops.pow(2.0, e), b)[1], torch_grads(lambda e: torch.pow(2.0, e), b)[1],
                               rtol=2e-6)
    x = tlrs.tensor(a)
    assert np.array_equal(bits((x ** tlrs.tensor(b)).numpy()), bits(ops.pow(x, tlrs.tensor(b)).numpy()))


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensor_exponent_gradients_on_cuda_match_the_cpus(dtype):
    # pow itself is the device's math library's there (not yet libm's bits: the GPU issue), so
    # within the CUDA parity tolerance, and the special cases exactly.
    a, b = POW_BASE.astype(dtype), POW_EXP.astype(dtype)
    tol = {"float32": 2e-5, "float64": 1e-11}[dtype]
    for cpu, dev in zip(grads(ops.pow, a, b), grads(ops.pow, a, b, device="cuda")):
        np.testing.assert_allclose(dev, cpu, rtol=tol, atol=tol, equal_nan=True)
        assert np.array_equal(dev == 0, cpu == 0)


def test_numbers_on_either_side_and_alpha():
    x = np.array([1.5, -2.0, 0.25])
    t = tlrs.tensor(x)
    for name in ("add", "sub", "mul", "div"):
        assert np.array_equal(getattr(ops, name)(2.0, t).numpy(), getattr(torch, name)(2.0, torch.tensor(x)).numpy())
    assert np.array_equal(ops.add(t, t, alpha=3).numpy(), torch.add(torch.tensor(x), torch.tensor(x), alpha=3).numpy())
    assert np.array_equal(ops.sub(t, 1.0, alpha=-2).numpy(), torch.sub(torch.tensor(x), 1.0, alpha=-2).numpy())
    with pytest.raises(TypeError, match="expected a Tensor operand"):
        ops.add(1.0, 2.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensor_bounds_in_clamp(dtype):
    rng = np.random.default_rng(0)
    x, lo, hi = (rng.uniform(-2, 2, size=s).astype(dtype) for s in ([4, 5], [5], [4, 1]))
    got = grads(lambda a, b, c: ops.clamp(a, b, c), x, lo, hi)
    want = torch_grads(lambda a, b, c: torch.clamp(a, b, c), x, lo, hi)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    assert np.array_equal(ops.clamp(tlrs.tensor(x), max=tlrs.tensor(hi)).numpy(),
                          torch.clamp(torch.tensor(x), max=torch.tensor(hi)).numpy())


def test_several_reduction_axes():
    x = np.random.default_rng(1).uniform(-1, 1, size=[3, 4, 5])
    t, tt = tlrs.tensor(x), torch.tensor(x)
    for dims in [(0, 2), [-1, 0], (1,), ()]:
        for keep in (False, True):
            np.testing.assert_allclose(ops.sum(t, dims, keep).numpy(), torch.sum(tt, dims, keep).numpy(), rtol=1e-14)
            np.testing.assert_allclose(ops.mean(t, dims, keep).numpy(), torch.mean(tt, dims, keep).numpy(), rtol=1e-14)
            assert np.array_equal(ops.max(t, dims, keep).numpy(), torch.amax(tt, dims, keep).numpy())
    with pytest.raises(ValueError, match="twice"):
        ops.sum(t, (0, -3))
    with pytest.raises(IndexError):
        ops.sum(t, (0, 3))


def test_max_of_two_tensors_softmax_dtype_and_a_1d_linear_weight():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, size=[2, 3]), rng.uniform(-1, 1, size=[3])
    assert np.array_equal(ops.max(tlrs.tensor(a), tlrs.tensor(b)).numpy(), torch.max(torch.tensor(a), torch.tensor(b)).numpy())
    y = ops.softmax(tlrs.tensor(a.astype("float32")), 1, dtype="float64")
    assert y.dtype == "float64"
    want = torch.softmax(torch.tensor(a.astype("float32")), 1, dtype=torch.float64)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-15)
    got = ops.linear(tlrs.tensor(a), tlrs.tensor(b))
    want = torch.nn.functional.linear(torch.tensor(a), torch.tensor(b))
    assert got.shape == list(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15)


def test_masked_fill_with_a_tensor_value_and_a_wider_mask():
    x = np.array([[1.0, -0.0, 3.0]])
    mask = np.array([[True, False, False], [False, False, True]])
    got = grads(lambda a, v: ops.masked_fill(a, mask, v), x, np.array(2.5))
    want = torch_grads(lambda a, v: torch.masked_fill(a, torch.tensor(mask), v), x, np.array(2.5))
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(bits(g), bits(w))  # -0.0 kept
    with pytest.raises(ValueError, match="finite"):
        ops.masked_fill(tlrs.tensor(x), mask, tlrs.tensor(np.array(np.inf), requires_grad=True))
    with pytest.raises(tlrs.ShapeError, match="0-d value"):
        ops.masked_fill(tlrs.tensor(x), mask, tlrs.tensor(np.array([1.0])))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [[5, 4], [3, 4, 2, 3], [4]])
def test_cross_entropy_options(shape, reduction):
    rng = np.random.default_rng(4)
    x = rng.uniform(-3, 3, size=shape)
    label_shape = [] if len(shape) == 1 else [shape[0], *shape[2:]]
    labels = rng.integers(0, 4, size=label_shape)
    if labels.ndim:
        labels.flat[0] = -100  # ignored
    w = rng.uniform(0.5, 2.0, size=[4])
    probs = rng.dirichlet(np.ones(4), size=int(np.prod(label_shape))).reshape(*label_shape, 4)
    probs = np.moveaxis(probs, -1, 1) if len(shape) > 1 else probs.reshape(4)
    F = torch.nn.functional
    for kw in [dict(), dict(weight=True), dict(label_smoothing=0.2), dict(weight=True, label_smoothing=0.1)]:
        tw, ww = (tlrs.tensor(w), torch.tensor(w)) if kw.get("weight") else (None, None)
        smooth = kw.get("label_smoothing", 0.0)
        for target, ttarget in [(labels, torch.tensor(labels)), (tlrs.tensor(probs), torch.tensor(probs))]:
            if isinstance(target, np.ndarray) and target.ndim == 0 and target == -100:
                continue
            got = grads(lambda a: ops.cross_entropy(a, target, weight=tw, reduction=reduction,
                                                    label_smoothing=smooth), x)
            want = torch_grads(lambda a: F.cross_entropy(a, ttarget, weight=ww, reduction=reduction,
                                                         label_smoothing=smooth), x)
            for g, t in zip(got, want):
                assert g.shape == t.shape
                np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-14)
    with pytest.raises(IndexError, match="out of range"):
        ops.cross_entropy(tlrs.tensor(x), np.full(label_shape, 4), reduction=reduction)


@pytest.mark.parametrize("shape", [[5, 4], [3, 4, 2, 3], [4]])
def test_cross_entropy_label_smoothing_with_every_label_counted(shape):
    # The one-op path (smoothed one-hot rows): labels as a list, an int32 array and an int64
    # tensor; probability targets smoothed too.
    rng = np.random.default_rng(6)
    x = rng.uniform(-3, 3, size=shape)
    label_shape = [] if len(shape) == 1 else [shape[0], *shape[2:]]
    labels = rng.integers(0, 4, size=label_shape)
    F = torch.nn.functional
    for smooth in (0.1, 1.0):
        want = torch_grads(lambda a: F.cross_entropy(a, torch.tensor(labels), label_smoothing=smooth), x)
        for target in (labels.tolist(), labels.astype(np.int32), tlrs.tensor(labels)):
            got = grads(lambda a: ops.cross_entropy(a, target, label_smoothing=smooth), x)
            for g, t in zip(got, want):
                np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-14)
    with pytest.raises(IndexError, match="out of range"):
        ops.cross_entropy(tlrs.tensor(x), np.full(label_shape, 4), label_smoothing=0.1)


@pytest.mark.parametrize("groups,padding", [(2, 1), (4, "same"), (1, "valid"), (4, (0, 0))])
def test_grouped_and_depthwise_convolution(groups, padding):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, size=[2, 4, 6, 5])
    w = rng.uniform(-1, 1, size=[8, 4 // groups, 3, 3])
    b = rng.uniform(-1, 1, size=[8])
    got = grads(lambda a, k, c: ops.conv2d(a, k, c, 1, padding, groups=groups), x, w, b)
    want = torch_grads(lambda a, k, c: torch.nn.functional.conv2d(a, k, c, 1, padding, groups=groups), x, w, b)
    for g, t in zip(got, want):
        assert g.shape == t.shape
        np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)


def test_convolution_geometry_errors_name_the_argument():
    x, w = tlrs.tensor(np.zeros([1, 2, 5, 5])), tlrs.tensor(np.zeros([2, 2, 3, 3]))
    with pytest.raises(ValueError, match=r"conv2d: dilation=0 is out of range \(expected an integer in \[1, 2\*\*31\)\)"):
        ops.conv2d(x, w, dilation=0)
    with pytest.raises(ValueError, match="conv2d: stride: expected an int or a pair of ints"):
        ops.conv2d(x, w, stride=(1, 2, 3))
    with pytest.raises(ValueError, match=r"conv2d: padding=\(1, -1\) is out of range"):
        ops.conv2d(x, w, padding=(1, -1))
    with pytest.raises(ValueError, match="conv2d: padding='same' needs stride 1"):
        ops.conv2d(x, w, stride=(1, 2), padding="same")
    with pytest.raises(tlrs.ShapeError, match="conv2d: the output would be"):
        ops.conv2d(x, w, dilation=3)
    with pytest.raises(tlrs.ShapeError, match="groups"):
        ops.conv2d(x, tlrs.tensor(np.zeros([3, 1, 3, 3])), groups=2)
    with pytest.raises(tlrs.ShapeError, match="groups"):
        ops.conv2d(x, tlrs.tensor(np.zeros([3, 1, 3, 3])), groups=2, dilation=2)


@pytest.mark.parametrize("sa,sb", [([5, 5, 5], [1, 5, 5]), ([2, 1, 3, 4], [5, 4, 2]), ([1, 3, 4], [2, 1, 4, 6])])
def test_matmul_broadcasts_batch_axes(sa, sb):
    rng = np.random.default_rng(6)
    a, b = rng.uniform(-1, 1, size=sa), rng.uniform(-1, 1, size=sb)
    for g, t in zip(grads(ops.matmul, a, b), torch_grads(torch.matmul, a, b)):
        assert g.shape == t.shape
        np.testing.assert_allclose(g, t, rtol=1e-13, atol=1e-14)


def test_scatter_add_with_an_index_smaller_than_src_and_0d_dims():
    rng = np.random.default_rng(7)
    x, src = rng.uniform(-1, 1, size=[3, 4]), rng.uniform(-1, 1, size=[3, 5])
    index = np.array([[0, 1, 2], [2, 0, 0]])
    got = grads(lambda a, s: ops.scatter_add(a, 0, index, s), x, src)
    want = torch.scatter_add(torch.tensor(x), 0, torch.tensor(index), torch.tensor(src))
    assert np.array_equal(got[0], want.numpy())
    # PyTorch's own backward refuses this case (its gradient comes out index-shaped); d sum / d src
    # is 1 on the index's block of src and 0 elsewhere, and 1 everywhere for x.
    block = np.zeros_like(src)
    block[:2, :3] = 1
    assert np.array_equal(got[1], np.ones_like(x)) and np.array_equal(got[2], block)
    s = np.array(1.5)
    assert ops.transpose(tlrs.tensor(s), 0, -1).shape == []
    assert ops.gather(tlrs.tensor(s), 0, np.array(0)).numpy() == 1.5
    assert ops.index_select(tlrs.tensor(s), -1, [0]).shape == list(torch.index_select(torch.tensor(s), -1, torch.tensor([0])).shape)
