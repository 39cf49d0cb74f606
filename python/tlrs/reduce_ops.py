"""Reductions with `torch` names and arguments: `logsumexp`, `var`, `std`, `amin`, `min`, `prod`.
Over one axis, `logsumexp`, `var` and `prod` are recorded ops of their own (one pass per row on
the CPU; PyTorch's gradient formulas for the first two, the product rule down prod's halving
tree for the third; prod over all elements too, as one flattened axis); the rest, and several
axes, compose recorded ops, so everything has gradients, CUDA, the compiled backend and ONNX.

Values follow PyTorch's formulas, not its bits: `var` is the two-pass sum of squared
deviations over (N - correction) where PyTorch runs Welford's algorithm, and `prod` multiplies
pairwise (halving the axis) where PyTorch folds in its own vectorised order. `amin`/`min` are
the negated maximum of the negation, so their values are exactly PyTorch's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._core import Tensor

__all__ = ["amin", "logsumexp", "min", "prod", "std", "var"]

Dims = int | Sequence[int] | None


def _tensor(input: Any, what: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{what}: expected a Tensor, got {type(input).__name__}")
    return input


def _axes(input: Tensor, dim: Dims, what: str) -> list[int]:
    """The reduced axes, non-negative, each once, increasing; every axis for None or () (as
    PyTorch); a 0-d tensor's one pseudo-axis is dim 0 or -1 and reduces nothing."""
    if dim is None:
        return list(range(input.ndim))
    dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    rank = max(input.ndim, 1)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{what}: expected dim to be an int or a sequence of ints, got {dim!r}")
        if not -rank <= d < rank:
            raise IndexError(f"{what}: dim {int(d)} is out of range for a tensor of {input.ndim} dimensions")
    norm = sorted({int(d) % rank for d in dims})
    if len(norm) != len(dims):
        raise ValueError(f"{what}: dim {list(dims)} names an axis twice")
    if input.ndim == 0:
        return []
    return norm if dims else list(range(input.ndim))


def _reduce(fn: Any, input: Tensor, axes: list[int], keepdim: bool) -> Tensor:
    """`fn(x, axis, keepdim)` over each axis, from the last (so the others keep their numbers)."""
    for a in reversed(axes):
        input = fn(input, a, keepdim)
    return input


def _squeeze(input: Tensor, axes: list[int]) -> Tensor:
    return _core.reshape(input, [s for i, s in enumerate(input.shape) if i not in axes])


def _count(input: Tensor, axes: list[int]) -> int:
    return int(np.prod([input.shape[a] for a in axes], dtype=np.int64))


