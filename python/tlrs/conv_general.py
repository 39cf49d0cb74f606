"""Convolutions of any geometry: a stride, a padding and a dilation per axis, padding unequal on
the two sides of an axis ('same' with an even kernel), groups.

The native convolution (`_core.conv2d`) takes one stride and one symmetric padding for both axes
and no dilation; every other geometry comes here. The patches are gathered with `index_select`
from the input's plane with one zero cell appended (a padding cell reads it), in (input channel,
kernel row, kernel column) order, and each group is one product with its weights: every output
folds over (channel, row, column) from 0, padding cells taking part as zeros, then the bias is
added — the native reference kernels' order, so where both serve a geometry they agree bit for
bit (tested). Gradients come from the ops used (the gather's scatter-add, the product's), with no
atomics. The patch tensor holds N·OH·OW·C·KH·KW values: the price of the general case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _core
from ._core import Tensor

__all__ = ["Geometry", "conv2d_general"]


@dataclass(frozen=True)
class Geometry:
    """Per axis (rows, columns): stride, dilation, and the padding before and after."""

    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad_before: tuple[int, int]
    pad_after: tuple[int, int]

    def out_size(self, size: int, kernel: int, axis: int) -> int:
        """Output positions along `axis` (PyTorch's formula; below 1 is an error for the caller)."""
        span = self.dilation[axis] * (kernel - 1) + 1
        return (size + self.pad_before[axis] + self.pad_after[axis] - span) // self.stride[axis] + 1


def _patch_index(h: int, w: int, kh: int, kw: int, oh: int, ow: int, g: Geometry) -> list[int]:
    """For each (oh, ow, kh, kw), in that order, the input cell r·W + c it reads, or H·W (the
    appended zero cell) where it falls in the padding."""
    rows = (np.arange(oh)[:, None] * g.stride[0] + np.arange(kh)[None, :] * g.dilation[0] - g.pad_before[0])
    cols = (np.arange(ow)[:, None] * g.stride[1] + np.arange(kw)[None, :] * g.dilation[1] - g.pad_before[1])
    r = rows[:, None, :, None]  # [OH, 1, KH, 1]
    c = cols[None, :, None, :]  # [1, OW, 1, KW]
    inside = (r >= 0) & (r < h) & (c >= 0) & (c < w)
    idx = np.where(inside, r * w + c, h * w)
    return np.broadcast_to(idx, (oh, ow, kh, kw)).reshape(-1).tolist()


def conv2d_general(x: Tensor, weight: Tensor, bias: Tensor | None, geometry: Geometry, groups: int) -> Tensor:
    """Cross-correlation of x [N, C, H, W] with weight [OC, C / groups, KH, KW] (checked by the
    caller), any geometry; [N, OC, OH, OW]."""
    n, c, h, w = x.shape
    oc, cg, kh, kw = weight.shape
    oh, ow = geometry.out_size(h, kh, 0), geometry.out_size(w, kw, 1)
    if oh < 1 or ow < 1:
        raise _core.ShapeError(f"conv2d: the output would be {oh}x{ow} (input {h}x{w}, kernel {kh}x{kw}, "
                               f"dilation {geometry.dilation}, padding {geometry.pad_before}/{geometry.pad_after}): "
                               "expected at least 1x1")
    og, k, positions = oc // groups, cg * kh * kw, oh * ow
    zero_cell = _core.full([n, c, 1], 0.0, x.dtype, device=x.device)
    plane = _core.concat([_core.reshape(x, [n, c, h * w]), zero_cell], 2)
    patches = _core.index_select(plane, 2, _patch_index(h, w, kh, kw, oh, ow, geometry))
    # [N, C, OH·OW·KH·KW] -> [N, G, OH·OW, Cg·KH·KW]: one row of (channel, row, column) per output
    patches = _core.reshape(patches, [n, groups, cg, positions, kh * kw])
    patches = _core.reshape(_core.permute(patches, [0, 1, 3, 2, 4]), [n, groups, positions, k])
    weights = _core.transpose(_core.reshape(weight, [groups, og, k]), 1, 2)  # [G, Cg·KH·KW, OG]
    out = _core.matmul(patches, weights)  # [N, G, OH·OW, OG]
    out = _core.reshape(_core.permute(out, [0, 1, 3, 2]), [n, oc, oh, ow])
    if bias is not None:
        out = _core.add(out, _core.reshape(bias, [oc, 1, 1]))
    return out
