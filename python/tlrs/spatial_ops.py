"""Layer ops composed from recorded ops (so they have gradients, CUDA, the compiled backend and
ONNX), with `torch.nn.functional` names and arguments: `conv1d`, `pad`, `interpolate`,
`adaptive_avg_pool2d`, `group_norm`, `scaled_dot_product_attention`.

Values follow PyTorch's formulas, not its bits: `conv1d` is `conv2d` over a height-1 image,
`group_norm` is `layer_norm` over each group, attention is softmax(q·kᵀ·scale + mask)·v.
`pad`, `interpolate` ('nearest', 'nearest-exact') only move values: exactly PyTorch's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._core import Tensor
from .layer_ops import conv2d, dropout

__all__ = [
    "adaptive_avg_pool2d", "conv1d", "group_norm", "interpolate", "pad", "scaled_dot_product_attention",
]


def _tensor(x: Any, what: str, name: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: expected {name} to be a Tensor, got {type(x).__name__}")
    return x


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what}: expected an int, got {v!r}")
    return int(v)


def _single(v: Any, what: str) -> int:
    """One size for the one axis: an int in [0, 2**63) or a sequence of one."""
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError(f"{what}: expected an int or a sequence of one int, got {v!r}")
        v = v[0]
    n = _int(v, what)
    if not 0 <= n < 2**63:
        raise ValueError(f"{what}: expected an integer in [0, 2**63), got {n}")
    return n


def _addressable(shape: list[int], what: str) -> None:
    """Refuses an output too large for any memory (before its index lists are built)."""
    if int(np.prod(shape, dtype=object)) >= 2**48:
        raise _core.ShapeError(f"{what}: an output of shape {shape} has too many elements")


# ---- conv1d ----------------------------------------------------------------------------------

def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] | str = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """Cross-correlation of [N, C, L] (or [C, L]) with weight [OC, C / groups, K]: `conv2d`
    over a height-1 image, after padding L with zeros ('same' pads (K - 1) // 2 on the left and
    the rest on the right, as PyTorch; with dilation d the span is d·(K - 1))."""
    x, w = _tensor(input, "conv1d"), _tensor(weight, "conv1d", "weight")
    if x.ndim not in (2, 3) or w.ndim != 3:
        raise _core.ShapeError(f"conv1d: expected input [N, C, L] or [C, L] and weight [OC, C/groups, K], "
                               f"got {x.shape} and {w.shape}")
    d = _single(dilation, "conv1d: dilation")
    if d < 1:
        raise ValueError(f"conv1d: dilation must be positive, got {dilation!r}")
    s = _single(stride, "conv1d: stride")
    if s < 1:
        raise ValueError(f"conv1d: stride must be positive, got {stride!r}")
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"conv1d: padding must be a size, 'valid' or 'same', got {padding!r}")
        if padding == "same" and s != 1:
            raise ValueError(f"conv1d: padding='same' needs stride 1 (as in PyTorch), got {s}")
        total = d * (w.shape[2] - 1) if padding == "same" else 0
        left, right = total // 2, total - total // 2
    else:
        left = right = _single(padding, "conv1d: padding")
    g, c, oc = _single(groups, "conv1d: groups"), x.shape[-2], w.shape[0]
    if g < 1 or c % g or oc % g or w.shape[1] * g != c:
        raise _core.ShapeError(f"conv1d: expected groups dividing the {c} input and {oc} output channels and a "
                               f"weight of {c} / groups input channels, got groups={g} and weight {w.shape}")
    if left or right:
        x = pad(x, (left, right))
    x4 = _core.reshape(x, [*x.shape[:-1], 1, x.shape[-1]])
    w4 = _core.reshape(w, [w.shape[0], w.shape[1], 1, w.shape[2]])
    y = conv2d(x4, w4, bias, s, 0, (1, d), g)
    return _core.reshape(y, [*y.shape[:-2], y.shape[-1]])


# ---- pad -------------------------------------------------------------------------------------

def _source(n: int, left: int, right: int, mode: str) -> list[int]:
    """For each output position of one axis, the input position it copies (`left`/`right`
    added, negative ones crop), PyTorch's rule per mode."""
    out = range(-left, n + right)
    if mode == "replicate":
        return [min(max(i, 0), n - 1) for i in out]
    if mode == "reflect":
        return [-i if i < 0 else (2 * (n - 1) - i if i >= n else i) for i in out]
    # circular: crop first, then wrap around the cropped axis
    lo, hi = max(0, -left), n - max(0, -right)
    return [lo + (j - max(left, 0)) % (hi - lo) for j in range(n + left + right)]


