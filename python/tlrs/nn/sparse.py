"""`Embedding`: rows of a [num_embeddings, embedding_dim] table for integer indices (NumPy
int arrays, lists of ints, or integer torch tensors on the CPU), weights N(0, 1) as torch.

padding_idx: that row starts at zero and gets no gradient (its value is still looked up, as
torch). max_norm, scale_grad_by_freq and sparse gradients are not supported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core, ops
from .._core import Tensor
from ..tensor import tensor
from ._init import dtype_of, normal
from .module import Module
from .parameter import Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    weight: Tensor

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Any = None, _freeze: bool = False, device: str | None = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise ValueError("Embedding: max_norm, scale_grad_by_freq and sparse are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx, self.norm_type = padding_idx, norm_type
        dt = dtype_of(dtype)
        if _weight is not None:
            self.weight = Parameter(tensor(_weight, dtype=dt, device=device), requires_grad=not _freeze)
        elif padding_idx is None:
            self.weight = normal([num_embeddings, embedding_dim], dt, device)
        else:
            w = np.array(_core.randn([num_embeddings, embedding_dim], "float64").numpy())
            w[padding_idx] = 0.0
            self.weight = Parameter(tensor(w, dtype=dt, device=device))

    def forward(self, input: Any) -> Tensor:
        return ops.embedding(input, self._table())

    def _table(self) -> Tensor:
        """The weight, with the padding row cut off from the gradient (a detached copy of it)."""
        p, w = self.padding_idx, self.weight
        if p is None:
            return w
        n = self.num_embeddings
        return ops.concat([ops.slice(w, 0, 0, p), ops.slice(w, 0, p, p + 1).detach(), ops.slice(w, 0, p + 1, n)], 0)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"
