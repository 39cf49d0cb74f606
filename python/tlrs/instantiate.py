"""TorchLean's newer instantiation names (its 2026-07 API) beside the seed's, with the same
meaning: `instantiateConfigured` (was `instantiateWithOptions`), `instantiateFloatWithPlan` (was
`instantiateFloatWithRuntimePlanOptions`), `instantiateFloatWithInit` (was
`instantiateFloatWithRuntimeInitOptions`), and the newly exported `instantiateFloat` and
`forwardWithParams`. The seed's names (module.py) keep working; docs/runtime.md has the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._core import Tensor
from .config import Options
from .module import (
    Module,
    ModuleDef,
    _check_defn,
    instantiate_float_with_runtime_init_options,
    instantiate_float_with_runtime_plan_options,
    instantiate_with_options,
)

__all__ = ["forward_with_params", "instantiate_configured", "instantiate_float",
           "instantiate_float_with_init", "instantiate_float_with_plan"]


def instantiate_configured(defn: ModuleDef, cast: Any, opts: Options | None) -> Module:
    """`instantiateConfigured`: `instantiate_with_options` under its newer name."""
    return instantiate_with_options(defn, cast, opts)


def instantiate_float_with_plan(defn: ModuleDef, opts: Options | None, plan: Any) -> Module:
    """`instantiateFloatWithPlan`: `instantiate_float_with_runtime_plan_options` renamed."""
    return instantiate_float_with_runtime_plan_options(defn, opts, plan)


def instantiate_float_with_init(defn: ModuleDef, opts: Options | None, inits: Sequence[Any]) -> Module:
    """`instantiateFloatWithInit`: `instantiate_float_with_runtime_init_options` renamed."""
    return instantiate_float_with_runtime_init_options(defn, opts, inits)


def instantiate_float(defn: ModuleDef, opts: Options | None = None) -> Module:
    """`instantiateFloat`: a binary64 module from the definition's runtime plan when it has one
    (filled on the module's device), else from its initial values."""
    _check_defn(defn, "instantiate_float")
    if defn.init_plan is not None:
        return instantiate_float_with_runtime_plan_options(defn, opts, defn.init_plan)
    return instantiate_with_options(defn, "float64", opts)


def forward_with_params(defn: ModuleDef, opts: Options | None, params: Sequence[Tensor], xs: Sequence[Any]) -> Tensor:
    """`forwardWithParams`: `defn`'s loss at `params` and inputs `xs`, without recording
    gradients, under `opts`' kernels and device. Useful where two definitions share a parameter
    layout (a training loss with dropout and an evaluation loss without): the parameters stay
    where they are, only the program changes."""
    _check_defn(defn, "forward_with_params")
    return Module(defn, list(params), opts).forward(xs)
