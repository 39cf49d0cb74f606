"""The op set, with `torch` / `torch.nn.functional` names, argument order and defaults.

Index arguments (class labels, `index_select`) accept integer NumPy arrays and Python int
sequences; an out-of-range index raises IndexError naming the bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._args import integer_arguments

# The elementwise op table's functions (rust/src/op_table/), as the native module defines
# them: neg, exp, ..., silu, leaky_relu(input, negative_slope=0.01), ..., maximum, minimum.
from ._core import *  # noqa: F403
from ._core import Tensor

__all__ = [
    "add", "clamp", "concat", "cross_entropy", "div", "flatten", "index_select", "linear",
    "log_softmax", "matmul", "max", "mean", "mse_loss", "mul", "permute", "pow", "reshape",
    "slice", "softmax", "sub", "sum", "transpose",
]
__all__ += _core.__all__


def _indices(index: Any, what: str) -> list[int]:
    """Integer indices from a NumPy integer array, a Python int sequence or an int."""
    if isinstance(index, Tensor):
        raise TypeError(f"{what}: expected integer indices (a NumPy int array or a list of ints), got a float Tensor")
    arr = np.asarray(index)
    if arr.dtype.kind not in "iu":
        if arr.size == 0:
            return []
        raise TypeError(f"{what}: expected integer indices, got an array of dtype {arr.dtype}")
    return arr.reshape(-1).astype(np.int64).tolist()


def _operand(x: Any, like: Tensor) -> Tensor:
    if not isinstance(like, Tensor):
        raise TypeError(f"expected a Tensor as the first operand, got {type(like).__name__}")
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (int, float)):
        return _core.full([], float(x), like.dtype)
    raise TypeError(f"expected a Tensor or a number, got {type(x).__name__}")


def add(input: Tensor, other: Tensor | float) -> Tensor:
    """input + other with NumPy broadcasting."""
    return _core.add(input, _operand(other, input))


def sub(input: Tensor, other: Tensor | float) -> Tensor:
    """input - other with NumPy broadcasting."""
    return _core.sub(input, _operand(other, input))


def mul(input: Tensor, other: Tensor | float) -> Tensor:
    """input * other with NumPy broadcasting."""
    return _core.mul(input, _operand(other, input))


def div(input: Tensor, other: Tensor | float) -> Tensor:
    """input / other with NumPy broadcasting."""
    return _core.div(input, _operand(other, input))


def pow(input: Tensor, exponent: float) -> Tensor:  # noqa: A001 - the torch name
    """input ** exponent for a scalar exponent."""
    return _core.pow(input, float(exponent))


def clamp(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002
    """Limits values to [min, max]; either bound may be None."""
    return _core.clamp(input, min, max)


def sum(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Sum over all elements or one axis: a left fold from 0 in index order."""
    return _core.sum(input, dim, keepdim)


def mean(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Mean over all elements or one axis (the left-fold sum divided by the count)."""
    return _core.mean(input, dim, keepdim)


def max(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Maximum over all elements or one axis: a left fold of IEEE 754-2019 maximum (NaN
    propagates, +0 beats -0); the gradient flows to the first element holding the result."""
    return _core.max(input, dim, keepdim)


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """The same elements in a new shape; one dimension may be -1."""
    return _core.reshape(input, list(shape))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merges axes start_dim..end_dim into one."""
    return _core.flatten(input, start_dim, end_dim)


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reorders axes: output axis i is input axis dims[i]."""
    return _core.permute(input, list(dims))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps two axes."""
    return _core.transpose(input, dim0, dim1)


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Joins tensors along an existing axis (also `torch.cat`)."""
    return _core.concat(list(tensors), dim)


def slice(input: Tensor, dim: int, start: int, end: int) -> Tensor:  # noqa: A001
    """Elements start..end (exclusive) along `dim`; negative bounds count from the end."""
    return _core.slice(input, dim, start, end)


def index_select(input: Tensor, dim: int, index: Any) -> Tensor:
    """Entries `index` along `dim`."""
    return _core.index_select(input, dim, _indices(index, "index_select"))


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product (2-D, batched, NumPy rules for 1-D operands)."""
    return _core.matmul(input, other)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, with weight of shape [out_features, in_features]."""
    return _core.linear(input, weight, bias)


def softmax(input: Tensor, dim: int = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `dim`."""
    return _core.softmax(input, dim)


def log_softmax(input: Tensor, dim: int = -1) -> Tensor:
    """(x - max) - log(sum(exp(x - max))) along `dim`."""
    return _core.log_softmax(input, dim)


def cross_entropy(input: Tensor, target: Any) -> Tensor:
    """Cross-entropy of logits [N, C] (or [C]) averaged over rows.

    `target` is class indices (ints) or a float Tensor of one-hot rows / probabilities of the
    input's shape. Raises IndexError for a class index out of range.
    """
    if isinstance(target, Tensor):
        return _core.cross_entropy_probs(input, target)
    return _core.cross_entropy_indices(input, _indices(target, "cross_entropy"))


def mse_loss(input: Tensor, target: Tensor) -> Tensor:
    """Mean of (input - target) ** 2 over all elements; shapes must be equal."""
    return _core.mse_loss(input, target)


cat = concat

from .layer_ops import *  # noqa: E402,F403 - the layer ops are part of tlrs.ops
from .layer_ops import __all__ as _layer_all  # noqa: E402

__all__ += _layer_all + ["cat"]


# Only the ops with integer arguments: the elementwise ones stay one call deep (dispatch cost).
_INT_ARG_OPS = ("sum", "mean", "max", "reshape", "flatten", "permute", "transpose", "concat",
                "slice", "index_select", "softmax", "log_softmax", "cross_entropy", "conv2d",
                "max_pool2d", "avg_pool2d", "gather", "scatter_add", "embedding", "layer_norm",
                "multi_head_attention", "batch_norm", "batch_norm_per_image", "cat", "dropout")
for _name in _INT_ARG_OPS:
    globals()[_name] = integer_arguments(globals()[_name])
