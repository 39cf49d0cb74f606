"""conv2d over random geometries (batch, channels, kernel 1/3/5/7, stride 1/2, padding, map
sizes), so every kernel choice the shapes can make (direct or lowered forward, gradients, row
runs, narrow rows, image groups) meets the oracles: reference kernels bit for bit against the
NumPy folds of test_conv_reference_folds, fast kernels within a stated tolerance of float64."""

import numpy as np
import pytest

import tlrs
from test_conv_reference_folds import bits, fold_forward, fold_input_grad, fold_weight_grad
from tlrs import ops


def geometry(rng):
    while True:
        n = int(rng.integers(1, 9))
        c = int(rng.choice([1, 3, 8, 16, 32]))
        oc = int(rng.choice([32, 64]))
        k = int(rng.choice([1, 3, 5, 7]))
        s = int(rng.choice([1, 2]))
        p = int(rng.integers(0, k // 2 + 2))
        h, w = int(rng.integers(1, 18)), int(rng.integers(1, 20))
        if h + 2 * p >= k and w + 2 * p >= k:
            return n, c, h, w, oc, k, s, p


@pytest.mark.parametrize("seed", range(48))
def test_random_geometry_against_the_folds(seed):
    rng = np.random.default_rng(1000 + seed)
    n, c, h, w, oc, k, s, p = geometry(rng)
    x = rng.normal(size=(n, c, h, w)).astype(np.float32)
    wt = rng.normal(size=(oc, c, k, k)).astype(np.float32)
    b = rng.normal(size=oc).astype(np.float32)
    want = fold_forward(x, wt, b, s, p)
    r = rng.normal(size=want.shape).astype(np.float32)
    ts = [tlrs.tensor(a, requires_grad=True) for a in (x, wt, b)]
    with tlrs.fast_kernels(False):
        y = ops.conv2d(*ts, stride=s, padding=p)
        gx, gw, _ = tlrs.grad(ops.sum(ops.mul(y, tlrs.tensor(r))), ts)
    for got, exp in [(y, want), (gx, fold_input_grad(r, wt, x.shape, s, p)),
                     (gw, fold_weight_grad(r, x, wt.shape, s, p))]:
        assert np.array_equal(bits(got.numpy()), bits(exp)), (n, c, h, w, oc, k, s, p)
    with tlrs.fast_kernels(True):
        fast = ops.conv2d(tlrs.tensor(x), tlrs.tensor(wt), tlrs.tensor(b), stride=s, padding=p)
    exact = fold_forward(*(a.astype(np.float64) for a in (x, wt, b)), s, p)
    # Each output sums C * K^2 products of standard normals and a bias: f32 rounding of that
    # many terms stays within this bound of the float64 result.
    tol = 1e-6 * np.sqrt(c * k * k) * max(1.0, np.abs(exact).max())
    np.testing.assert_allclose(fast.numpy().astype(np.float64), exact, rtol=0, atol=tol)
