"""The reference ResNet-18: `resnet18_model`, `resnet18_program`, `resnet18_init_params`.

Conv layers carry a bias; batch norm is the stateless per-image variant (mean and biased
variance over H×W of each image, ε = 1e-6); 82 parameter tensors in the reference order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from ..errors import ShapeError
from ..module import ModuleDef
from . import _common as c

__all__ = ["resnet18_init_params", "resnet18_model", "resnet18_program", "resnet18_spec"]

Model = tuple[ModuleDef, Callable[[Sequence[Tensor], Any], Tensor]]
BN_EPS = 1e-6
HEAD_SEED = 80
# (kind, name, shape): kind is "conv" (uniform(-0.1, 0.1), seed = index), "zeros", "ones",
# or "head" (uniform(-0.1, 0.1), seed 80).
Spec = list[tuple[str, str, list[int]]]


def _check(in_c: int, h: int, w: int, num_classes: int, width: int) -> tuple[int, ...]:
    m = "resnet18"
    return tuple(c.dim(m, n, v) for n, v in (("in_c", in_c), ("h", h), ("w", w),
                                               ("num_classes", num_classes), ("width", width)))


def resnet18_spec(in_c: int, num_classes: int, width: int = 64) -> Spec:
    """The 82 parameters as (initialiser kind, name, shape), in the reference order."""
    spec: Spec = []

    def conv_bn(prefix: str, conv: str, bn: str, out_c: int, in_ch: int, k: int) -> None:
        spec.extend([("conv", f"{prefix}{conv}.weight", [out_c, in_ch, k, k]),
                     ("zeros", f"{prefix}{conv}.bias", [out_c]),
                     ("ones", f"{prefix}{bn}.weight", [out_c]),
                     ("zeros", f"{prefix}{bn}.bias", [out_c])])

    conv_bn("", "conv1", "bn1", width, in_c, 7)
    prev = width
    for stage in range(1, 5):
        ch = width << (stage - 1)
        for block in range(2):
            p = f"layer{stage}.{block}."
            conv_bn(p, "conv1", "bn1", ch, prev, 3)
            conv_bn(p, "conv2", "bn2", ch, ch, 3)
            if stage > 1 and block == 0:
                conv_bn(p, "downsample.0", "downsample.1", ch, prev, 1)
            prev = ch
    spec.extend([("head", "fc.weight", [num_classes, prev]), ("zeros", "fc.bias", [num_classes])])
    return spec


def resnet18_init_params(in_c: int, h: int, w: int, num_classes: int, *, width: int = 64,
                         dtype: Any = "float64") -> list[Tensor]:
    """The reference's deterministic initial parameters (82 tensors): conv kernels
    uniform(−0.1, 0.1) with LCG seed = the parameter's index, conv biases and BN β zeros, BN γ
    ones, head weight uniform(−0.1, 0.1) with seed 80 (not Xavier), head bias zeros.
    Raises: ValueError: a non-positive size."""
    in_c, h, w, num_classes, width = _check(in_c, h, w, num_classes, width)
    dtype = c.dtype_name(dtype)
    out = []
    for i, (kind, _, shape) in enumerate(resnet18_spec(in_c, num_classes, width)):
        if kind == "conv":
            out.append(c.uniform(shape, i, -0.1, 0.1, dtype))
        elif kind == "head":
            out.append(c.uniform(shape, HEAD_SEED, -0.1, 0.1, dtype))
        else:
            out.append(c.ones(shape, dtype) if kind == "ones" else c.zeros(shape, dtype))
    return out


def _forward(params: Sequence[Tensor], x: Tensor) -> Tensor:
    def conv_bn(i: int, t: Tensor, stride: int, pad: int) -> Tensor:
        y = ops.conv2d(t, params[i], params[i + 1], stride, pad)
        return ops.batch_norm_per_image(y, params[i + 2], params[i + 3], eps=BN_EPS)

    y = ops.max_pool2d(ops.relu(conv_bn(0, x, 2, 3)), 3, 2, 1)
    i = 4
    for stage in range(1, 5):
        for block in range(2):
            down = stage > 1 and block == 0
            r = conv_bn(i + 4, ops.relu(conv_bn(i, y, 2 if down else 1, 1)), 1, 1)
            skip = conv_bn(i + 8, y, 2, 0) if down else y
            y = ops.relu(ops.add(r, skip))
            i += 12 if down else 8
    return ops.linear(ops.global_avg_pool2d(y), params[80], params[81])


def resnet18_program(in_c: int, h: int, w: int, num_classes: int, *, width: int = 64,
                     dtype: Any = "float64") -> Callable[[Sequence[Tensor], Any], Tensor]:
    """`program(params, x)`: the logits [num_classes] of an image [in_c, h, w] (or [B,
    num_classes] for a batch [B, in_c, h, w]). `dtype` only sets the dtype of non-Tensor inputs
    when no parameter fixes it. Raises: ValueError: a non-positive size."""
    in_c, h, w, num_classes, width = _check(in_c, h, w, num_classes, width)
    shapes = [s for _, _, s in resnet18_spec(in_c, num_classes, width)]
    c.dtype_name(dtype)

    def program(params: Sequence[Tensor], x: Any) -> Tensor:
        params = c.check_params("resnet18", params, shapes)
        for i, (p, s) in enumerate(zip(params, shapes, strict=True)):
            if list(p.shape) != s:
                raise ShapeError(f"resnet18: parameter {i} has shape {list(p.shape)}, "
                                   f"expected {s}")
        x = c.as_input(x, params)
        c.batched("resnet18", x, [in_c, h, w])
        return _forward(params, x)

    return program


def resnet18_model(in_c: int, h: int, w: int, num_classes: int, *, width: int = 64,
                   dtype: Any = "float64") -> Model:
    """The reference ResNet-18 as `(defn, predict)`: input `[in_c, h, w]`, one-hot target
    `[num_classes]`, one-hot cross-entropy loss; `width` is the stem width (stages use width,
    2·width, 4·width, 8·width; the reference is 64).

    Stem conv 7×7 s2 p3 → BN → ReLU → max-pool 3×3 s2 p1; four stages of two basic blocks (the
    first block of stages 2–4 downsamples with conv3×3 s2 and a conv1×1 s2 projection); global
    average pool; linear head. Raises: ValueError: a non-positive size."""
    init = resnet18_init_params(in_c, h, w, num_classes, width=width, dtype=dtype)
    names = [n for _, n, _ in resnet18_spec(in_c, num_classes, width)]
    predict = resnet18_program(in_c, h, w, num_classes, width=width, dtype=dtype)
    defn = c.module_def("resnet18", names, init, [in_c, h, w], [num_classes], predict, "ce")
    return defn, predict
