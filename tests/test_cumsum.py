"""cumsum: the first primitive added on the op record (docs/ARCHITECTURE.md). Its forward folds
in index order in the input's dtype, so it equals NumPy's cumsum bit for bit; its gradient is the
running sum from the far end, PyTorch's rule, equal to PyTorch's bits in float64."""

import numpy as np
import pytest

import tlrs
from tlrs import ops


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cumsum_equals_numpy_bit_for_bit(dtype, dim):
    x = np.random.default_rng(0).standard_normal((3, 5, 7)).astype(dtype) * 1e3
    got = ops.cumsum(tlrs.tensor(x), dim).numpy()
    assert got.dtype == x.dtype
    assert got.tobytes() == np.cumsum(x, axis=dim).tobytes()


def test_cumsum_keeps_signed_zeros_and_nan():
    x = np.array([-0.0, -0.0, np.nan, 1.0])
    got = ops.cumsum(tlrs.tensor(x), 0).numpy()
    assert got.tobytes() == np.cumsum(x).tobytes()
    assert np.signbit(got[0]) and np.signbit(got[1])


def test_cumsum_gradient_equals_torch_in_float64():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    for dim in (0, 1):
        t = tlrs.tensor(x, requires_grad=True)
        (g,) = tlrs.grad(ops.sum(ops.cumsum(t, dim) * tlrs.tensor(w)), [t])
        tt = torch.tensor(x, requires_grad=True)
        (torch.cumsum(tt, dim) * torch.tensor(w)).sum().backward()
        assert g.numpy().tobytes() == tt.grad.numpy().tobytes()


def test_cumsum_of_zero_d_and_empty_tensors():
    assert ops.cumsum(tlrs.tensor(2.5), 0).item() == 2.5
    assert ops.cumsum(tlrs.tensor(2.5), -1).item() == 2.5
    assert ops.cumsum(tlrs.tensor(np.zeros((0, 3))), 0).shape == [0, 3]
    assert ops.cumsum(tlrs.tensor(np.zeros((2, 0))), 1).shape == [2, 0]


def test_cumsum_refuses_a_bad_dim():
    with pytest.raises(Exception, match="cumsum"):
        ops.cumsum(tlrs.tensor(np.zeros((2, 3))), 2)
    with pytest.raises(Exception, match="cumsum"):
        ops.cumsum(tlrs.tensor(2.5), 1)
