"""PyTorch's shape and selection functions (`torch.stack`, `split`, `flip`, `where`, ...), re-exported
by `tlrs.ops`, with torch's names, argument names and rules.

Each one is a composite of recorded tlrs ops (reshape, permute, slice, index_select, concat,
broadcast_to, masked_fill), so it has gradients, CUDA, the compiled backend and ONNX export as
those have. They only move values: the results are torch's bit for bit.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._core import Tensor
from .index_args import bool_array
from .layer_ops import masked_fill

__all__ = [
    "chunk", "expand", "flip", "movedim", "narrow", "repeat", "roll", "split", "split_with_sizes",
    "squeeze", "stack", "tril", "triu", "unbind", "unsqueeze", "where",
]


# ---- argument checks shared by the functions (and by tensor_methods) ----

def _tensor(x: Any, fn: str, what: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: expected {what} to be a Tensor, got {type(x).__name__}")
    return x


def _int(v: Any, fn: str, what: str) -> int:
    """An int (NumPy integers and 0-d integer arrays too, as torch takes them), not a bool."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{fn}: expected {what} to be an int, got bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{fn}: expected {what} to be an int, got {type(v).__name__}") from None


def _ints(v: Any, fn: str, what: str) -> list[int]:
    """An int or a sequence of ints, as a list."""
    if isinstance(v, (list, tuple)):
        return [_int(d, fn, what) for d in v]
    return [_int(v, fn, what)]


def _dim(dim: Any, rank: int, fn: str) -> int:
    """`dim` in [-rank, rank) made non-negative; a 0-d tensor takes 0 and -1, as in torch."""
    d, r = _int(dim, fn, "dim"), max(rank, 1)
    if not -r <= d < r:
        raise IndexError(f"{fn}: dimension out of range (expected to be in range of [{-r}, {r - 1}], but got {d})")
    return d % r


def _dims(dims: Any, rank: int, fn: str) -> list[int]:
    """Distinct normalised dims from an int or a sequence."""
    out = [_dim(d, rank, fn) for d in _ints(dims, fn, "dims")]
    for d in out:
        if out.count(d) > 1:
            raise ValueError(f"{fn}: dim {d} appears multiple times in the list of dims")
    return out


