"""`CrossEntropyLoss` and `MSELoss` as modules over `ops.cross_entropy` / `ops.mse_loss`."""

from __future__ import annotations

from typing import Any

from .. import ops
from .._core import Tensor
from .module import Module

__all__ = ["CrossEntropyLoss", "MSELoss"]


def _reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """torch's legacy size_average / reduce arguments folded into `reduction`."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


class CrossEntropyLoss(Module):
    """Cross-entropy of logits [N, C] (or [N, C, d1, ...]) against class indices or
    probabilities; `weight` [C] is a buffer, as in torch."""

    weight: Tensor | None

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.reduction = _reduction(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return ops.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                                 reduction=self.reduction, label_smoothing=self.label_smoothing)


class MSELoss(Module):
    """Mean (or summed, or elementwise) squared error."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.mse_loss(input, target, reduction=self.reduction)
