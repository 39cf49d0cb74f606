"""PyTorch's shape and indexing methods on `tlrs.Tensor` (`x.size()`, `x.view(...)`, `x[i, 1:3]`,
...), attached to the native class when `tlrs` is imported.

Each method calls the `tlrs.ops` function of the same name (`shape_ops`), so it is a composite of
recorded ops with their gradients. `x[key]` follows torch's indexing rules:

- ints select (and drop) an axis, slices with step 1 are views (`slice`), other positive steps
  gather (`index_select`); a step <= 0 is a ValueError, as in torch;
- None and True insert a size-1 axis (False: a size-0 one); one `...` stands for the axes left;
- lists, tuples (inside the key) and NumPy arrays of ints are advanced indices, bool arrays masks
  (their nonzero positions). Advanced indices broadcast together; their axes come out where the
  first of them stood when they index adjacent axes (after ints are applied, as torch does),
  else first. A 0-d int array counts as an int, as torch treats a 0-d integer tensor.

Comparisons (`x == y`, `x < 0.5`, ...) give bool tensors; `x.long()`, `x.float()`, `x.double()`,
`x.bool()` convert dtypes (`Tensor.to`).

Refused: float tensors as indices, two ellipses, and a key that is a short list holding
lists, slices, None or `...` (torch reads it as a tuple, a deprecated rule): use a tuple.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from . import _core, ops
from ._core import Tensor
from .shape_ops import _dim, _empty, _sizes, _slice

__all__: list[str] = []

_Item = tuple[str, Any]  # (kind, value) of one entry of an index key
_Adv = tuple[int, np.ndarray[Any, Any]]  # (axis of the partly indexed tensor, int64 positions)


def _size(self: Tensor, dim: int | None = None) -> tuple[int, ...] | int:
    """The shape as a tuple of ints, or the size of axis `dim`."""
    if dim is None:
        return tuple(self.shape)
    if self.ndim == 0:
        raise IndexError(f"size: dimension specified as {dim} but the tensor has no dimensions")
    return self.shape[_dim(dim, self.ndim, "size")]


def _ndim(self: Tensor) -> int:
    """The number of axes."""
    return self.ndim


def _view(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """The same elements in a new shape (ints or one sequence; one may be -1)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, list, tuple, np.integer)):
        raise TypeError(f"view: expected a shape (ints or one sequence of ints), got {type(shape[0]).__name__} "
                        "(tlrs has no dtype views)")
    try:
        return ops.reshape(self, _sizes(shape, "view"))
    except ValueError as e:  # reshape's refusals (ShapeError among them), named as this method
        raise type(e)(f"view: {str(e).removeprefix('reshape: ')}") from None


def _flip(self: Tensor, *dims: int | Sequence[int]) -> Tensor:
    """Reversed along `dims` (ints or one sequence)."""
    if not dims:
        raise TypeError("flip: missing the dims to flip")
    return ops.flip(self, _sizes(dims, "flip"))


# ---- indexing ----

def _key_items(key: Any) -> list[Any]:
    if isinstance(key, tuple):
        return list(key)
    if isinstance(key, list) and len(key) < 32 and any(
            k is None or k is Ellipsis or isinstance(k, (list, tuple, slice, np.ndarray, Tensor)) for k in key):
        raise IndexError("__getitem__: a list holding lists, slices, None or ... is ambiguous (torch reads it as a "
                         "tuple, a deprecated rule): index with a tuple, or with a NumPy array")
    return [key]


