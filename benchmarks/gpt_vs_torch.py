"""Training-step time of a char-level GPT (nanoGPT layout) that a user writes with tlrs ops,
against the same model in PyTorch CPU: f32, 2 threads each, each framework in its own process.

Model: vocabulary 65, block 64, d_model 128, 4 heads, 2 or 4 layers, batch 32; token and
learned position embeddings, pre-LayerNorm blocks (causal self-attention with one qkv linear,
MLP 4x with exact GELU), final LayerNorm, an LM head (untied, no bias), cross_entropy on the
next-token labels; no dropout. AdamW (lr 3e-4, weight decay 0.1 on every parameter, betas 0.9,
0.999, eps 1e-8). Both sides start from the same NumPy weights (seed 0) and train on the same
batches; the first step's losses must agree within 1e-4 relative before any time is shown.

A step = forward, backward and the optimizer update; "forward" = the loss alone, recording
the graph as a training forward does (no backward). Medians over --steps after --warmup
training steps; ratios are tlrs / torch. tlrs runs its eager reference kernels unless --fast.

    python benchmarks/gpt_vs_torch.py [--layers 2 4] [--steps 20] [--warmup 3] [--fast]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

VOCAB, BLOCK, D_MODEL, HEADS, BATCH = 65, 64, 128, 4, 32
LR, WEIGHT_DECAY, BETAS, EPS = 3e-4, 0.1, (0.9, 0.999), 1e-8
LOSS_RTOL = 1e-4


def init_weights(layers: int) -> list[np.ndarray]:
    """nanoGPT's initialisation from NumPy (seed 0): N(0, 0.02) weights, residual projections
    N(0, 0.02/sqrt(2*layers)), zero biases, unit LayerNorm gains."""
    rng = np.random.default_rng(0)

    def normal(*shape: int, std: float = 0.02) -> np.ndarray:
        return (rng.normal(size=shape) * std).astype(np.float32)

    def zeros(n: int) -> np.ndarray:
        return np.zeros(n, np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, np.float32)

    c, proj_std = D_MODEL, 0.02 / math.sqrt(2 * layers)
    ws = [normal(VOCAB, c), normal(BLOCK, c)]  # token, position embeddings
    for _ in range(layers):
        ws += [ones(c), zeros(c), normal(3 * c, c), zeros(3 * c), normal(c, c, std=proj_std), zeros(c),
               ones(c), zeros(c), normal(4 * c, c), zeros(4 * c), normal(c, 4 * c, std=proj_std), zeros(c)]
    return ws + [ones(c), zeros(c), normal(VOCAB, c)]  # final LayerNorm, LM head


def batches(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """n batches of (tokens [BATCH, BLOCK], next-token labels [BATCH * BLOCK]), int64."""
    rng = np.random.default_rng(1)
    out = []
    for _ in range(n):
        seq = rng.integers(0, VOCAB, size=(BATCH, BLOCK + 1))
        out.append((seq[:, :-1].copy(), seq[:, 1:].reshape(-1).copy()))
    return out


def gpt_loss(op: Any, ps: list[Any], tokens: Any, labels: Any, positions: Any, causal: Any) -> Any:
    """The model, once for both frameworks: `op` holds ops with torch's names and argument order."""
    b, t, c, h = BATCH, BLOCK, D_MODEL, HEADS
    hd = c // h
    x = op.add(op.embedding(tokens, ps[0]), op.embedding(positions, ps[1]))
    layers = (len(ps) - 5) // 12
    for i in range(layers):
        ln1w, ln1b, wqkv, bqkv, wo, bo, ln2w, ln2b, w1, b1, w2, b2 = ps[2 + 12 * i: 14 + 12 * i]
        qkv = op.linear(op.layer_norm(x, [c], ln1w, ln1b), wqkv, bqkv)
        q, k, v = (op.transpose(op.reshape(op.slice(qkv, 2, j * c, (j + 1) * c), [b, t, h, hd]), 1, 2)
                   for j in range(3))
        att = op.mul(op.matmul(q, op.transpose(k, -2, -1)), 1.0 / math.sqrt(hd))
        att = op.softmax(op.masked_fill(att, causal, float("-inf")), -1)
        y = op.reshape(op.transpose(op.matmul(att, v), 1, 2), [b, t, c])
        x = op.add(x, op.linear(y, wo, bo))
        x = op.add(x, op.linear(op.gelu(op.linear(op.layer_norm(x, [c], ln2w, ln2b), w1, b1)), w2, b2))
    logits = op.linear(op.layer_norm(x, [c], ps[-3], ps[-2]), ps[-1])
    return op.cross_entropy(op.reshape(logits, [b * t, VOCAB]), labels)


