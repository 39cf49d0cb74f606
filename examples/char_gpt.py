"""A character-level GPT in the nanoGPT layout, written with tlrs.nn as a PyTorch user writes it:
token and position embeddings, pre-LayerNorm blocks with causal self-attention
(`scaled_dot_product_attention(is_causal=True)`) and a GELU MLP, a final LayerNorm and an LM head
tied to the token embedding. It trains with AdamW on a short text, then writes greedily
(`argmax`) and by sampling (`multinomial`, seeded), in well under a minute on two cores.

Token ids and targets are int64 tensors. `--compiled` trains through the compiled backend (the
step traced once, token ids and targets its graph inputs): the same bits as eager.

    python examples/char_gpt.py [--steps 300] [--compiled]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import tlrs
from tlrs import nn, ops, optim

TEXT = (
    "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the "
    "slings and arrows of outrageous fortune, or to take arms against a sea of troubles and by "
    "opposing end them. To die: to sleep; no more; and by a sleep to say we end the heart-ache "
    "and the thousand natural shocks that flesh is heir to. "
)
BLOCK, D_MODEL, HEADS, LAYERS, BATCH = 32, 48, 4, 2, 16


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d, dtype="float32"), nn.LayerNorm(d, dtype="float32")
        self.c_attn = nn.Linear(d, 3 * d, dtype="float32")
        self.c_proj = nn.Linear(d, d, dtype="float32")
        self.c_fc = nn.Linear(d, 4 * d, dtype="float32")
        self.mlp_proj = nn.Linear(4 * d, d, dtype="float32")

    def forward(self, x: tlrs.Tensor) -> tlrs.Tensor:
        b, t, c = x.shape
        q, k, v = ops.split(self.c_attn(self.ln_1(x)), c, 2)
        q, k, v = (ops.transpose(ops.reshape(z, [b, t, self.heads, c // self.heads]), 1, 2) for z in (q, k, v))
        y = ops.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(ops.reshape(ops.transpose(y, 1, 2), [b, t, c]))
        return x + self.mlp_proj(ops.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, D_MODEL, dtype="float32")
        self.wte.weight = nn.Parameter(tlrs.randn(vocab, D_MODEL, dtype="float32") * 0.02)  # nanoGPT's init
        self.wpe = nn.Embedding(BLOCK, D_MODEL, dtype="float32")
        self.h = nn.ModuleList([Block(D_MODEL, HEADS) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D_MODEL, dtype="float32")
        self.lm_head = nn.Linear(D_MODEL, vocab, bias=False, dtype="float32")
        self.lm_head.weight = self.wte.weight  # weight tying, as nanoGPT

    def forward(self, idx: tlrs.Tensor) -> tlrs.Tensor:
        x = self.wte(idx) + self.wpe(tlrs.arange(idx.shape[1], dtype="int64"))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def generate(model: GPT, idx: tlrs.Tensor, n: int, sample: bool) -> tlrs.Tensor:
    with tlrs.no_grad():
        for _ in range(n):
            logits = model(idx[:, -BLOCK:])[:, -1, :]
            if sample:
                nxt = ops.multinomial(ops.softmax(logits, -1), 1)
            else:
                nxt = ops.argmax(logits, -1, keepdim=True)
            idx = ops.cat([idx, nxt], 1)
    return idx


def lm_loss(model: GPT, x: tlrs.Tensor, y: tlrs.Tensor) -> tlrs.Tensor:
    logits = model(x)
    return ops.cross_entropy(ops.reshape(logits, [-1, logits.shape[-1]]), ops.reshape(y, [-1]))


def batches(data: np.ndarray, steps: int, seed: int = 0) -> list[list[tlrs.Tensor]]:
    """`steps` random batches of (ids, next ids), as int64 tensors."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        starts = rng.integers(0, len(data) - BLOCK - 1, BATCH)
        out.append([tlrs.tensor(np.stack([data[s:s + n] for s in starts])) for n in (BLOCK,)]
                   + [tlrs.tensor(np.stack([data[s + 1:s + BLOCK + 1] for s in starts]))])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--compiled", action="store_true", help="train through the compiled backend")
    args = ap.parse_args()
    tlrs.manual_seed(0)
    chars = sorted(set(TEXT))
    data = np.array([chars.index(ch) for ch in TEXT], dtype=np.int64)
    model = GPT(len(chars))
    params = list(model.parameters())
    print(f"{len(chars)} symbols, {sum(math.prod(p.shape) for p in params):,} parameters (lm_head tied to wte)")
    opt = optim.adamw(3e-3, 0.01, 0.9, 0.99, 1e-8)
    defn = nn.to_module_def(model, lm_loss, [[BATCH, BLOCK], [BATCH, BLOCK]], input_dtypes=["int64", "int64"])
    runner = tlrs.instantiate_with_options(
        defn, "float32", tlrs.Options(backend="compiled" if args.compiled else "eager"))
    state = runner.init_optim(opt)
    todo = batches(data, args.steps)
    for start in range(0, args.steps, 200):
        state, losses = runner.train_steps(opt, state, todo[start:start + 200])
        print(f"step {start + len(losses) - 1:4d}  loss {losses[-1]:.4f}")
    nn.assign_parameters(model, runner.params())  # the trained values, ties kept
    prompt = tlrs.tensor([[chars.index(ch) for ch in "To be"]])
    for sample in (False, True):
        tlrs.manual_seed(1)
        out = generate(model, prompt, 60, sample)[0]
        print(("sampled: " if sample else "greedy:  ") + "".join(chars[i] for i in out.numpy()))


if __name__ == "__main__":
    main()
