"""Transformers written with `tlrs.nn`, as a PyTorch user writes them: a pre-LayerNorm block
(`scaled_dot_product_attention`, causal or not, and a GELU MLP), a character-level GPT in the
nanoGPT layout and a small vision transformer. `tlrs run gpt` and `tlrs run vit` train them; the
definitions for the runtime come from `nn.to_module_def` with int64 token ids and labels
(docs/integer-tensors.md).

Parameter names follow nanoGPT (`wte`, `wpe`, `h.0.c_attn`, ..., `lm_head` tied to `wte`) and
timm's ViT (`patch_embed`, `cls_token`, `pos_embed`, `blocks`, `norm`, `head`) closely enough to
read a state_dict at a glance; initial values come from tlrs's seeded stream (`tlrs.manual_seed`,
`--seed`), not torch's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import nn, ops
from .._core import Tensor
from ..autograd import no_grad
from ..module_def import ModuleDef
from ..tensor import arange, randn, zeros

__all__ = ["GPT", "VIT_POOLS", "Block", "GPTConfig", "ViT", "ViTConfig", "classify_loss",
           "generate", "gpt_module_def", "lm_loss", "vit_module_def"]

VIT_POOLS = ("cls", "mean")
INIT_STD = 0.02  # nanoGPT's and timm's scale for embeddings and the class token


def _check_sizes(what: str, **sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{what}: {name} must be a positive int, got {value!r}")


class Block(nn.Module):
    """Pre-LayerNorm transformer block: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))`; the
    attention is `scaled_dot_product_attention` over `heads` heads (`causal`: each position sees
    itself and the positions before it), the MLP `d -> mlp_ratio·d -> d` with GELU."""

    def __init__(self, d: int, heads: int, *, causal: bool, mlp_ratio: int = 4, dtype: Any = None) -> None:
        super().__init__()
        _check_sizes("Block", d=d, heads=heads, mlp_ratio=mlp_ratio)
        if d % heads:
            raise ValueError(f"Block: the width {d} is not a multiple of the {heads} heads")
        self.heads, self.causal = heads, causal
        self.ln_1 = nn.LayerNorm(d, dtype=dtype)
        self.c_attn = nn.Linear(d, 3 * d, dtype=dtype)
        self.c_proj = nn.Linear(d, d, dtype=dtype)
        self.ln_2 = nn.LayerNorm(d, dtype=dtype)
        self.c_fc = nn.Linear(d, mlp_ratio * d, dtype=dtype)
        self.mlp_proj = nn.Linear(mlp_ratio * d, d, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = ops.split(self.c_attn(self.ln_1(x)), c, 2)
        q, k, v = (ops.transpose(ops.reshape(z, [b, t, self.heads, c // self.heads]), 1, 2) for z in (q, k, v))
        y = ops.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.c_proj(ops.reshape(ops.transpose(y, 1, 2), [b, t, c]))
        out: Tensor = x + self.mlp_proj(ops.gelu(self.c_fc(self.ln_2(x))))
        return out


# --- GPT ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GPTConfig:
    """A character GPT's sizes: `vocab` symbols, a context of `block` positions, width `d_model`,
    `heads` attention heads, `layers` blocks; parameters in `dtype`."""

    vocab: int
    block: int = 32
    d_model: int = 48
    heads: int = 4
    layers: int = 2
    dtype: str = "float32"

    def param_shapes(self) -> list[tuple[int, ...]]:
        """The parameter shapes, in `GPT(config).parameters()` order (the tied head once)."""
        d = self.d_model
        block = [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
        return [(self.vocab, d), (self.block, d), *block * self.layers, (d,), (d,)]


class GPT(nn.Module):
    """nanoGPT's layout: token and position embeddings, `layers` causal pre-LN blocks, a final
    LayerNorm and a language-model head tied to the token embedding (`lm_head.weight is
    wte.weight`). `forward(idx)`: int64 ids [B, T] (T <= block) -> logits [B, T, vocab]."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        c = config
        _check_sizes("GPT", vocab=c.vocab, block=c.block, d_model=c.d_model, heads=c.heads, layers=c.layers)
        self.config = c
        self.wte = nn.Embedding(c.vocab, c.d_model, dtype=c.dtype)
        self.wte.weight = nn.Parameter(randn(c.vocab, c.d_model, dtype=c.dtype) * INIT_STD)
        self.wpe = nn.Embedding(c.block, c.d_model, dtype=c.dtype)
        self.h = nn.ModuleList([Block(c.d_model, c.heads, causal=True, dtype=c.dtype) for _ in range(c.layers)])
        self.ln_f = nn.LayerNorm(c.d_model, dtype=c.dtype)
        self.lm_head = nn.Linear(c.d_model, c.vocab, bias=False, dtype=c.dtype)
        self.lm_head.weight = self.wte.weight  # weight tying, as nanoGPT

    def forward(self, idx: Tensor) -> Tensor:
        x = self.wte(idx) + self.wpe(arange(idx.shape[1], dtype="int64"))
        for block in self.h:
            x = block(x)
        logits: Tensor = self.lm_head(self.ln_f(x))
        return logits


def lm_loss(model: GPT, x: Tensor, y: Tensor) -> Tensor:
    """Mean next-token cross-entropy of `model(x)` against the int64 targets `y` (both [B, T])."""
    logits = model(x)
    return ops.cross_entropy(ops.reshape(logits, [-1, logits.shape[-1]]), ops.reshape(y, [-1]))


def _per_sample(fn: Any, rank: int) -> Any:
    """`fn(model, *inputs)` for inputs given with a batch axis or, where the first input has
    `rank` axes, per sample: those get a batch axis of one (dropped again from a non-scalar
    output)."""
    def call(model: Any, *xs: Tensor) -> Tensor:
        if xs[0].ndim != rank:
            out: Tensor = fn(model, *xs)
            return out
        out = fn(model, *(ops.unsqueeze(x, 0) for x in xs))
        return out if out.ndim == 0 else ops.squeeze(out, 0)
    return call


def _forward(model: Any, x: Tensor) -> Tensor:
    out: Tensor = model(x)
    return out


def gpt_module_def(model: GPT, batch: int | None) -> ModuleDef:
    """The runtime definition of `lm_loss` over `model`'s parameters, inputs int64 ids and
    targets [batch, block] (graph inputs of the compiled backend); with batch None, per-sample
    inputs [block] (ModuleDef's convention, which `tlrs graph`/`tlrs export` batch themselves)."""
    if batch is None:
        shape = [model.config.block]
        return nn.to_module_def(model, _per_sample(lm_loss, 1), [shape, shape],
                                predict=_per_sample(_forward, 1), input_dtypes=["int64", "int64"])
    shape = [batch, model.config.block]
    return nn.to_module_def(model, lm_loss, [shape, shape], input_dtypes=["int64", "int64"])


def generate(model: GPT, idx: Tensor, n: int, *, greedy: bool = False) -> Tensor:
    """`idx` [B, T0] (int64) followed by `n` more tokens, each from the logits of the last
    `block` tokens: the arg-max (`greedy`) or a draw by `ops.multinomial` from the softmax (the
    global seed stream, so a seed gives the same text on every machine)."""
    block = model.config.block
    with no_grad():
        for _ in range(n):
            logits = model(idx[:, -block:])[:, -1, :]
            if greedy:
                nxt = ops.argmax(logits, -1, keepdim=True)
            else:
                nxt = ops.multinomial(ops.softmax(logits, -1), 1)
            idx = ops.cat([idx, nxt], 1)
    return idx


# --- ViT ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ViTConfig:
    """A vision transformer's sizes: images `channels` x `height` x `width`, square patches of
    `patch` pixels (a remainder at the right and bottom edges is dropped, as a strided conv does),
    width `d_model`, `heads`, `layers` blocks with an MLP of `mlp_ratio`·d_model, `classes`
    outputs, `pool` "cls" (a class token) or "mean" (the mean over patch tokens)."""

    channels: int
    height: int
    width: int
    classes: int
    patch: int = 2
    d_model: int = 32
    heads: int = 4
    layers: int = 2
    mlp_ratio: int = 2
    pool: str = "cls"
    dtype: str = "float64"

    @property
    def tokens(self) -> int:
        """Patch tokens, plus the class token with `pool="cls"`."""
        return (self.height // self.patch) * (self.width // self.patch) + (self.pool == "cls")

    def param_shapes(self) -> list[tuple[int, ...]]:
        """The parameter shapes, in `ViT(config).parameters()` order."""
        d, m = self.d_model, self.mlp_ratio * self.d_model
        block = [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (m, d), (m,), (d, m), (d,)]
        cls = [(1, 1, d)] if self.pool == "cls" else []
        # A module's own parameters come before its submodules' (torch's order).
        return [*cls, (1, self.tokens, d), (d, self.channels, self.patch, self.patch), (d,),
                *block * self.layers, (d,), (d,), (self.classes, d), (self.classes,)]


class ViT(nn.Module):
    """A small ViT: patch embedding by a Conv2d with stride = kernel = patch, a class token (or
    mean pooling), learned position embeddings, `layers` pre-LN blocks (non-causal attention), a
    final LayerNorm and a linear head. `forward(x)`: images [B, C, H, W] -> logits [B, classes]."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        c = config
        _check_sizes("ViT", channels=c.channels, height=c.height, width=c.width, classes=c.classes,
                     patch=c.patch, d_model=c.d_model, heads=c.heads, layers=c.layers, mlp_ratio=c.mlp_ratio)
        if c.pool not in VIT_POOLS:
            raise ValueError(f"ViT: pool must be one of {', '.join(VIT_POOLS)}, got {c.pool!r}")
        if c.patch > min(c.height, c.width):
            raise ValueError(f"ViT: a patch of {c.patch} pixels is larger than the {c.height}x{c.width} images")
        self.config = c
        self.patch_embed = nn.Conv2d(c.channels, c.d_model, c.patch, stride=c.patch, dtype=c.dtype)
        if c.pool == "cls":
            self.cls_token = nn.Parameter(zeros(1, 1, c.d_model, dtype=c.dtype))
        self.pos_embed = nn.Parameter(randn(1, c.tokens, c.d_model, dtype=c.dtype) * INIT_STD)
        self.blocks = nn.ModuleList([Block(c.d_model, c.heads, causal=False, mlp_ratio=c.mlp_ratio, dtype=c.dtype)
                                     for _ in range(c.layers)])
        self.norm = nn.LayerNorm(c.d_model, dtype=c.dtype)
        self.head = nn.Linear(c.d_model, c.classes, dtype=c.dtype)

    def forward(self, x: Tensor) -> Tensor:
        b, d = x.shape[0], self.config.d_model
        x = ops.transpose(ops.flatten(self.patch_embed(x), 2), 1, 2)  # [B, patches, d]
        if self.config.pool == "cls":
            x = ops.cat([ops.expand(self.cls_token, b, 1, d), x], 1)
        x = x + self.pos_embed
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        pooled = x[:, 0] if self.config.pool == "cls" else ops.mean(x, 1)
        logits: Tensor = self.head(pooled)
        return logits


def classify_loss(model: nn.Module, x: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy of `model(x)` against int64 class labels [B]."""
    return ops.cross_entropy(model(x), labels)


def vit_module_def(model: ViT, batch: int | None) -> ModuleDef:
    """The runtime definition of `classify_loss` over `model`'s parameters: inputs images
    [batch, C, H, W] in the module's dtype and int64 labels [batch]; with batch None, per-sample
    inputs [C, H, W] and [] (as `gpt_module_def`)."""
    c = model.config
    image = [c.channels, c.height, c.width]
    if batch is None:
        return nn.to_module_def(model, _per_sample(classify_loss, 3), [image, []],
                                predict=_per_sample(_forward, 3), input_dtypes=[None, "int64"])
    return nn.to_module_def(model, classify_loss, [[batch, *image], [batch]], input_dtypes=[None, "int64"])