def _check_wrap(n: int, left: int, right: int, mode: str) -> None:
    if n == 0 and (left > 0 or right > 0):
        raise ValueError(f"pad: {mode} padding needs a non-empty axis, got one of size 0")
    if mode == "reflect" and (left >= n or right >= n):
        raise ValueError(f"pad: reflect padding ({left}, {right}) must be smaller than the axis size {n}")
    if mode == "circular":
        kept = n - max(0, -left) - max(0, -right)
        if left > kept or right > kept:
            raise ValueError(f"pad: circular padding ({left}, {right}) must be at most the axis size {kept} "
                             "(it would wrap around more than once)")


def _constant_axis(x: Tensor, axis: int, left: int, right: int, value: float) -> Tensor:
    if left < 0 or right < 0:  # negative padding crops
        x = _core.slice(x, axis, max(0, -left), x.shape[axis] - max(0, -right))
    if left <= 0 and right <= 0:
        return x

    def block(size: int) -> list[Tensor]:
        shape = [*x.shape[:axis], size, *x.shape[axis + 1:]]
        return [_core.full(shape, value, x.dtype, device=x.device)] if size > 0 else []

    return _core.concat([*block(left), x, *block(right)], axis)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pads the last len(pad) // 2 axes, the last axis first: pad = (left, right, top, bottom,
    ...), as PyTorch; negative sizes crop. 'constant' fills with `value` (0 by default);
    'reflect' mirrors about the edge (not repeating it), 'replicate' repeats the edge,
    'circular' wraps around (the non-constant modes pad the last 1 to 3 axes of an input with
    one or two more axes, as in PyTorch)."""
    x = _tensor(input, "pad")
    if not isinstance(pad, (tuple, list)) or len(pad) % 2:
        raise ValueError(f"pad: expected a sequence of an even number of ints, got {pad!r}")
    sizes = [_int(p, "pad: pad") for p in pad]
    k = len(sizes) // 2
    if k > x.ndim:
        raise ValueError(f"pad: {len(sizes)} padding sizes are too many for a tensor of {x.ndim} dimensions")
    if not isinstance(mode, str):
        raise TypeError(f"pad: mode must be a string, got {type(mode).__name__}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if mode != "constant":
        if value:
            raise ValueError(f"pad: value is only for mode='constant', got value={value!r} with mode={mode!r}")
        if not 1 <= k <= 3 or x.ndim not in (k + 1, k + 2):
            raise ValueError(f"pad: {mode} padding takes 2, 4 or 6 sizes for an input of 1 or 2 more axes, "
                             f"got {len(sizes)} sizes for a {x.ndim}-D input")
    final = list(x.shape)
    for i in range(k):
        final[x.ndim - 1 - i] += sizes[2 * i] + sizes[2 * i + 1]
        if final[x.ndim - 1 - i] < 0:
            raise ValueError(f"pad: padding {tuple(sizes[2 * i:2 * i + 2])} leaves a negative size on axis "
                             f"{x.ndim - 1 - i} of {x.shape}")
    _addressable(final, "pad")
    for i in range(k):
        axis, (left, right) = x.ndim - 1 - i, sizes[2 * i:2 * i + 2]
        if mode == "constant":
            x = _constant_axis(x, axis, left, right, 0.0 if value is None else float(value))
        elif left or right:
            _check_wrap(x.shape[axis], left, right, mode)
            x = _core.index_select(x, axis, _source(x.shape[axis], left, right, mode))
    return x


# ---- interpolate -----------------------------------------------------------------------------

def _spatial_sizes(x: Tensor, size: Any, scale_factor: Any) -> tuple[list[int], list[float | None]]:
    """Output sizes and the scale factors PyTorch passes on (None: in / out is used)."""
    dims = x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: expected exactly one of size and scale_factor")
    if size is not None:
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * dims
        if len(sizes) != dims:
            raise ValueError(f"interpolate: expected {dims} output sizes for a {x.ndim}-D input, got {size!r}")
        out = [_int(s, "interpolate: size") for s in sizes]
        if any(s < 1 for s in out):
            raise ValueError(f"interpolate: output sizes must be positive, got {size!r}")
        return out, [None] * dims
    scales = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * dims
    if len(scales) != dims:
        raise ValueError(f"interpolate: expected {dims} scale factors for a {x.ndim}-D input, got {scale_factor!r}")
    if any(isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f < math.inf for f in scales):
        raise ValueError(f"interpolate: scale factors must be positive finite numbers, got {scale_factor!r}")
    out = [int(math.floor(float(n) * float(f))) for n, f in zip(x.shape[2:], scales)]
    if any(s < 1 for s in out):
        raise ValueError(f"interpolate: scale_factor {scale_factor!r} gives an empty output for input {x.shape}")
    return out, [float(f) for f in scales]


def _nearest_index(n_in: int, n_out: int, scale: float | None, exact: bool) -> list[int]:
    """PyTorch's nearest source index, in its float32 arithmetic: floor(dst · s) ('nearest') or
    floor((dst + 0.5) · s) ('nearest-exact'), s = 1 / scale_factor or n_in / n_out."""
    if not exact and n_out == n_in:
        return list(range(n_in))
    if not exact and n_out == 2 * n_in:
        return [j >> 1 for j in range(n_out)]
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out)
    dst = np.arange(n_out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    src = np.floor(dst * s).astype(np.int64)
    return np.minimum(src, n_in - 1).tolist()  # type: ignore[no-any-return]


def _linear_taps(n_in: int, n_out: int, scale: float | None, align_corners: bool,
                 dtype: str) -> tuple[list[int], list[int], np.ndarray, np.ndarray]:
    """PyTorch's linear interpolation taps along one axis (`compute_indices_weights_linear`, in
    its opmath precision: float32 for float32, float64 for float64): for each output cell the
    two source cells and their weights (1 - lambda, lambda)."""
    t: Any = np.float32 if dtype == "float32" else np.float64
    s: Any
    if align_corners:
        s = t(n_in - 1) / t(n_out - 1) if n_out > 1 else t(0)
        src = s * np.arange(n_out, dtype=t)
    else:
        s = t(1.0 / scale) if scale is not None and scale > 0 else t(n_in) / t(n_out)
        src = s * (np.arange(n_out, dtype=t) + t(0.5)) - t(0.5)
        src = np.where(src < 0, t(0), src).astype(t)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = np.clip(src - i0.astype(t), t(0), t(1)).astype(t)
    i1 = i0 + (i0 < n_in - 1)
    return i0.tolist(), i1.tolist(), (t(1) - lam).astype(t), lam


def _linear_axis(x: Tensor, axis: int, n_out: int, scale: float | None, align_corners: bool) -> Tensor:
    """`x` resized along `axis` by linear interpolation: w0 * x[i0] + w1 * x[i1]."""
    i0, i1, w0, w1 = _linear_taps(x.shape[axis], n_out, scale, align_corners, x.dtype)
    shape = [1] * x.ndim
    shape[axis] = n_out

    def weight(w: np.ndarray) -> Tensor:
        return _core.reshape(_core.tensor_from_numpy(np.ascontiguousarray(w)).to(x.device), shape)

    return weight(w0) * _core.index_select(x, axis, i0) + weight(w1) * _core.index_select(x, axis, i1)


def _antialias_taps(n_in: int, n_out: int, scale: float | None, align_corners: bool,
                    dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PyTorch's antialiased bilinear taps along one axis (`_compute_weights_aa` with the
    triangle filter, in the tensor's precision): for each output cell the first source cell, the
    number of cells and their normalised weights (rows padded with zero weights)."""
    t: Any = np.float32 if dtype == "float32" else np.float64
    if align_corners:
        s = t(n_in - 1) / t(n_out - 1) if n_out > 1 else t(0)
    else:
        s = t(1.0 / scale) if scale is not None and scale > 0 else t(n_in) / t(n_out)
    support = t(1.0) * s if s >= 1 else t(1.0)
    invscale = t(1.0) / s if s >= 1 else t(1.0)
    center = (s * (np.arange(n_out, dtype=t) + t(0.5))).astype(t)
    first = np.maximum((center - support + t(0.5)).astype(np.int64), 0)
    count = np.minimum((center + support + t(0.5)).astype(np.int64), n_in) - first
    taps = int(count.max())
    j = np.arange(taps)[None, :]
    u = np.abs(((j + first[:, None]).astype(t) - center[:, None] + t(0.5)) * invscale).astype(t)
    w = np.where((u < 1) & (j < count[:, None]), t(1) - u, t(0)).astype(t)
    total = np.zeros(n_out, dtype=t)
    for k in range(taps):  # PyTorch's running sum, in order
        total = (total + w[:, k]).astype(t)
    w = np.where(total[:, None] != 0, w / np.where(total == 0, t(1), total)[:, None], w).astype(t)
    return first, count, w


