"""`Module.load_state_dict`: PyTorch's semantics and error wording over tlrs tensors.

Values are copied into the existing tensors in place (`_core.assign_`), as torch's `copy_`:
tied weights stay tied, and references held elsewhere (an optimizer's list) see the new
values. Loading is all-or-nothing: every key is checked before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _core
from .._core import DTypeError, Tensor
from ..tensor import from_dlpack, tensor

if TYPE_CHECKING:
    from .module import Module

Slot = tuple[str, "Module", str, str]  # (key, owning module, table, attribute name)


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` returns, as PyTorch's `_IncompatibleKeys`."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _float_value(key: str, value: Any, like: Tensor) -> Tensor:
    """A fresh copy of `value` with `like`'s dtype and device."""
    if isinstance(value, Tensor):
        t = value
    elif hasattr(value, "__dlpack__") and hasattr(value, "detach"):
        # A torch tensor (any device): torch refuses to export one that requires grad.
        value = value.detach()
        if not value.is_floating_point():
            raise DTypeError(f"load_state_dict: {key}: expected a floating-point array (float32 or float64), "
                             f"got {value.dtype}")
        t = from_dlpack(value.cpu())
    else:
        arr = np.asarray(value)
        if arr.dtype.kind != "f":
            raise DTypeError(f"load_state_dict: {key}: expected a floating-point array (float32 or float64), "
                             f"got {arr.dtype}")
        t = tensor(arr.astype(like.dtype, copy=False))
    t = tensor(t.to("cpu"), dtype=like.dtype)  # tensor() copies: later changes to the source stay there
    return t if like.device == "cpu" else t.to(like.device)


def _int_value(value: Any) -> int:
    """An integer buffer's value (num_batches_tracked) from a number, array or tensor."""
    if hasattr(value, "item"):
        value = value.item()
    return int(value)


def _shape_of(value: Any) -> list[int]:
    shape = getattr(value, "shape", None)
    return list(np.shape(value)) if shape is None else [int(d) for d in shape]


def load_state_dict(module: Module, slots: Sequence[Slot], state_dict: Mapping[str, Any],
                    strict: bool) -> IncompatibleKeys:
    """Checks every slot's value, then writes them all (see the module docstring)."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    expected = {key for key, *_ in slots}
    missing = [key for key, *_ in slots if key not in state_dict]
    unexpected = [str(k) for k in state_dict if k not in expected]
    errors: list[str] = []
    writes: list[tuple[Module, str, str, Any]] = []
    for key, owner, table, name in slots:
        if key not in state_dict:
            continue
        current = getattr(owner, table)[name]
        value = state_dict[key]
        if isinstance(current, int):
            writes.append((owner, table, name, _int_value(value)))
            continue
        if _shape_of(value) != list(current.shape):
            errors.append(f"size mismatch for {key}: copying a param with shape {_shape_of(value)} from "
                          f"checkpoint, the shape in current model is {list(current.shape)}.")
            continue
        writes.append((owner, table, name, _float_value(key, value, current)))
    if strict:
        # PyTorch's order: missing keys, unexpected keys, then the size mismatches.
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
    if errors:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(errors)))
    for owner, table, name, value in writes:
        if isinstance(value, Tensor):
            _core.assign_(getattr(owner, table)[name], value)
        else:
            getattr(owner, table)[name] = value
    return IncompatibleKeys(missing, unexpected)
