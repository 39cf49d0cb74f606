"""Activation modules over the `ops` functions, with torch.nn's names and arguments
(`inplace` is accepted and ignored: tlrs ops never write their input)."""

from __future__ import annotations

from .. import ops
from .._core import Tensor
from .module import Module

__all__ = ["ELU", "GELU", "LeakyReLU", "LogSigmoid", "LogSoftmax", "ReLU", "SiLU", "Sigmoid", "Softmax", "Softplus",
           "Tanh"]


class ReLU(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.relu(input)


class GELU(Module):
    """GELU, exact (approximate='none') or the tanh approximation (approximate='tanh')."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return ops.gelu_tanh(input) if self.approximate == "tanh" else ops.gelu(input)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return ops.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return ops.sigmoid(input)


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return ops.logsigmoid(input)


class SiLU(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.silu(input)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.elu(input, self.alpha)


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return ops.softplus(input, self.beta, self.threshold)


def _legacy_dim(ndim: int) -> int:
    """torch's implicit softmax dim (dim=None, deprecated there): 0 for 0-, 1- and 3-D inputs,
    else 1."""
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return ops.softmax(input, _legacy_dim(input.ndim) if self.dim is None else self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return ops.log_softmax(input, _legacy_dim(input.ndim) if self.dim is None else self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
