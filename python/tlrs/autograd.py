"""Autograd entry points: gradients of a scalar and switching recording off."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from . import _core
from ._core import Tensor
from .errors import AutogradError


def grad(outputs: Sequence[Tensor] | Tensor, inputs: Sequence[Tensor] | Tensor,
         grad_outputs: Sequence[Tensor | None] | Tensor | None = None,
         allow_unused: bool = False) -> list[Tensor | None]:
    """`torch.autograd.grad`: sum_k grad_outputs[k] . d(outputs[k])/d(input) for each input,
    leaves and interior tensors alike, without touching `.grad`.

    Args: grad_outputs: one seed per output (same shape, dtype and device), or None for a
    one-element output (seeded with 1); allow_unused: give None for an input no output depends
    on instead of raising.
    Raises: AutogradError: an output or input that does not require grad, a non-scalar output
    without a seed, a seed of the wrong shape; an unused input unless `allow_unused`.
    """
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None:
        seeds: list[Tensor | None] = [None] * len(outs)
    else:
        seeds = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    for what, ts in (("outputs", outs), ("inputs", ins)):
        for i, t in enumerate(ts):
            if not isinstance(t, Tensor):
                raise TypeError(f"grad: {what}[{i}] must be a Tensor, got {type(t).__name__}")
    if len(seeds) != len(outs):
        raise ValueError(f"grad: got {len(outs)} outputs but {len(seeds)} grad_outputs")
    for i, s in enumerate(seeds):
        if s is not None and not isinstance(s, Tensor):
            raise TypeError(f"grad: grad_outputs[{i}] must be a Tensor or None, got {type(s).__name__}")
    found = _core.grad(outs, ins, seeds)
    if not allow_unused:
        for i, g in enumerate(found):
            if g is None:
                raise AutogradError(
                    f"grad: input {i} was not used to compute the outputs; pass "
                    "allow_unused=True to get None for it")
    return found


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Within the block, ops do not record a graph (results have requires_grad=False)."""
    _core.enter_no_grad()
    try:
        yield
    finally:
        _core.exit_no_grad()


def is_grad_enabled() -> bool:
    """Whether ops record a graph on this thread."""
    return _core.is_grad_enabled()
