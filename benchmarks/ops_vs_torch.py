"""Per-op time against PyTorch CPU on the shapes of a char-level GPT (nanoGPT layout: batch 32,
4 heads, block 64, d_model 128, vocabulary 95), f32, forward and forward + backward; each
framework runs in its own process, the best of ROUNDS rounds is kept, ratios are tlrs / torch.

    python benchmarks/ops_vs_torch.py [ROUNDS] [--ops gelu,softmax,linear]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASES = {
    "masked_fill (causal mask [1, 1, 64, 64] over [32, 4, 64, 64])": "masked_fill",
    "softmax [32, 4, 64, 64]": "softmax",
    "cross_entropy [2048, 95]": "cross_entropy",
    "gelu [32, 64, 512]": "gelu",
    "layer_norm [32, 64, 128] (weight, bias)": "layer_norm",
    "linear [32, 64, 128] -> 512 (bias)": "linear",
    "attention q @ k^T, heads split from [32, 64, 384]": "scores",
    "add (residual) [32, 64, 128]": "add",
    "embedding 95 x 128 at [32, 64] ids": "embedding",
}

WORKER = r'''
import json, sys, time
import numpy as np
rounds = int(sys.argv[1])
side = sys.argv[2]
rng = np.random.default_rng(0)
att = rng.normal(size=(32, 4, 64, 64)).astype(np.float32)
causal = np.triu(np.ones((64, 64), bool), 1)[None, None]
logits = rng.normal(size=(2048, 95)).astype(np.float32)
labels = rng.integers(0, 95, 2048)
hidden = rng.normal(size=(32, 64, 512)).astype(np.float32)
resid = rng.normal(size=(32, 64, 128)).astype(np.float32)
qkv = rng.normal(size=(32, 64, 384)).astype(np.float32)
w_ln, b_ln = np.ones(128, np.float32), np.zeros(128, np.float32)
w_fc, b_fc = (rng.normal(size=(512, 128)) * 0.05).astype(np.float32), np.zeros(512, np.float32)
table = rng.normal(size=(95, 128)).astype(np.float32)
ids = rng.integers(0, 95, (32, 64))

if side == "torch":
    import torch
    torch.set_num_threads(2)
    T = lambda a: torch.tensor(a, requires_grad=True)
    mask, target = torch.tensor(causal), torch.tensor(labels)
    fns = {
        "masked_fill": (lambda x: x.masked_fill(mask, float("-inf")), att),
        "softmax": (lambda x: torch.softmax(x, -1), att),
        "cross_entropy": (lambda x: torch.nn.functional.cross_entropy(x, target), logits),
        "gelu": (lambda x: torch.nn.functional.gelu(x), hidden),
        "layer_norm": (lambda x: torch.nn.functional.layer_norm(x, [128], torch.tensor(w_ln), torch.tensor(b_ln)), resid),
        "linear": (lambda x: torch.nn.functional.linear(x, torch.tensor(w_fc), torch.tensor(b_fc)), resid),
        "scores": (lambda x: (lambda q, k: q @ k.transpose(-2, -1))(
            *(x[:, :, j * 128:(j + 1) * 128].reshape(32, 64, 4, 32).transpose(1, 2) for j in (0, 1))), qkv),
        "add": (lambda x: x + x, resid),
        "embedding": (lambda x: torch.nn.functional.embedding(torch.tensor(ids), x), table),
    }
    def grad(y, x):
        return torch.autograd.grad(y.sum(), [x])
else:
    import tlrs
    from tlrs import ops
    tlrs.set_num_threads(2)
    def T(a):
        t = tlrs.tensor(a)
        t.requires_grad = True
        return t
    target = labels.tolist()
    fns = {
        "masked_fill": (lambda x: ops.masked_fill(x, causal, float("-inf")), att),
        "softmax": (lambda x: ops.softmax(x, -1), att),
        "cross_entropy": (lambda x: ops.cross_entropy(x, target), logits),
        "gelu": (lambda x: ops.gelu(x), hidden),
        "layer_norm": (lambda x: ops.layer_norm(x, [128], tlrs.tensor(w_ln), tlrs.tensor(b_ln)), resid),
        "linear": (lambda x: ops.linear(x, tlrs.tensor(w_fc), tlrs.tensor(b_fc)), resid),
        "scores": (lambda x: (lambda q, k: ops.matmul(q, ops.transpose(k, -2, -1)))(
            *(ops.transpose(ops.reshape(ops.slice(x, 2, j * 128, (j + 1) * 128), [32, 64, 4, 32]), 1, 2)
              for j in (0, 1))), qkv),
        "add": (lambda x: x + x, resid),
        "embedding": (lambda x: ops.embedding(ids, x), table),
    }
    def grad(y, x):
        return tlrs.grad(ops.sum(y), [x])

def best(f):
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3

out = {}
for name, (fn, data) in fns.items():
    x = T(data)
    for _ in range(3):
        grad(fn(x), x)  # warm up
    out[name] = [best(lambda: fn(x)), best(lambda: grad(fn(x), x))]
print(json.dumps(out))
'''


def side(name: str, rounds: int) -> dict[str, list[float]]:
    r = subprocess.run([sys.executable, "-c", WORKER, str(rounds), name], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rounds", nargs="?", type=int, default=20, help="timed rounds per op (best kept)")
    ap.add_argument("--ops", help=f"comma-separated subset of: {', '.join(CASES.values())}")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"rounds must be at least 1, got {args.rounds}")
    keys = list(CASES.values()) if not args.ops else args.ops.split(",")
    unknown = [k for k in keys if k not in CASES.values()]
    if unknown:
        ap.error(f"unknown ops: {', '.join(unknown)} (known: {', '.join(CASES.values())})")
    ours, theirs = side("tlrs", args.rounds), side("torch", args.rounds)
    print(f"{'op':60} {'fwd ms':>14} {'ratio':>6} {'fwd+bwd ms':>16} {'ratio':>6}")
    for label, key in CASES.items():
        if key not in keys:
            continue
        (f1, b1), (f2, b2) = ours[key], theirs[key]
        print(f"{label:60} {f1:6.3f}/{f2:6.3f} {f1 / f2:6.2f} {b1:7.3f}/{b2:7.3f} {b1 / b2:6.2f}")


if __name__ == "__main__":
    main()
