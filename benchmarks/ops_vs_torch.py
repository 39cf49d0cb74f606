"""Per-op time against PyTorch CPU on the shapes of a char-level GPT (nanoGPT layout: batch 32,
4 heads, block 64, d_model 128, vocabulary 95), f32, forward and forward + backward; each
framework runs in its own process, the best of ROUNDS rounds is kept, ratios are tlrs / torch.

    python benchmarks/ops_vs_torch.py [ROUNDS] [--ops gelu,softmax]
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
