"""`Conv1d` and `Conv2d`: torch.nn's arguments and default
initialisation, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels/groups * kernel
area, for the weight and the bias.

The convolutions themselves are `ops.conv1d` and `ops.conv2d`: their limits apply; only
padding_mode='zeros'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from ._init import dtype_of, fan_in_bound, uniform
from .module import Module

__all__ = ["Conv1d", "Conv2d"]

Size = int | Sequence[int]

def check_groups(in_channels: int, out_channels: int, groups: int) -> None:
    """torch's checks of a convolution's `groups` against its channel counts."""
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups != 0:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups != 0:
        raise ValueError("out_channels must be divisible by groups")


def _tuple(v: Size, n: int) -> tuple[int, ...]:
    return tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),) * n  # type: ignore[arg-type]


class _ConvNd(Module):
    """The shared constructor: checks, hyper-parameters, weight [out, in/groups, *kernel], bias."""

    weight: Tensor
    bias: Tensor | None

    def __init__(self, n: int, in_channels: int, out_channels: int, kernel_size: Size, stride: Size,
                 padding: Size | str, dilation: Size, groups: int, bias: bool, padding_mode: str,
                 device: str | None, dtype: Any) -> None:
        super().__init__()
        check_groups(in_channels, out_channels, groups)
        if padding_mode != "zeros":
            raise ValueError(f"padding_mode={padding_mode!r} is not supported (only 'zeros')")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.padding_mode = _tuple(dilation, n), padding_mode
        dt = dtype_of(dtype)
        bound = fan_in_bound(in_channels // groups * math.prod(self.kernel_size))
        self.weight = uniform([out_channels, in_channels // groups, *self.kernel_size], bound, dt, device)
        if bias:
            self.bias = uniform([out_channels], bound, dt, device)
        else:
            self.register_parameter("bias", None)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        n = len(self.kernel_size)
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class Conv2d(_ConvNd):
    """2-D cross-correlation of [N, C, H, W] (or [C, H, W]) inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Size, stride: Size = 1,
                 padding: Size | str = 0, dilation: Size = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: str | None = None, dtype: Any = None) -> None:
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return ops.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D cross-correlation of [N, C, L] (or [C, L]) inputs (`ops.conv1d`)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Size, stride: Size = 1,
                 padding: Size | str = 0, dilation: Size = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: str | None = None, dtype: Any = None) -> None:
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        # ops.conv1d takes ints, as torch's functional form.
        pad = self.padding if isinstance(self.padding, str) else self.padding[0]
        return ops.conv1d(input, self.weight, self.bias, self.stride[0], pad, self.dilation[0], self.groups)
