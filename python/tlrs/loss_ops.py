"""Losses with `torch.nn.functional` names and options, re-exported by `tlrs.ops`.

The common call (`cross_entropy(logits [N, C], labels)` averaged, `mse_loss` averaged) runs one
fused native op each; the options (`reduction`, class `weight`, `ignore_index`,
`label_smoothing`, class axis 1 of [N, C, d1, ...] inputs) are composed from log_softmax,
gather and sums, following PyTorch's formulas (aten/src/ATen/native/LossNLL.cpp).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._core import Tensor

__all__ = ["cross_entropy", "mse_loss"]

REDUCTIONS = ("mean", "sum", "none")


def _reduction(reduction: str, size_average: Any, reduce: Any, what: str) -> str:
    if size_average is not None or reduce is not None:
        raise ValueError(f"{what}: size_average and reduce are deprecated in PyTorch; pass reduction= instead")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{what}: reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    return reduction


def _labels(target: Any) -> np.ndarray:
    if isinstance(target, Tensor):
        raise TypeError("cross_entropy: expected integer class labels or a float Tensor of probabilities")
    arr = np.asarray(target)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"cross_entropy: expected integer class labels, got an array of dtype {arr.dtype}")
    return arr.astype(np.int64)


def _scalar(v: float, like: Tensor) -> Tensor:
    return _core.full([], float(v), like.dtype)


def _rows(input: Tensor) -> Tensor:
    """[N, C, d1, ...] as [N·d1·..., C] (the class axis last); [N, C] as it is."""
    if input.ndim <= 2:
        return input
    order = [0, *range(2, input.ndim), 1]
    return _core.reshape(_core.permute(input, order), [-1, input.shape[1]])


def _unrows(loss: Tensor, input: Tensor) -> Tensor:
    """Per-row losses back in the shape [N, d1, ...]."""
    return loss if input.ndim <= 2 else _core.reshape(loss, [input.shape[0], *input.shape[2:]])


def cross_entropy(input: Tensor, target: Any, weight: Tensor | None = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of logits [N, C], [C] or [N, C, d1, ...] (classes on axis 1), as PyTorch.

    `target` is class indices (ints, of the input's shape without the class axis) or a float
    Tensor of probabilities of the input's shape. `weight` [C] scales each class; targets equal
    to `ignore_index` count for nothing (and not in the mean's divisor); `label_smoothing` mixes
    in the uniform distribution; `reduction` is 'mean' (over the weights of the counted
    targets), 'sum' or 'none'. A class index out of range raises IndexError.
    """
    reduction = _reduction(reduction, size_average, reduce, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if not isinstance(input, Tensor):
        raise TypeError(f"cross_entropy: expected a Tensor of logits, got {type(input).__name__}")
    if isinstance(target, Tensor):
        if weight is None and reduction == "mean" and label_smoothing == 0 and input.ndim <= 2:
            return _core.cross_entropy_probs(input, target)
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    labels = _labels(target)
    plain = (weight is None and reduction == "mean" and label_smoothing == 0 and input.ndim <= 2
             and not (labels == ignore_index).any())
    if plain:
        return _core.cross_entropy_indices(input, labels.reshape(-1).tolist())
    return _cross_entropy_labels(input, labels, weight, ignore_index, reduction, label_smoothing)


def _class_count(input: Tensor) -> int:
    if input.ndim == 0:
        raise _core.ShapeError("cross_entropy: expected logits [C], [N, C] or [N, C, d1, ...], got a 0-d tensor")
    return input.shape[0] if input.ndim == 1 else input.shape[1]


def _cross_entropy_labels(input: Tensor, labels: np.ndarray, weight: Tensor | None, ignore_index: int,
                          reduction: str, label_smoothing: float) -> Tensor:
    classes = _class_count(input)
    want = [] if input.ndim == 1 else [input.shape[0], *input.shape[2:]]
    if list(labels.shape) != want:
        raise _core.ShapeError(f"cross_entropy: expected class labels of shape {want}, got {list(labels.shape)}")
    x = _rows(input if input.ndim > 1 else _core.reshape(input, [1, classes]))
    flat = labels.reshape(-1)
    kept = flat != ignore_index
    bad = flat[kept & ((flat < 0) | (flat >= classes))]
    if bad.size:
        raise IndexError(f"cross_entropy: class index {int(bad[0])} is out of range for {classes} classes")
    safe = np.where(kept, flat, 0)
    logp = _core.log_softmax(x, 1)
    picked = _core.reshape(_core.gather(logp, 1, safe.tolist(), [safe.size, 1]), [safe.size])
    ignored = (~kept).tolist()
    rows = [safe.size]
    if weight is not None:
        if list(weight.shape) != [classes]:
            raise _core.ShapeError(f"cross_entropy: expected a weight of shape [{classes}], got {weight.shape}")
        w_t = _core.index_select(weight, 0, safe.tolist())
        nll = _core.masked_fill(_core.neg(_core.mul(w_t, picked)), ignored, rows, 0.0)
        divisor = _core.sum(_core.masked_fill(w_t, ignored, rows, 0.0), None, False)
    else:
        nll = _core.masked_fill(_core.neg(picked), ignored, rows, 0.0)
        divisor = _scalar(int(kept.sum()), x)
    loss = _reduce(nll, reduction, divisor, input)
    if label_smoothing == 0:
        return loss
    terms = logp if weight is None else _core.mul(logp, _core.reshape(weight, [1, classes]))
    smooth = _core.masked_fill(_core.neg(_core.sum(terms, 1, False)), ignored, rows, 0.0)
    smooth = _reduce(smooth, reduction, divisor, input)
    return _core.add(_core.mul(loss, _scalar(1 - label_smoothing, x)),
                     _core.mul(smooth, _scalar(label_smoothing / classes, x)))


def _reduce(per_row: Tensor, reduction: str, divisor: Tensor, input: Tensor) -> Tensor:
    if reduction == "none":
        return _unrows(per_row, input) if input.ndim > 1 else _core.reshape(per_row, [])
    total = _core.sum(per_row, None, False)
    return total if reduction == "sum" else _core.div(total, divisor)


def _cross_entropy_probs(input: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                         label_smoothing: float) -> Tensor:
    classes = _class_count(input)
    if target.shape != input.shape:
        raise _core.ShapeError(f"cross_entropy: expected probabilities of the input's shape {input.shape}, "
                               f"got {target.shape}")
    x = _rows(input if input.ndim > 1 else _core.reshape(input, [1, classes]))
    t = _rows(target if target.ndim > 1 else _core.reshape(target, [1, classes]))
    if label_smoothing > 0:
        t = _core.add(_core.mul(t, _scalar(1 - label_smoothing, x)), _scalar(label_smoothing / classes, x))
    terms = _core.mul(_core.log_softmax(x, 1), t)
    if weight is not None:
        if list(weight.shape) != [classes]:
            raise _core.ShapeError(f"cross_entropy: expected a weight of shape [{classes}], got {weight.shape}")
        terms = _core.mul(terms, _core.reshape(weight, [1, classes]))
    per_row = _core.neg(_core.sum(terms, 1, False))
    # PyTorch's mean divides by the number of rows (numel / C), weights or not.
    return _reduce(per_row, reduction, _scalar(x.shape[0], x), input)


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """(input - target) ** 2, averaged ('mean'), summed ('sum') or elementwise ('none').

    The shapes must be equal: PyTorch broadcasts different ones with a warning that the result
    is likely wrong; tlrs raises ShapeError naming both."""
    reduction = _reduction(reduction, size_average, reduce, "mse_loss")
    if reduction == "mean" or not isinstance(input, Tensor) or not isinstance(target, Tensor) \
            or input.shape != target.shape:
        mean = _core.mse_loss(input, target)  # the checks, and the fused mean
        if reduction == "mean":
            return mean
    d = _core.sub(input, target)
    sq = _core.mul(d, d)
    if reduction == "none":
        return sq
    return _core.sum(sq, None, False) if reduction == "sum" else _core.mean(sq, None, False)
