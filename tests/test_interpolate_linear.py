"""interpolate's linear modes ('linear', 'bilinear', 'trilinear'; python/tlrs/spatial_ops.py, a
composite of recorded ops) against PyTorch: values and gradients, align_corners both ways, sizes
and scale factors, antialiasing; the compiled backend gives eager's bits; refusals name the op."""

import numpy as np
import pytest
import torch

import tlrs
from tlrs import Options, ops

CASES = [
    ("linear", (2, 3, 7), dict(size=11)),
    ("linear", (2, 3, 7), dict(scale_factor=0.6, align_corners=True)),
    ("bilinear", (2, 3, 5, 7), dict(size=(9, 4))),
    ("bilinear", (1, 2, 4, 4), dict(scale_factor=(1.7, 2.5))),
    ("bilinear", (1, 2, 4, 6), dict(size=(8, 11), align_corners=True)),
    ("trilinear", (1, 2, 3, 4, 5), dict(scale_factor=2.0)),
    # antialias: the triangle filter widened by the downscaling factor (and plain taps upward)
    ("bilinear", (2, 3, 10, 12), dict(size=(4, 5), antialias=True)),
    ("bilinear", (1, 2, 7, 9), dict(scale_factor=0.4, antialias=True)),
    ("bilinear", (1, 2, 5, 6), dict(size=(9, 13), antialias=True)),
    ("bilinear", (1, 1, 8, 8), dict(size=(3, 3), align_corners=True, antialias=True)),
    ("bilinear", (1, 1, 9, 7), dict(scale_factor=(0.3, 1.7), antialias=True)),
]


@pytest.mark.parametrize("mode,shape,kw", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_modes_match_torch_with_gradients(mode, shape, kw, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    t = tlrs.tensor(x, requires_grad=True)
    tt = torch.tensor(x, requires_grad=True)
    y = ops.interpolate(t, mode=mode, **kw)
    ty = torch.nn.functional.interpolate(tt, mode=mode, **kw)
    tol = 2e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    cot = rng.standard_normal(ty.shape).astype(dtype)
    (g,) = tlrs.grad(ops.sum(y * tlrs.tensor(cot)), [t])
    (ty * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(g.numpy(), tt.grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_bilinear_compiles_to_eagers_bits():
    rng = np.random.default_rng(1)
    defn = tlrs.ModuleDef([[1, 2, 1, 1]], [[2, 2, 4, 5]], lambda ps, xs: ops.sum(
        ops.interpolate(xs[0] * ps[0], scale_factor=2.0, mode="bilinear") ** 2), init_params=[rng.standard_normal((1, 2, 1, 1))])
    xs = [rng.standard_normal((2, 2, 4, 5))]
    eager = tlrs.instantiate_with_options(defn, "float64", Options())
    compiled = tlrs.instantiate_with_options(defn, "float64", Options(backend="compiled"))
    assert compiled.forward(xs).numpy().tobytes() == eager.forward(xs).numpy().tobytes()
    assert [g.numpy().tobytes() for g in compiled.backward(xs)] == [g.numpy().tobytes() for g in eager.backward(xs)]


def test_refusals_name_the_op():
    x = tlrs.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="interpolate: antialias is only for the bilinear and bicubic modes"):
        ops.interpolate(tlrs.zeros(1, 1, 4), scale_factor=0.5, mode="linear", antialias=True)
    with pytest.raises(tlrs.ShapeError, match="interpolate: mode 'linear' takes a 3-D input"):
        ops.interpolate(x, size=3, mode="linear")
    with pytest.raises(NotImplementedError, match="interpolate: mode 'bicubic'"):
        ops.interpolate(x, size=3, mode="bicubic")
