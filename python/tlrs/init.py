"""Runtime parameter initialisation (the reference's `RuntimeInit`): `FloatInit`, `Plan` and the
fan-based helpers. Values are computed in Rust with the reference's exact formulas.

A `Plan` is built against a definition's parameter shapes: the count and each initialiser's fit
are checked, with the reference's messages ("initializer list longer than parameter list", ...).
"""

from __future__ import annotations

from typing import Any

from . import _core
from ._args import natural
from ._core import (
    FloatInit,
    Plan,
    Tensor,
    fan_in_out,
    kaiming_linear_weight,
    kaiming_uniform_for_shape,
    xavier_linear_weight,
    xavier_uniform_for_shape,
)


def layer_init(scheme: str, shape: Any, seed: int = 0, lo: float = 0.0, hi: float = 1.0,
               fan_in: int = 0, fan_out: int = 0, dtype: str = "float64") -> Tensor:
    """A layer initialiser's values (`Torch.Init`, the 32-bit LCG) for `shape`: `scheme` is
    "zeros", "ones", "uniform" (lo, hi), "xavier_uniform" (fan_in, fan_out) or
    "kaiming_uniform" (fan_in).

    Raises: ValueError: an unknown scheme, or integers (dims, seed, fans) out of range;
    MemoryError: a shape too large to allocate.
    """
    for name, v, bound in [*((f"shape[{i}]", d, 2**63) for i, d in enumerate(shape)),
                           ("seed", seed, 2**64), ("fan_in", fan_in, 2**63), ("fan_out", fan_out, 2**63)]:
        natural(f"layer_init: {name}", v, bound)
    return _core.layer_init(scheme, list(shape), seed, lo, hi, fan_in, fan_out, dtype)


__all__ = [
    "FloatInit",
    "Plan",
    "fan_in_out",
    "kaiming_linear_weight",
    "kaiming_uniform_for_shape",
    "layer_init",
    "xavier_linear_weight",
    "xavier_uniform_for_shape",
]
