"""Layer ops, re-exported by `tlrs.ops`: convolution, pooling, normalisation, attention,
dropout and indexed ops, with `torch.nn.functional` names and argument order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np

from . import _core
from ._core import Tensor
from .conv_general import Geometry, conv2d_general
from .index_args import bool_array, int_array, is_int_tensor

__all__ = [
    "avg_pool2d", "batch_norm", "batch_norm_per_image", "conv2d", "dropout", "embedding",
    "gather", "global_avg_pool2d", "layer_norm", "masked_fill", "max_pool2d",
    "multi_head_attention", "scatter_add",
]


_int_array = int_array


def _axis_pair(v: int | Sequence[int], what: str, low: int) -> tuple[int, int]:
    """A size per axis (rows, columns): an int for both or a sequence of one or two ints, each
    at least `low`."""
    items: list[Any] = list(v) if isinstance(v, (tuple, list)) else [v]
    if len(items) not in (1, 2) or any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in items):
        raise ValueError(f"{what}: expected an int or a pair of ints, got {v!r}")
    pair = (int(items[0]), int(items[-1]))
    if min(pair) < low or max(pair) >= 2**31:
        raise ValueError(f"{what}={v!r} is out of range (expected an integer in [{low}, 2**31))")
    return pair


def _check_channels(input: Tensor, weight: Tensor, groups: int) -> None:
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"conv2d: groups must be a positive int, got {groups!r}")
    if input.ndim not in (3, 4) or weight.ndim != 4:
        raise _core.ShapeError(f"conv2d: expected input [N, C, H, W] or [C, H, W] and weight [OC, C/groups, KH, KW], "
                               f"got {input.shape} and {weight.shape}")
    c, oc = input.shape[input.ndim - 3], weight.shape[0]
    if c % groups or oc % groups or weight.shape[1] * groups != c:
        raise _core.ShapeError(f"conv2d: {groups} groups need channels ({c}) and output channels ({oc}) divisible "
                               f"by groups and a weight of {c // groups if c % groups == 0 else '?'} input channels, "
                               f"got weight {weight.shape}")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] | str = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """Cross-correlation of [N, C, H, W] (or [C, H, W]) with weight [OC, C / groups, KH, KW].

    Reference kernels fold each output over (input channel, kernel row, kernel column) from 0;
    padding cells take part as zeros, then the bias is added. `groups` splits the channels into
    that many independent convolutions (depthwise when groups = C), each folded as one. Stride,
    padding and dilation take an int or a pair (rows, columns); padding also 'valid' or 'same'
    (stride 1; an even span pads one more after than before, as PyTorch). One stride and
    padding for both axes without dilation run on the native convolution; any other geometry
    on `conv_general` (patches and a product, in the same fold order).
    """
    st = _axis_pair(stride, "conv2d: stride", 1)
    dil = _axis_pair(dilation, "conv2d: dilation", 1)
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"conv2d: padding must be a size, 'valid' or 'same', got {padding!r}")
        if padding == "same" and st != (1, 1):
            raise ValueError(f"conv2d: padding='same' needs stride 1 (as in PyTorch), got {stride!r}")
        if not isinstance(weight, Tensor) or weight.ndim != 4:
            raise _core.ShapeError("conv2d: expected weight [OC, C/groups, KH, KW]")
        span = [d * (k - 1) for d, k in zip(dil, weight.shape[2:], strict=True)] if padding == "same" else [0, 0]
        before = (span[0] // 2, span[1] // 2)
        after = (span[0] - before[0], span[1] - before[1])
    else:
        before = after = _axis_pair(padding, "conv2d: padding", 0)
    if dil == (1, 1) and st[0] == st[1] and before == after and before[0] == before[1]:
        if groups == 1:
            return _core.conv2d(input, weight, bias, st[0], before[0])
        return _grouped_conv2d(input, weight, bias, st[0], before[0], groups)
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"conv2d: expected Tensor input and weight, got {type(input).__name__} and "
                        f"{type(weight).__name__}")
    _check_channels(input, weight, groups)
    x = input if input.ndim == 4 else _core.reshape(input, [1, *input.shape])
    out = conv2d_general(x, weight, bias, Geometry(st, dil, before, after), groups)
    return out if input.ndim == 4 else _core.reshape(out, out.shape[1:])


def _grouped_conv2d(input: Tensor, weight: Tensor, bias: Tensor | None, stride: int, padding: int,
                    groups: int) -> Tensor:
    _check_channels(input, weight, groups)
    axis = input.ndim - 3
    cg, og = input.shape[axis] // groups, weight.shape[0] // groups
    outs = []
    for g in range(groups):
        x = _core.slice(input, axis, g * cg, (g + 1) * cg)
        w = _core.slice(weight, 0, g * og, (g + 1) * og)
        b = None if bias is None else _core.slice(bias, 0, g * og, (g + 1) * og)
        outs.append(_core.conv2d(x, w, b, stride, padding))
    return _core.concat(outs, axis)


Pair = int | Sequence[int]
"""A size per axis (rows, columns): an int for both, or one or two ints."""


@overload
def max_pool2d(input: Tensor, kernel_size: Pair, stride: Pair | None = None, padding: Pair = 0,
               dilation: Pair = 1, ceil_mode: bool = False, return_indices: Literal[False] = False) -> Tensor: ...
@overload
def max_pool2d(input: Tensor, kernel_size: Pair, stride: Pair | None = None, padding: Pair = 0,
               dilation: Pair = 1, ceil_mode: bool = False, *,
               return_indices: Literal[True]) -> tuple[Tensor, np.ndarray[Any, np.dtype[np.int64]]]: ...
def max_pool2d(input: Tensor, kernel_size: Pair, stride: Pair | None = None, padding: Pair = 0,
               dilation: Pair = 1, ceil_mode: bool = False, return_indices: bool = False
               ) -> Tensor | tuple[Tensor, np.ndarray[Any, np.dtype[np.int64]]]:
    """Max over each window (PyTorch `max_pool2d`; stride defaults to kernel_size): the first
    maximum in row-major tap order, as `ops.max` folds (IEEE 754-2019 maximum: NaN propagates,
    +0 beats -0; the gradient goes to that cell); padding cells never win. `dilation` spaces
    the taps; `ceil_mode` rounds output sizes up. With `return_indices`, also each winner's
    flat index into its H×W plane, as an int64 NumPy array of the output's shape."""
    out = _core.max_pool2d(input, kernel_size, stride, padding, dilation, bool(ceil_mode), bool(return_indices))
    if return_indices:
        y, idx = out
        return y, idx.reshape(y.shape)
    return out  # type: ignore[no-any-return]  # the binding returns a Tensor here


