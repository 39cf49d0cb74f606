"""Casting a definition's initial values to the module's dtype: dtype names, `DType`s, the
reference's scalar cast (`float`, `numpy.float64`, `numpy.float32`) or any callable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._core import Tensor
from .dtype import TENSOR_DTYPE_SPELLINGS, DType
from .errors import DTypeError, ShapeError
from .tensor import tensor

_CAST_NAMES = TENSOR_DTYPE_SPELLINGS
# The reference's `cast : Float -> alpha` for the two float types tlrs has.
_CAST_TYPES: dict[Any, str] = {float: "float64", np.float64: "float64", np.float32: "float32"}


def cast_params(initial: Sequence[Tensor], shapes: Sequence[Sequence[int]], cast: Any) -> list[Tensor]:
    """Initial parameter values cast by a dtype name, a `DType`, a scalar type or a callable.

    Raises: DTypeError: an unknown dtype name or mixed result dtypes; TypeError: a cast of
    another kind, or a callable that does not give floats; ShapeError: a cast that changes a
    shape.
    """
    if isinstance(cast, DType):
        cast.check_runnable()
        cast = cast.numpy_name
    if not isinstance(cast, str) and cast in _CAST_TYPES:
        cast = _CAST_TYPES[cast]
    if isinstance(cast, str):
        if cast not in _CAST_NAMES:
            raise DTypeError(
                f"expected a dtype name {sorted(_CAST_NAMES)} or a callable, got {cast!r}")
        return [p.to(_CAST_NAMES[cast]) for p in initial]
    if not callable(cast):
        raise TypeError(f"cast must be a dtype name, a float type or a callable, got "
                        f"{type(cast).__name__}")
    out = [_cast_one(cast, p, i) for i, p in enumerate(initial)]
    if len({p.dtype for p in out}) > 1:
        raise DTypeError(f"cast gave mixed dtypes {sorted({p.dtype for p in out})}; expected one")
    for i, (t, s) in enumerate(zip(out, shapes, strict=True)):
        if tuple(t.shape) != tuple(s):
            raise ShapeError(f"cast: parameter {i} has shape {list(t.shape)}, expected {list(s)}")
    return out


def _cast_one(cast: Callable[[Any], Any], p: Tensor, i: int) -> Tensor:
    """`cast` applied to one initial tensor: as a function of tensors when it returns a Tensor of
    the same shape, else as the reference's scalar function, on the whole array at once where
    it gives an array of the same shape, else to each scalar in turn."""
    try:
        whole = cast(p)
    except Exception:  # noqa: BLE001 - not a function of tensors; try it on values
        whole = None
    if isinstance(whole, Tensor) and list(whole.shape) == list(p.shape):
        return whole
    values = p.numpy()
    try:
        arr = cast(values)
    except Exception:  # noqa: BLE001 - not vectorisable; apply it per scalar below
        arr = None
    if not (isinstance(arr, np.ndarray) and arr.shape == values.shape
            and arr.dtype in (np.float32, np.float64)):
        scalars = [cast(float(v)) for v in values.reshape(-1)]
        kinds = {type(v) for v in scalars}
        if not kinds <= {float, int, np.float64, np.float32}:
            bad = sorted(k.__name__ for k in kinds - {float, int, np.float64, np.float32})
            raise TypeError(f"cast must map each scalar to a float (float, numpy.float32 or "
                            f"numpy.float64); for parameter {i} it returned {', '.join(bad)}")
        dtype = np.float32 if kinds == {np.float32} else np.float64
        arr = np.asarray(scalars, dtype=dtype).reshape(values.shape)
    return tensor(np.ascontiguousarray(arr))
