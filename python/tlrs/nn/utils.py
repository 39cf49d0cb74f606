"""Helpers between `tlrs.nn` modules and tlrs's functional optimizers."""

from __future__ import annotations

from collections.abc import Sequence

from .._core import Tensor
from .module import Module

__all__ = ["assign_parameters"]


def assign_parameters(module: Module, values: Sequence[Tensor]) -> None:
    """Puts `values` (an optimizer step's new tensors, in `module.parameters()` order) in place
    of the parameters, everywhere each is registered, so tied weights stay tied:

        params, state = opt.step(state, params, tlrs.grad(loss, params))
        nn.assign_parameters(model, params)
    """
    old = list(module.parameters())
    if len(values) != len(old):
        raise ValueError(f"assign_parameters: expected {len(old)} tensors (one per parameter), got {len(values)}")
    new = {id(o): v for o, v in zip(old, values, strict=True)}
    for m in module.modules():
        for name, p in list(m._parameters.items()):
            if p is not None and id(p) in new:
                setattr(m, name, new[id(p)])
                # The module may store a leaf made from the value: every owner gets that one.
                stored = m._parameters[name]
                if stored is not None:
                    new[id(p)] = stored