def avg_pool2d(input: Tensor, kernel_size: Pair, stride: Pair | None = None, padding: Pair = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over each window (PyTorch `avg_pool2d`): the sum in row-major order over the
    window's cells inside the padded input (`count_include_pad=True`), or inside the image, or
    `divisor_override`."""
    return _core.avg_pool2d(input, kernel_size, stride, padding, bool(ceil_mode), bool(count_include_pad),
                            divisor_override)


def global_avg_pool2d(input: Tensor) -> Tensor:
    """Mean over H and W: [N, C, H, W] -> [N, C], [C, H, W] -> [C]."""
    return _core.global_avg_pool2d(input)


def batch_norm_per_image(input: Tensor, weight: Tensor | None = None, bias: Tensor | None = None,
                         eps: float = 1e-6) -> Tensor:
    """The reference ResNet-18 batch norm: per image and channel, mean and biased variance over
    H×W; no running statistics."""
    return _core.batch_norm_per_image(input, weight, bias, eps)


def batch_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch norm over (N, H, W) per channel (PyTorch `batch_norm`; [N, C], [N, C, L] and
    [N, C, D, H, W] too).

    In training mode (or without running statistics) the batch statistics are used, and the
    running statistics, when given, are updated in place:
    running = (1 - momentum) * running + momentum * batch (unbiased batch variance).
    In evaluation mode the running statistics are used.
    """
    if isinstance(input, Tensor) and (input.ndim == 3 or input.ndim > 4):
        # [N, C, L] and [N, C, D, H, W]: the positions of each channel as one [L, 1] plane.
        shape = input.shape
        flat = _core.reshape(input, [shape[0], shape[1], -1, 1])
        out = batch_norm(flat, running_mean, running_var, weight, bias, training, momentum, eps)
        return _core.reshape(out, shape)
    if training or running_mean is None or running_var is None:
        out, mean, var = _core.batch_norm_train(input, weight, bias, eps)
        if training and running_mean is not None and running_var is not None:
            n = input.numel() // max(1, input.shape[1])
            unbiased = var * (n / max(1, n - 1))
            _core.assign_(running_mean, running_mean.detach() * (1 - momentum) + mean.detach() * momentum)
            _core.assign_(running_var, running_var.detach() * (1 - momentum) + unbiased.detach() * momentum)
        return out
    return _core.batch_norm_eval(input, running_mean, running_var, weight, bias, eps)


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalises over the trailing `normalized_shape` axes (biased variance), then γ·x + β."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _core.layer_norm(input, shape, weight, bias, eps)


def multi_head_attention(x: Tensor, wq: Tensor, wk: Tensor, wv: Tensor, wo: Tensor, num_heads: int,
                         mask: Any = None) -> Tensor:
    """Scaled dot-product attention over x [B, n, d_model] (or [n, d_model]).

    Wq, Wk, Wv: [d_model, heads·head_dim]; Wo: [heads·head_dim, d_model] (the reference order).
    `mask`: boolean [n, n], True where a key is hidden from a query.
    """
    m = None
    if mask is not None:
        arr = np.asarray(mask)
        if arr.dtype != np.bool_:
            raise TypeError(f"multi_head_attention: expected a boolean mask, got dtype {arr.dtype}")
        m = arr.reshape(-1).tolist()
    return _core.multi_head_attention(x, wq, wk, wv, wo, int(num_heads), m)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, key: int | None = None) -> Tensor:
    """Inverted dropout: keeps element i when 1 - p > u(key, i) (the reference's counter-based
    sampler) and scales kept values by 1 / (1 - p). `key` defaults to the global seed stream."""
    if not training or p == 0:
        return input
    if p == 1 and isinstance(input, Tensor):
        # Nothing kept: input · 0, as PyTorch (NaN and infinities give NaN; no gradient).
        return _core.mul(input, _core.full([], 0.0, input.dtype))
    return _core.dropout(input, float(p), key)


