"""Shared helpers for the ready-made models: argument checks, the reference's LCG layer
initialisers, batch-axis handling and the two losses the reference helpers attach."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ops
from .._core import ShapeError, Tensor
from ..init import layer_init
from ..module import ModuleDef
from ..tensor import _dtype_name, tensor

Shape = list[int]
Predict = Callable[[Sequence[Tensor], Any], Tensor]


def dim(model: str, name: str, value: Any) -> int:
    """A positive integer size, else ValueError naming the model and argument."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{model}: {name} must be a positive integer, got {value!r}")
    return int(value)


def nat(model: str, name: str, value: Any) -> int:
    """A non-negative integer (seeds, paddings), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{model}: {name} must be a non-negative integer, got {value!r}")
    return int(value)


def dtype_name(dtype: Any) -> str:
    """'float32' or 'float64' (DTypeError otherwise)."""
    return _dtype_name(dtype)


def conv_out(model: str, what: str, size: int, k: int, stride: int, pad: int) -> int:
    """Output size ⌊(size + 2·pad − k)/stride⌋ + 1; ValueError when the kernel does not fit."""
    if size + 2 * pad < k:
        raise ValueError(f"{model}: {what}: kernel {k} is larger than the padded input "
                         f"{size} + 2·{pad} = {size + 2 * pad}")
    return (size + 2 * pad - k) // stride + 1


# The reference's layer initialisers (`Torch.Init.tensor`, the 32-bit LCG; see docs/numerics.md).

def xavier(shape: Shape, seed: int, fan_in: int, fan_out: int, dtype: str) -> Tensor:
    return layer_init("xavier_uniform", list(shape), seed=seed, fan_in=fan_in, fan_out=fan_out,
                      dtype=dtype)


def uniform(shape: Shape, seed: int, lo: float, hi: float, dtype: str) -> Tensor:
    return layer_init("uniform", list(shape), seed=seed, lo=lo, hi=hi, dtype=dtype)


def zeros(shape: Shape, dtype: str) -> Tensor:
    return layer_init("zeros", list(shape), dtype=dtype)


def ones(shape: Shape, dtype: str) -> Tensor:
    return layer_init("ones", list(shape), dtype=dtype)


def linear_params(out_dim: int, in_dim: int, seed_w: int, dtype: str) -> list[Tensor]:
    """The reference `linear(in, out, seedW, seedB)`: W Xavier(fanIn=in, fanOut=out), b zeros."""
    return [xavier([out_dim, in_dim], seed_w, in_dim, out_dim, dtype), zeros([out_dim], dtype)]


def as_input(x: Any, params: Sequence[Tensor]) -> Tensor:
    """A Tensor input; NumPy arrays and lists take the parameters' dtype."""
    if isinstance(x, Tensor):
        return x
    return tensor(x, dtype=params[0].dtype if params else "float64")


def batched(model: str, x: Tensor, shape: Sequence[int]) -> bool:
    """Whether `x` has one leading batch axis on top of `shape`; ShapeError if it fits neither."""
    got, want = list(x.shape), list(shape)
    if got == want:
        return False
    if len(got) == len(want) + 1 and got[1:] == want:
        return True
    raise ShapeError(f"{model}: expected an input of shape {want} or [B, {', '.join(map(str, want))}]"
                     f", got {got}")


def check_params(model: str, params: Sequence[Tensor], shapes: Sequence[Sequence[int]]) -> list[Tensor]:
    params = list(params)
    if len(params) != len(shapes):
        raise ValueError(f"{model}: expected {len(shapes)} parameters, got {len(params)}")
    return params


def module_def(model: str, names: Sequence[str], init: Sequence[Tensor], input_shape: Shape,
               target_shape: Shape, predict: Predict, loss_kind: str) -> ModuleDef:
    """A ModuleDef with `loss(params, [x, target])` = MSE (mean over all elements) or one-hot
    cross-entropy (mean over rows) of `predict(params, x)` against the target."""

    def loss(params: Sequence[Tensor], inputs: Sequence[Any]) -> Tensor:
        if len(inputs) != 2:
            raise ValueError(f"{model}: expected inputs [x, target], got {len(inputs)} tensors")
        out = predict(params, inputs[0])
        target = as_input(inputs[1], params)
        if list(target.shape) != list(out.shape):
            raise ShapeError(f"{model}: expected a target of shape {list(out.shape)} (the output's),"
                             f" got {list(target.shape)}")
        if loss_kind == "mse":
            return ops.mse_loss(out, target)
        return ops.cross_entropy(out, target)

    return ModuleDef(
        param_shapes=[list(t.shape) for t in init],
        input_shapes=[list(input_shape), list(target_shape)],
        loss=loss,
        init_params=list(init),
        param_names=list(names),
        predict=predict,
    )
