"""Tensor constructors: from Python data or NumPy arrays, filled, ranges and seeded random.

`dtype=None` keeps a float32/float64 array's dtype, makes integer data int64 and bool data bool
(as torch does; tlrs never turns integers into floats unasked), and makes everything else float64
(the reference's `Float`, IEEE binary64). Filled constructors default to float64.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np

from . import _core
from ._core import Tensor
from .complex import ComplexTensor, complex_tensor, is_complex_dtype
from .dtype import TENSOR_DTYPE_SPELLINGS

# Every spelling of the two dtypes (the core's table, see tlrs.dtype) -> its NumPy type.
_DTYPES = {s: np.dtype(canonical).type for s, canonical in TENSOR_DTYPE_SPELLINGS.items()}
# Integer and bool tensors (indices, labels, masks): a tensor's dtype, never a model's.
_DTYPES.update({"int64": np.int64, "long": np.int64, "i64": np.int64, "bool": np.bool_})
_NAMES = ("float32", "float64", "int64", "bool")

Shape = int | Sequence[int]


def _dtype_name(dtype: Any) -> str:
    """The canonical name ('float32', 'float64', 'int64' or 'bool') of a dtype given as a string
    or NumPy dtype."""
    if dtype is None:
        return "float64"
    if isinstance(dtype, str) and dtype in _DTYPES:
        return np.dtype(_DTYPES[dtype]).name
    try:
        name = str(np.dtype(dtype).name)
    except TypeError:
        name = repr(dtype)
    if name not in _NAMES:
        raise _core.DTypeError(f"expected dtype 'float32', 'float64', 'int64', 'bool', 'complex64' or "
                               f"'complex128', got {name!r}")
    return name


def _shape(shape: tuple[Shape, ...]) -> list[int]:
    """Accepts both f(2, 3) and f((2, 3))."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    out = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d < 2**63:
            raise ValueError(f"expected a shape of non-negative integers below 2**63, got {shape!r}")
        out.append(int(d))
    return out


def _device(device: str | None) -> str:
    """The device name to build on; CudaUnavailableError or ValueError come from the core when
    the tensor is placed."""
    if device is not None and not isinstance(device, str):
        raise TypeError(f"expected a device name such as 'cpu' or 'cuda:0', got {device!r}")
    return "cpu" if device is None else device


@overload
def tensor(data: Any, dtype: Literal["complex64", "complex128"], device: str | None = None,
           requires_grad: bool = False) -> ComplexTensor: ...
