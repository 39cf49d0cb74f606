"""The training cases of benchmarks/gpu.py: each model as the tlrs definition it ships (or, for
the deep MLP, the one benchmarks/train_step.py writes), a fixed batch, and the same model in
PyTorch holding the definition's initial parameters (names and shapes checked).

`torch` is never imported here: the functions that need it take the module as an argument.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from _vs_torch_models import deep_mlp as vs_torch_deep_mlp
from _vs_torch_models import (
    float_sample,
    torch_resnet18,  # the same mirror benchmarks/vs_torch.py times
)

import tlrs
from tlrs import models
from tlrs.config import Backend, Options
from tlrs.models.nn_transformers import GPT, GPTConfig, gpt_module_def
from tlrs.random import seeded

# The three tlrs configurations of every training row.
CONFIGS: dict[str, Options] = {
    "exact": Options().to_device("cuda"),  # reference kernels, eager: the CPU's bits
    "fast": Options(fast_kernels=True).to_device("cuda"),  # cuBLAS products, eager
    "compiled": Options(backend=Backend.COMPILED, fast_kernels=True).to_device("cuda"),  # traced graph replayed
}


Mirror = Callable[[Any, tlrs.ModuleDef], Any]  # (torch, defn) -> the PyTorch module


@dataclass(frozen=True)
class Case:
    """One training row: `build()` the tlrs definition (float32); `batch` the leading batch axis
    of the sample (0: the definition's inputs already hold the batch); `kind` the loss: "ce"
    (one-hot cross-entropy), "mse", or "lm" (int64 token ids, next-token cross-entropy);
    `torch_model(torch, defn)` the PyTorch module (parameters in tlrs's order, not yet loaded)."""

    name: str
    build: Callable[[], tlrs.ModuleDef]
    batch: int
    kind: str
    torch_model: Mirror


# ---------------------------------------------------------------------------------------------
# tlrs definitions


def deep_mlp() -> tlrs.ModuleDef:
    """784-512-512-10 of benchmarks/train_step.py (the definition vs_torch.py times), its
    parameters named fc1 .. fc3 as the torch mirror names them."""
    names = [f"fc{i // 2 + 1}.{'bias' if i % 2 else 'weight'}" for i in range(6)]
    return dataclasses.replace(vs_torch_deep_mlp(), param_names=names)


def gpt_def(vocab: int, block: int, d: int, heads: int, layers: int, batch: int) -> tlrs.ModuleDef:
    """tlrs's char GPT (models/nn_transformers.py, as `tlrs run gpt` builds it; initial values
    of `--seed 0`), inputs int64 ids and targets [batch, block]."""
    with seeded(0):
        return gpt_module_def(GPT(GPTConfig(vocab, block, d, heads, layers, "float32")), batch)


def cases(quick: bool) -> list[Case]:
    """The training rows, in the order they run."""
    def mlp(hid: int) -> Callable[[], tlrs.ModuleDef]:
        return lambda: models.mlp_classifier(784, hid, 10, dtype="float32")[0]

    def cnn(c1: int, hw: int) -> Callable[[], tlrs.ModuleDef]:
        # `tlrs run cnn --channels c1` on 3xhwxhw images: 3x3 convs with padding 1, c2 = 2 c1.
        return lambda: models.two_conv_cnn(3, c1, 2 * c1, 10, hw, hw, 3, 3, 1, 1, 1, 1, dtype="float32")[0]

    def block(b: int, n: int, d: int, h: int, hd: int) -> tuple[Callable[[], tlrs.ModuleDef], int, str, Mirror]:
        return (lambda: models.transformer_block(b, n, d, h, hd, dtype="float32")[0], 0, "mse",
                lambda torch, defn: torch_block(torch, defn, h))

    def resnet(hw: int) -> Callable[[], tlrs.ModuleDef]:
        return lambda: models.resnet18_model(3, hw, hw, 10, dtype="float32")[0]

    def gpt(block: int, d: int, heads: int, layers: int, batch: int
            ) -> tuple[Callable[[], tlrs.ModuleDef], int, str, Mirror]:
        return (lambda: gpt_def(65, block, d, heads, layers, batch), 0, "lm",
                lambda torch, defn: torch_gpt(torch, defn, heads))

    if quick:
        return [Case("mlp 784-128-10 b8", mlp(128), 8, "ce", torch_mlp),
                Case("mlp 784-512-512-10 b8", deep_mlp, 8, "ce", torch_mlp),
                Case("cnn 3x8x8 c4-8 b2", cnn(4, 8), 2, "ce", torch_cnn),
                Case("transformer b2 n8 d16 h2", *block(2, 8, 16, 2, 8)),
                # 64 x 64 is the smallest size whose last stage has maps of more than one
                # position (at 32 x 32 the per-image norm zeroes them: the loss is ln 10 for
                # any weights, so the initial-loss check would prove nothing).
                Case("resnet18 3x64x64 b2", resnet(64), 2, "ce", torch_resnet18),
                Case("gpt T16 d32 h4 L2 b2", *gpt(16, 32, 4, 2, 2))]
    return [Case("mlp 784-128-10 b128", mlp(128), 128, "ce", torch_mlp),
            Case("mlp 784-512-512-10 b128", deep_mlp, 128, "ce", torch_mlp),
            Case("cnn 3x32x32 c32-64 b64", cnn(32, 32), 64, "ce", torch_cnn),
            Case("transformer b32 n128 d256 h8", *block(32, 128, 256, 8, 32)),
            Case("resnet18 3x64x64 b32", resnet(64), 32, "ce", torch_resnet18),
            Case("resnet18 3x224x224 b32", resnet(224), 32, "ce", torch_resnet18),
            Case("gpt T128 d256 h8 L4 b32", *gpt(128, 256, 8, 4, 32))]


def sample(defn: tlrs.ModuleDef, case: Case) -> tuple[np.ndarray, np.ndarray]:
    """A fixed batch (seed 1): float32 standard-normal inputs with one-hot targets of random
    classes ("ce") or standard-normal targets ("mse"); for "lm" int64 ids uniform over the
    vocabulary, the target the window shifted by one."""
    if case.kind != "lm":
        return float_sample(defn, case.batch, case.kind)
    rng = np.random.default_rng(1)
    b, t = defn.input_shapes[0]
    vocab = defn.param_shapes[0][0]  # wte [vocab, d]
    ids = rng.integers(0, vocab, size=(b, t + 1), dtype=np.int64)
    return np.ascontiguousarray(ids[:, :-1]), np.ascontiguousarray(ids[:, 1:])


def tlrs_inputs(x: np.ndarray, y: np.ndarray) -> list[tlrs.Tensor]:
    """Float arrays as float32 tensors on cuda; int64 ids stay on the host (as a Module keeps them:
    the index ops read them there)."""
    def one(a: np.ndarray) -> tlrs.Tensor:
        if a.dtype == np.int64:
            return tlrs.tensor(a, dtype="int64")
        return tlrs.tensor(a, dtype="float32", device="cuda")

    return [one(x), one(y)]


# ---------------------------------------------------------------------------------------------
# PyTorch mirrors


def torch_mlp(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """Linear/ReLU layers of the definition's weight shapes ([out, in], bias [out]), as
    fc1, fc2, ... (mlp_classifier's names)."""
    nn = torch.nn
    Base: Any = nn.Module
    dims = [defn.param_shapes[0][1]] + [s[0] for s in defn.param_shapes[::2]]

    class MLP(Base):
        def __init__(self) -> None:
            super().__init__()
            self.fcs = len(dims) - 1
            for i in range(self.fcs):
                setattr(self, f"fc{i + 1}", nn.Linear(dims[i], dims[i + 1]))

        def forward(self, x: Any) -> Any:
            for i in range(self.fcs):
                x = getattr(self, f"fc{i + 1}")(x)
                x = torch.relu(x) if i < self.fcs - 1 else x
            return x

    return MLP()


def torch_cnn(torch: Any, defn: tlrs.ModuleDef) -> Any:
    """models/cnn.py with 3x3 kernels, padding 1, stride 1: conv -> ReLU -> max-pool 2 -> conv ->
    ReLU -> max-pool 2 -> flatten (C, H, W) -> linear. The same computation."""
    nn = torch.nn
    Base: Any = nn.Module
    (c1, c, _, _), (c2, _, _, _) = defn.param_shapes[0], defn.param_shapes[2]
    classes, feat = defn.param_shapes[4]

    class CNN(Base):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(c, c1, 3, padding=1), nn.Conv2d(c1, c2, 3, padding=1)
            self.fc = nn.Linear(feat, classes)

        def forward(self, x: Any) -> Any:
            F = torch.nn.functional
            y = F.max_pool2d(torch.relu(self.conv1(x)), 2, 2)
            y = F.max_pool2d(torch.relu(self.conv2(y)), 2, 2)
            return self.fc(y.flatten(1))

    return CNN()


def torch_block(torch: Any, defn: tlrs.ModuleDef, heads: int) -> Any:
    """models/transformer.py: x @ W{q,k,v} split into heads as column blocks, softmax(q k^T /
    sqrt(head_dim)) v by F.scaled_dot_product_attention (no mask), heads joined, @ Wo, then layer
    norm (eps 1e-6); no residual, no feed-forward. `heads`: as the definition was built with."""
    nn = torch.nn
    Base: Any = nn.Module
    d, inner = defn.param_shapes[0]

    class Attn(Base):
        def __init__(self) -> None:
            super().__init__()
            self.wq, self.wk, self.wv = (nn.Parameter(torch.empty(d, inner)) for _ in range(3))
            self.wo = nn.Parameter(torch.empty(inner, d))

        def forward(self, x: Any) -> Any:
            b, n, _ = x.shape

            def split(w: Any) -> Any:
                return (x @ w).view(b, n, heads, inner // heads).transpose(1, 2)

            y = torch.nn.functional.scaled_dot_product_attention(split(self.wq), split(self.wk), split(self.wv))
            return y.transpose(1, 2).reshape(b, n, inner) @ self.wo

    class Block(Base):
        def __init__(self) -> None:
            super().__init__()
            self.attn, self.norm = Attn(), nn.LayerNorm(d, eps=1e-6)

        def forward(self, x: Any) -> Any:
            return self.norm(self.attn(x))

    return Block()


def torch_gpt(torch: Any, defn: tlrs.ModuleDef, heads: int) -> Any:
    """models/nn_transformers.py's GPT: token + position embeddings, causal pre-LayerNorm blocks
    (one qkv linear split into heads, F.scaled_dot_product_attention(is_causal=True), c_proj;
    MLP 4x with exact GELU), final LayerNorm (eps 1e-5 everywhere), LM head without bias tied to
    the token embedding. `heads`: as the definition was built with."""
    nn = torch.nn
    Base: Any = nn.Module
    F = torch.nn.functional
    vocab, d = defn.param_shapes[0]
    block = defn.param_shapes[1][0]
    layers = (len(defn.param_shapes) - 4) // 12

    class Block(Base):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.c_attn, self.c_proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln_2, self.c_fc, self.mlp_proj = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            b, t, c = x.shape
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in self.c_attn(self.ln_1(x)).split(c, 2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class CharGPT(Base):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied, as tlrs's GPT

        def forward(self, idx: Any) -> Any:
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.h:
                x = blk(x)
            return self.lm_head(self.ln_f(x))

    return CharGPT()


def torch_module(torch: Any, case: Case, defn: tlrs.ModuleDef, device: str) -> Any:
    """The case's PyTorch module on `device` holding the definition's initial parameters.
    Raises ValueError: parameter names (where tlrs has them) or shapes differ."""
    model = case.torch_model(torch, defn)
    names = [n for n, _ in model.named_parameters()]
    if defn.param_names and names != list(defn.param_names):
        raise ValueError(f"torch parameter names differ from tlrs's: {names[:4]}... vs {list(defn.param_names)[:4]}...")
    params = list(model.parameters())
    init = [p.numpy() for p in defn.initial_params()]
    if [tuple(p.shape) for p in params] != [a.shape for a in init]:
        raise ValueError("torch parameter shapes differ from tlrs's")
    with torch.no_grad():
        for p, a in zip(params, init):
            # A writable copy: tlrs hands out read-only arrays, which torch.from_numpy warns about.
            p.copy_(torch.from_numpy(np.array(a, dtype=np.float32)))
    return model.to(device)


def torch_loss(torch: Any, case: Case) -> Callable[[Any, Any, Any], Any]:
    """loss(model, x, y) as the tlrs definition computes it (mean over rows / elements / tokens)."""
    F = torch.nn.functional
    if case.kind == "mse":
        return lambda m, x, y: F.mse_loss(m(x), y)
    if case.kind == "lm":
        def lm(m: Any, x: Any, y: Any) -> Any:
            logits = m(x)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        return lm
    return lambda m, x, y: F.cross_entropy(m(x), y)  # probability (one-hot) targets
