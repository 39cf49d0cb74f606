"""`MultiheadAttention` as torch.nn's: packed input projection `in_proj_weight` [3E, E] and
`in_proj_bias`, output projection `out_proj`, the same parameter names and initialisation
(Xavier-uniform in_proj_weight, zero biases), inputs [L, N, E] (or [N, L, E] with
batch_first, or unbatched [L, E]), returns (output, attention weights averaged over heads or
None).

Computed as torch's reference path: q scaled by sqrt(1/head_dim), softmax(q k^T + mask) v.
Masks: attn_mask boolean (True hides a key) or float (added), [L, S] or [N·heads, L, S];
key_padding_mask boolean [N, S]. Not supported: kdim/vdim other than embed_dim, add_bias_kv,
add_zero_attn.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import ops
from .._core import Tensor
from ..tensor import tensor
from ._init import constant, dtype_of, uniform
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


def _mask_array(mask: Any) -> tuple[np.ndarray, bool]:
    """(mask as an array, whether it is boolean); a tlrs or torch tensor is read as NumPy."""
    arr = np.asarray(mask.detach().cpu() if hasattr(mask, "detach") else mask)
    return arr, arr.dtype == np.bool_


class MultiheadAttention(Module):
    in_proj_weight: Tensor
    in_proj_bias: Tensor | None

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: str | None = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if add_bias_kv or add_zero_attn or kdim not in (None, embed_dim) or vdim not in (None, embed_dim):
            raise ValueError("MultiheadAttention: add_bias_kv, add_zero_attn and kdim/vdim other than "
                             "embed_dim are not supported")
        if embed_dim % num_heads != 0:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.dropout, self.batch_first = dropout, batch_first
        dt = dtype_of(dtype)
        # torch: xavier_uniform_ over [3E, E] (fan_in E, fan_out 3E).
        self.in_proj_weight = uniform([3 * embed_dim, embed_dim], math.sqrt(6.0 / (4 * embed_dim)), dt, device)
        if bias:
            self.in_proj_bias = constant([3 * embed_dim], 0.0, dt, device)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dt)
        if bias:
            self.out_proj.bias = constant([embed_dim], 0.0, dt, device)

    def _project(self, x: Tensor, i: int) -> Tensor:
        """The i-th (q, k, v) slice of the packed projection applied to x."""
        e = self.embed_dim
        w = ops.slice(self.in_proj_weight, 0, i * e, (i + 1) * e)
        b = None if self.in_proj_bias is None else ops.slice(self.in_proj_bias, 0, i * e, (i + 1) * e)
        return ops.linear(x, w, b)

    def _heads(self, x: Tensor, n: int) -> Tensor:
        """[L, N, E] -> [N·heads, L, head_dim]."""
        return ops.transpose(ops.reshape(x, [x.shape[0], n * self.num_heads, self.head_dim]), 0, 1)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        unbatched = query.ndim == 2
        if unbatched:  # one sequence: a batch of one
            query, key, value = (ops.reshape(t, [t.shape[0], 1, t.shape[1]]) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = np.asarray(key_padding_mask)[None]
        elif self.batch_first:
            query, key, value = (ops.transpose(t, 0, 1) for t in (query, key, value))
        tgt, n, s = query.shape[0], query.shape[1], key.shape[0]
        if is_causal and attn_mask is None:
            attn_mask = np.triu(np.ones((tgt, s), dtype=bool), 1)
        q = self._heads(self._project(query, 0), n)
        k, v = self._heads(self._project(key, 1), n), self._heads(self._project(value, 2), n)
        scores = ops.matmul(q * math.sqrt(1.0 / self.head_dim), ops.transpose(k, 1, 2))  # torch's scaling
        scores = self._masked(scores, attn_mask, key_padding_mask, n)
        weights = ops.dropout(ops.softmax(scores, -1), self.dropout, self.training)
        out = ops.reshape(ops.transpose(ops.matmul(weights, v), 0, 1), [tgt, n, self.embed_dim])
        out = self.out_proj(out)
        out = ops.reshape(out, [tgt, self.embed_dim]) if unbatched else out
        if self.batch_first and not unbatched:
            out = ops.transpose(out, 0, 1)
        if not need_weights:
            return out, None
        w = ops.reshape(weights, [n, self.num_heads, tgt, s])
        w = ops.mean(w, 1) if average_attn_weights else w
        return out, (ops.reshape(w, w.shape[1:]) if unbatched else w)

    def _masked(self, scores: Tensor, attn_mask: Any, key_padding_mask: Any, n: int) -> Tensor:
        """Scores [N·heads, L, S] with the masks applied: -inf where hidden, floats added."""
        if attn_mask is not None:
            arr, is_bool = _mask_array(attn_mask)
            scores = ops.masked_fill(scores, arr, float("-inf")) if is_bool else \
                scores + tensor(arr, dtype=scores.dtype, device=scores.device)
        if key_padding_mask is not None:
            arr, is_bool = _mask_array(key_padding_mask)
            if not is_bool:
                raise TypeError("MultiheadAttention: key_padding_mask must be boolean")
            s = scores.shape
            hidden = np.repeat(arr[:, None, None, :], self.num_heads, axis=1)  # [N, heads, 1, S]
            grid = ops.reshape(scores, [n, self.num_heads, s[1], s[2]])
            scores = ops.reshape(ops.masked_fill(grid, hidden, float("-inf")), s)
        return scores

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
