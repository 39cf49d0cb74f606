"""conv_transpose2d (python/tlrs/conv_transpose.py, a composite of recorded ops) against PyTorch:
values and gradients of input, weight and bias over strides, paddings, output paddings, groups,
dilations and non-square kernels; the compiled backend gives eager's bits; errors name the op."""

import numpy as np
import pytest
import torch

import tlrs
from tlrs import Options, ops

CASES = [  # cin, cout, kernel, stride, padding, output_padding, groups, dilation, H, W
    (3, 4, 3, 1, 0, 0, 1, 1, 5, 6),
    (3, 4, 3, 2, 1, 1, 1, 1, 5, 6),
    (4, 6, (2, 3), (2, 1), (0, 1), (1, 0), 2, 1, 4, 5),
    (2, 2, 3, 2, 1, 1, 1, 2, 4, 4),
    (2, 3, 1, 3, 0, 2, 1, 1, 3, 2),
]


@pytest.mark.parametrize("case", CASES)
def test_conv_transpose2d_matches_torch_with_gradients(case):
    cin, cout, k, s, p, op, g, d, h, w = case
    ks = k if isinstance(k, tuple) else (k, k)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, cin, h, w)), rng.standard_normal((cin, cout // g, *ks)), rng.standard_normal(cout)]
    ts = [tlrs.tensor(a, requires_grad=True) for a in arrays]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = ops.conv_transpose2d(*ts, s, p, op, g, d)
    ty = torch.nn.functional.conv_transpose2d(*tt, s, p, op, g, d)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = rng.standard_normal(ty.shape)
    grads = tlrs.grad(ops.sum(y * tlrs.tensor(cot)), ts)
    (ty * torch.tensor(cot)).sum().backward()
    for a, b in zip(grads, tt):
        np.testing.assert_allclose(a.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_conv_transpose2d_compiles_to_eagers_bits():
    rng = np.random.default_rng(1)
    defn = tlrs.ModuleDef([[3, 2, 3, 3], [2]], [[2, 3, 4, 4]],
                          lambda ps, xs: ops.sum(ops.conv_transpose2d(xs[0], ps[0], ps[1], 2, 1, 1) ** 2),
                          init_params=[rng.standard_normal((3, 2, 3, 3)), rng.standard_normal(2)])
    xs = [rng.standard_normal((2, 3, 4, 4))]
    eager = tlrs.instantiate_with_options(defn, "float64", Options())
    compiled = tlrs.instantiate_with_options(defn, "float64", Options(backend="compiled"))
    assert compiled.forward(xs).numpy().tobytes() == eager.forward(xs).numpy().tobytes()
    assert [g.numpy().tobytes() for g in compiled.backward(xs)] == [g.numpy().tobytes() for g in eager.backward(xs)]


def test_conv_transpose2d_errors_name_the_op():
    x, w = tlrs.zeros(1, 2, 3, 3), tlrs.zeros(2, 2, 3, 3)
    with pytest.raises(ValueError, match="conv_transpose2d: output_padding"):
        ops.conv_transpose2d(x, w, None, 1, 0, 1)
    with pytest.raises(tlrs.ShapeError, match="conv_transpose2d"):
        ops.conv_transpose2d(x, tlrs.zeros(3, 2, 3, 3))
    with pytest.raises(TypeError, match="conv_transpose2d"):
        ops.conv_transpose2d([1.0], w)