def torch_side(layers: int, n: int, optimizer: str) -> tuple[str, Any, Any]:
    """(optimizer name, loss(batch), step(batch)) in PyTorch."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(2)
    op = SimpleNamespace(add=torch.add, mul=torch.mul, matmul=torch.matmul, reshape=torch.reshape,
                        transpose=torch.transpose, softmax=torch.softmax, masked_fill=torch.masked_fill,
                        linear=F.linear, layer_norm=F.layer_norm, gelu=F.gelu, embedding=F.embedding,
                        cross_entropy=F.cross_entropy,
                        slice=lambda x, dim, start, end: x.narrow(dim, start, end - start))
    ps = [torch.tensor(w, requires_grad=True) for w in init_weights(layers)]
    data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches(n)]
    positions = torch.arange(BLOCK)
    causal = torch.triu(torch.ones(BLOCK, BLOCK, dtype=torch.bool), 1)
    if optimizer == "AdamW":
        opt = torch.optim.AdamW(ps, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    else:
        opt = torch.optim.Adam(ps, lr=LR, betas=BETAS, eps=EPS)

    def loss(i: int) -> Any:
        return gpt_loss(op, ps, *data[i % n], positions, causal)

    def step(i: int) -> float:
        opt.zero_grad(set_to_none=True)
        value = loss(i)
        value.backward()
        opt.step()
        return value.item()

    return optimizer, loss, step


def tlrs_optimizer() -> str:
    """AdamW when tlrs has it, else Adam (both sides then use the same one)."""
    from tlrs import optim

    return "AdamW" if hasattr(optim, "adamw") else "Adam"


def tlrs_side(layers: int, n: int, fast: bool) -> tuple[str, Any, Any]:
    """(optimizer name, loss(batch), step(batch)) in tlrs, eager, with its functional optimizer."""
    import tlrs
    from tlrs import ops, optim

    tlrs.set_num_threads(2)
    tlrs.set_fast_kernels(fast)
    name = tlrs_optimizer()
    if name == "AdamW":
        opt = optim.adamw(LR, WEIGHT_DECAY, *BETAS, EPS)
    else:
        opt = optim.adam(LR, *BETAS, EPS)
    ps = [tlrs.tensor(w, requires_grad=True) for w in init_weights(layers)]
    state = opt.init(ps)
    data = batches(n)
    positions = np.arange(BLOCK)
    causal = np.triu(np.ones((BLOCK, BLOCK), bool), 1)

    def loss(i: int) -> Any:
        return gpt_loss(ops, ps, *data[i % n], positions, causal)

    def step(i: int) -> float:
        nonlocal ps, state
        value = loss(i)
        grads = tlrs.grad(value, ps)
        ps, state = opt.step(state, ps, grads)  # new tensors: make them leaves again
        for p in ps:
            p.requires_grad = True
        return value.item()

    return name, loss, step


def worker(side: str, layers: int, steps: int, warmup: int, fast: bool, optimizer: str) -> None:
    """Runs in a child process: trains, times, prints one JSON line."""
    n = warmup + steps
    if side == "tlrs":
        name, loss, step = tlrs_side(layers, n, fast)
    else:
        name, loss, step = torch_side(layers, n, optimizer)
    losses, step_s, fwd_s = [], [], []
    for i in range(n):
        t0 = time.perf_counter()
        losses.append(step(i))
        if i >= warmup:
            step_s.append(time.perf_counter() - t0)
    for i in range(steps):
        t0 = time.perf_counter()
        loss(i).item()
        fwd_s.append(time.perf_counter() - t0)
    print(json.dumps({"optimizer": name, "first_loss": losses[0], "last_loss": losses[-1],
                      "step_ms": statistics.median(step_s) * 1e3,
                      "fwd_ms": statistics.median(fwd_s) * 1e3}))


def run_side(side: str, args: argparse.Namespace, layers: int, optimizer: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", side, "--optimizer", optimizer, "--layers", str(layers),
           "--steps", str(args.steps), "--warmup", str(args.warmup)] + (["--fast"] if args.fast else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{side} worker failed (exit {r.returncode}):\n{r.stderr.strip()}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, nargs="+", choices=(2, 4), default=[2],
                    help="transformer layers, one row each (default: 2)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps (median kept)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed training steps first")
    ap.add_argument("--fast", action="store_true", help="tlrs fast kernels (default: reference)")
    ap.add_argument("--worker", choices=("tlrs", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--optimizer", choices=("AdamW", "Adam"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    if args.warmup < 0:
        ap.error(f"--warmup must be at least 0, got {args.warmup}")
    if args.worker:
        worker(args.worker, args.layers[0], args.steps, args.warmup, args.fast, args.optimizer)
        return
    kernels, optimizer = "fast" if args.fast else "reference", tlrs_optimizer()
    rows = []
    for layers in dict.fromkeys(args.layers):
        ours, theirs = run_side("tlrs", args, layers, optimizer), run_side("torch", args, layers, optimizer)
        a, b = ours["first_loss"], theirs["first_loss"]
        rel = abs(a - b) / abs(b)
        print(f"{layers} layers, first-step loss: tlrs {a:.7f}  torch {b:.7f}  rel diff {rel:.1e}"
              f"  (after {args.warmup + args.steps} steps: tlrs {ours['last_loss']:.7f}"
              f"  torch {theirs['last_loss']:.7f})")
        if not rel <= LOSS_RTOL:
            sys.exit(f"first-step losses differ by {rel:.1e} relative (> {LOSS_RTOL:g}): not the same model")
        rows.append((layers, ours, theirs))
    print(f"\ntlrs ({kernels} kernels, eager) vs torch, both {optimizer} "
          f"(lr {LR:g}), f32, 2 threads, batch {BATCH}, median of {args.steps} after {args.warmup} warm-up")
    print(f"{'layers':>6} | {'step tlrs ms':>12} {'torch ms':>9} {'ratio':>6} |"
          f" {'fwd tlrs ms':>11} {'torch ms':>9} {'ratio':>6}")
    for layers, o, t in rows:
        print(f"{layers:>6} | {o['step_ms']:12.2f} {t['step_ms']:9.2f} {o['step_ms'] / t['step_ms']:6.2f} |"
              f" {o['fwd_ms']:11.2f} {t['fwd_ms']:9.2f} {o['fwd_ms'] / t['fwd_ms']:6.2f}")


if __name__ == "__main__":
    main()
