"""PyTorch-style state dicts: `Module.load_state_dict(mapping)` takes any mapping of name ->
array (NumPy arrays, PyTorch tensors on any device, tlrs tensors, nested lists) and reports
problems in PyTorch's wording, so weights move between a `torch.nn.Module` and a tlrs model
whose parameter names follow PyTorch's conventions (`fc1.weight`, `conv1.bias`, ...).

Differences from PyTorch, on purpose: loading is all-or-nothing (PyTorch may leave a module
half-loaded when it raises), and a value that is not floating point is refused with a
DTypeError (PyTorch would cast integers silently). Float values of the other precision are
converted to the module's dtype, as PyTorch's `copy_` does. Values are always copied: later
changes to the source (a torch optimizer step) do not reach the tlrs module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._core import DTypeError, Tensor
from ..tensor import from_dlpack, tensor

if TYPE_CHECKING:
    from ..module import Module


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` returns, as PyTorch's `_IncompatibleKeys`."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _as_tensor(key: str, value: Any, dtype: str) -> Tensor:
    """A fresh tlrs tensor (a copy) with `value`'s values in `dtype`, on the CPU."""
    try:
        if isinstance(value, Tensor):
            t = value
            if t.dtype not in ("float32", "float64"):
                raise DTypeError(f"got {t.dtype}")
        elif hasattr(value, "__dlpack__"):
            # torch refuses to export a tensor that requires grad; its values are what we want.
            src = value.detach() if callable(getattr(value, "detach", None)) else value
            t = from_dlpack(src)
            if t.dtype not in ("float32", "float64"):
                raise DTypeError(f"got {t.dtype}")
        else:
            arr = np.asarray(value)
            if arr.dtype.kind != "f":
                raise DTypeError(f"got {arr.dtype}")
            t = tensor(arr.astype(dtype, copy=False))
    except DTypeError as err:
        got = str(err).rsplit("got ", 1)[-1]
        raise DTypeError(f"load_state_dict: {key}: expected a floating-point array (float32 or "
                         f"float64), got {got}") from None
    t = t.to("cpu").to(dtype)
    # A copy of our own, so the source may change afterwards (tensor() always copies).
    return tensor(t, dtype=dtype)


def load_state_dict(module: Module, state_dict: Any, strict: bool = True) -> IncompatibleKeys:
    """Replace `module`'s parameters by name from `state_dict` (see the module docstring).

    Raises: TypeError: not a mapping; RuntimeError: size mismatches, and with `strict` missing
    or unexpected keys, all in PyTorch's wording; DTypeError: a value that is not floating point.
    """
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    names = list(module.param_names)
    current = module.params()
    missing = [k for k in names if k not in state_dict]
    unexpected = [str(k) for k in state_dict if k not in names]
    errors: list[str] = []
    if strict:
        if unexpected:
            errors.append("Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing)))
    new = list(current)
    for i, (name, param) in enumerate(zip(names, current, strict=True)):
        if name not in state_dict:
            continue
        value = _as_tensor(name, state_dict[name], module.dtype)
        if list(value.shape) != list(param.shape):
            errors.append(f"size mismatch for {name}: copying a param with shape "
                          f"{list(value.shape)} from checkpoint, the shape in current model is "
                          f"{list(param.shape)}.")
            continue
        new[i] = value
    if errors:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(errors)))
    module.set_params(new)
    return IncompatibleKeys(missing, unexpected)