@overload
def tensor(data: Any, dtype: Any = None, device: str | None = None, requires_grad: bool = False) -> Tensor: ...
def tensor(data: Any, dtype: Any = None, device: str | None = None,
           requires_grad: bool = False) -> Tensor | ComplexTensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, NumPy arrays or a Tensor).
    Complex data or a complex dtype (complex64, complex128) gives a `tlrs.complex.ComplexTensor`.

    Raises DTypeError for non-numeric data or an unsupported dtype.
    """
    if isinstance(data, ComplexTensor) or is_complex_dtype(dtype):
        return complex_tensor(data, dtype, device, requires_grad)
    if isinstance(data, Tensor):
        data = data.numpy()
    arr = np.asarray(data)
    if dtype is None and arr.dtype.kind == "c":
        return complex_tensor(arr, None, device, requires_grad)
    if dtype is None:
        if arr.dtype not in (np.float32, np.float64, np.int64, np.bool_):
            if arr.dtype.kind not in "biuf":
                raise _core.DTypeError(f"expected numeric data, got an array of dtype {arr.dtype}")
            if arr.dtype.kind in "iu" and arr.size and (arr.max() > np.iinfo(np.int64).max):
                raise ValueError(f"tensor: {arr.max()} does not fit in int64")
            arr = arr.astype(np.int64 if arr.dtype.kind in "iu" else np.float64)
    else:
        name = _dtype_name(dtype)
        if name == "int64" and arr.dtype.kind == "f" and arr.size and not (np.isfinite(arr).all() and (arr == np.trunc(arr)).all()):
            raise ValueError("tensor: dtype int64 needs integer values, got non-integral or non-finite floats")
        arr = arr.astype(name)
    # asarray(order='C') keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d).
    return _place(_core.tensor_from_numpy(np.asarray(arr, order="C"), copy=True), device, requires_grad)


def _place(t: Tensor, device: str | None, requires_grad: bool) -> Tensor:
    """`t` (a fresh CPU leaf) copied to `device`, as a leaf with `requires_grad`."""
    dev = _device(device)
    if dev != "cpu":
        t = t.to(dev).detach()
    t.requires_grad = requires_grad
    return t


def from_numpy(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A tensor sharing `array`'s memory (no copy) when it is C-contiguous and aligned float32 or
    float64; other layouts (Fortran order, strided views) are copied. The tensor keeps the array
    alive. tlrs never writes to it; writing to the array while the tensor lives changes the
    tensor's values, as with `torch.from_numpy` (see docs/interop.md): use `tlrs.tensor(array)`
    for a copy.

    Raises DTypeError naming the dtype for any other array.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected a numpy.ndarray, got {type(array).__name__}")
    return _core.tensor_from_numpy(array, requires_grad)


def from_dlpack(x: Any, *, device: str | None = None, copy: bool | None = None) -> Tensor:
    """A tensor over the memory of `x`: any object with `__dlpack__` (NumPy arrays, PyTorch,
    JAX and CuPy tensors, tlrs tensors) or a DLPack capsule, on the CPU or a CUDA device.

    No copy when the data is C-contiguous, aligned float32 or float64 (the tensor keeps the
    producer's buffer alive); strided data is copied on the CPU. `copy=True` always copies,
    `copy=False` refuses to. Writing through the producer afterwards changes the tensor's values
    (see docs/interop.md).
    Raises: DTypeError: not float32/float64; BufferError: an unsupported device, a copy that
    copy=False forbids, a non-contiguous CUDA tensor; TypeError: no `__dlpack__`.
    """
    return _core.from_dlpack(x, device=device, copy=copy)


def full(shape: Shape, fill_value: float, dtype: Any = None, device: str | None = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of `shape` filled with `fill_value`."""
    return _core.full(_shape((shape,)), float(fill_value), _dtype_name(dtype), requires_grad,
                      _device(device))


def zeros(*shape: Shape, dtype: Any = None, device: str | None = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _core.full(_shape(shape), 0.0, _dtype_name(dtype), requires_grad, _device(device))


def ones(*shape: Shape, dtype: Any = None, device: str | None = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _core.full(_shape(shape), 1.0, _dtype_name(dtype), requires_grad, _device(device))


def _physical_memory() -> int:
    """This machine's RAM in bytes (a large bound where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def arange(start: float, end: float | None = None, step: float = 1.0, dtype: Any = None,
           device: str | None = None, requires_grad: bool = False) -> Tensor:
    """Values from `start` (inclusive) to `end` (exclusive) by `step`, as `torch.arange`."""
    if end is None:
        start, end = 0.0, start
    if step == 0:
        raise ValueError("arange: expected a non-zero step, got 0")
    n = max(0, math.ceil((end - start) / step)) if math.isfinite((end - start) / step) else -1
    # The NumPy array and the tensor's copy live together for a moment: both must fit in RAM.
    if n < 0 or n * 16 > _physical_memory():
        raise MemoryError(f"arange: {n if n >= 0 else 'infinitely many'} values do not fit in "
                          f"this machine's memory")
    arr = np.arange(start, end, step, dtype=_dtype_name(dtype))
    return _place(_core.tensor_from_numpy(arr), device, requires_grad)


def rand(*shape: Shape, dtype: Any = None, device: str | None = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform values in [0, 1) from the global seed stream (see `manual_seed`); on a CUDA
    device the same values as on the CPU (drawn on the host, then copied)."""
    return _place(_core.rand(_shape(shape), _dtype_name(dtype)), device, requires_grad)


def randn(*shape: Shape, dtype: Any = None, device: str | None = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal values from the global seed stream (see `manual_seed`); on a CUDA device
    the same values as on the CPU (drawn on the host, then copied)."""
    return _place(_core.randn(_shape(shape), _dtype_name(dtype)), device, requires_grad)

