"""`GroupNorm`, as torch.nn's: [N, C, *] normalised over each group of C / num_groups channels
with all their positions (biased variance), then a per-channel weight and bias (ones and zeros
at first) when `affine` (no bias with the keyword bias=False, as torch 2.x). The normalisation
is `ops.group_norm`."""

from __future__ import annotations

from typing import Any

from .. import ops
from .._core import Tensor
from ._init import constant, dtype_of
from .module import Module

__all__ = ["GroupNorm"]


class GroupNorm(Module):
    weight: Tensor | None
    bias: Tensor | None

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: str | None = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = int(num_groups), int(num_channels), eps, affine
        dt = dtype_of(dtype)
        if affine:
            self.weight = constant([num_channels], 1.0, dt, device)
            if bias:
                self.bias = constant([num_channels], 0.0, dt, device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected an input [N, {self.num_channels}, *], got {input.shape}")
        return ops.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
