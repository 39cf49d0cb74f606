"""The op set, with `torch` / `torch.nn.functional` names, argument order and defaults.

Index arguments (class labels, `index_select`) accept integer NumPy arrays and Python int
sequences; an out-of-range index raises IndexError naming the bound.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._args import integer_arguments

# The elementwise op table's functions (rust/src/op_table/), as the native module defines
# them: neg, exp, ..., silu, leaky_relu(input, negative_slope=0.01), ..., maximum, minimum.
from ._core import *  # noqa: F403
from ._core import Tensor
from .index_args import int_array, is_int_tensor

__all__ = [
    "add", "clamp", "concat", "cumsum", "div", "div_trunc", "flatten", "floor_divide", "index_select", "linear",
    "log_softmax", "matmul", "max", "mean", "mul", "permute", "pow", "reshape",
    "slice", "softmax", "sub", "sum", "transpose",
]
__all__ += _core.__all__


def _indices(index: Any, what: str) -> list[int]:
    """Integer indices from an int64 Tensor, a NumPy integer array, a Python int sequence or an int."""
    if isinstance(index, Tensor):
        return int_array(index, what).reshape(-1).tolist()
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
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        # Integer or boolean values (tlrs tensors are float): converted to the operand's dtype.
        t = _core.tensor_from_numpy(np.array(x, dtype=like.dtype), copy=True)
        return t if like.device == "cpu" else t.to(like.device)
    raise TypeError(f"expected a Tensor, a number or a NumPy array, got {type(x).__name__}")


def _operands(a: Any, b: Any, what: str) -> tuple[Tensor, Tensor]:
    """Both operands as tensors: a number on either side (not both) becomes a 0-d tensor of the
    other's dtype (PyTorch's promotion of a Python scalar)."""
    if isinstance(a, Tensor):
        return a, _operand(b, a)
    if isinstance(b, Tensor) and isinstance(a, (int, float)):
        return _core.full([], float(a), b.dtype), b
    raise TypeError(f"{what}: expected a Tensor operand, got {type(a).__name__} and {type(b).__name__}")


def _scaled(other: Tensor, alpha: float) -> Tensor:
    return other if alpha == 1 else _core.mul(other, _core.full([], float(alpha), other.dtype))


def add(input: Tensor | float, other: Tensor | float, *, alpha: float = 1) -> Tensor:
    """input + alpha * other with NumPy broadcasting (either operand may be a number)."""
    a, b = _operands(input, other, "add")
    return _core.add(a, _scaled(b, alpha))


def sub(input: Tensor | float, other: Tensor | float, *, alpha: float = 1) -> Tensor:
    """input - alpha * other with NumPy broadcasting (either operand may be a number)."""
    a, b = _operands(input, other, "sub")
    return _core.sub(a, _scaled(b, alpha))


def mul(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * other with NumPy broadcasting (either operand may be a number)."""
    return _core.mul(*_operands(input, other, "mul"))


def div(input: Tensor | float, other: Tensor | float, *, rounding_mode: str | None = None) -> Tensor:
    """input / other with NumPy broadcasting (either operand may be a number); rounding_mode
    'trunc' rounds the quotient toward zero, 'floor' down (PyTorch's floor division, which
    also gives it sign rules at zero and infinities); no gradient flows through a rounded one."""
    a, b = _operands(input, other, "div")
    if rounding_mode is None:
        return _core.div(a, b)
    if rounding_mode == "trunc":
        return _core.div_trunc(a, b)
    if rounding_mode == "floor":
        return _core.floor_divide(a, b)
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def div_trunc(input: Tensor | float, other: Tensor | float) -> Tensor:
    """trunc(input / other) as one op: `div(input, other, rounding_mode='trunc')` (either operand
    may be a number); no gradient flows."""
    return _core.div_trunc(*_operands(input, other, "div_trunc"))


def floor_divide(input: Tensor | float, other: Tensor | float) -> Tensor:
    """PyTorch's floor division, input // other (either operand may be a number)."""
    return _core.floor_divide(*_operands(input, other, "floor_divide"))


def pow(input: Tensor | float, exponent: Tensor | float) -> Tensor:  # noqa: A001 - the torch name
    """input ** exponent (IEEE pow): a number or a tensor exponent (broadcast, with its
    gradient), or a number base with a tensor exponent."""
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        return _core.pow(input, float(exponent))
    a, b = _operands(input, exponent, "pow")
    return a ** b


def clamp(input: Tensor, min: Tensor | float | np.ndarray[Any, Any] | None = None,  # noqa: A002
          max: Tensor | float | np.ndarray[Any, Any] | None = None) -> Tensor:  # noqa: A002
    """Limits values to [min, max]; either bound may be None, a number or a tensor (broadcast;
    then maximum and minimum of the op table, so a NaN bound gives NaN)."""
    if (min is None or isinstance(min, (int, float))) and (max is None or isinstance(max, (int, float))):
        return _core.clamp(input, min, max)
    y = input
    if min is not None:
        y = _core.maximum(y, _operand(min, input))
    if max is not None:
        y = _core.minimum(y, _operand(max, input))
    return y