def _array_item(k: Any) -> _Item:
    """A list, a tuple or a NumPy array in a key: a mask, int positions, or (0-d) a bool or an int."""
    arr = np.asarray(k)
    if arr.dtype == np.bool_:
        return ("bool", bool(arr)) if arr.ndim == 0 else ("mask", arr)
    if arr.size == 0:
        return "array", arr.astype(np.int64)  # [] is float64 to NumPy
    if arr.dtype.kind not in "iu":
        raise IndexError(f"__getitem__: index arrays must hold ints or bools, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:
        raise IndexError(f"__getitem__: index {arr.max()} is out of bounds")
    return ("int", int(arr)) if arr.ndim == 0 else ("array", arr.astype(np.int64))


def _classify(k: Any) -> _Item:
    if k is None or k is Ellipsis:
        return ("none" if k is None else "ellipsis"), None
    if isinstance(k, (bool, np.bool_)):
        return "bool", bool(k)
    if isinstance(k, slice):
        return "slice", k
    if isinstance(k, Tensor):
        if k.dtype not in ("int64", "bool"):
            raise IndexError(f"__getitem__: a {k.dtype} Tensor cannot be an index: use ints, an int64 or bool "
                             "Tensor, or a NumPy int or bool array")
        return _array_item(k.numpy())  # a 0-d int64 tensor counts as an int, as in torch
    if isinstance(k, (list, tuple, np.ndarray)):
        return _array_item(k)
    try:
        return "int", operator.index(k)
    except TypeError:
        raise IndexError("__getitem__: only integers, slices, None, ..., lists and NumPy int or bool arrays are "
                         f"valid indices (got {type(k).__name__})") from None


def _expand_ellipsis(items: list[_Item], ndim: int) -> list[_Item]:
    kinds = [k for k, _ in items]
    if kinds.count("ellipsis") > 1:
        raise IndexError("__getitem__: an index can only have a single ellipsis ('...')")
    used = sum(v.ndim if k == "mask" else int(k in ("int", "slice", "array")) for k, v in items)
    if used > ndim:
        if ndim == 0:
            raise IndexError("__getitem__: invalid index of a 0-dim tensor (use .item() for its value)")
        raise IndexError(f"__getitem__: too many indices for tensor of dimension {ndim}")
    if "ellipsis" in kinds:
        at = kinds.index("ellipsis")
        items = items[:at] + [("slice", slice(None))] * (ndim - used) + items[at + 1:]
    return items


def _in_bounds(index: np.ndarray[Any, Any], n: int, dim: int) -> np.ndarray[Any, Any]:
    """Positions with negative ones counted from the end; out of range is an IndexError."""
    bad = index[(index < -n) | (index >= n)]
    if bad.size:
        raise IndexError(f"__getitem__: index {bad.flat[0]} is out of bounds for dimension {dim} with size {n}")
    return np.where(index < 0, index + n, index)


def _sliced(y: Tensor, axis: int, s: slice, n: int) -> Tensor:
    """Step 1: a view (`slice`); a larger step: `index_select` of the positions."""
    try:
        if s.step is not None and operator.index(s.step) <= 0:
            raise ValueError("__getitem__: step must be greater than zero")
        start, stop, step = s.indices(n)
    except TypeError:
        raise TypeError(f"__getitem__: slice indices must be integers or None, got {s!r}") from None
    if step == 1:
        return _slice(y, axis, start, stop)
    if y.numel() == 0:  # no position list as long as a huge empty axis
        return _empty(y, y.shape[:axis] + [len(range(start, stop, step))] + y.shape[axis + 1:])
    return _core.index_select(y, axis, list(range(start, stop, step)))


def _basic(x: Tensor, items: list[_Item]) -> tuple[Tensor, list[_Adv]]:
    """Ints, slices and new axes applied; the advanced indices, by the axis of the result."""
    y, d, o, adv = x, 0, 0, []  # d: the axis of x, o: the same axis in y
    for kind, v in items:
        if kind in ("none", "bool"):
            y = _core.reshape(y, y.shape[:o] + [1] + y.shape[o:])
            if kind == "bool":  # a 0-d mask: index [0] (True) or [] (False) on the new axis
                adv.append((o, np.arange(int(v), dtype=np.int64)))
            o += 1
        elif kind == "mask":
            if list(v.shape) != x.shape[d:d + v.ndim]:
                raise IndexError(f"__getitem__: the shape of the mask {list(v.shape)} at index {d} does not match "
                                 f"the shape of the indexed tensor {x.shape[d:d + v.ndim]}")
            adv += [(o + j, a.astype(np.int64)) for j, a in enumerate(np.nonzero(v))]
            o, d = o + v.ndim, d + v.ndim
        elif kind == "int":
            n = x.shape[d]
            if not -n <= v < n:
                raise IndexError(f"__getitem__: index {v} is out of bounds for dimension {d} with size {n}")
            y = _core.reshape(_core.slice(y, o, v % n, v % n + 1), y.shape[:o] + y.shape[o + 1:])
            d += 1
        else:
            if kind == "array":
                adv.append((o, _in_bounds(v, x.shape[d], d)))
            else:
                y = _sliced(y, o, v, x.shape[d])
            o, d = o + 1, d + 1
    return y, adv


def _advanced_shape(shape: list[int], index: list[int], pos: list[int]) -> list[int]:
    """The result shape: the broadcast index shape in place of adjacent indexed axes, else first."""
    rest = [n for d, n in enumerate(shape) if d not in pos]
    if pos == list(range(pos[0], pos[0] + len(pos))):
        return rest[:pos[0]] + index + rest[pos[0]:]
    return index + rest


def _advanced(y: Tensor, adv: list[_Adv]) -> Tensor:
    """The broadcast advanced indices applied as one `index_select` over their merged axes."""
    try:
        shape = list(np.broadcast_shapes(*(a.shape for _, a in adv)))
    except ValueError:
        raise IndexError("__getitem__: shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + ", ".join(str(list(a.shape)) for _, a in adv)) from None
    pos = [p for p, _ in adv]
    if y.numel() == 0:  # empty: only the shape to make (the merged axes may pass 2**63)
        return _empty(y, _advanced_shape(y.shape, shape, pos))
    if len(adv) == 1 and adv[0][1].ndim == 1:
        return _core.index_select(y, pos[0], adv[0][1].tolist())
    rest = [d for d in range(y.ndim) if d not in pos]
    flat = _core.reshape(_core.permute(y, pos + rest), [math.prod(y.shape[p] for p in pos)] + [y.shape[d] for d in rest])
    lin = np.zeros(shape, dtype=np.int64)
    for p, a in adv:
        lin = lin * y.shape[p] + a  # row-major position in the merged axes
    out = _core.reshape(_core.index_select(flat, 0, lin.reshape(-1).tolist()), shape + [y.shape[d] for d in rest])
    if pos == list(range(pos[0], pos[0] + len(pos))) and pos[0] > 0:
        # Adjacent: the indexed axes go back where the first one stood (after the axes before it).
        b, k = len(shape), pos[0]
        out = _core.permute(out, list(range(b, b + k)) + list(range(b)) + list(range(b + k, out.ndim)))
    return out


def _getitem(self: Tensor, key: Any) -> Tensor:
    """`self[key]` with torch's rules (see the module docstring)."""
    items = _expand_ellipsis([_classify(k) for k in _key_items(key)], self.ndim)
    y, adv = _basic(self, items)
    if adv:
        return _advanced(y, adv)
    return _core.reshape(y, y.shape) if y is self else y  # a tensor of its own, as torch's view


def _iter(self: Tensor) -> Iterator[Tensor]:
    """The slices along the first axis, as torch iterates; a 0-d tensor has none to give (a
    TypeError, as in torch, rather than the empty iteration `__getitem__` alone would make)."""
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in range(self.shape[0]):
        yield _getitem(self, i)


def _method(name: str) -> Callable[..., Any]:
    """`x.name(*args)` as `ops.name(x, *args)`."""
    fn = getattr(ops, name)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


_FLOATS = ("float32", "float64")
# x op v for an integer x and a real v, as a comparison with an integer: (op, rounding of v).
_INT_EQUIVALENT = {"lt": ("lt", math.ceil), "le": ("le", math.floor), "gt": ("gt", math.floor),
                   "ge": ("ge", math.ceil)}


def _compare_int_with_real(self: Tensor, op: str, v: float) -> Tensor:
    """An int64 tensor against a number that is not an int64 (a fraction, ±inf, NaN, or beyond
    int64's range), exactly, as torch's promoted comparison gives: no rounding anywhere."""
    beyond = math.isinf(v) or abs(v) >= 2.0**63  # no int64 is on the other side
    if math.isnan(v) or beyond or (op in ("eq", "ne") and v != math.floor(v)):
        if math.isnan(v) or op in ("eq", "ne"):
            answer = op == "ne"
        else:
            answer = (v > 0) == (op in ("lt", "le"))
        return _core.compare("eq", self, self) if answer else _core.compare("ne", self, self)
    int_op, rounding = _INT_EQUIVALENT.get(op, (op, int))
    return _core.compare(int_op, self, _core.full([], float(rounding(v)), "int64"))


def _comparison(op: str) -> Callable[..., Any]:
    """`x op y` elementwise as a bool tensor. Operands keep their dtypes except where a promotion
    is exact: float32 with float64 (float32 widens), and an int64 tensor with a Python number
    that is not an int64 (compared exactly). int64 with a float tensor is refused."""

    def compare(self: Tensor, other: Any) -> Any:
        if isinstance(other, Tensor):
            if self.dtype != other.dtype and self.dtype in _FLOATS and other.dtype in _FLOATS:
                return _core.compare(op, self.to("float64"), other.to("float64"))
            return _core.compare(op, self, other)
        if isinstance(other, (bool, int, float, np.number)) and not isinstance(other, complex):
            v = float(other) if not isinstance(other, (int, np.integer)) or self.dtype != "int64" else other
            if self.dtype == "int64" and isinstance(v, float):
                return _compare_int_with_real(self, op, v)
            if self.dtype == "int64" and not -(2**63) <= int(v) < 2**63:
                return _compare_int_with_real(self, op, math.copysign(math.inf, int(v)))
            return _core.compare(op, self, _core.full([], float(v), self.dtype, False, self.device))
        return NotImplemented

    compare.__name__ = f"__{op}__"
    return compare


def _bool(self: Tensor) -> bool:
    """`if x:` on a one-element tensor; more elements are ambiguous (a ValueError, as in torch)."""
    if math.prod(self.shape) != 1:
        raise ValueError(f"the truth value of a tensor with {math.prod(self.shape)} elements is ambiguous "
                         "(use .any() or .all() on its NumPy array)")
    return bool(self.item())


def _index(self: Tensor) -> int:
    """A one-element int64 tensor as a Python int (`range(t)`, `x[t]`, `operator.index(t)`)."""
    if self.dtype != "int64" or math.prod(self.shape) != 1:
        raise TypeError(f"only one-element int64 tensors can be converted to an index, got a {self.dtype} "
                        f"tensor of shape {list(self.shape)}")
    return int(self.item())


def _as(dtype: str) -> Callable[[Tensor], Tensor]:
    def convert(self: Tensor) -> Tensor:
        return self.to(dtype)

    convert.__doc__ = f"This tensor as {dtype} (itself when it already is)."
    return convert


_METHODS: dict[str, Callable[..., Any]] = {
    "size": _size, "dim": _ndim, "view": _view, "flip": _flip, "__getitem__": _getitem, "__iter__": _iter,
    **{n: _method(n) for n in ("unsqueeze", "squeeze", "expand", "repeat", "roll", "chunk", "split",
                               "unbind", "narrow", "tril", "triu", "movedim")},
    **{f"__{op}__": _comparison(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    "__bool__": _bool, "__index__": _index, "long": _as("int64"), "float": _as("float32"), "double": _as("float64"), "bool": _as("bool"),
}

for _name, _fn in _METHODS.items():
    # The native class's own methods win (a later native `size` is not shadowed).
    if _name not in vars(Tensor) or getattr(vars(Tensor)[_name], "__module__", None) == __name__:
        _fn.__module__, _fn.__name__, _fn.__qualname__ = __name__, _name, f"Tensor.{_name}"
        setattr(Tensor, _name, _fn)
# Elementwise == would leave tensors unhashable: hash by identity, as torch does.
Tensor.__hash__ = object.__hash__  # type: ignore[method-assign]
