"""Index and mask operands: what the indexed ops (embedding, gather, index_select, scatter_add,
cross_entropy's labels, masked_fill, where) accept, read one way.

Indices are an int64 tensor, a NumPy integer array or Python ints; masks a bool tensor, a NumPy
bool array or Python bools. A float tensor is refused (tlrs never converts between float and
integer silently). An int64 tensor passed to `embedding`, `index_select` or `cross_entropy`
stays a tensor (the op's record keeps it, so a compiled step reads each batch's ids); the other
ops read its values on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import Tensor


def is_int_tensor(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype == "int64"


def int_array(index: Any, what: str) -> np.ndarray[Any, Any]:
    """Integer indices as an int64 array of their own shape."""
    if isinstance(index, Tensor):
        if index.dtype != "int64":
            raise TypeError(f"{what}: expected integer indices (an int64 Tensor, a NumPy int array or a list of "
                            f"ints), got a {index.dtype} Tensor")
        return np.asarray(index.numpy())
    arr = np.asarray(index)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise TypeError(f"{what}: expected integer indices, got an array of dtype {arr.dtype}")
    return arr.astype(np.int64)


def bool_array(mask: Any, what: str) -> np.ndarray[Any, Any]:
    """A boolean mask as a bool array of its own shape."""
    if isinstance(mask, Tensor):
        if mask.dtype != "bool":
            raise TypeError(f"{what}: expected a boolean mask (a bool Tensor or array), got a {mask.dtype} Tensor")
        return np.asarray(mask.numpy())
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise TypeError(f"{what}: expected a boolean mask, got dtype {arr.dtype}")
    return arr
