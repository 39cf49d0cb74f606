"""`Parameter`: a tlrs Tensor marked as a module parameter.

`tlrs.Tensor` is a native class that cannot be subclassed nor carry attributes (nor weak
references), so the mark lives here, in a table of the tensors that are parameters: those
`Parameter` made and those a `Module` registered. A module registers a tensor assigned to one
of its attributes when the tensor is marked (tied weights: `head.weight = wte.weight`) or the
name already holds a parameter (an optimizer's new values).
"""

from __future__ import annotations

import sys
from typing import Any

from .. import _core
from .._core import Tensor
from ..tensor import tensor

__all__ = ["Parameter"]

# id -> tensor for every marked tensor. Holding the tensor keeps its id from being reused.
_marked: dict[int, Tensor] = {}
_swept_at = 64  # the table's size after the last sweep (at least 64, so small tables never sweep)


def _sweep() -> None:
    """Drops tensors that only the table holds, once the table has doubled since the last
    sweep (linear cost overall): parameters of discarded models do not leak.

    getrefcount sees the table's reference and its own argument: 2 means no other owner."""
    global _swept_at
    if len(_marked) < 2 * _swept_at:
        return
    for key in list(_marked):
        if sys.getrefcount(_marked[key]) <= 2:
            del _marked[key]
    _swept_at = max(64, len(_marked))


def mark(value: Tensor) -> None:
    """Marks `value` as a parameter."""
    _sweep()
    _marked[id(value)] = value


def is_parameter(value: Any) -> bool:
    """Whether `value` is a tensor made by `Parameter` or registered as a parameter."""
    return isinstance(value, Tensor) and _marked.get(id(value)) is value


def Parameter(data: Any = None, requires_grad: bool = True) -> Tensor:  # noqa: N802 - torch's name
    """A leaf tensor with `data`'s values that a `Module` registers as a parameter when it is
    assigned to one of its attributes (`torch.nn.Parameter`).

    A Tensor's memory is shared (a detached view of it), anything else is copied with
    `tlrs.tensor` (float64 unless the array is float32). `None` gives an empty tensor.
    """
    if data is None:
        t = _core.full([0], 0.0, "float64")
    elif isinstance(data, Tensor):
        t = data.detach()
    else:
        t = tensor(data)
    t.requires_grad = bool(requires_grad)
    mark(t)
    return t