def _dims(input: Tensor, dim: int | Sequence[int] | None) -> list[int] | None:
    """Axes to reduce, each once, in decreasing order (so earlier removals keep the others'
    numbers); None for all (as is an empty sequence, as in PyTorch)."""
    if dim is None or isinstance(dim, int):
        return None if dim is None else [dim]
    dims = [int(d) for d in dim]
    if not dims:
        return None
    rank = input.ndim if input.ndim > 0 else 1
    norm = [d + rank if d < 0 else d for d in dims]
    if any(not 0 <= d < rank for d in norm):
        raise IndexError(f"dims {dims} out of range for a tensor of rank {input.ndim}")
    if len(set(norm)) != len(norm):
        raise ValueError(f"dim {dims} names an axis twice")
    return sorted(norm, reverse=True)


def _over_axes(reduce: Any, input: Tensor, dims: list[int] | None, keepdim: bool) -> Tensor:
    """`reduce` over all elements (None) or over each of `dims` in turn (from `_dims`)."""
    if dims is None:
        return reduce(input, None, keepdim)  # type: ignore[no-any-return]
    for d in dims:
        input = reduce(input, d, keepdim)
    return input


def sum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Sum over all elements or the axes `dim` (an int or a sequence): a left fold from 0 in
    index order, axis by axis from the last."""
    return _over_axes(_core.sum, input, _dims(input, dim), keepdim)


def mean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Mean over all elements or the axes `dim` (the left-fold sum divided by the count)."""
    dims = _dims(input, dim)
    if dims is None or len(dims) == 1:
        return _core.mean(input, None if dims is None else dims[0], keepdim)
    count = 1
    for d in dims:
        count *= input.shape[d]
    return _core.div(sum(input, dims, keepdim), _core.full([], float(count), input.dtype))


