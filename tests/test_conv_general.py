"""Convolutions of any geometry (tlrs/conv_general.py): a stride, padding and dilation per axis,
'same' padding with even spans, groups — against PyTorch (values and the gradients of input,
weight and bias), bit for bit with the native convolution where both serve a geometry, and the
compiled backend giving eager's bits."""

import numpy as np
import pytest
import torch

import tlrs
from tlrs import ops
from tlrs.config import Backend, Options
from tlrs.conv_general import Geometry, conv2d_general

TOL = {"float64": {"rtol": 1e-12, "atol": 1e-12}, "float32": {"rtol": 2e-5, "atol": 2e-5}}
GEOMETRIES = [  # x shape, weight shape, conv2d keyword arguments
    ((2, 4, 9, 8), (6, 2, 3, 2), {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 3), "groups": 2}),
    ((3, 7, 6), (2, 3, 4, 4), {"padding": "same", "dilation": 2}),
    ((1, 2, 5, 5), (3, 2, 2, 2), {"padding": "same"}),
    ((2, 3, 7, 7), (4, 3, 3, 3), {"stride": (1, 2)}),
    ((2, 4, 6, 6), (4, 1, 3, 3), {"dilation": 2, "padding": 2, "groups": 4}),
    ((1, 1, 4, 11), (2, 1, 1, 5), {"stride": (3, 2), "padding": (0, 3), "dilation": (1, 2)}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("xs,ws,kw", GEOMETRIES)
def test_any_geometry_matches_torch_values_and_gradients(xs, ws, kw, dtype):
    rng = np.random.default_rng(len(xs) + ws[0])
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (xs, ws, ws[:1]))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    want = torch.nn.functional.conv2d(tx, tw, tb, **kw)
    lx, lw, lb = (tlrs.tensor(a, requires_grad=True) for a in (x, w, b))
    got = ops.conv2d(lx, lw, lb, **kw)
    assert list(got.shape) == list(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL[dtype])
    cot = rng.standard_normal(want.shape).astype(dtype)
    want.backward(torch.from_numpy(cot))
    grads = tlrs.grad(ops.sum(ops.mul(got, tlrs.tensor(cot))), [lx, lw, lb])
    for g, t, name in zip(grads, (tx, tw, tb), "xwb", strict=True):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), err_msg=name, **TOL[dtype])


@pytest.mark.parametrize("stride,pad,groups", [(1, 0, 1), (2, 1, 1), (1, 2, 3), (3, 1, 3)])
def test_the_general_path_gives_the_native_convolutions_bits(stride, pad, groups):
    rng = np.random.default_rng(stride * 10 + pad)
    x = tlrs.tensor(rng.standard_normal((2, 6, 9, 8)).astype(np.float32))
    w = tlrs.tensor(rng.standard_normal((6, 6 // groups, 3, 3)).astype(np.float32))
    b = tlrs.tensor(rng.standard_normal(6).astype(np.float32))
    native = ops.conv2d(x, w, b, stride, pad, groups=groups).numpy()
    general = conv2d_general(x, w, b, Geometry((stride, stride), (1, 1), (pad, pad), (pad, pad)), groups).numpy()
    assert native.view(np.uint32).tolist() == general.view(np.uint32).tolist()


def test_conv1d_with_dilation_is_the_general_path():
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, 3, 12)), rng.standard_normal((4, 3, 3))
    got = ops.conv1d(tlrs.tensor(x), tlrs.tensor(w), None, 2, 2, 3).numpy()
    want = torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(w), None, 2, 2, 3).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_compiled_gives_eagers_bits():
    rng = np.random.default_rng(5)
    w0, b0 = rng.standard_normal((4, 2, 3, 2)), rng.standard_normal(4)

    def loss(ps, xs):
        y = ops.conv2d(xs[0], ps[0], ps[1], stride=(2, 1), padding=(2, 1), dilation=(1, 2), groups=2)
        return ops.mean(ops.mul(y, y))

    defn = tlrs.ModuleDef(param_shapes=[list(w0.shape), [4]], input_shapes=[[4, 7, 6]], loss=loss,
                          init_params=[tlrs.tensor(w0), tlrs.tensor(b0)])
    batch = [tlrs.tensor(rng.standard_normal((3, 4, 7, 6)))]
    runs = []
    for backend in ("eager", "compiled"):
        m = tlrs.instantiate_with_options(defn, "float64", Options(backend=Backend(backend)))
        opt = tlrs.optim.sgd(0.1)
        state = m.init_optim(opt)
        for _ in range(3):
            state = m.step_with(opt, state, batch)
        runs.append([m.forward(batch).item(), *(p.numpy().tobytes() for p in m.params())])
    assert runs[0] == runs[1]
