"""`Identity` and `Linear` (torch.nn.Linear's arguments and default initialisation)."""

from __future__ import annotations

from typing import Any

from .. import ops
from .._core import Tensor
from ._init import dtype_of, fan_in_bound, uniform
from .module import Module

__all__ = ["Identity", "Linear"]


class Identity(Module):
    """Returns its input; takes and ignores any arguments (as torch)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """y = x W^T + b with W [out_features, in_features].

    W and b are drawn from U(-1/sqrt(in_features), 1/sqrt(in_features)), torch's default
    (kaiming_uniform_ with a = sqrt(5), and the matching bias bound). `dtype` defaults to
    tlrs's float64."""

    weight: Tensor
    bias: Tensor | None

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: str | None = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        dt, bound = dtype_of(dtype), fan_in_bound(in_features)
        self.weight = uniform([out_features, in_features], bound, dt, device)
        if bias:
            self.bias = uniform([out_features], bound, dt, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return ops.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