def _antialias_axis(x: Tensor, axis: int, n_out: int, scale: float | None, align_corners: bool) -> Tensor:
    """`x` resized along `axis` by antialiased bilinear interpolation: sum_j w_j · x[first + j],
    folded over j in order (a tap past a cell's count takes no part)."""
    first, count, w = _antialias_taps(x.shape[axis], n_out, scale, align_corners, x.dtype)
    shape = [1] * x.ndim
    shape[axis] = n_out
    out = None
    for j in range(w.shape[1]):
        src = np.minimum(first + j, x.shape[axis] - 1).tolist()
        weight = _core.reshape(_core.tensor_from_numpy(np.ascontiguousarray(w[:, j])).to(x.device), shape)
        term = weight * _core.index_select(x, axis, src)
        past = (j >= count).reshape(shape)
        if past.any():
            term = _core.masked_fill(term, past.reshape(-1).tolist(), shape, 0.0)
        out = term if out is None else _core.add(out, term)
    assert out is not None
    return out


_LINEAR_MODES = {"linear": 3, "bilinear": 4, "trilinear": 5}


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resizes [N, C, L], [N, C, H, W] or [N, C, D, H, W] to `size` or by `scale_factor`
    (output size floor(in · factor)), picking for each output cell the input cell of PyTorch's
    index rule (mode 'nearest' or 'nearest-exact'), or interpolating linearly between two
    ('linear' for 3-D, 'bilinear' for 4-D, 'trilinear' for 5-D inputs, one axis at a time, the
    last first, with PyTorch's source positions and weights in its precision: `h0 * (w0 * x00 +
    w1 * x01) + h1 * (...)`, within rounding of PyTorch's values, whose vectorised kernel rounds
    in another order); the gradient sums over the cells each input cell reaches.
    `antialias=True` (bilinear) uses PyTorch's triangle filter widened by the downscaling factor,
    each output a fold over its taps in order. 'bicubic' and 'area' are refused."""
    x = _tensor(input, "interpolate")
    if not isinstance(mode, str):
        raise TypeError(f"interpolate: mode must be a string, got {type(mode).__name__}")
    if mode in _LINEAR_MODES:
        return _interpolate_linear(x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    if mode not in ("nearest", "nearest-exact"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported yet (only 'nearest', "
                                  "'nearest-exact', 'linear', 'bilinear' and 'trilinear')")
    if align_corners is not None:
        raise ValueError(f"interpolate: align_corners is only for the linear and cubic modes, got {align_corners!r}")
    if antialias:
        raise ValueError("interpolate: antialias is only for the bilinear and bicubic modes")
    if x.ndim not in (3, 4, 5):
        raise _core.ShapeError(f"interpolate: expected a 3-D, 4-D or 5-D input [N, C, ...], got {x.shape}")
    sizes, scales = _spatial_sizes(x, size, scale_factor)
    _addressable([*x.shape[:2], *sizes], "interpolate")
    if recompute_scale_factor:
        scales = [None] * len(scales)
    for i, (n_out, scale) in enumerate(zip(sizes, scales)):
        axis = i + 2
        idx = _nearest_index(x.shape[axis], n_out, scale, mode == "nearest-exact")
        if idx != list(range(x.shape[axis])):
            x = _core.index_select(x, axis, idx)
    return x


def _interpolate_linear(x: Tensor, size: Any, scale_factor: Any, mode: str, align_corners: bool | None,
                        recompute_scale_factor: bool | None, antialias: bool) -> Tensor:
    if x.ndim != _LINEAR_MODES[mode]:
        raise _core.ShapeError(f"interpolate: mode {mode!r} takes a {_LINEAR_MODES[mode]}-D input, got {x.shape}")
    if antialias and mode != "bilinear":
        raise ValueError(f"interpolate: antialias is only for the bilinear and bicubic modes, got mode {mode!r}")
    sizes, scales = _spatial_sizes(x, size, scale_factor)
    _addressable([*x.shape[:2], *sizes], "interpolate")
    if recompute_scale_factor or align_corners:
        scales = [None] * len(scales)
    resize = _antialias_axis if antialias else _linear_axis
    for axis in reversed(range(2, x.ndim)):
        x = resize(x, axis, sizes[axis - 2], scales[axis - 2], bool(align_corners))
    return x


# ---- adaptive_avg_pool2d ---------------------------------------------------------------------

def _adaptive_axis(x: Tensor, axis: int, n_out: int) -> Tensor:
    """Means over PyTorch's windows [floor(i·n/out), ceil((i+1)·n/out)) along one axis."""
    n = x.shape[axis]
    if n == n_out:
        return x
    if n % n_out == 0:  # equal windows: one reshape and mean
        split = _core.reshape(x, [*x.shape[:axis], n_out, n // n_out, *x.shape[axis + 1:]])
        return _core.mean(split, axis + 1, False)
    start = np.arange(n_out, dtype=np.int64) * n // n_out
    end = -(-(np.arange(1, n_out + 1, dtype=np.int64) * n) // n_out)
    longest = int((end - start).max())
    if n_out <= longest:  # few windows: a slice and a mean each
        cells = [_core.mean(_core.slice(x, axis, int(a), int(b)), axis, True) for a, b in zip(start, end)]
        return _core.concat(cells, axis)
    # Many short windows: add the j-th cell of every window at once (0 past a window's end,
    # filled, so an infinity elsewhere does not leak in), then divide by the lengths.
    ones = [1] * x.ndim
    ones[axis] = n_out
    total = None
    for j in range(longest):
        term = _core.index_select(x, axis, np.minimum(start + j, end - 1).tolist())
        past = (start + j >= end).reshape(ones)
        if past.any():
            term = _core.masked_fill(term, past.reshape(-1).tolist(), ones, 0.0)
        total = term if total is None else _core.add(total, term)
    assert total is not None
    lengths = _core.tensor_from_numpy((end - start).astype(x.dtype).reshape(ones), copy=True)
    return _core.div(total, lengths if x.device == "cpu" else lengths.to(x.device))


def adaptive_avg_pool2d(input: Tensor, output_size: int | None | Sequence[int | None]) -> Tensor:
    """Mean over each of PyTorch's adaptive windows of [N, C, H, W] or [C, H, W]: output cell i
    of an axis of n covers [floor(i·n/out), ceil((i+1)·n/out)). A None size keeps the input's.
    The mean of a window is taken one axis after the other (a mean of row means)."""
    x = _tensor(input, "adaptive_avg_pool2d")
    if x.ndim not in (3, 4) or any(s == 0 for s in x.shape[-2:]):
        raise _core.ShapeError(f"adaptive_avg_pool2d: expected a non-empty [N, C, H, W] or [C, H, W], got {x.shape}")
    sizes = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * 2
    if len(sizes) != 2:
        raise ValueError(f"adaptive_avg_pool2d: expected an int or a pair of output sizes, got {output_size!r}")
    out = [x.shape[x.ndim - 2 + i] if s is None else _int(s, "adaptive_avg_pool2d: output_size")
           for i, s in enumerate(sizes)]
    if any(s < 1 for s in out):
        raise ValueError(f"adaptive_avg_pool2d: output sizes must be positive, got {output_size!r}")
    _addressable([*x.shape[:-2], *out], "adaptive_avg_pool2d")
    for i, n_out in enumerate(out):
        x = _adaptive_axis(x, x.ndim - 2 + i, n_out)
    return x


# ---- group_norm ------------------------------------------------------------------------------

def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalises [N, C, *] over each group of C / num_groups channels (with all their
    positions; biased variance), then γ·x + β per channel: `layer_norm` over each group."""
    x = _tensor(input, "group_norm")
    g = _int(num_groups, "group_norm: num_groups")
    if x.ndim < 2:
        raise _core.ShapeError(f"group_norm: expected an input [N, C, *], got {x.shape}")
    c = x.shape[1]
    if g < 1 or c % g:
        raise ValueError(f"group_norm: expected num_groups dividing the {c} channels, got {g}")
    y = x
    if x.numel():  # each group's channels and positions as one row of a layer norm
        rows = _core.reshape(x, [x.shape[0], g, -1])
        y = _core.reshape(_core.layer_norm(rows, [rows.shape[2]], None, None, float(eps)), x.shape)
    per_channel = [1, c] + [1] * (x.ndim - 2)
    for name, t, op in (("weight", weight, _core.mul), ("bias", bias, _core.add)):
        if t is not None:
            if not isinstance(t, Tensor) or t.shape != [c]:
                got = t.shape if isinstance(t, Tensor) else type(t).__name__
                raise _core.ShapeError(f"group_norm: expected a {name} of shape [{c}], got {got}")
            y = op(y, _core.reshape(t, per_channel))
    return y


# ---- scaled_dot_product_attention ------------------------------------------------------------

def _bool_mask(mask: np.ndarray, scores: list[int]) -> np.ndarray:
    try:
        return np.broadcast_to(mask, scores)
    except ValueError:
        raise _core.ShapeError(f"scaled_dot_product_attention: attn_mask {list(mask.shape)} does not broadcast "
                               f"to the scores' shape {scores}") from None


def _safe_softmax(x: Tensor) -> Tensor:
    """softmax along the last axis, with rows of -inf giving zeros (PyTorch's attention does so):
    exp(x - m) / max(sum, 1), m the row's maximum made finite. A row with a finite maximum sums
    to at least exp(0) = 1, so the max(·, 1) changes nothing there."""
    big = float(np.finfo(x.dtype).max)
    m = _core.clamp(_core.max(x, -1, True), -big, big)
    e = _core.exp(_core.sub(x, m))
    return _core.div(e, _core.maximum(_core.sum(e, -1, True), _core.full([], 1.0, x.dtype)))


def _kv_heads(t: Tensor, heads: int, what: str) -> Tensor:
    """Key or value heads repeated to the query's (enable_gqa: head h reads kv head h // r)."""
    if t.ndim < 3 or t.shape[-3] == heads:
        return t
    kv = t.shape[-3]
    if kv == 0 or heads % kv:
        raise _core.ShapeError(f"scaled_dot_product_attention: {heads} query heads are not a multiple of the "
                               f"{kv} {what} heads")
    return _core.index_select(t, t.ndim - 3, [h // (heads // kv) for h in range(heads)])


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False, *, dropout_key: int | None = None) -> Tensor:
    """softmax(q·kᵀ·scale + mask)·v over query [..., L, E], key [..., S, E], value [..., S, Ev]
    (PyTorch's math; scale defaults to 1/sqrt(E)). `attn_mask` is a boolean NumPy array (True =
    takes part) or a float Tensor added to the scores, broadcast to [..., L, S]; `is_causal`
    lets query i see keys 0..i. A query that sees no key gets zeros (as in PyTorch). `dropout_p` > 0
    drops attention weights with `ops.dropout`: keyed by `dropout_key` (an int) when given, else
    by the global seed stream as `ops.dropout` and `nn.Dropout` (`tlrs.manual_seed`; inside a
    training step, the step's key), so a seeded run repeats its masks. `enable_gqa` repeats
    key/value heads to the query's."""
    what = "scaled_dot_product_attention"
    q, k, v = _tensor(query, what, "query"), _tensor(key, what, "key"), _tensor(value, what, "value")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise _core.ShapeError(f"{what}: expected query [..., L, E], key [..., S, E] and value [..., S, Ev], "
                               f"got {q.shape}, {k.shape} and {v.shape}")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{what}: dropout_p must be in [0, 1], got {dropout_p}")
    if dropout_key is not None and (isinstance(dropout_key, bool) or not isinstance(dropout_key, (int, np.integer))
                                    or not 0 <= dropout_key < 2**64):
        raise ValueError(f"{what}: dropout_key must be an integer in [0, 2**64), got {dropout_key!r}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{what}: pass either attn_mask or is_causal=True, not both (as PyTorch)")
    if enable_gqa:
        k, v = _kv_heads(k, q.shape[-3], "key"), _kv_heads(v, q.shape[-3], "value")
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    products = _core.matmul(q, _core.transpose(k, -2, -1))
    if attn_mask is None:
        # Scale, causal mask and softmax in one op (every query keeps a key: query i sees key 0).
        attn = _core.attention_softmax(products, s, is_causal)
        if dropout_p > 0:
            attn = dropout(attn, dropout_p, True, dropout_key)
        return _core.matmul(attn, v)
    scores = _core.mul(products, _core.full([], s, q.dtype))
    # The safe softmax, zeros for a row with no key, only where a row may have none.
    safe = False
    if isinstance(attn_mask, Tensor):
        scores = _core.add(scores, attn_mask)
        safe = True
    elif attn_mask is not None:
        m = np.asarray(attn_mask)
        if m.dtype != np.bool_:
            raise TypeError(f"{what}: expected attn_mask to be a boolean NumPy array or a float Tensor, "
                            f"got an array of dtype {m.dtype}")
        hidden = _bool_mask(~m, scores.shape)
        scores = _core.masked_fill(scores, hidden.reshape(-1).tolist(), list(hidden.shape), -math.inf)
        safe = hidden.shape[-1] == 0 or bool(hidden.all(axis=-1).any())
    attn = _safe_softmax(scores) if safe else _core.softmax(scores, -1)
    if dropout_p > 0:
        attn = dropout(attn, dropout_p, True, dropout_key)
    return _core.matmul(attn, v)
