"""Module definitions (the reference's `ScalarModuleDef`): parameter and input shapes, the loss,
initial values, flags and names, checked when built; and the shape checks the live module
(`tlrs.module.Module`) shares with them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _core
from ._core import Plan, Tensor
from .errors import ShapeError
from .module_checkpoint import OPTIM_PREFIX
from .tensor import tensor

__all__ = ["ModuleDef", "format_float"]

Shape = tuple[int, ...]


def format_float(value: float) -> str:
    """A scalar as the reference's Float printer shows it: `%f`, or `NaN`, `inf`, `-inf`."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:f}"


def _shapes(shapes: Sequence[Sequence[int]], what: str) -> tuple[Shape, ...]:
    out = []
    for s in shapes:
        dims = tuple(s)
        if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
                   for d in dims):
            raise ValueError(f"{what}: expected shapes of non-negative integers, got {list(s)!r}")
        out.append(tuple(int(d) for d in dims))
    return tuple(out)


def _show(shapes: Sequence[Sequence[int]]) -> str:
    return str([list(s) for s in shapes])


@dataclasses.dataclass(frozen=True, eq=False)
class ModuleDef:
    """A module definition: parameter and input shapes, a loss, initial values and flags.

    Args: param_shapes, input_shapes: ordered shape lists; loss: `loss(params, inputs)` returning a
    scalar Tensor built from tlrs ops; init_params: one tensor (or array) per parameter shape,
    default the plan's values if `init_plan` is given, else zeros (binary64); requires_grad:
    per-parameter flags (default all true); init_plan: a `tlrs.init.Plan` for `param_shapes`;
    param_names: unique names used in checkpoints (default `param.0`, `param.1`, ...);
    predict: optional `predict(params, x)` giving the model's output for the first input (what
    `Module.export_onnx` exports; the ready-made models set it); input_dtypes: per input, None
    (the module's float dtype) or "int64" (token ids, class labels: passed as int64 tensors or
    integer arrays, and graph inputs of the compiled backend, never converted to floats).
    Raises: ValueError: the reference's `torch: requiresGrad list longer/shorter than parameter
    list`, initial values of the wrong count or shape, a plan for other shapes, or bad names.
    """

    param_shapes: Sequence[Sequence[int]]
    input_shapes: Sequence[Sequence[int]]
    loss: Callable[[list[Tensor], list[Tensor]], Tensor]
    init_params: Sequence[Any] | None = None
    requires_grad: Sequence[bool] | None = None
    init_plan: Plan | None = None
    param_names: Sequence[str] | None = None
    predict: Callable[[list[Tensor], Any], Tensor] | None = None
    input_dtypes: Sequence[str | None] | None = None

    def __post_init__(self) -> None:
        shapes = _shapes(self.param_shapes, "ModuleDef param_shapes")
        object.__setattr__(self, "param_shapes", shapes)
        inputs = _shapes(self.input_shapes, "ModuleDef input_shapes")
        object.__setattr__(self, "input_shapes", inputs)
        kinds = [None] * len(inputs) if self.input_dtypes is None else list(self.input_dtypes)
        if len(kinds) != len(inputs) or any(k not in (None, "int64") for k in kinds):
            raise ValueError(f"ModuleDef: expected input_dtypes to give None (the module's dtype) or 'int64' for "
                             f"each of the {len(inputs)} inputs, got {self.input_dtypes!r}")
        object.__setattr__(self, "input_dtypes", tuple(kinds))
        if not callable(self.loss):
            raise TypeError(f"ModuleDef: loss must be callable, got {type(self.loss).__name__}")
        flags = [True] * len(shapes) if self.requires_grad is None else list(self.requires_grad)
        if len(flags) > len(shapes):
            raise ValueError("torch: requiresGrad list longer than parameter list")
        if len(flags) < len(shapes):
            raise ValueError("torch: requiresGrad list shorter than parameter list")
        object.__setattr__(self, "requires_grad", tuple(bool(f) for f in flags))
        if self.init_params is not None:
            given = [p if isinstance(p, Tensor) else tensor(p, dtype="float64")
                     for p in self.init_params]
            if len(given) != len(shapes):
                raise ValueError(f"ModuleDef: expected {len(shapes)} initial parameters (one per "
                                 f"parameter shape), got {len(given)}")
            _check_shapes(given, shapes, "ModuleDef: initial parameter")
            object.__setattr__(self, "init_params", tuple(given))
        if self.init_plan is not None:
            _check_plan(self.init_plan, shapes)
        names = [f"param.{i}" for i in range(len(shapes))] if self.param_names is None else [
            str(n) for n in self.param_names]
        if len(names) != len(shapes) or len(set(names)) != len(names) or any(
                not n or n.startswith(OPTIM_PREFIX) for n in names):
            raise ValueError(f"ModuleDef: expected {len(shapes)} unique, non-empty parameter names "
                             f"not starting with {OPTIM_PREFIX!r}, got {names!r}")
        object.__setattr__(self, "param_names", tuple(names))

    def initial_params(self) -> list[Tensor]:
        """The initial values: `init_params`, else the plan's values, else zeros (binary64)."""
        if self.init_params is not None:
            return list(self.init_params)
        if self.init_plan is not None:
            return list(self.init_plan.materialise("float64"))
        return [_core.full(list(s), 0.0, "float64") for s in self.param_shapes]


def _check_shapes(tensors: Sequence[Tensor], shapes: Sequence[Sequence[int]], what: str) -> None:
    for i, (t, s) in enumerate(zip(tensors, shapes, strict=True)):
        if tuple(t.shape) != tuple(s):
            raise ShapeError(f"{what} {i} has shape {list(t.shape)}, expected {list(s)}")


def _check_plan(plan: Plan, shapes: Sequence[Sequence[int]]) -> None:
    if not isinstance(plan, Plan):
        raise TypeError(f"expected a tlrs.init.Plan, got {type(plan).__name__}")
    built_for = _shapes(plan.param_shapes, "plan")
    if built_for != tuple(tuple(s) for s in shapes):
        raise ValueError(f"the plan was built for parameter shapes {_show(built_for)}, but the "
                         f"definition has {_show(shapes)}")