def logsumexp(input: Tensor, dim: Dims, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over `dim` (an int or a sequence; None for all), shifted by the
    maximum: m + log(sum(exp(x - m))). As in PyTorch an infinite maximum shifts by 0 instead
    (here by the largest finite number, the same result): a row of -inf gives -inf, one holding
    +inf gives +inf; an empty one -inf. One recorded op with PyTorch's gradient g·exp(x - out);
    over several axes its forward composes max, exp, sum and log axis by axis (each fold runs
    across the lanes of the others)."""
    x = _tensor(input, "logsumexp")
    axes = _axes(x, dim, "logsumexp")
    if not axes:
        return x  # a 0-d tensor: log(exp(x)) is x
    if _count(x, axes) == 0:  # log(0) = -inf, as PyTorch; the (empty) sum keeps the graph
        return _core.add(_reduce(_core.sum, x, axes, keepdim), _core.full([], -math.inf, x.dtype))
    return _core.logsumexp(x, axes, keepdim)


def _correction(correction: float | None, unbiased: bool | None, what: str) -> float:
    if unbiased is not None:
        if correction is not None:
            raise ValueError(f"{what}: pass either correction or unbiased, not both")
        return 1.0 if unbiased else 0.0
    if correction is None:
        return 1.0
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{what}: expected correction to be a number, got {correction!r}")
    return float(correction)


def _var(input: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: float | None, what: str) -> Tensor:
    # torch.var(x, unbiased) and torch.var(x, dim, unbiased, keepdim): a bool where dim goes.
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"{what}: expected dim to be an int or a sequence of ints, got {dim!r}")
        dim, unbiased = None, dim
    x = _tensor(input, what)
    c = _correction(correction, unbiased, what)
    axes = _axes(x, dim, what)
    n = _count(x, axes)
    if n > 0 and axes:
        # One recorded op, PyTorch's gradient. Over several axes its forward folds one axis
        # after another (each fold runs across the lanes of the others, where one fold over
        # them all would wait on every add).
        return _core.var(x, axes, c, keepdim)
    mean = _core.div(_reduce(_core.sum, x, axes, True), _core.full([], float(n), x.dtype, device=x.device))
    d = _core.sub(x, mean)
    ss = _reduce(_core.sum, _core.mul(d, d), axes, keepdim)
    # PyTorch divides by max(0, N - correction): 0/0 is NaN, x/0 is inf.
    return _core.div(ss, _core.full([], max(0.0, n - c), x.dtype, device=x.device))


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Variance over `dim` (None or () for all): sum((x - mean)²) / max(0, N - correction), with
    correction 1 by default (Bessel's); `unbiased=False` is correction 0 (torch's older
    signature, also `var(x, False)`)."""
    return _var(input, dim, unbiased, keepdim, correction, "var")


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """sqrt(var(...)), the same arguments. Where the deviation is 0 the gradient is NaN
    (sqrt's infinite slope times 0); PyTorch gives 0 there."""
    return _core.sqrt(_var(input, dim, unbiased, keepdim, correction, "std"))


def amin(input: Tensor, dim: Dims = (), keepdim: bool = False) -> Tensor:
    """Minimum over `dim` (() or None for all) as -max(-x): exactly PyTorch's values (NaN
    propagates, -0 beats +0). The gradient goes to the first minimum (PyTorch's amin splits
    it evenly between ties)."""
    x = _tensor(input, "amin")
    return _negated_max(x, _axes(x, dim, "amin"), keepdim, "amin")


def _negated_max(x: Tensor, axes: list[int], keepdim: bool, what: str) -> Tensor:
    if not axes:
        return x
    if _count(x, axes) == 0:
        raise _core.ShapeError(f"{what}: cannot reduce an empty tensor of shape {x.shape} (it has no minimum)")
    return _core.neg(_reduce(_core.max, _core.neg(x), axes, keepdim))


def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """The minimum of all elements, or along the int `dim` (values only: PyTorch's
    `min(x, dim)` also returns the indices); `min(input, other)` with a tensor is `minimum`."""
    x = _tensor(input, "min")
    if isinstance(dim, Tensor):
        return _core.minimum(x, dim)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))):
        raise TypeError(f"min: expected dim to be an int, got {dim!r}")
    return _negated_max(x, _axes(x, dim, "min"), keepdim and dim is not None, "min")


def _prod_axis(x: Tensor, axis: int, keepdim: bool) -> Tensor:
    """Product along one axis by halving: x[:h] * x[h:2h], and the odd last slice carried on
    (log2(n) recorded multiplications; the gradient is the chain rule's, zeros included)."""
    n = x.shape[axis]
    if n == 0:  # the empty product is 1; the (empty) sum keeps the graph
        return _core.add(_core.sum(x, axis, keepdim), _core.full([], 1.0, x.dtype))
    while n > 1:
        h = n // 2
        pair = _core.mul(_core.slice(x, axis, 0, h), _core.slice(x, axis, h, 2 * h))
        x = pair if n % 2 == 0 else _core.concat([pair, _core.slice(x, axis, 2 * h, n)], axis)
        n = x.shape[axis]
    return x if keepdim else _squeeze(x, [axis])


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: str | None = None) -> Tensor:
    """The product of all elements, or along the int `dim`; `dtype` casts the input first."""
    x = _tensor(input, "prod")
    if dtype is not None:
        x = x.to(dtype)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))):
        raise TypeError(f"prod: expected dim to be an int, got {dim!r}")
    axes = _axes(x, dim, "prod")
    if not axes:
        return x
    if _count(x, axes) == 0:
        return _prod_axis(_core.reshape(x, [-1]) if dim is None else x, 0 if dim is None else axes[0],
                          keepdim and dim is not None)
    # One recorded op: the halving tree in place, its gradient back down the tree.
    return _core.prod(x, None if dim is None else axes[0], keepdim and dim is not None)