def _sizes(sizes: tuple[Any, ...], fn: str) -> list[int]:
    """`f(x, 2, 3)` or `f(x, (2, 3))`, as torch's size arguments."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    return [_int(s, fn, "sizes") for s in sizes]


_MAX_PIECES = 1 << 24
"""The most tensors split/chunk/unbind return: an empty tensor can have an axis of 2**40."""


def _pieces(count: int, fn: str) -> None:
    if count > _MAX_PIECES:
        raise ValueError(f"{fn}: {count} pieces is more than tlrs returns (at most 2**24)")


def _empty(x: Tensor, shape: list[int]) -> Tensor:
    """An empty result of `shape` from the empty `x`, still recorded (its gradient is empty), made
    without a position list as long as a huge empty axis."""
    return _core.reshape(_core.slice(_core.reshape(x, [-1]), 0, 0, 0), shape)


def _one_dim(input: Tensor, fn: str) -> None:
    if input.ndim == 0:
        raise ValueError(f"{fn}: expected at least a 1-dimensional tensor, got a 0-d tensor")


def _slice(x: Tensor, d: int, start: int, end: int) -> Tensor:
    """Elements start..end of axis `d`; an empty piece is taken at 0 (one starting at the end
    of the axis makes a view whose `.numpy()` the core refuses)."""
    return _core.slice(x, d, start, end) if end > start else _core.slice(x, d, 0, 0)


# ---- the functions ----

def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """`input` with a size-1 axis inserted at `dim` (in [-ndim-1, ndim])."""
    shape = _tensor(input, "unsqueeze").shape
    d = _dim(dim, len(shape) + 1, "unsqueeze")
    return _core.reshape(input, shape[:d] + [1] + shape[d:])


def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """`input` without its size-1 axes, or without those of `dim` (an int or a tuple) that have
    size 1 (others are kept, as in torch 2.x)."""
    shape = _tensor(input, "squeeze").shape
    dims = range(len(shape)) if dim is None else _dims(dim, len(shape), "squeeze")
    if not shape:
        return _core.reshape(input, [])
    drop = {d for d in dims if shape[d] == 1}
    return _core.reshape(input, [n for d, n in enumerate(shape) if d not in drop])


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors (all of one shape) joined along a new axis `dim`."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"stack: expected a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ValueError("stack: expected a non-empty list or tuple of tensors")
    first = _tensor(tensors[0], "stack", "tensors[0]").shape
    for i, t in enumerate(tensors):
        if _tensor(t, "stack", f"tensors[{i}]").shape != first:
            raise _core.ShapeError(f"stack: expected each tensor to be equal size, but got {first} at entry 0 "
                                   f"and {t.shape} at entry {i}")
    d = _dim(dim, len(first) + 1, "stack")
    return _core.concat([unsqueeze(t, d) for t in tensors], d)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Consecutive pieces along `dim` of the given sizes (which must add up to its size)."""
    _one_dim(_tensor(input, "split_with_sizes"), "split_with_sizes")
    d = _dim(dim, input.ndim, "split_with_sizes")
    sizes = _ints(split_sizes, "split_with_sizes", "split_sizes")
    if any(s < 0 for s in sizes):
        raise ValueError(f"split_with_sizes: expected non-negative split_sizes, got {sizes}")
    if sum(sizes) != input.shape[d]:
        raise _core.ShapeError(f"split_with_sizes: expected split_sizes to sum exactly to {input.shape[d]} "
                               f"(the input's size at dimension {d}), got {sizes}")
    starts = np.cumsum([0] + sizes).tolist()
    return tuple(_slice(input, d, a, b) for a, b in zip(starts[:-1], starts[1:]))


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces along `dim`: of size `split_size_or_sections` (the last one smaller) when an int,
    else of the listed sizes."""
    if isinstance(split_size_or_sections, (list, tuple)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    _one_dim(_tensor(tensor, "split"), "split")
    d = _dim(dim, tensor.ndim, "split")
    size, n = _int(split_size_or_sections, "split", "split_size"), tensor.shape[d]
    if size < 0 or (size == 0 and n > 0):
        raise ValueError(f"split: expected split_size >= 0 (0 only for a dimension of size 0), got {size} "
                         f"for a dimension of size {n}")
    if n == 0:
        return (_slice(tensor, d, 0, 0),)  # one empty piece, as torch
    _pieces(-(-n // size), "split")
    return tuple(_slice(tensor, d, a, min(a + size, n)) for a in range(0, n, size))


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """`split` into pieces of ceil(size / chunks) (so possibly fewer than `chunks` pieces; an
    empty dimension gives `chunks` empty ones), as torch."""
    _one_dim(_tensor(input, "chunk"), "chunk")
    n_chunks = _int(chunks, "chunk", "chunks")
    if n_chunks <= 0:
        raise ValueError(f"chunk: expected chunks to be greater than 0, got {n_chunks}")
    d = _dim(dim, input.ndim, "chunk")
    n = input.shape[d]
    if n == 0:
        _pieces(n_chunks, "chunk")
        return split_with_sizes(input, [0] * n_chunks, d)
    return split(input, -(-n // n_chunks), d)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along `dim`, that axis removed."""
    if _tensor(input, "unbind").ndim == 0:
        raise IndexError("unbind: dimension specified as 0 but the tensor has no dimensions")
    d = _dim(dim, input.ndim, "unbind")
    rest = input.shape[:d] + input.shape[d + 1:]
    _pieces(input.shape[d], "unbind")
    return tuple(_core.reshape(_core.slice(input, d, i, i + 1), rest) for i in range(input.shape[d]))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """`length` elements from `start` (negative counts from the end) along `dim`; out of range is
    an error, not clamped."""
    if _tensor(input, "narrow").ndim == 0:
        raise ValueError("narrow: cannot be applied to a 0-dim tensor")
    d = _dim(dim, input.ndim, "narrow")
    n, s, k = input.shape[d], _int(start, "narrow", "start"), _int(length, "narrow", "length")
    if not -n <= s <= n:
        raise IndexError(f"narrow: start out of range (expected to be in range of [{-n}, {n}], but got {s})")
    s = s + n if s < 0 else s
    if k < 0:
        raise ValueError(f"narrow: length must be non-negative, got {k}")
    if s + k > n:
        raise IndexError(f"narrow: start ({s}) + length ({k}) exceeds dimension size ({n})")
    return _slice(input, d, s, s + k)


