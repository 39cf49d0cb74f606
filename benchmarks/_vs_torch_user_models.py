"""Models users bring, for benchmarks/vs_torch.py: a char-level GPT in the nanoGPT layout, a
ViT-tiny and an MLP-Mixer, each written as a user writes a `tlrs.ModuleDef` loss from tlrs ops,
and as a PyTorch user writes the same model (nn.Embedding / nn.Linear / nn.LayerNorm / nn.Conv2d
modules and `F.scaled_dot_product_attention`). The table's own models come from `tlrs.models`;
these show the runtime on code it was not written with.

The GPT and the ViT share one pre-LayerNorm block: `x + c_proj(attn(ln_1(x)))` with one qkv
linear split into heads and `scaled_dot_product_attention`, then `x + mlp(ln_2(x))` with an
exact-GELU MLP 4x. Initial values come from NumPy (seed 0, nanoGPT's scheme), so both frameworks
start from the same parameters; tlrs's parameter names are the PyTorch modules'
`named_parameters()`, checked when the PyTorch module is built. No dropout anywhere.

`torch` is never imported here (a tlrs worker must not load PyTorch's thread pool): the PyTorch
builders take the module as an argument.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tlrs
from tlrs import ops

VOCAB, BLOCK, GPT_D, GPT_HEADS, GPT_BATCH = 65, 64, 128, 4, 32
IMAGE, PATCH, VIT_D, VIT_HEADS, VIT_LAYERS, CLASSES, VIT_BATCH = 32, 4, 192, 3, 6, 10, 32
MIXER_D, MIXER_TOKEN_HIDDEN, MIXER_CHANNEL_HIDDEN, MIXER_LAYERS = 128, 128, 512, 6
MLP_RATIO, INIT_STD = 4, 0.02
BLOCK_NAMES = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
               "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
               "mlp.c_proj.weight", "mlp.c_proj.bias"]


# ---------------------------------------------------------------------------------------------
# Initial values (NumPy, seed 0) and names, in the PyTorch modules' parameter order.


class _Init:
    """Named float32 arrays drawn in order from one seeded stream."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.names: list[str] = []
        self.arrays: list[np.ndarray] = []

    def add(self, name: str, shape: tuple[int, ...], std: float | None = None, fill: float = 0.0) -> None:
        a = self.rng.normal(size=shape) * std if std is not None else np.full(shape, fill)
        self.names.append(name)
        self.arrays.append(a.astype(np.float32))

    def block(self, prefix: str, d: int, proj_std: float) -> None:
        """nanoGPT's block init: N(0, 0.02) weights, residual projections N(0, proj_std), zero
        biases, unit LayerNorm gains."""
        shapes = [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (MLP_RATIO * d, d), (MLP_RATIO * d,),
                  (d, MLP_RATIO * d), (d,)]
        for name, shape in zip(BLOCK_NAMES, shapes):
            if len(shape) == 2:
                self.add(prefix + name, shape, proj_std if name.endswith("c_proj.weight") else INIT_STD)
            else:
                self.add(prefix + name, shape, fill=1.0 if name.startswith("ln_") and name.endswith("weight") else 0.0)

    def norm(self, prefix: str, d: int) -> None:
        """A LayerNorm's unit gain and zero bias."""
        self.add(prefix + "weight", (d,), fill=1.0)
        self.add(prefix + "bias", (d,))

    def mlp(self, prefix: str, d: int, hidden: int) -> None:
        """timm's Mlp: fc1 d -> hidden, fc2 hidden -> d; N(0, 0.02) weights, zero biases."""
        for name, shape in (("fc1", (hidden, d)), ("fc2", (d, hidden))):
            self.add(f"{prefix}{name}.weight", shape, INIT_STD)
            self.add(f"{prefix}{name}.bias", shape[:1])

    def module_def(self, input_shapes: list[list[int]], input_dtypes: list[str | None], loss: Any) -> tlrs.ModuleDef:
        """The definition with these values (float32) and names as its initial parameters."""
        return tlrs.ModuleDef([a.shape for a in self.arrays], input_shapes, loss,
                              init_params=[tlrs.tensor(a) for a in self.arrays], param_names=self.names,
                              input_dtypes=input_dtypes)


