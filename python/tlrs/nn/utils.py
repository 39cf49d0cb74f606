"""Helpers between `tlrs.nn` modules and tlrs's functional optimizers: putting a step's new
parameters back, and clipping gradients by their norm as `torch.nn.utils.clip_grad_norm_`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .. import _core, ops
from .._core import Tensor
from .module import Module

__all__ = ["assign_parameters", "clip_grad_norm", "clip_grad_norm_"]


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


def _norm(t: Tensor, p: float) -> Tensor:
    """The p-norm of all of `t`'s values (`torch.linalg.vector_norm`)."""
    a = ops.abs(t)
    if p == float("inf"):
        return ops.max(a)
    if p == 2.0:
        return ops.sqrt(ops.sum(a * a))
    return ops.sum(a ** p) ** (1.0 / p)


def clip_grad_norm(grads: Sequence[Tensor], max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False) -> tuple[list[Tensor], Tensor]:
    """`grads` scaled so their joint `norm_type`-norm is at most `max_norm`, and that norm before
    scaling, with PyTorch's formula: the norm of the per-tensor norms, then each gradient times
    `min(max_norm / (norm + 1e-6), 1)` (always multiplied, as PyTorch does). Tensor ops only, so
    it records gradients and runs on the tensors' device.

    Raises: ValueError: no gradients, a non-positive norm type; RuntimeError (with
    `error_if_nonfinite`): a NaN or infinite norm, in PyTorch's words.
    """
    grads = list(grads)
    if not grads:
        raise ValueError("clip_grad_norm: expected at least one gradient")
    p = float(norm_type)
    if not p > 0:
        raise ValueError(f"clip_grad_norm: norm_type must be positive, got {norm_type!r}")
    norms = [ops.reshape(_norm(g, p), [1]) for g in grads]
    total = _norm(ops.concat(norms, 0), p)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {p} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    coef = ops.clamp(_core.full([], float(max_norm), total.dtype, device=total.device) / (total + 1e-6), None, 1.0)
    return [g * coef for g in grads], total


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """`torch.nn.utils.clip_grad_norm_`: the parameters' `.grad` replaced by the clipped
    gradients (`clip_grad_norm`); returns the total norm. Parameters without a gradient are
    skipped; with none at all the norm is 0."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    pairs = [(p, p.grad) for p in params if p.grad is not None]
    if not pairs:
        return _core.full([], 0.0, "float64")
    with_grad = [p for p, _ in pairs]
    clipped, total = clip_grad_norm([g for _, g in pairs if g is not None], max_norm, norm_type,
                                    error_if_nonfinite)
    for p, g in zip(with_grad, clipped, strict=True):
        p.grad = g.detach()
    return total
