"""`Module.to`: reading its arguments and converting the tensors of a module tree."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core import Tensor
from ..dtype import TENSOR_DTYPE_SPELLINGS
from ..tensor import _dtype_name
from .parameter import mark

if TYPE_CHECKING:
    from .module import Module


def dtype_spelling(value: Any) -> str | None:
    """A dtype's canonical name ('float32'/'float64') from a tlrs spelling, a NumPy dtype or a
    torch dtype; None when `value` is no dtype (a device name)."""
    if isinstance(value, str):
        return TENSOR_DTYPE_SPELLINGS.get(value)
    name = str(value).removeprefix("torch.")  # torch.float32, torch.float64
    if name in ("float32", "float64"):
        return name
    try:
        kind = np.dtype(value).name
    except TypeError:
        return None
    return kind if kind in ("float32", "float64") else None


def to_arguments(args: Sequence[Any], dtype: Any, device: str | None) -> tuple[str | None, str | None]:
    """(dtype name or None, device or None) from `to`'s positional and keyword arguments."""
    for arg in args:
        if dtype_spelling(arg) is not None:
            dtype = arg
        elif isinstance(arg, str):
            device = arg
        else:
            raise TypeError(f"to() expected a dtype or a device name, got {arg!r}")
    return (None if dtype is None else _dtype_name(dtype_spelling(dtype) or dtype)), device


def convert_tensors(modules: Iterable[Module], dtype: str | None, device: str | None) -> None:
    """Replaces each module's float parameters and buffers by converted copies. A tensor held
    under several names (tied) is converted once, so the names keep sharing it."""
    converted: dict[int, tuple[Tensor, Tensor]] = {}  # id -> (old, new): old kept alive, so its id stays unique

    def convert(t: Tensor) -> Tensor:
        if id(t) not in converted:
            new = t
            if dtype is not None and t.dtype != dtype:
                new = t.detach().to(dtype)
            if device is not None and t.device != device:
                new = new.detach().to(device)
            if new is not t:
                new.requires_grad = t.requires_grad
            converted[id(t)] = (t, new)
        return converted[id(t)][1]

    for module in modules:
        for name, p in module._parameters.items():
            if p is not None:
                new_p = module._parameters[name] = convert(p)
                mark(new_p)
        for name, b in module._buffers.items():
            if isinstance(b, Tensor):
                module._buffers[name] = convert(b)
