"""The gradient of a broadcast operand sums the broadcast axes (backend/cpu/reduce.rs
sum_to_shape, which walks merged runs of axes): each element a left fold from 0 over the source
in index order. Checked bit for bit against that fold written out in NumPy, one rounding per
addition in the dtype, for leading, trailing, inner and alternating broadcast axes."""

import numpy as np
import pytest

import tlrs
from tlrs import ops

CASES = [
    ((8, 16, 64), (64,)),           # bias of a batched linear: leading axes summed
    ((8, 16, 64), (16, 1)),         # summed on both sides of a kept axis
    ((5, 7), (5, 1)),               # trailing axis summed
    ((3, 4, 5, 6), (1, 4, 1, 6)),   # alternating
    ((3, 4, 5, 6), (4, 1, 1)),      # channel-like
    ((2, 1, 3), (1, 1, 3)),         # size-1 axes in the source
    ((6,), (1,)),                   # everything summed
    ((1, 1), (1,)),                 # a single element
]


def fold_oracle(r, to_shape, dtype):
    full = r.shape
    to_full = (1,) * (len(full) - len(to_shape)) + tuple(to_shape)
    out = np.zeros(to_full, dtype=dtype)
    for idx in np.ndindex(*full):
        t = tuple(0 if n == 1 else i for i, n in zip(idx, to_full, strict=True))
        out[t] = dtype(out[t] + r[idx])
    return out.reshape(to_shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("full, small", CASES)
def test_broadcast_gradient_is_the_index_order_fold(full, small, dtype):
    rng = np.random.default_rng(len(full) * 10 + len(small))
    # Mixed magnitudes, so a different order of additions would show in the low bits.
    r = (rng.normal(size=full) * 10.0 ** rng.integers(-3, 4, size=full)).astype(dtype)
    r.flat[0] = -0.0
    z = tlrs.tensor(np.zeros(full, dtype=dtype))
    b = tlrs.tensor(np.zeros(small, dtype=dtype), requires_grad=True)
    (gb,) = tlrs.grad(ops.sum(ops.mul(ops.add(z, b), tlrs.tensor(r))), [b])
    want = fold_oracle(r, small, dtype)
    got = gb.numpy()
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
