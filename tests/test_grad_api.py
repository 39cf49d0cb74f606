"""`tlrs.grad(outputs, inputs, grad_outputs=None, allow_unused=False)` with PyTorch's meaning:
gradients for leaves and interior tensors alike, checked against central finite differences."""

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import ops


def _fd(f, x, eps=1e-6):
    """Central differences of the scalar f at the array x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


def _net(x, w):
    h = ops.tanh(ops.matmul(x, w))
    return h, ops.sum(ops.pow(h, 3.0)) + ops.sum(ops.exp(h) * h)


def _from_h(h):
    return float(np.sum(h**3) + np.sum(np.exp(h) * h))


RNG = np.random.default_rng(5)
XV, WV = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2)) * 0.5


def test_gradient_of_an_interior_tensor_matches_finite_differences():
    x, w = tlrs.tensor(XV), tlrs.tensor(WV, requires_grad=True)
    h, loss = _net(x, w)
    (gh,) = tlrs.grad(loss, [h])
    expected = _fd(_from_h, h.numpy())
    np.testing.assert_allclose(gh.numpy(), expected, rtol=1e-6, atol=1e-7)
    assert float(np.abs(gh.numpy()).sum()) > 0  # not the zeros of an unhandled interior tensor


def test_leaf_and_interior_together_and_leaf_matches_finite_differences():
    x, w = tlrs.tensor(XV), tlrs.tensor(WV, requires_grad=True)
    h, loss = _net(x, w)
    gw, gh = tlrs.grad(loss, [w, h])
    np.testing.assert_allclose(gw.numpy(), _fd(lambda wv: _from_h(np.tanh(XV @ wv)), WV),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gh.numpy(), _fd(_from_h, h.numpy()), rtol=1e-6, atol=1e-7)
    assert w.grad is None  # .grad is left alone


def test_grad_outputs_give_the_vector_jacobian_product():
    x, w = tlrs.tensor(XV), tlrs.tensor(WV, requires_grad=True)
    h = ops.tanh(ops.matmul(x, w))
    v = RNG.normal(size=h.shape)
    (gw,) = tlrs.grad(h, [w], grad_outputs=[tlrs.tensor(v)])
    np.testing.assert_allclose(gw.numpy(), _fd(lambda wv: float(np.sum(np.tanh(XV @ wv) * v)), WV),
                               rtol=1e-6, atol=1e-7)


def test_several_outputs_sum_their_gradients():
    w = tlrs.tensor(WV, requires_grad=True)
    a, b = ops.sum(w * w), ops.sum(ops.exp(w))
    (g,) = tlrs.grad([a, b], [w])
    np.testing.assert_allclose(g.numpy(), (2 * WV) + np.exp(WV), rtol=1e-15, atol=0)


def test_unused_inputs_raise_unless_allowed():
    w, u = tlrs.tensor(WV, requires_grad=True), tlrs.ones(2, requires_grad=True)
    loss = ops.sum(w)
    with pytest.raises(tlrs.AutogradError, match="input 1 was not used"):
        tlrs.grad(loss, [w, u])
    gw, gu = tlrs.grad(loss, [w, u], allow_unused=True)
    assert gu is None and gw.tolist() == np.ones_like(WV).tolist()


def test_misuse_is_refused_with_a_reason():
    w = tlrs.tensor(WV, requires_grad=True)
    h = ops.tanh(w)
    with pytest.raises(tlrs.AutogradError, match="non-scalar output needs grad_outputs"):
        tlrs.grad(h, [w])
    with pytest.raises(tlrs.AutogradError, match="grad_outputs 0 must match output 0"):
        tlrs.grad(h, [w], grad_outputs=[tlrs.ones(3)])
    with pytest.raises(tlrs.AutogradError, match="input 0 does not require grad"):
        tlrs.grad(ops.sum(h), [tlrs.ones(2)])
    with pytest.raises(tlrs.AutogradError, match="output 0 does not require grad"):
        tlrs.grad(tlrs.ones(1).sum(), [w])
    with pytest.raises(ValueError, match="2 outputs but 1 grad_outputs"):
        tlrs.grad([ops.sum(h), ops.sum(w)], [w], grad_outputs=[None])
    with pytest.raises(TypeError, match="inputs\\[0\\] must be a Tensor"):
        tlrs.grad(ops.sum(h), [np.ones(2)])


def test_gradient_accumulates_through_a_reused_interior_tensor():
    w = tlrs.tensor(np.array([0.3, -0.7]), requires_grad=True)
    h = ops.sigmoid(w)
    loss = ops.sum(h * h) + ops.sum(h)   # d/dh = 2h + 1
    (gh,) = tlrs.grad(loss, [h])
    hv = 1 / (1 + np.exp(-np.array([0.3, -0.7])))
    np.testing.assert_allclose(gh.numpy(), 2 * hv + 1, rtol=0, atol=1e-15)


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
def test_gradients_live_on_the_input_device():
    w = tlrs.tensor(WV, requires_grad=True).to("cuda")
    u = tlrs.ones(2, device="cuda", requires_grad=True)
    (g, none) = tlrs.grad(ops.sum(w * w), [w, u], allow_unused=True)
    assert g.device.startswith("cuda") and none is None
    (z,) = tlrs._core.grad([ops.sum(w * w)], [w], [None])
    assert z.device.startswith("cuda")
