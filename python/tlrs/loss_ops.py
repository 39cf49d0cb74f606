"""Losses with `torch.nn.functional` names and options, re-exported by `tlrs.ops`.

The common call (`cross_entropy(logits [N, C], labels)` averaged, `mse_loss` averaged) runs one
fused native op each; the options (`reduction`, class `weight`, `ignore_index`,
`label_smoothing`, class axis 1 of [N, C, d1, ...] inputs) are composed from log_softmax,
gather and sums, following PyTorch's formulas (aten/src/ATen/native/LossNLL.cpp). `nll_loss`,
the binary cross-entropies and the L1 / smooth L1 / Huber losses are composed from recorded ops
the same way (PyTorch's formulas, not its bits; see each function).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._core import Tensor
from .index_args import is_int_tensor

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss", "l1_loss",
    "mse_loss", "nll_loss", "smooth_l1_loss",
]

REDUCTIONS = ("mean", "sum", "none")


def _reduction(reduction: str, size_average: Any, reduce: Any, what: str) -> str:
    if size_average is not None or reduce is not None:
        raise ValueError(f"{what}: size_average and reduce are deprecated in PyTorch; pass reduction= instead")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{what}: reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    return reduction


def _labels(target: Any, what: str = "cross_entropy") -> np.ndarray:
    if isinstance(target, Tensor):
        if target.dtype == "int64":
            return np.asarray(target.numpy())
        also = " or a float Tensor of probabilities" if what == "cross_entropy" else ""
        raise TypeError(f"{what}: expected integer class labels (an int64 Tensor, a NumPy int array or a list of "
                        f"ints){also}, got a {target.dtype} Tensor")
    arr = np.asarray(target)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"{what}: expected integer class labels, got an array of dtype {arr.dtype}")
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
    plain_options = weight is None and reduction == "mean" and label_smoothing == 0 and input.ndim <= 2
    ignore = _ignore_index(ignore_index)
    if is_int_tensor(target) and plain_options:
        # Labels stay a tensor (the record keeps it: a compiled step reads each batch's labels,
        # ignored ones included).
        return _core.cross_entropy_index_tensor(input, target, ignore)
    if isinstance(target, Tensor) and target.dtype != "int64":
        if target.dtype == "bool":
            raise TypeError("cross_entropy: expected int64 class labels or float probabilities, got a bool Tensor")
        if plain_options:
            return _core.cross_entropy_probs(input, target)
        if weight is None and reduction == "mean" and input.ndim <= 2 and target.shape == input.shape:
            # Smoothed probabilities (PyTorch's t * (1 - eps) + eps / C), then the one op.
            classes = _class_count(input)
            smoothed = _core.add(_core.mul(target, _scalar(1 - label_smoothing, input)),
                                 _scalar(label_smoothing / classes, input))
            return _core.cross_entropy_probs(input, smoothed)
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    labels = _labels(target)
    if plain_options:
        return _core.cross_entropy_indices(input, labels.reshape(-1).tolist(), ignore)
    if weight is None and reduction == "mean" and label_smoothing > 0 and not (labels == ignore_index).any():
        return _smoothed_labels(input, labels, label_smoothing)
    return _cross_entropy_labels(input, labels, weight, ignore_index, reduction, label_smoothing)


def _smoothed_labels(input: Tensor, labels: np.ndarray, label_smoothing: float) -> Tensor:
    """Label smoothing with no row ignored, averaged: cross-entropy against the smoothed
    one-hot rows (1 - eps at the label, plus eps / C everywhere), one recorded op. The same
    loss as PyTorch's (1 - eps) * nll + eps / C * (-sum of log-probabilities), rounded its own
    way."""
    x, safe, _ = _label_rows(input, labels, -1, "cross_entropy")
    return _core.cross_entropy_smoothed(x, np.ascontiguousarray(safe, dtype=np.int64), label_smoothing)


def _ignore_index(value: Any) -> int:
    """`ignore_index` as an int64 (torch's own type for it)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not -2**63 <= value < 2**63:
        raise TypeError(f"cross_entropy: ignore_index must be an int64, got {value!r}")
    return int(value)


def _class_count(input: Tensor, what: str = "cross_entropy") -> int:
    if input.ndim == 0:
        raise _core.ShapeError(f"{what}: expected an input [C], [N, C] or [N, C, d1, ...], got a 0-d tensor")
    return input.shape[0] if input.ndim == 1 else input.shape[1]


def _label_rows(input: Tensor, labels: np.ndarray, ignore_index: int, what: str
                ) -> tuple[Tensor, np.ndarray, np.ndarray]:
    """The input as rows [R, C], each row's label (0 where ignored) and which rows count."""
    classes = _class_count(input, what)
    want = [] if input.ndim == 1 else [input.shape[0], *input.shape[2:]]
    if list(labels.shape) != want:
        raise _core.ShapeError(f"{what}: expected class labels of shape {want}, got {list(labels.shape)}")
    x = _rows(input if input.ndim > 1 else _core.reshape(input, [1, classes]))
    flat = labels.reshape(-1)
    kept = flat != ignore_index
    bad = flat[kept & ((flat < 0) | (flat >= classes))]
    if bad.size:
        raise IndexError(f"{what}: class index {int(bad[0])} is out of range for {classes} classes")
    return x, np.where(kept, flat, 0), kept


def _nll_rows(logp: Tensor, safe: np.ndarray, kept: np.ndarray, weight: Tensor | None, what: str
              ) -> tuple[Tensor, Tensor]:
    """-weight[label] · logp[row, label] per row (0 where ignored), and the mean's divisor (the
    counted rows' weights, or their count)."""
    classes = logp.shape[1]
    picked = _core.reshape(_core.gather(logp, 1, safe.tolist(), [safe.size, 1]), [safe.size])
    ignored, rows = (~kept).tolist(), [safe.size]
    if weight is None:
        return _core.masked_fill(_core.neg(picked), ignored, rows, 0.0), _scalar(int(kept.sum()), logp)
    if not isinstance(weight, Tensor) or list(weight.shape) != [classes]:
        got = weight.shape if isinstance(weight, Tensor) else type(weight).__name__
        raise _core.ShapeError(f"{what}: expected a weight of shape [{classes}], got {got}")
    w_t = _core.index_select(weight, 0, safe.tolist())
    nll = _core.masked_fill(_core.neg(_core.mul(w_t, picked)), ignored, rows, 0.0)
    return nll, _core.sum(_core.masked_fill(w_t, ignored, rows, 0.0), None, False)


def _cross_entropy_labels(input: Tensor, labels: np.ndarray, weight: Tensor | None, ignore_index: int,
                          reduction: str, label_smoothing: float) -> Tensor:
    x, safe, kept = _label_rows(input, labels, ignore_index, "cross_entropy")
    classes = x.shape[1]
    logp = _core.log_softmax(x, 1)
    nll, divisor = _nll_rows(logp, safe, kept, weight, "cross_entropy")
    loss = _reduce(nll, reduction, divisor, input)
    if label_smoothing == 0:
        return loss
    ignored, rows = (~kept).tolist(), [safe.size]
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


def nll_loss(input: Tensor, target: Any, weight: Tensor | None = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities [N, C], [C] or [N, C, d1, ...] (classes on
    axis 1) at integer class labels, as PyTorch: -weight[t]·input[t] per target, ignored targets
    count for nothing; 'mean' divides by the counted targets' weights (their number without a
    weight: NaN when every target is ignored, as PyTorch)."""
    reduction = _reduction(reduction, size_average, reduce, "nll_loss")
    if not isinstance(input, Tensor):
        raise TypeError(f"nll_loss: expected a Tensor of log-probabilities, got {type(input).__name__}")
    if is_int_tensor(target) and weight is None and reduction == "mean" and input.ndim <= 2:
        # One recorded op (cross-entropy's own last step), the labels kept as its input.
        return _core.nll_loss_index_tensor(input, target, _ignore_index(ignore_index))
    x, safe, kept = _label_rows(input, _labels(target, "nll_loss"), ignore_index, "nll_loss")
    nll, divisor = _nll_rows(x, safe, kept, weight, "nll_loss")
    return _reduce(nll, reduction, divisor, input)


def _pointwise(input: Any, target: Any, what: str) -> None:
    """Both Tensors of one shape (PyTorch broadcasts different ones with a warning that the
    result is likely wrong; tlrs raises, as `mse_loss`)."""
    for name, t in (("input", input), ("target", target)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: expected {name} to be a Tensor, got {type(t).__name__}")
    if input.shape != target.shape:
        raise _core.ShapeError(f"{what}: expected a target of the input's shape {input.shape}, got {target.shape}")


def _weighted(loss: Tensor, weight: Tensor | None, what: str, same_shape: bool = False) -> Tensor:
    if weight is None:
        return loss
    if not isinstance(weight, Tensor):
        raise TypeError(f"{what}: expected weight to be a Tensor, got {type(weight).__name__}")
    if same_shape and weight.shape != loss.shape:
        raise _core.ShapeError(f"{what}: expected a weight of the input's shape {loss.shape}, got {weight.shape}")
    out = _core.mul(loss, weight)
    if out.shape != loss.shape:  # PyTorch broadcasts the weight to the input, not the other way
        raise _core.ShapeError(f"{what}: weight {weight.shape} does not broadcast to the input's shape {loss.shape}")
    return out


def _reduce_all(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    return _core.sum(loss, None, False) if reduction == "sum" else _core.mean(loss, None, False)


def _clamped_log(x: Tensor) -> Tensor:
    """log(x) no lower than -100, as PyTorch's binary_cross_entropy (so log(0) is finite)."""
    return _core.clamp(_core.log(x), -100.0, None)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    """-weight·(t·log(x) + (1 - t)·log(1 - x)) with each log clamped at -100 (PyTorch's
    formula), for probabilities x. PyTorch refuses an x outside [0, 1]; tlrs does not read the
    values (that would stop the compiled backend), so such an x gives NaN."""
    reduction = _reduction(reduction, size_average, reduce, "binary_cross_entropy")
    _pointwise(input, target, "binary_cross_entropy")
    one = _scalar(1.0, input)
    pos = _core.mul(target, _clamped_log(input))
    neg = _core.mul(_core.sub(one, target), _clamped_log(_core.sub(one, input)))
    loss = _weighted(_core.neg(_core.add(pos, neg)), weight, "binary_cross_entropy")
    return _reduce_all(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross-entropy of logits, PyTorch's stable form: (1 - t)·x - lw·log_sigmoid(x) with
    lw = 1 + (pos_weight - 1)·t (1 without pos_weight), times `weight`; both broadcast to the
    input's shape."""
    what = "binary_cross_entropy_with_logits"
    reduction = _reduction(reduction, size_average, reduce, what)
    _pointwise(input, target, what)
    if reduction == "mean" and weight is None and pos_weight is None:
        return _core.binary_cross_entropy_with_logits(input, target)  # one op, the same bits
    one = _scalar(1.0, input)
    ls = _core.logsigmoid(input)
    if pos_weight is not None:
        if not isinstance(pos_weight, Tensor):
            raise TypeError(f"{what}: expected pos_weight to be a Tensor, got {type(pos_weight).__name__}")
        lw = _core.add(_core.mul(_core.sub(pos_weight, one), target), one)
        if lw.shape != input.shape:
            raise _core.ShapeError(f"{what}: pos_weight {pos_weight.shape} does not broadcast to the input's "
                                   f"shape {input.shape}")
        ls = _core.mul(ls, lw)
    loss = _core.sub(_core.mul(_core.sub(one, target), input), ls)
    return _reduce_all(_weighted(loss, weight, what), reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|input - target|; with `weight` (of the input's shape) weight·|input - target|, whose
    'mean' divides by the weights' sum (PyTorch's). The gradient at 0 is 0 (sign(0))."""
    reduction = _reduction(reduction, size_average, reduce, "l1_loss")
    _pointwise(input, target, "l1_loss")
    if reduction == "mean" and weight is None:
        return _core.l1_loss(input, target)  # one op, the same bits
    loss = _weighted(_core.abs(_core.sub(input, target)), weight, "l1_loss", same_shape=True)
    if weight is not None and reduction == "mean":
        return _core.div(_core.sum(loss, None, False), _core.sum(weight, None, False))
    return _reduce_all(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5·z·z/beta where z = |input - target| < beta, else z - 0.5·beta (PyTorch's formula, in
    its order: one op, `smooth_l1`, at input - target); beta = 0 is the L1 loss."""
    reduction = _reduction(reduction, size_average, reduce, "smooth_l1_loss")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta >= 0:
        raise ValueError(f"smooth_l1_loss: beta must be a number >= 0, got {beta!r}")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    _pointwise(input, target, "smooth_l1_loss")
    if reduction == "mean":
        return _core.smooth_l1_loss(input, target, float(beta))  # one op, the same bits
    return _reduce_all(_core.smooth_l1(_core.sub(input, target), float(beta)), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5·z·z where z = |input - target| < delta, else delta·(z - 0.5·delta) (PyTorch's
    formula, in its order: one op, `huber`, at input - target); `weight` (of the input's shape)
    scales each element before the reduction."""
    reduction = _reduction(reduction, None, None, "huber_loss")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not delta > 0:
        raise ValueError(f"huber_loss: delta must be a number > 0, got {delta!r}")
    _pointwise(input, target, "huber_loss")
    if reduction == "mean" and weight is None:
        return _core.huber_loss(input, target, float(delta))  # one op, the same bits
    loss = _core.huber(_core.sub(input, target), float(delta))
    return _reduce_all(_weighted(loss, weight, "huber_loss", same_shape=True), reduction)
