"""Runtime parameter initialisation (the reference's `RuntimeInit`): `FloatInit`, `Plan` and the
fan-based helpers. Values are computed in Rust with the reference's exact formulas.

A `Plan` is built against a definition's parameter shapes: the count and each initialiser's fit
are checked, with the reference's messages ("initializer list longer than parameter list", ...).
"""

from __future__ import annotations

from ._core import (
    FloatInit,
    Plan,
    fan_in_out,
    kaiming_linear_weight,
    kaiming_uniform_for_shape,
    layer_init,
    xavier_linear_weight,
    xavier_uniform_for_shape,
)

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
