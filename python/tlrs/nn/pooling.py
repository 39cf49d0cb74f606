"""`MaxPool2d`, `AvgPool2d` and `AdaptiveAvgPool2d` over `ops.max_pool2d` / `ops.avg_pool2d` /
`ops.adaptive_avg_pool2d` (torch.nn's arguments; stride defaults to kernel_size)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from .module import Module

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "MaxPool2d"]

Size = int | Sequence[int]


class MaxPool2d(Module):
    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0, dilation: Size = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:
        if self.return_indices:
            return ops.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                  self.ceil_mode, return_indices=True)
        return ops.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return ops.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Averages each input plane over `output_size` regions (an int, a pair, None keeps that axis)."""

    def __init__(self, output_size: int | None | Sequence[int | None]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return ops.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
