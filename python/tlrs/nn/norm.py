"""`BatchNorm1d`, `BatchNorm2d` and `LayerNorm`, as torch.nn.

Batch norm in training mode normalises with the batch's statistics and updates the running
ones (`ops.batch_norm`: running = (1 - momentum)·running + momentum·batch, unbiased variance;
momentum=None gives the cumulative average 1/num_batches_tracked, as torch); in eval mode it
uses the running statistics. num_batches_tracked is an int buffer (an int64 in state_dict).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from ._init import constant, dtype_of
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm"]


class _BatchNorm(Module):
    weight: Tensor | None
    bias: Tensor | None
    running_mean: Tensor | None
    running_var: Tensor | None
    num_batches_tracked: int | None

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: str | None = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt, shape = dtype_of(dtype), [num_features]
        if affine:
            self.weight = constant(shape, 1.0, dt, device)
            self.bias = constant(shape, 0.0, dt, device)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", constant(shape, 0.0, dt, device, parameter=False))
            self.register_buffer("running_var", constant(shape, 1.0, dt, device, parameter=False))
            self.register_buffer("num_batches_tracked", 0)
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        if self.running_mean is not None and self.running_var is not None:
            dt, dev, shape = self.running_mean.dtype, self.running_mean.device, [self.num_features]
            self.running_mean = constant(shape, 0.0, dt, dev, parameter=False)
            self.running_var = constant(shape, 1.0, dt, dev, parameter=False)
            self.num_batches_tracked = 0

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked += 1
            factor = 1.0 / self.num_batches_tracked if self.momentum is None else self.momentum
        # Batch statistics in training, or when there are no running ones to use.
        batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        # Running statistics are passed (to be used or updated) unless training without tracking.
        use_running = not self.training or self.track_running_stats
        return ops.batch_norm(input, self.running_mean if use_running else None,
                              self.running_var if use_running else None, self.weight, self.bias,
                              batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm of [N, C] or [N, C, L] inputs, per channel C."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm of [N, C, H, W] inputs, per channel C."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` axes (biased variance), then weight·x +
    bias (ones and zeros at first)."""

    weight: Tensor | None
    bias: Tensor | None

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: str | None = None, dtype: Any = None) -> None:
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self.normalized_shape, self.eps = tuple(int(d) for d in shape), eps
        self.elementwise_affine = elementwise_affine
        dt = dtype_of(dtype)
        if elementwise_affine:
            self.weight = constant(shape, 1.0, dt, device)
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = constant(shape, 0.0, dt, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return ops.layer_norm(input, list(self.normalized_shape), self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
