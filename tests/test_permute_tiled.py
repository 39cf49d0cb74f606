"""permute against NumPy's transpose for every axis order of shapes with size-1 axes, merged
axes and sizes that do not divide the tile, both dtypes; and its gradient is the inverse permute."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tlrs
from tlrs import ops

SHAPES = [(3, 1, 37, 18), (2, 5, 1, 1), (40, 33), (1, 1, 1), (4, 3, 2, 17), (65, 1, 31)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_axis_order_matches_numpy(shape, dtype):
    x = np.arange(np.prod(shape), dtype=dtype).reshape(shape) * 1.5 - 7
    t = tlrs.tensor(x, dtype=dtype)
    for perm in itertools.permutations(range(len(shape))):
        got = ops.permute(t, list(perm)).numpy()
        np.testing.assert_array_equal(got, np.transpose(x, perm), err_msg=f"{shape} {perm}")


def test_a_large_transpose_and_its_gradient():
    x = np.random.default_rng(0).normal(size=(512, 784)).astype(np.float32)
    t = tlrs.tensor(x, dtype="float32", requires_grad=True)
    y = ops.permute(t, [1, 0])
    np.testing.assert_array_equal(y.numpy(), x.T)
    r = np.random.default_rng(1).normal(size=(784, 512)).astype(np.float32)
    (g,) = tlrs.grad(ops.sum(y * tlrs.tensor(r, dtype="float32")), [t])
    np.testing.assert_array_equal(g.numpy(), r.T)
