"""One bridge from a `tlrs.nn` model to the runtime: `to_module_def(model, loss, input_shapes)` is a
`tlrs.ModuleDef` whose parameters are the model's (in `parameters()` order, named as
`named_parameters()` names them, tied weights once), so the existing machinery runs it unchanged:
the eager and compiled backends, init plans, checkpoints, `state_dict`, ONNX export, the
distributed trainer, CUDA. `nn.assign_parameters(model, module.params())` brings trained values
back to the model.

While the runtime evaluates the loss, the model's parameter slots hold the runtime's tensors (the
compiled backend's traced leaves included), then get their own back: the model's `forward` is
the program. Buffers a forward updates (BatchNorm's running statistics in training) are updated
by eager calls only; a compiled graph would replay the traced values, so train such models eagerly
or in eval mode. Dropout in a compiled graph needs a key (`ops.dropout(..., key=)`), as anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._core import Tensor
from ..module_def import ModuleDef
from .module import Module

__all__ = ["to_module_def"]


def _slots(model: Module) -> list[list[tuple[Module, str]]]:
    """For each parameter (in `parameters()` order) every (module, attribute) holding it."""
    order = {id(p): i for i, p in enumerate(model.parameters())}
    slots: list[list[tuple[Module, str]]] = [[] for _ in order]
    for m in model.modules():
        for name, p in m._parameters.items():
            if p is not None and id(p) in order:
                slots[order[id(p)]].append((m, name))
    return slots


@contextmanager
def bound(model: Module, params: Sequence[Tensor]) -> Iterator[None]:
    """The model with `params` in its parameter slots (ties kept), restored afterwards."""
    slots = _slots(model)
    if len(params) != len(slots):
        raise ValueError(f"to_module_def: expected {len(slots)} parameters, got {len(params)}")
    saved = [[(m, name, m._parameters[name]) for m, name in places] for places in slots]
    try:
        for places, p in zip(slots, params, strict=True):
            for m, name in places:
                m._parameters[name] = p  # straight into the table: no re-registration, no detach
        yield
    finally:
        for held in saved:
            for m, name, own in held:
                m._parameters[name] = own


def to_module_def(model: Module, loss: Callable[..., Tensor], input_shapes: Sequence[Sequence[int]], *,
                  predict: Callable[..., Tensor] | None = None,
                  input_dtypes: Sequence[str | None] | None = None) -> ModuleDef:
    """A `ModuleDef` running `loss(model, *inputs)` (a scalar) over `model`'s parameters.

    Args: input_shapes: the loss's input shapes; input_dtypes: per input, None (the model's float
    dtype) or "int64" (token ids, class labels: int64 tensors, graph inputs of the compiled
    backend); predict: `predict(model, x)` for ONNX export (default: `model(x)`).
    Returns a definition with the model's current values as initial parameters, its parameter
    names, and `requires_grad` from each parameter's flag.
    """
    if not isinstance(model, Module):
        raise TypeError(f"to_module_def: expected a tlrs.nn.Module, got {type(model).__name__}")
    if not callable(loss):
        raise TypeError(f"to_module_def: loss must be callable, got {type(loss).__name__}")
    params = list(model.parameters())
    names = [n for n, _ in model.named_parameters()]

    def run_loss(ps: list[Tensor], xs: list[Any]) -> Tensor:
        with bound(model, ps):
            return loss(model, *xs)

    def run_predict(ps: list[Tensor], x: Any) -> Tensor:
        with bound(model, ps):
            return model(x) if predict is None else predict(model, x)

    return ModuleDef([p.shape for p in params], [list(s) for s in input_shapes], run_loss,
                     init_params=[p.detach() for p in params], requires_grad=[p.requires_grad for p in params],
                     param_names=names, predict=run_predict, input_dtypes=input_dtypes)