def flip(input: Tensor, dims: int | Sequence[int]) -> Tensor:
    """`input` with the order of elements reversed along each of `dims`."""
    y = _tensor(input, "flip")
    for d in _dims(dims, input.ndim, "flip"):
        if input.ndim > 0 and input.numel() > 0:  # an empty tensor is its own flip
            y = _core.index_select(y, d, list(range(input.shape[d] - 1, -1, -1)))
    return _core.reshape(y, input.shape)  # a tensor of its own also when nothing flips


def _roll1(x: Tensor, shift: int, d: int) -> Tensor:
    """Rolled by `shift` along `d`: the last `shift` elements (mod the size) come first."""
    n = x.shape[d]
    s = shift % n if n else 0
    if s == 0:
        return x
    return _core.concat([_core.slice(x, d, n - s, n), _core.slice(x, d, 0, n - s)], d)


def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted along `dims` (over the flattened tensor when None), wrapping around."""
    sh = _ints(shifts, "roll", "shifts")
    if not sh:
        raise ValueError("roll: `shifts` required")
    if dims is None:
        if len(sh) != 1:
            raise ValueError(f"roll: shifts and dims must align (shifts: {len(sh)}, dims: 0)")
        flat = _core.reshape(_tensor(input, "roll"), [-1])
        return _core.reshape(_roll1(flat, sh[0], 0), input.shape)
    if _tensor(input, "roll").ndim == 0:
        raise IndexError("roll: dimension specified but the tensor has no dimensions")
    ds = [_dim(d, input.ndim, "roll") for d in _ints(dims, "roll", "dims")]
    if len(ds) != len(sh):
        raise ValueError(f"roll: shifts and dims must align (shifts: {len(sh)}, dims: {len(ds)})")
    y = input
    for s, d in zip(sh, ds):
        y = _roll1(y, s, d)
    return _core.reshape(y, input.shape)


def _triangle(input: Tensor, diagonal: int, fn: str, lower: bool) -> Tensor:
    """0.0 (positive) off the kept triangle of the last two axes; the kept part keeps its bits."""
    if _tensor(input, fn).ndim < 2:
        raise ValueError(f"{fn}: input tensor must have at least 2 dimensions, got shape {input.shape}")
    m, n = input.shape[-2:]
    if input.numel() == 0:
        return _empty(input, input.shape)  # no mask as wide as a huge empty axis
    k = min(max(_int(diagonal, fn, "diagonal"), -m - 1), n + 1)  # clamped: no NumPy overflow
    diff = np.arange(n)[None, :] - np.arange(m)[:, None]  # column - row
    return masked_fill(input, diff > k if lower else diff < k, 0.0)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two axes (column - row <= diagonal); the rest +0.0."""
    return _triangle(input, diagonal, "tril", lower=True)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two axes (column - row >= diagonal); the rest +0.0."""
    return _triangle(input, diagonal, "triu", lower=False)


def _where_operand(v: Any, like: Tensor, what: str) -> Tensor:
    if isinstance(v, Tensor):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            value = float(v)
        except OverflowError:
            raise ValueError(f"where: {what} {v} does not fit a float") from None
        return _core.full([], value, like.dtype, device=like.device)  # a number takes the tensor's dtype
    raise TypeError(f"where: expected {what} to be a Tensor or a number, got {type(v).__name__}")


def where(condition: Any, input: Tensor | float, other: Tensor | float) -> Tensor:
    """`input` where `condition` (a bool Tensor, a NumPy bool array or a list of bools) is True,
    else `other`, all three broadcast together; either value may be a number."""
    cond = bool_array(condition, "where")
    like = input if isinstance(input, Tensor) else other
    if not isinstance(like, Tensor):
        raise TypeError("where: expected input or other to be a Tensor, got two numbers")
    a, b = _where_operand(input, like, "input"), _where_operand(other, like, "other")
    if a.dtype != b.dtype:  # torch promotes float32 with float64 to float64 (exactly)
        a, b = a.to("float64"), b.to("float64")
    try:
        shape = list(np.broadcast_shapes(cond.shape, tuple(a.shape), tuple(b.shape)))
    except ValueError:
        raise _core.ShapeError(f"where: condition {list(cond.shape)}, input {a.shape} and other {b.shape} "
                               "do not broadcast together") from None
    cond = np.broadcast_to(cond, shape)
    # One tensor of the whole shape and a number (where(mask, scores, -inf)): one masked_fill,
    # the same values and gradient as the general form below, in one pass.
    if isinstance(input, Tensor) and not isinstance(other, Tensor) and list(a.shape) == shape:
        return masked_fill(a, ~cond, float(b))
    if isinstance(other, Tensor) and not isinstance(input, Tensor) and list(b.shape) == shape:
        return masked_fill(b, cond, float(a))
    # x + (-0.0) is x bit for bit (-0.0 and NaN too), so each side keeps every bit where selected.
    a, b = _core.broadcast_to(a, shape), _core.broadcast_to(b, shape)
    return _core.add(masked_fill(a, ~cond, -0.0), masked_fill(b, cond, -0.0))


def expand(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """A broadcast view of `input` at `sizes` (more leading axes allowed; -1 keeps a size)."""
    shape, want = _tensor(input, "expand").shape, _sizes(sizes, "expand")
    lead = len(want) - len(shape)
    if lead < 0:
        raise _core.ShapeError(f"expand: the number of sizes provided ({len(want)}) must be greater or equal "
                               f"to the number of dimensions in the tensor ({len(shape)})")
    target = []
    for i, s in enumerate(want):
        have = shape[i - lead] if i >= lead else None
        if s == -1 and have is not None:
            s = have
        if s < 0 or (have is not None and have != 1 and have != s):
            raise _core.ShapeError(f"expand: the expanded size {want[i]} does not fit the existing size "
                                   f"{have} at dimension {i} (target sizes {want}, tensor sizes {shape})")
        target.append(s)
    try:
        return _core.broadcast_to(input, target)
    except _core.ShapeError as e:  # a shape too large to address: name this function
        raise _core.ShapeError(f"expand: {e}") from None


def repeat(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """`input` tiled `sizes[i]` times along each axis (more leading axes allowed)."""
    shape, reps = _tensor(input, "repeat").shape, _sizes(sizes, "repeat")
    if len(reps) < len(shape):
        raise _core.ShapeError(f"repeat: the number of repeats ({len(reps)}) can not be smaller than the "
                               f"number of dimensions of the tensor ({len(shape)})")
    if any(r < 0 for r in reps):
        raise ValueError(f"repeat: expected non-negative repeats, got {reps}")
    shape = [1] * (len(reps) - len(shape)) + shape
    # [1, s0, 1, s1, ...] broadcast to [r0, s0, r1, s1, ...] and merged pairwise: tile order.
    x = _core.reshape(input, [v for s in shape for v in (1, s)])
    try:
        x = _core.broadcast_to(x, [v for r, s in zip(reps, shape) for v in (r, s)])
    except _core.ShapeError as e:  # a shape too large to address: name this function
        raise _core.ShapeError(f"repeat: {e}") from None
    return _core.reshape(x, [r * s for r, s in zip(reps, shape)])


def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """`input` with axes `source` moved to positions `destination`, the others in their order."""
    rank = _tensor(input, "movedim").ndim
    src, dst = _ints(source, "movedim", "source"), _ints(destination, "movedim", "destination")
    if len(src) != len(dst):
        raise ValueError(f"movedim: source ({len(src)} dims) and destination ({len(dst)} dims) must "
                         "contain the same number of dims")
    src = [_dim(d, rank, "movedim") for d in src]
    dst = [_dim(d, rank, "movedim") for d in dst]
    for what, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise ValueError(f"movedim: repeated dim in `{what}` ({ds})")
    if rank == 0:
        return _core.reshape(input, [])
    order: list[int | None] = [None] * rank
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    return _core.permute(input, [next(rest) if o is None else o for o in order])
