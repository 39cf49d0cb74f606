"""`conv_transpose2d` (`torch.nn.functional`'s name and arguments), composed from recorded ops so
it has a gradient, CUDA, the compiled backend and ONNX: the input spread out by the stride (zeros
between its cells), padded by `dilation * (k - 1) - padding` on each side (cropped where that is
negative) plus `output_padding` after, then a stride-1 `conv2d` with the weight's spatial axes
flipped and its channel axes swapped (and spread by the dilation), per group. That is the definition of the transposed
convolution (the gradient of `conv2d` with respect to its input); the values follow PyTorch's
within rounding, not its bits (its kernels fold in another order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._core import Tensor
from .layer_ops import conv2d
from .spatial_ops import pad

__all__ = ["conv_transpose2d"]


def _pair(v: Any, what: str) -> tuple[int, int]:
    vals = list(v) if isinstance(v, (tuple, list)) else [v, v]
    if len(vals) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in vals):
        raise TypeError(f"conv_transpose2d: {what} must be an int or a pair of ints, got {v!r}")
    if any(not 0 <= int(x) < 2**31 for x in vals):
        raise ValueError(f"conv_transpose2d: {what} must be in [0, 2**31), got {v!r}")
    return int(vals[0]), int(vals[1])


def _spread(x: Tensor, sh: int, sw: int) -> Tensor:
    """[N, C, H, W] with `s - 1` zeros between neighbours along each axis."""
    n, c, h, w = x.shape
    if (sh, sw) == (1, 1) or h * w == 0:
        return _core.reshape(x, [n, c, (h - 1) * sh + 1 if h else 0, (w - 1) * sw + 1 if w else 0])
    cells = _core.reshape(x, [n, c, h, 1, w, 1])
    cells = pad(cells, [0, sw - 1, 0, 0, 0, sh - 1])
    flat = _core.reshape(cells, [n, c, h * sh, w * sw])
    return _core.slice(_core.slice(flat, 2, 0, (h - 1) * sh + 1), 3, 0, (w - 1) * sw + 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed 2-D convolution of `input` [N, C_in, H, W] (or [C_in, H, W]) by `weight`
    [C_in, C_out / groups, kH, kW]; output [N, C_out, (H - 1)·s - 2p + d·(k - 1) + op + 1, ...].

    Raises: TypeError/ValueError: arguments of the wrong kind or range, `output_padding` not
    smaller than the stride or the dilation; ShapeError: shapes that do not fit together.
    """
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"conv_transpose2d: expected {name} to be a Tensor, got {type(t).__name__}")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"conv_transpose2d: groups must be a positive integer, got {groups!r}")
    (sh, sw), (ph, pw) = _pair(stride, "stride"), _pair(padding, "padding")
    (oh, ow), (dh, dw) = _pair(output_padding, "output_padding"), _pair(dilation, "dilation")
    if sh == 0 or sw == 0 or dh == 0 or dw == 0:
        raise ValueError(f"conv_transpose2d: stride and dilation must be positive, got {stride!r}, {dilation!r}")
    if oh >= max(sh, dh) or ow >= max(sw, dw):
        raise ValueError(f"conv_transpose2d: output_padding must be smaller than stride or dilation, got "
                         f"{output_padding!r}")
    squeeze = input.ndim == 3
    x = _core.reshape(input, [1, *input.shape]) if squeeze else input
    if x.ndim != 4 or weight.ndim != 4 or weight.shape[0] != x.shape[1] or x.shape[1] % groups:
        raise _core.ShapeError(f"conv_transpose2d: expected input [N, C_in, H, W] and weight [C_in, C_out/groups, "
                               f"kH, kW] with C_in divisible by groups={groups}, got {input.shape} and {weight.shape}")
    # A dilated kernel is the kernel spread out by the dilation (zero taps add nothing).
    wide = _spread(weight, dh, dw)
    kh, kw = wide.shape[2], wide.shape[3]
    up = _spread(x, sh, sw)
    # pad's sizes run last axis first: (left, right) of W, then (top, bottom) of H.
    up = pad(up, [kw - 1 - pw, kw - 1 - pw + ow, kh - 1 - ph, kh - 1 - ph + oh])
    # The weight as a convolution's: spatial axes flipped, [C_in, C_out/g] -> [C_out/g, C_in] per group.
    flipped = _core.index_select(_core.index_select(wide, 2, list(range(kh - 1, -1, -1))), 3,
                                 list(range(kw - 1, -1, -1)))
    cin_g = x.shape[1] // groups
    parts = []
    for g in range(groups):
        xg = _core.slice(up, 1, g * cin_g, (g + 1) * cin_g) if groups > 1 else up
        wg = _core.slice(flipped, 0, g * cin_g, (g + 1) * cin_g) if groups > 1 else flipped
        parts.append(conv2d(xg, _core.transpose(wg, 0, 1)))
    y = parts[0] if groups == 1 else _core.concat(parts, 1)
    if bias is not None:
        y = y + _core.reshape(bias, [1, -1, 1, 1])
    return _core.reshape(y, y.shape[1:]) if squeeze else y