def max(input: Tensor, dim: int | Sequence[int] | Tensor | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Maximum over all elements or the axes `dim`: a left fold of IEEE 754-2019 maximum (NaN
    propagates, +0 beats -0); the gradient flows to the first element holding the result.
    `max(input, other)` with a tensor is `maximum` (as `torch.max`)."""
    if isinstance(dim, Tensor):
        return _core.maximum(input, dim)
    return _over_axes(_core.max, input, _dims(input, dim), keepdim)


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """The same elements in a new shape; one dimension may be -1."""
    return _core.reshape(input, list(shape))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merges axes start_dim..end_dim into one."""
    return _core.flatten(input, start_dim, end_dim)


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reorders axes: output axis i is input axis dims[i]."""
    return _core.permute(input, list(dims))


def _scalar_dim(input: Any, *dims: int) -> bool:
    """Whether `input` is 0-d and each dim names its one pseudo-axis (0 or -1), as PyTorch
    accepts."""
    return isinstance(input, Tensor) and input.ndim == 0 and all(d in (0, -1) for d in dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps two axes (a 0-d tensor's dims 0 and -1 leave it as it is)."""
    if _scalar_dim(input, dim0, dim1):
        return input
    return _core.transpose(input, dim0, dim1)


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Joins tensors along an existing axis (also `torch.cat`). As torch, a tensor of shape [0]
    beside tensors of another rank is skipped (its legacy rule for empty operands)."""
    if isinstance(tensors, Tensor):  # iterable by rows, but not what torch.cat takes
        raise TypeError("concat: expected a sequence of Tensors, got a Tensor")
    items = list(tensors)
    legacy_empty = [isinstance(t, Tensor) and t.shape == [0] for t in items]
    if any(legacy_empty) and not all(legacy_empty):
        items = [t for t, skip in zip(items, legacy_empty, strict=True) if not skip]
    return _core.concat(items, dim)


def slice(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,  # noqa: A001
          step: int = 1) -> Tensor:
    """Elements start, start + step, ... before end along `dim` (torch's `slice`): negative
    bounds count from the end, None is the axis's start or end; step 1 is a view, a larger step
    gathers the positions (`x[..., start:end:step]`)."""
    if step == 1 and start is not None and end is not None:
        return _core.slice(input, dim, start, end)
    if not isinstance(input, Tensor):
        raise TypeError(f"slice: expected a Tensor, got {type(input).__name__}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -builtins.max(input.ndim, 1) <= dim < builtins.max(input.ndim, 1):
        raise IndexError(f"slice: dim {dim!r} is out of range for a tensor of rank {input.ndim}")
    axis = dim % input.ndim
    out: Tensor = input[(builtins.slice(None),) * axis + (builtins.slice(start, end, step),)]
    return out


def index_select(input: Tensor, dim: int, index: Any) -> Tensor:
    """Entries `index` along `dim` (of a 0-d tensor: dim 0 or -1, one index, a 0-d result)."""
    if _scalar_dim(input, dim):
        return _core.reshape(_core.index_select(_core.reshape(input, [1]), 0, _indices(index, "index_select")), [])
    if is_int_tensor(index) and index.ndim == 1:
        return _core.index_select_t(input, dim, index)
    return _core.index_select(input, dim, _indices(index, "index_select"))


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product (2-D, batched, NumPy rules for 1-D operands)."""
    return _core.matmul(input, other)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, with weight of shape [out_features, in_features] (or
    [in_features]: one output, its axis dropped, as in PyTorch)."""
    if isinstance(weight, Tensor) and weight.ndim == 1:
        _require_tensor(input, "linear")
        if not input.shape or input.shape[-1] != weight.shape[0]:
            raise _core.ShapeError(f"linear: input {input.shape} does not end in the 1-D weight's {weight.shape[0]} features")
        y = _core.matmul(input, weight)
        return y if bias is None else _core.add(y, bias)
    return _core.linear(input, weight, bias)


def _require_tensor(x: Any, op: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor input, got {type(x).__name__}")


def _cast(input: Any, dtype: str | None, op: str) -> Any:
    """`input` converted to `dtype` first (torch's `dtype=` argument of reductions)."""
    if dtype is None:
        return input
    _require_tensor(input, op)
    return input.to(dtype)


def softmax(input: Tensor, dim: int = -1, dtype: str | None = None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `dim`; `dtype` casts the input first."""
    return _core.softmax(_cast(input, dtype, "softmax"), dim)


def log_softmax(input: Tensor, dim: int = -1, dtype: str | None = None) -> Tensor:
    """(x - max) - log(sum(exp(x - max))) along `dim`; `dtype` casts the input first."""
    return _core.log_softmax(_cast(input, dtype, "log_softmax"), dim)


def cumsum(input: Tensor, dim: int, *, dtype: str | None = None) -> Tensor:
    """Running sums along `dim`: y[k] = y[k-1] + x[k] in index order, in the input's dtype (NumPy's
    bits; PyTorch's CPU kernel carries float32 sums in float64). `dtype` casts the input first."""
    return _core.cumsum(_cast(input, dtype, "cumsum"), dim)


cat = concat

from .conv_transpose import *  # noqa: E402,F403 - conv_transpose2d
from .conv_transpose import __all__ as _conv_transpose_all  # noqa: E402
from .layer_ops import *  # noqa: E402,F403 - the layer ops are part of tlrs.ops
from .layer_ops import __all__ as _layer_all  # noqa: E402
from .loss_ops import *  # noqa: E402,F403 - and the losses
from .loss_ops import __all__ as _loss_all  # noqa: E402
from .reduce_ops import *  # noqa: E402,F403 - logsumexp, var, std, amin, min, prod
from .reduce_ops import __all__ as _reduce_all  # noqa: E402
from .selection_ops import *  # noqa: E402,F403 - argmax, topk, sort, multinomial, one_hot
from .selection_ops import __all__ as _selection_all  # noqa: E402
from .shape_ops import *  # noqa: E402,F403 - and torch's shape functions
from .shape_ops import __all__ as _shape_all  # noqa: E402
from .spatial_ops import *  # noqa: E402,F403 - conv1d, pad, interpolate, attention, ...
from .spatial_ops import __all__ as _spatial_all  # noqa: E402

__all__ += _layer_all + _conv_transpose_all + _loss_all + _shape_all + _reduce_all + _spatial_all + _selection_all + ["cat"]


def _comparison(name: str) -> Any:
    def compare(input: Tensor, other: Any) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected a Tensor input, got {type(input).__name__}")
        return getattr(input, f"__{name}__")(other)  # type: ignore[no-any-return]

    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = f"`input {name} other` elementwise (torch.{name}): a bool tensor; see Tensor.__{name}__."
    return compare


eq, ne, lt, le, gt, ge = (_comparison(n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
__all__ += ["eq", "ne", "lt", "le", "gt", "ge"]


# Only the ops with integer arguments: the elementwise ones stay one call deep (dispatch cost).
_INT_ARG_OPS = ("sum", "mean", "max", "cumsum", "reshape", "flatten", "permute", "transpose", "concat",
                "slice", "index_select", "softmax", "log_softmax", "cross_entropy", "conv2d",
                "max_pool2d", "avg_pool2d", "gather", "scatter_add", "embedding", "layer_norm",
                "multi_head_attention", "batch_norm", "batch_norm_per_image", "cat", "dropout",
                "unsqueeze", "squeeze", "stack", "split", "split_with_sizes", "chunk", "unbind", "narrow",
                "flip", "roll", "tril", "triu", "expand", "repeat", "movedim",
                "nll_loss", "logsumexp", "var", "std", "amin", "min", "prod", "conv1d", "pad", "interpolate",
                "adaptive_avg_pool2d", "group_norm", "scaled_dot_product_attention", "conv_transpose2d",
                "argmax", "argmin", "topk", "sort", "multinomial", "one_hot")
for _name in _INT_ARG_OPS:
    globals()[_name] = integer_arguments(globals()[_name])
