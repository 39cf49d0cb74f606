"""Pooling with PyTorch's options: kernel, stride and padding per axis, dilation, ceil_mode,
return_indices, count_include_pad and divisor_override.

PyTorch is the oracle: values, winner indices and gradients bit for bit (max pooling picks and
copies; average pooling folds each window in row-major order and divides once, as PyTorch's CPU
kernels do, so its bits are the same too). The same cases run on the CUDA path (marked `cuda`:
the emulator in scripts/test), compiled against eager, and through onnxruntime.
"""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import ops

torch = pytest.importorskip("torch")
F = torch.nn.functional

# (input shape, kwargs): each changes one option or a combination PyTorch's own tests use.
MAX_CASES = [
    ([2, 3, 7, 9], dict(kernel_size=(2, 3))),
    ([2, 3, 7, 9], dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))),
    ([1, 2, 8, 8], dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    ([1, 2, 9, 7], dict(kernel_size=(2, 3), dilation=(3, 1), padding=(1, 1))),
    ([2, 2, 7, 7], dict(kernel_size=2, stride=2, ceil_mode=True)),
    ([2, 2, 6, 8], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ([1, 3, 10, 10], dict(kernel_size=(3, 2), stride=(3, 2), dilation=(2, 2), ceil_mode=True)),
    ([3, 6, 6], dict(kernel_size=[2], stride=[1, 2])),
    ([1, 1, 5, 5], dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    ([2, 3, 7, 9], dict(kernel_size=3, stride=())),
]

AVG_CASES = [
    ([2, 3, 7, 9], dict(kernel_size=(2, 3))),
    ([2, 3, 7, 9], dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))),
    ([2, 2, 7, 7], dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ([2, 2, 6, 8], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ([2, 2, 6, 8], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ([1, 2, 5, 5], dict(kernel_size=2, stride=2, ceil_mode=True)),
    ([1, 2, 8, 8], dict(kernel_size=(3, 3), stride=2, padding=1, divisor_override=7)),
    ([1, 2, 4, 4], dict(kernel_size=2, divisor_override=-3)),
    ([3, 6, 6], dict(kernel_size=[2, 4], stride=[1, 2], padding=(1, 2))),
    ([1, 1, 5, 5], dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
]

CASES = [("max", s, k) for s, k in MAX_CASES] + [("avg", s, k) for s, k in AVG_CASES]
IDS = [f"{kind}-{i}" for i, (kind, _, _) in enumerate(CASES)]


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def torch_pool(kind, x, kw, return_indices=False):
    if kind == "max":
        return F.max_pool2d(x, **kw, return_indices=return_indices)
    return F.avg_pool2d(x, **kw)


def tlrs_pool(kind, x, kw, return_indices=False):
    if kind == "max":
        return ops.max_pool2d(x, **kw, return_indices=return_indices)
    return ops.avg_pool2d(x, **kw)


def case_arrays(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    # Few distinct values, so windows hold ties (the first maximum must win in both).
    x = rng.integers(-4, 5, size=shape).astype(dtype) * 0.375 + rng.uniform(-1, 1, size=shape).astype(dtype) * (
        rng.uniform(size=shape) < 0.5)
    return x


def run_tlrs(kind, x, kw, device="cpu"):
    t = tlrs.tensor(x, device=device, requires_grad=True)
    y = tlrs_pool(kind, t, kw)
    g = np.random.default_rng(3).uniform(-1, 1, size=y.shape).astype(x.dtype)
    (gx,) = tlrs.grad(ops.sum(y * tlrs.tensor(g, device=device)), [t])
    return y.numpy(), gx.numpy(), g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind,shape,kw", CASES, ids=IDS)
def test_values_and_gradients_equal_pytorch_bit_for_bit(kind, shape, kw, dtype):
    x = case_arrays(shape, dtype, seed=len(shape) + sum(shape))
    y, gx, g = run_tlrs(kind, x, kw)
    xt = torch.tensor(x, requires_grad=True)
    yt = torch_pool(kind, xt, kw)
    (gxt,) = torch.autograd.grad(yt, [xt], torch.tensor(g))
    assert y.shape == tuple(yt.shape)
    assert np.array_equal(bits(y), bits(yt.detach().numpy())), f"{kind} {kw}: values"
    assert np.array_equal(bits(gx), bits(gxt.numpy())), f"{kind} {kw}: gradient"


@pytest.mark.parametrize("shape,kw", MAX_CASES, ids=[f"max-{i}" for i in range(len(MAX_CASES))])
def test_return_indices_are_pytorchs(shape, kw):
    x = case_arrays(shape, "float64", seed=5)
    y, idx = tlrs_pool("max", tlrs.tensor(x), kw, return_indices=True)
    yt, it = torch_pool("max", torch.tensor(x), kw, return_indices=True)
    assert isinstance(idx, np.ndarray) and idx.dtype == np.int64
    assert idx.shape == tuple(it.shape)
    assert np.array_equal(idx, it.numpy())
    assert np.array_equal(y.numpy(), yt.numpy())


@pytest.mark.parametrize("kind,call,message", [
    ("max", dict(kernel_size=2, dilation=0), "dilation >= 1"),
    ("max", dict(kernel_size=(2, 0)), "kernel size >= 1"),
    ("max", dict(kernel_size=2, stride=(1, 0)), "stride >= 1"),
    ("max", dict(kernel_size=(2, 4), padding=(1, 3)), "at most half the kernel"),
    ("max", dict(kernel_size=(1, 2, 3)), "two ints"),
    ("max", dict(kernel_size=4, dilation=3), "larger than the padded input"),
    ("avg", dict(kernel_size=2, divisor_override=0), "divisor_override other than 0"),
])
def test_bad_options_raise_naming_them(kind, call, message):
    x = tlrs.tensor(np.zeros([1, 1, 6, 6]))
    with pytest.raises((ValueError, tlrs.ShapeError)) as err:
        tlrs_pool(kind, x, call)
    assert message in str(err.value)
    with pytest.raises(RuntimeError):  # PyTorch refuses the same calls
        torch_pool(kind, torch.zeros([1, 1, 6, 6]), call)


@pytest.mark.parametrize("kind,shape,kw", CASES, ids=IDS)
def test_compiled_equals_eager(kind, shape, kw):
    from tlrs.compiled import CompiledLoss

    def loss(p, x):
        return ops.sum(tlrs_pool(kind, x[0] * p[0], kw) * 0.5)

    x = case_arrays(shape, "float32", seed=11)
    w = np.full(shape[-1:], 1.25, dtype="float32")
    compiled = CompiledLoss(loss, [w.shape], [x.shape], "float32")
    graph = compiled.graph_for([x.shape])
    value, grads = graph.loss_and_grads([tlrs.tensor(w)], [True], [tlrs.tensor(x)], fast=False)
    pw = tlrs.tensor(w, requires_grad=True)
    want = loss([pw], [tlrs.tensor(x)])
    (gw,) = tlrs.grad(want, [pw])
    assert np.array_equal(bits(value.numpy()), bits(want.numpy()))
    assert np.array_equal(bits(grads[0].numpy()), bits(gw.numpy()))


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind,shape,kw", CASES, ids=IDS)
def test_cuda_gives_the_cpus_bits(kind, shape, kw, dtype):
    x = case_arrays(shape, dtype, seed=13)
    cpu = run_tlrs(kind, x, kw, "cpu")
    dev = run_tlrs(kind, x, kw, "cuda")
    assert np.array_equal(bits(cpu[0]), bits(dev[0])), f"{kind} {kw}: values"
    assert np.array_equal(bits(cpu[1]), bits(dev[1])), f"{kind} {kw}: gradient"


@pytest.mark.parametrize("kind,shape,kw", [c for c in CASES if "divisor_override" not in c[2] and len(c[1]) == 4],
                         ids=[i for i, c in zip(IDS, CASES) if "divisor_override" not in c[2] and len(c[1]) == 4])
def test_onnx_export_matches_onnxruntime(kind, shape, kw, tmp_path):
    pytest.importorskip("onnxruntime")
    from test_onnx import assert_parity, forward_module

    per = int(np.prod(shape[1:]))

    def predict(p, x):
        im = ops.reshape(x * p[0], [x.shape[0], *shape[1:]])
        y = tlrs_pool(kind, im, kw)
        return ops.reshape(y, [x.shape[0], int(np.prod(y.shape[1:]))])

    module = forward_module(predict, [[per]], "float32", input_shape=(per,))
    assert_parity(module, predict, [per], "float32", tmp_path / "m.onnx")


def test_onnx_refuses_divisor_override(tmp_path):
    from test_onnx import forward_module

    def predict(p, x):
        y = ops.avg_pool2d(ops.reshape(x * p[0], [x.shape[0], 1, 4, 4]), 2, divisor_override=3)
        return ops.reshape(y, [x.shape[0], 4])

    module = forward_module(predict, [[16]], "float32", input_shape=(16,))
    with pytest.raises(tlrs.interop.onnx_export.OnnxExportError, match="divisor_override"):
        module.export_onnx(str(tmp_path / "m.onnx"), np.ones([2, 16], dtype="float32"))