def embedding(input: Any, weight: Tensor) -> Tensor:
    """Rows of weight [num_embeddings, dim] for integer indices `input` (any shape; an int64
    tensor stays one, so a compiled step reads each batch's ids)."""
    if is_int_tensor(input):
        return _core.embedding_t(input, weight)
    idx = _int_array(input, "embedding")
    return _core.embedding(idx.reshape(-1).tolist(), list(idx.shape), weight)


def gather(input: Tensor, dim: int, index: Any) -> Tensor:
    """out[i][j] = input[index[i][j]][j] for dim=0, and so on (PyTorch `gather`; the index may
    be smaller than the input off `dim`; a 0-d input takes dim 0 or -1)."""
    idx = _int_array(index, "gather")
    if isinstance(input, Tensor) and input.ndim == 0 and idx.ndim <= 1 and idx.size == 1 and dim in (0, -1):
        # A 0-d input: one index, shaped as given (PyTorch takes [] or [1]).
        return _core.reshape(_core.gather(_core.reshape(input, [1]), 0, [int(idx.reshape(-1)[0])], [1]),
                             list(idx.shape))
    if isinstance(input, Tensor) and idx.size == 0 and idx.ndim != input.ndim:
        # No element to gather: PyTorch takes an empty index of any rank, giving its shape (an
        # empty slice of the input, so the gradient is input-shaped zeros).
        return _core.reshape(_core.slice(_core.reshape(input, [-1]), 0, 0, 0), list(idx.shape))
    return _core.gather(input, dim, idx.reshape(-1).tolist(), list(idx.shape))


def scatter_add(input: Tensor, dim: int, index: Any, src: Tensor) -> Tensor:
    """input with src added at `index` along `dim`, in index order (PyTorch `scatter_add`: the
    index may be smaller than src along any axis, and only src's leading block of the index's
    shape is added; a 0-d input takes dim 0 or -1)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add: src must be a Tensor, got {type(src).__name__}")
    idx = _int_array(index, "scatter_add")
    if isinstance(input, Tensor) and input.ndim == 0 and idx.ndim == 0 and src.ndim == 0 and dim in (0, -1):
        one = _core.scatter_add(_core.reshape(input, [1]), 0, [int(idx)], _core.reshape(src, [1]))
        return _core.reshape(one, [])
    if idx.ndim != src.ndim or any(i > s for i, s in zip(idx.shape, src.shape)):
        raise _core.ShapeError(f"scatter_add: expected an index no larger than src {src.shape} along each axis, "
                               f"got {list(idx.shape)}")
    for axis, size in enumerate(idx.shape):
        if size != src.shape[axis]:
            src = _core.slice(src, axis, 0, size)
    return _core.scatter_add(input, dim, idx.reshape(-1).tolist(), src)


def masked_fill(input: Tensor, mask: Any, value: float | Tensor) -> Tensor:
    """`value` where the boolean `mask` (broadcast to input) is True; no gradient flows to
    input there. `value` may be a 0-d tensor: its gradient is the sum of the output's gradient
    over the filled places (PyTorch's)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"masked_fill: expected a Tensor input, got {type(input).__name__}")
    arr = bool_array(mask, "masked_fill")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise _core.ShapeError(f"masked_fill: expected a 0-d value tensor, got shape {value.shape}")
    try:
        shape = list(np.broadcast_shapes(tuple(input.shape), arr.shape))
    except ValueError:
        raise _core.ShapeError(f"masked_fill: mask {list(arr.shape)} does not broadcast with input {input.shape}") from None
    if shape != list(input.shape):
        # A mask with more or longer axes widens the output, as in PyTorch: x·1 is x exactly.
        input = _core.mul(input, _core.full(shape, 1.0, input.dtype))
    y = _core.masked_fill(input, np.ascontiguousarray(arr, dtype=np.bool_).tobytes(), list(arr.shape), float(value))
    if isinstance(value, Tensor) and value.requires_grad:
        v = float(value)
        if not np.isfinite(v):
            raise ValueError(f"masked_fill: a value tensor that requires a gradient must be finite, got {v}")
        # y - mask·(v.detach() - v): the subtracted term is +0 exactly (so y keeps its bits, -0
        # included) and its gradient with respect to v is the mask.
        m = _core.tensor_from_numpy(np.array(arr, dtype=y.dtype), copy=True)
        if y.device != "cpu":
            m = m.to(y.device)
        y = _core.sub(y, _core.mul(m, _core.sub(value.detach(), value)))
    return y
