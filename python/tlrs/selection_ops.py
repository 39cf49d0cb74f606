"""Ops that pick positions: argmax/argmin, topk, sort, multinomial sampling and one_hot.

Indices come back as int64 tensors (what `gather`, `index_select`, `embedding` and
`cross_entropy` take; `.numpy()` gives the array). The positions are found on the host from the values
(a CUDA tensor's are copied back); `topk` and `sort` find them in the core (`ops/sort.rs`, threaded
over lanes) and take their values with `gather`, a recorded op, so the values carry gradients as
PyTorch's do. A loss that picks positions this way
reads tensor values, so the compiled backend refuses it (it would replay one trace's positions).
Ties go to the lower index (a stable order), NaN counts as larger than every number, as in
PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._core import Tensor
from .index_args import int_array

__all__ = ["argmax", "argmin", "topk", "sort", "multinomial", "one_hot"]


def _values(input: Any, op: str) -> np.ndarray[Any, Any]:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(input).__name__}")
    return np.asarray(input.numpy())


def _ints(a: Any) -> Tensor:
    """An int64 array as a tensor of its own (indices, as torch returns them)."""
    return _core.tensor_from_numpy(np.asarray(a, dtype=np.int64, order="C"), copy=True)


def _dim(dim: int, ndim: int, op: str) -> int:
    rank = max(ndim, 1)  # a 0-d tensor takes dim 0 or -1, as in PyTorch
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not -rank <= dim < rank:
        raise IndexError(f"{op}: dim {dim!r} is out of range for a tensor of {ndim} dimensions")
    return int(dim) % rank


def _order(v: np.ndarray[Any, Any], axis: int, descending: bool) -> np.ndarray[Any, Any]:
    """Stable positions sorting `v` along `axis`, NaN as the largest value."""
    nan = np.isnan(v)
    # lexsort's last key is the primary one; both sorts are stable, so ties keep index order.
    if descending:
        keys = (np.where(nan, 0, -v), ~nan)
    else:
        keys = (np.where(nan, 0, v), nan)
    moved = [np.moveaxis(k, axis, -1) for k in keys]
    return np.moveaxis(np.lexsort(moved, axis=-1), -1, axis)


def _arg_extreme(input: Tensor, dim: int | None, keepdim: bool, largest: bool, op: str) -> np.ndarray[Any, Any]:
    """NumPy's argmax/argmin: the first extreme along the axis, where the first NaN wins both
    (PyTorch's rule), and -0 ties +0."""
    v = _values(input, op)
    if v.size == 0:
        raise ValueError(f"{op}: expected a non-empty tensor, got shape {list(v.shape)}")
    pick = np.argmax if largest else np.argmin
    if dim is None:
        out = np.asarray(pick(v.reshape(-1)), dtype=np.int64)
        return out.reshape([1] * v.ndim) if keepdim else out
    axis = _dim(dim, v.ndim, op)
    if v.ndim == 0:
        return np.asarray(0, dtype=np.int64)
    if v.shape[axis] == 0:
        raise ValueError(f"{op}: cannot reduce the empty dim {dim} of shape {list(v.shape)}")
    return np.asarray(pick(v, axis=axis, keepdims=keepdim), dtype=np.int64)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the first largest value (over all elements, flattened, when `dim` is None);
    NaN counts as the largest. An int64 tensor."""
    return _ints(_arg_extreme(input, dim, keepdim, True, "argmax"))


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the first smallest value; NaN counts as the smallest here (PyTorch's rule:
    a NaN is the result of both argmax and argmin). An int64 tensor."""
    return _ints(_arg_extreme(input, dim, keepdim, False, "argmin"))


def _take_along(input: Tensor, idx: np.ndarray[Any, Any], axis: int) -> Tensor:
    if input.ndim == 0:
        return input
    return _core.gather(input, axis, idx.reshape(-1).tolist(), list(idx.shape))


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> tuple[Tensor, Tensor]:
    """The `k` largest (or smallest) values along `dim` and their indices, largest first (ties
    to the lower index; NaN counts as the largest). Values carry gradients."""
    if not isinstance(input, Tensor):
        raise TypeError(f"topk: expected a Tensor, got {type(input).__name__}")
    axis = _dim(dim, input.ndim, "topk")
    n = input.shape[axis] if input.ndim else 1
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= n:
        raise ValueError(f"topk: expected k in [0, {n}] (the size of dim {dim}), got {k!r}")
    if input.ndim and input.dtype != "bool":
        values, indices = _core.sort_along(input, axis, bool(largest), int(k))
        return values, indices
    v = _values(input, "topk")
    order = _order(v, axis, largest) if v.ndim else np.zeros((), dtype=np.int64)
    idx = np.take(order, np.arange(int(k)), axis=axis).astype(np.int64) if v.ndim else order
    return _take_along(input, idx, axis), _ints(idx)


def sort(input: Tensor, dim: int = -1, descending: bool = False,
         stable: bool = False) -> tuple[Tensor, Tensor]:
    """Values sorted along `dim` and where each came from. Always stable (ties keep their order,
    one of the answers PyTorch allows when `stable=False`); NaN sorts as the largest value."""
    if not isinstance(input, Tensor):
        raise TypeError(f"sort: expected a Tensor, got {type(input).__name__}")
    axis = _dim(dim, input.ndim, "sort")
    if input.ndim == 0:
        return input, _ints(np.zeros((), dtype=np.int64))
    if input.dtype != "bool":
        values, indices = _core.sort_along(input, axis, bool(descending))
        return values, indices
    v = _values(input, "sort")
    idx = _order(v, axis, descending).astype(np.int64)
    return _take_along(input, idx, axis), _ints(idx)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
    """Category indices drawn with probabilities proportional to each row of `input` (1-D or
    2-D, non-negative, finite, positive sum), as `torch.multinomial`. The uniforms come from the
    global seed stream (`tlrs.manual_seed`), counter-based, so a seed gives the same draws on
    every machine; each draw is the first category whose running weight (summed in float64, in
    index order) exceeds u times the row's total. Without replacement a drawn category's weight
    drops to zero for the row's next draws. An int64 tensor [rows, num_samples] (or
    [num_samples] for a 1-D input). Draws are not PyTorch's (its generator differs)."""
    p = _values(input, "multinomial").astype(np.float64)
    if p.ndim not in (1, 2):
        raise ValueError(f"multinomial: expected a 1-D or 2-D tensor of weights, got shape {list(p.shape)}")
    rows = p.reshape(1, -1) if p.ndim == 1 else p.copy()
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples <= 0:
        raise ValueError(f"multinomial: expected num_samples a positive integer, got {num_samples!r}")
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise ValueError("multinomial: expected finite, non-negative weights")
    if rows.shape[1] == 0 or (rows.sum(axis=1) <= 0).any():
        raise ValueError("multinomial: expected every row of weights to have a positive sum")
    if not replacement and (np.count_nonzero(rows, axis=1) < num_samples).any():
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from a row "
                         f"with fewer non-zero weights")
    units = _core.rand([rows.shape[0], int(num_samples)], "float64").numpy()
    out = np.empty((rows.shape[0], int(num_samples)), dtype=np.int64)
    everyone = np.arange(rows.shape[0])
    # Draw by draw, every row at once: the same running sums (each row's cumsum in index order),
    # and the first category whose running weight exceeds u·total is the count of those that
    # do not (the sums never decrease).
    for j in range(int(num_samples)):
        cdf = np.cumsum(rows, axis=1)
        hit = np.count_nonzero(cdf <= (units[:, j] * cdf[:, -1])[:, None], axis=1)
        # u * total rounds up to total at worst: take the last category with weight.
        last = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] != 0, axis=1)
        out[:, j] = np.minimum(hit, last)
        if not replacement:
            rows[everyone, out[:, j]] = 0.0
    return _ints(out[0] if p.ndim == 1 else out)


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """Integer class labels (an int64 tensor, a NumPy int array or a list) as one-hot rows: shape
    [..., num_classes] (`num_classes=-1`: the largest label + 1). An int64 tensor, as
    `torch.nn.functional.one_hot` gives; `.to('float32')` makes it a float tensor."""
    if isinstance(tensor, Tensor):
        tensor = int_array(tensor, "one_hot")
    labels = np.asarray(tensor)
    if labels.size and labels.dtype.kind not in "iu":
        raise TypeError(f"one_hot: expected integer labels, got an array of dtype {labels.dtype}")
    labels = labels.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise ValueError(f"one_hot: expected non-negative class labels, got {int(labels.min())}")
    if num_classes == -1:
        if labels.size == 0:
            raise ValueError("one_hot: cannot infer num_classes from no labels; pass num_classes")
        num_classes = int(labels.max()) + 1
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 0:
        raise ValueError(f"one_hot: expected num_classes a non-negative integer or -1, got {num_classes!r}")
    if labels.size and labels.max() >= num_classes:
        raise ValueError(f"one_hot: class label {int(labels.max())} is not below num_classes={num_classes}")
    return _ints(labels[..., None] == np.arange(int(num_classes)))
