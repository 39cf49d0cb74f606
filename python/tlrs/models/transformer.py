"""The reference transformer block: attention then layer norm, no residual, no FFN."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from ..module import ModuleDef
from . import _common as c

__all__ = ["transformer_block"]

Model = tuple[ModuleDef, Callable[[Sequence[Tensor], Any], Tensor]]
_NAMES = ("attn.wq", "attn.wk", "attn.wv", "attn.wo", "norm.weight", "norm.bias")
LN_EPS = 1e-6


def transformer_block(batch: int, n: int, d_model: int, num_heads: int, head_dim: int,
                      seed_w: int = 0, seed_gamma: int = 0, seed_beta: int = 0, *,
                      dtype: Any = "float64") -> Model:
    """The reference `transformerBlock`: `[batch, n, d_model] → [batch, n, d_model]`.

    Multi-head scaled dot-product self-attention (no mask; scores scaled by 1/√head_dim), then
    layer norm over the last axis (ε = 1e-6). **No residual connection and no feed-forward
    sublayer**, as in the reference. MSE loss against a target of the output's shape.
    Params `attn.wq, attn.wk, attn.wv [d_model, heads·head_dim], attn.wo [heads·head_dim,
    d_model], norm.weight [d_model] (ones), norm.bias [d_model] (zeros)`; the four weights are
    Xavier-uniform from the LCG with seeds seed_w, seed_w+1, seed_w+2, seed_w+3.
    The input already has the reference's `batch` axis; one further leading axis is accepted.
    Raises: ValueError: a non-positive size or a negative seed.
    """
    m = "transformer_block"
    batch, n, d_model = c.dim(m, "batch", batch), c.dim(m, "n", n), c.dim(m, "d_model", d_model)
    num_heads, head_dim = c.dim(m, "num_heads", num_heads), c.dim(m, "head_dim", head_dim)
    seed_w = c.nat(m, "seed_w", seed_w)
    c.nat(m, "seed_gamma", seed_gamma)
    c.nat(m, "seed_beta", seed_beta)
    dtype = c.dtype_name(dtype)
    inner = num_heads * head_dim
    # The reference calls xavierW(outDim = d_model, inDim = inner) for Wq/Wk/Wv and the
    # reverse for Wo; the bound is symmetric, so only the stream (seed) order matters.
    init = [c.xavier([d_model, inner], seed_w + i, inner, d_model, dtype) for i in range(3)]
    init += [c.xavier([inner, d_model], seed_w + 3, d_model, inner, dtype),
             c.ones([d_model], dtype), c.zeros([d_model], dtype)]
    shapes = [list(t.shape) for t in init]
    shape = [batch, n, d_model]

    def predict(params: Sequence[Tensor], x: Any) -> Tensor:
        wq, wk, wv, wo, gamma, beta = c.check_params(m, params, shapes)
        x = c.as_input(x, params)
        outer = x.shape[0] if c.batched(m, x, shape) else None
        x3 = x if outer is None else ops.reshape(x, [outer * batch, n, d_model])
        y = ops.multi_head_attention(x3, wq, wk, wv, wo, num_heads)
        y = ops.layer_norm(y, d_model, gamma, beta, eps=LN_EPS)
        return y if outer is None else ops.reshape(y, [outer, *shape])

    defn = c.module_def(m, _NAMES, init, shape, shape, predict, "mse")
    return defn, predict
