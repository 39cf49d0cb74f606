"""Autograd entry points: gradients of a scalar and switching recording off."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from . import _core
from ._core import Tensor


def grad(output: Tensor, inputs: Sequence[Tensor] | Tensor) -> list[Tensor]:
    """d(output)/d(input) for each input, without touching `.grad`.

    An input the output does not depend on gets zeros. Raises AutogradError if `output` is not
    a scalar or does not require grad.
    """
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    return _core.grad(output, list(inputs))


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