# ---------------------------------------------------------------------------------------------
# tlrs: the losses as a user writes them with tlrs ops.


def tlrs_block(x: tlrs.Tensor, ps: list[tlrs.Tensor], heads: int, causal: bool) -> tlrs.Tensor:
    """One pre-LayerNorm block on x [B, T, d] with the 12 parameters in BLOCK_NAMES order."""
    ln1w, ln1b, wqkv, bqkv, wo, bo, ln2w, ln2b, w1, b1, w2, b2 = ps
    b, t, d = x.shape
    q, k, v = ops.split(ops.linear(ops.layer_norm(x, [d], ln1w, ln1b), wqkv, bqkv), d, 2)
    q, k, v = (ops.transpose(ops.reshape(z, [b, t, heads, d // heads]), 1, 2) for z in (q, k, v))
    y = ops.scaled_dot_product_attention(q, k, v, is_causal=causal)
    x = x + ops.linear(ops.reshape(ops.transpose(y, 1, 2), [b, t, d]), wo, bo)
    return x + ops.linear(ops.gelu(ops.linear(ops.layer_norm(x, [d], ln2w, ln2b), w1, b1)), w2, b2)


def gpt_def(layers: int) -> tlrs.ModuleDef:
    """Char-level GPT (vocabulary 65, block 64, d 128, 4 heads, `layers` blocks, batch 32): token
    + learned position embeddings, causal blocks, final LayerNorm, untied LM head without bias,
    mean cross-entropy of the [B*T, vocab] logits on int64 next-token labels [B*T]."""
    init = _Init()
    init.add("wte.weight", (VOCAB, GPT_D), INIT_STD)
    init.add("wpe.weight", (BLOCK, GPT_D), INIT_STD)
    for i in range(layers):
        init.block(f"h.{i}.", GPT_D, INIT_STD / math.sqrt(2 * layers))
    init.norm("ln_f.", GPT_D)
    init.add("lm_head.weight", (VOCAB, GPT_D), INIT_STD)
    positions = tlrs.arange(BLOCK, dtype="int64")

    def loss(ps: list[tlrs.Tensor], xs: list[tlrs.Tensor]) -> tlrs.Tensor:
        tokens, labels = xs
        b, t = tokens.shape
        x = ops.embedding(tokens, ps[0]) + ops.embedding(positions, ps[1])
        for i in range(layers):
            x = tlrs_block(x, ps[2 + 12 * i: 14 + 12 * i], GPT_HEADS, True)
        logits = ops.linear(ops.layer_norm(x, [GPT_D], ps[-3], ps[-2]), ps[-1])
        return ops.cross_entropy(ops.reshape(logits, [b * t, VOCAB]), labels)

    return init.module_def([[GPT_BATCH, BLOCK], [GPT_BATCH * BLOCK]], ["int64", "int64"], loss)


def vit_def() -> tlrs.ModuleDef:
    """ViT-tiny on 3x32x32 images (batch 32): patch embedding by a 4x4 stride-4 conv (64 patches),
    learned position embeddings, 6 non-causal blocks (d 192, 3 heads), final LayerNorm, mean
    pooling over the patches (no class token), linear head to 10 classes, cross-entropy on int64
    labels [B]."""
    init = _Init()
    init.add("pos_embed", (1, (IMAGE // PATCH) ** 2, VIT_D), INIT_STD)  # torch: the root's own first
    init.add("patch_embed.weight", (VIT_D, 3, PATCH, PATCH), 1 / math.sqrt(3 * PATCH * PATCH))
    init.add("patch_embed.bias", (VIT_D,))
    for i in range(VIT_LAYERS):
        init.block(f"blocks.{i}.", VIT_D, INIT_STD / math.sqrt(2 * VIT_LAYERS))
    init.norm("norm.", VIT_D)
    init.add("head.weight", (CLASSES, VIT_D), INIT_STD)
    init.add("head.bias", (CLASSES,))

    def loss(ps: list[tlrs.Tensor], xs: list[tlrs.Tensor]) -> tlrs.Tensor:
        images, labels = xs
        x = ops.transpose(ops.flatten(ops.conv2d(images, ps[1], ps[2], stride=PATCH), 2), 1, 2) + ps[0]
        for i in range(VIT_LAYERS):
            x = tlrs_block(x, ps[3 + 12 * i: 15 + 12 * i], VIT_HEADS, False)
        pooled = ops.mean(ops.layer_norm(x, [VIT_D], ps[-4], ps[-3]), 1)
        return ops.cross_entropy(ops.linear(pooled, ps[-2], ps[-1]), labels)

    return init.module_def([[VIT_BATCH, 3, IMAGE, IMAGE], [VIT_BATCH]], [None, "int64"], loss)


def mixer_def() -> tlrs.ModuleDef:
    """MLP-Mixer (Tolstikhin et al. 2021, timm's MlpMixer layout, smaller) on 3x32x32 images,
    batch 32: 4x4 stride-4 conv patches (64 tokens) of width 128, 6 pre-LayerNorm mixer blocks
    (token MLP across the 64 patches 64 -> 128 -> 64, channel MLP 128 -> 512 -> 128, exact GELU,
    residuals), final LayerNorm, mean pooling, linear head to 10 classes, int64 labels [B]."""
    init = _Init()
    init.add("patch_embed.weight", (MIXER_D, 3, PATCH, PATCH), 1 / math.sqrt(3 * PATCH * PATCH))
    init.add("patch_embed.bias", (MIXER_D,))
    tokens = (IMAGE // PATCH) ** 2
    for i in range(MIXER_LAYERS):
        init.norm(f"blocks.{i}.norm1.", MIXER_D)
        init.mlp(f"blocks.{i}.mlp_tokens.", tokens, MIXER_TOKEN_HIDDEN)
        init.norm(f"blocks.{i}.norm2.", MIXER_D)
        init.mlp(f"blocks.{i}.mlp_channels.", MIXER_D, MIXER_CHANNEL_HIDDEN)
    init.norm("norm.", MIXER_D)
    init.add("head.weight", (CLASSES, MIXER_D), INIT_STD)
    init.add("head.bias", (CLASSES,))

    def loss(ps: list[tlrs.Tensor], xs: list[tlrs.Tensor]) -> tlrs.Tensor:
        images, labels = xs
        x = ops.transpose(ops.flatten(ops.conv2d(images, ps[0], ps[1], stride=PATCH), 2), 1, 2)  # [B, 64, d]
        for i in range(MIXER_LAYERS):
            n1w, n1b, t1w, t1b, t2w, t2b, n2w, n2b, c1w, c1b, c2w, c2b = ps[2 + 12 * i: 14 + 12 * i]
            y = ops.transpose(ops.layer_norm(x, [MIXER_D], n1w, n1b), 1, 2)  # [B, d, 64]: mix the patches
            x = x + ops.transpose(ops.linear(ops.gelu(ops.linear(y, t1w, t1b)), t2w, t2b), 1, 2)
            x = x + ops.linear(ops.gelu(ops.linear(ops.layer_norm(x, [MIXER_D], n2w, n2b), c1w, c1b)), c2w, c2b)
        pooled = ops.mean(ops.layer_norm(x, [MIXER_D], ps[-4], ps[-3]), 1)
        return ops.cross_entropy(ops.linear(pooled, ps[-2], ps[-1]), labels)

    return init.module_def([[VIT_BATCH, 3, IMAGE, IMAGE], [VIT_BATCH]], [None, "int64"], loss)


def gpt_sample() -> tuple[np.ndarray, np.ndarray]:
    """Token ids [32, 64] and their next tokens [32*64], int64, from random sequences (seed 1)."""
    seq = np.random.default_rng(1).integers(0, VOCAB, size=(GPT_BATCH, BLOCK + 1), dtype=np.int64)
    return seq[:, :-1].copy(), seq[:, 1:].reshape(-1).copy()


def vit_sample() -> tuple[np.ndarray, np.ndarray]:
    """The ViT's and the Mixer's batch: standard-normal float32 images [32, 3, 32, 32] and int64 labels [32] (seed 1)."""
    rng = np.random.default_rng(1)
    return (rng.standard_normal((VIT_BATCH, 3, IMAGE, IMAGE), dtype=np.float32),
            rng.integers(0, CLASSES, size=VIT_BATCH, dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# PyTorch: the same models as a PyTorch user writes them.


def torch_block(torch: Any, d: int, heads: int, causal: bool) -> Any:
    """The block as nn.Modules, parameters named as BLOCK_NAMES."""
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            b, t, _ = x.shape
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in self.c_attn(x).split(d, 2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return self.c_proj(y.transpose(1, 2).reshape(b, t, d))

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_fc, self.c_proj = nn.Linear(d, MLP_RATIO * d), nn.Linear(MLP_RATIO * d, d)

        def forward(self, x: Any) -> Any:
            return self.c_proj(F.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.attn, self.ln_2, self.mlp = nn.LayerNorm(d), Attention(), nn.LayerNorm(d), MLP()

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    return Block()


def _check_names(model: Any, defn: tlrs.ModuleDef, what: str) -> Any:
    """`model` when its parameters are tlrs's, by name and order (torch_module checks shapes)."""
    if [n for n, _ in model.named_parameters()] != list(defn.param_names or ()):
        raise ValueError(f"torch {what} parameter names differ from tlrs's")
    return model


def torch_gpt(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """gpt_def's model: forward(tokens [B, T]) -> logits [B*T, vocab] (the table's loss is
    F.cross_entropy(model(x), y) on the flat labels)."""
    nn = torch.nn
    layers = (len(defn.param_shapes) - 5) // 12

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, GPT_D), nn.Embedding(BLOCK, GPT_D)
            self.h = nn.ModuleList([torch_block(torch, GPT_D, GPT_HEADS, True) for _ in range(layers)])
            self.ln_f, self.lm_head = nn.LayerNorm(GPT_D), nn.Linear(GPT_D, VOCAB, bias=False)

        def forward(self, idx: Any) -> Any:
            b, t = idx.shape
            x = self.wte(idx) + self.wpe(torch.arange(t))
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x)).view(b * t, VOCAB)

    return _check_names(GPT(), defn, "GPT")


def torch_vit(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """vit_def's model: forward(images [B, 3, 32, 32]) -> logits [B, 10]."""
    nn = torch.nn

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch_embed = nn.Conv2d(3, VIT_D, PATCH, stride=PATCH)
            self.pos_embed = nn.Parameter(torch.zeros(1, (IMAGE // PATCH) ** 2, VIT_D))
            self.blocks = nn.ModuleList([torch_block(torch, VIT_D, VIT_HEADS, False) for _ in range(VIT_LAYERS)])
            self.norm, self.head = nn.LayerNorm(VIT_D), nn.Linear(VIT_D, CLASSES)

        def forward(self, x: Any) -> Any:
            x = self.patch_embed(x).flatten(2).transpose(1, 2) + self.pos_embed
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x).mean(1))

    return _check_names(ViT(), defn, "ViT")


def torch_mixer(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """mixer_def's model: forward(images [B, 3, 32, 32]) -> logits [B, 10]."""
    nn, F = torch.nn, torch.nn.functional
    tokens = (IMAGE // PATCH) ** 2

    class Mlp(nn.Module):
        def __init__(self, d: int, hidden: int) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

        def forward(self, x: Any) -> Any:
            return self.fc2(F.gelu(self.fc1(x)))

    class MixerBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.mlp_tokens = nn.LayerNorm(MIXER_D), Mlp(tokens, MIXER_TOKEN_HIDDEN)
            self.norm2, self.mlp_channels = nn.LayerNorm(MIXER_D), Mlp(MIXER_D, MIXER_CHANNEL_HIDDEN)

        def forward(self, x: Any) -> Any:
            x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.mlp_channels(self.norm2(x))

    class Mixer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch_embed = nn.Conv2d(3, MIXER_D, PATCH, stride=PATCH)
            self.blocks = nn.ModuleList([MixerBlock() for _ in range(MIXER_LAYERS)])
            self.norm, self.head = nn.LayerNorm(MIXER_D), nn.Linear(MIXER_D, CLASSES)

        def forward(self, x: Any) -> Any:
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x).mean(1))

    return _check_names(Mixer(), defn, "MLP-Mixer")
