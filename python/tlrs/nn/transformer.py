"""`TransformerEncoderLayer`, as torch.nn's: self-attention then a feed-forward block, each with
a residual connection and a LayerNorm (after it, or before it with norm_first=True).

The submodules carry torch's names (self_attn, linear1, dropout, linear2, norm1, norm2,
dropout1, dropout2), so a torch layer's `state_dict` loads with strict=True, and their default
initialisations are torch's (each submodule's own). The computation is torch's reference path:

    norm_first=False: x = norm1(x + dropout1(self_attn(x))); x = norm2(x + ff(x))
    norm_first=True:  x = x + dropout1(self_attn(norm1(x))); x = x + ff(norm2(x))
    ff(x) = dropout2(linear2(dropout(activation(linear1(x)))))

Dropout in training mode draws its masks from tlrs's seeded stream (`ops.dropout`, as
`nn.Dropout` and `nn.MultiheadAttention` do): not torch's masks; eval mode (or dropout=0.0) gives
torch's outputs. Masks are `nn.MultiheadAttention`'s: src_mask boolean (True hides a key) or float
(added), src_key_padding_mask boolean [N, S]. torch's inference fast path is not reproduced (its
values agree with the reference path within rounding).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ops
from .._core import Tensor
from ._init import dtype_of
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .norm import LayerNorm

__all__ = ["TransformerEncoderLayer"]

Activation = Callable[[Tensor], Tensor]


def _activation_fn(activation: str | Activation) -> Activation:
    """The feed-forward activation: "relu" / "gelu" (exact) or any callable (a Module too)."""
    if isinstance(activation, str):
        if activation == "relu":
            return ops.relu
        if activation == "gelu":
            return ops.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"activation should be a string or a callable, got {type(activation).__name__}")
    return activation


class TransformerEncoderLayer(Module):
    """One encoder layer over src [S, N, E] ([N, S, E] with batch_first, or unbatched [S, E])."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Activation = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: str | None = None, dtype: Any = None) -> None:
        super().__init__()
        dt = dtype_of(dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            device=device, dtype=dt)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dt)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dt)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dt)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dt)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        fn = _activation_fn(activation)
        # torch's marker: 1 relu, 2 gelu, 0 anything else.
        self.activation_relu_or_gelu = 1 if activation == "relu" else 2 if activation == "gelu" else 0
        self.activation = fn  # a Module activation becomes the child "activation", as in torch

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Any, key_padding_mask: Any, is_causal: bool) -> Tensor:
        out, _ = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)
        y: Tensor = self.dropout1(out)
        return y

    def _ff_block(self, x: Tensor) -> Tensor:
        y: Tensor = self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))
        return y
