"""`ConvTranspose2d`: torch.nn's arguments, attribute names and default initialisation.

The weight is [in_channels, out_channels / groups, kH, kW] (torch's layout for transposed
convolutions), so torch's fan_in is out_channels / groups · kH · kW: weight and bias are drawn
from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform_ with a = sqrt(5), as torch). The
convolution itself is `ops.conv_transpose2d`; `forward(input, output_size=...)` picks the
output padding that gives `output_size`, as torch does. Only padding_mode='zeros' (torch's only
mode for transposed convolutions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from ._init import dtype_of, fan_in_bound, uniform
from .conv import check_groups
from .module import Module

__all__ = ["ConvTranspose2d"]

Size = int | Sequence[int]


def _pair(v: Size, what: str) -> tuple[int, int]:
    vals: list[Any] = list(v) if isinstance(v, (tuple, list)) else [v, v]
    if len(vals) != 2 or any(isinstance(x, bool) or not isinstance(x, int) for x in vals):
        raise TypeError(f"ConvTranspose2d: {what} must be an int or a pair of ints, got {v!r}")
    return int(vals[0]), int(vals[1])


class ConvTranspose2d(Module):
    """The transposed 2-D convolution of [N, C_in, H, W] (or [C_in, H, W]) inputs: output
    [N, C_out, (H - 1)·stride - 2·padding + dilation·(kH - 1) + output_padding + 1, ...]."""

    weight: Tensor
    bias: Tensor | None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Size, stride: Size = 1,
                 padding: Size = 0, output_padding: Size = 0, groups: int = 1, bias: bool = True,
                 dilation: Size = 1, padding_mode: str = "zeros", device: str | None = None,
                 dtype: Any = None) -> None:
        super().__init__()
        check_groups(in_channels, out_channels, groups)
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels, self.groups = int(in_channels), int(out_channels), int(groups)
        self.kernel_size, self.stride = _pair(kernel_size, "kernel_size"), _pair(stride, "stride")
        self.padding, self.output_padding = _pair(padding, "padding"), _pair(output_padding, "output_padding")
        self.dilation, self.padding_mode, self.transposed = _pair(dilation, "dilation"), padding_mode, True
        dt = dtype_of(dtype)
        # torch's fan_in of a [C_in, C_out/g, kH, kW] weight: its axis 1 times the kernel area.
        bound = fan_in_bound(out_channels // groups * math.prod(self.kernel_size))
        self.weight = uniform([in_channels, out_channels // groups, *self.kernel_size], bound, dt, device)
        if bias:
            self.bias = uniform([out_channels], bound, dt, device)
        else:
            self.register_parameter("bias", None)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, int]:
        """The output padding giving `output_size` ([H, W], or with the leading axes), torch's
        `_output_padding`; the constructor's when output_size is None."""
        if output_size is None:
            return self.output_padding
        non_spatial = 2 if input.ndim == 4 else 1
        size = [int(s) for s in output_size]
        if len(size) == non_spatial + 2:
            size = size[non_spatial:]
        if len(size) != 2:
            raise ValueError(f"ConvTranspose2D: for {input.ndim}D input, output_size must have 2 or "
                             f"{non_spatial + 2} elements (got {len(output_size)})")
        pads = []
        for d in range(2):
            least = ((input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            most = least + self.stride[d] - 1
            if not least <= size[d] <= most:
                raise ValueError(f"requested an output size of {size}, but valid sizes range from "
                                 f"{least} to {most} (for an input of {input.shape[non_spatial:]})")
            pads.append(size[d] - least)
        return pads[0], pads[1]

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"ConvTranspose2d: expected a 3D (unbatched) or 4D (batched) input, got {input.ndim}D")
        return ops.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups, self.dilation)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0, 0):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")
