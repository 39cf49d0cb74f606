"""Default initialisations of the layers, with torch.nn's distributions, drawn from tlrs's
seeded stream (`tlrs.manual_seed`): the same seed gives the same weights on any machine
(not torch's numbers). Values are drawn in float64 and rounded once to the layer's dtype."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._core import Tensor
from ..tensor import _dtype_name
from .parameter import Parameter


def dtype_of(dtype: Any) -> str:
    """A layer's dtype: tlrs's default float64 when None (torch's default is float32)."""
    return _dtype_name(dtype)


def _place(t: Tensor, dtype: str, device: str | None) -> Tensor:
    if t.dtype != dtype:
        t = t.to(dtype)
    if device is not None and device != "cpu":
        t = t.to(device)
    return t


def uniform(shape: Sequence[int], bound: float, dtype: str, device: str | None = None) -> Tensor:
    """A parameter drawn from U(-bound, bound)."""
    u = _core.rand(list(shape), "float64")
    return Parameter(_place(u * (2.0 * bound) - bound, dtype, device))


def normal(shape: Sequence[int], dtype: str, device: str | None = None) -> Tensor:
    """A parameter drawn from N(0, 1)."""
    return Parameter(_place(_core.randn(list(shape), "float64"), dtype, device))


def constant(shape: Sequence[int], value: float, dtype: str, device: str | None = None,
             parameter: bool = True) -> Tensor:
    """A tensor filled with `value`: a parameter, or a buffer with parameter=False."""
    t = _core.full(list(shape), float(value), dtype, device=device or "cpu")
    return Parameter(t) if parameter else t


def fan_in_bound(fan_in: int) -> float:
    """1/sqrt(fan_in): torch's bound for kaiming_uniform_(a=sqrt(5)) weights and their biases."""
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
