"""Training-step time: tlrs eager and compiled backends, reference and fast kernels, f32 and
f64, against PyTorch CPU when `torch` is importable, measured in one run, interleaved. Prints a
table of milliseconds per step and ratios; never fails.

    python benchmarks/train_step.py [--quick] [--threads N]

One step = forward, backward and an SGD update of every parameter. tlrs compiled steps run as
one native loop (`Module.train_sgd`), eager steps as Python calls per op.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tlrs
from tlrs import models
from tlrs.config import Backend, Options

try:
    import torch
except ImportError:  # optional comparison
    torch = None


def cases(quick: bool):
    """(name, constructor(dtype), batch) for each benchmark case."""
    out = [
        ("mlp 784-128-10 b1", lambda dt: models.mlp_classifier(784, 128, 10, dtype=dt), 1),
        ("mlp 784-128-10 b32", lambda dt: models.mlp_classifier(784, 128, 10, dtype=dt), 32),
        ("mlp 784-128-10 b128", lambda dt: models.mlp_classifier(784, 128, 10, dtype=dt), 128),
        ("mlp 784-512-512-10 b128", lambda dt: deep_mlp(dt), 128),
        ("cnn 1x28x28 b32", lambda dt: models.two_conv_cnn(1, 8, 16, 10, 28, 28, 3, 3, padding1=1,
                                                           padding2=1, dtype=dt), 32),
        ("transformer d64 h4 b8", lambda dt: models.transformer_block(8, 16, 64, 4, 16, dtype=dt), 0),
        ("resnet18 3x32x32 b8", lambda dt: models.resnet18_model(3, 32, 32, 10, dtype=dt), 8),
    ]
    return out[:3] if quick else out


def deep_mlp(dtype: str):
    """784-512-512-10 from tlrs ops (the reference model zoo has only one hidden layer)."""
    from tlrs import ops

    shapes = [[512, 784], [512], [512, 512], [512], [10, 512], [10]]
    rng = np.random.default_rng(0)
    init = [tlrs.tensor(rng.normal(size=s) * 0.05, dtype=dtype) for s in shapes]

    def loss(ps, xs):
        h = ops.relu(ops.linear(xs[0], ps[0], ps[1]))
        h = ops.relu(ops.linear(h, ps[2], ps[3]))
        return ops.cross_entropy(ops.linear(h, ps[4], ps[5]), xs[1])

    return tlrs.ModuleDef(shapes, [[784], [10]], loss, init_params=init), None


def sample(defn, batch: int, dtype: str):
    rng = np.random.default_rng(1)
    x_shape, y_shape = defn.input_shapes
    lead = [batch] if batch else []
    x = rng.normal(size=lead + list(x_shape))
    y = np.zeros(lead + list(y_shape))
    if len(y_shape) == 1:
        y[..., 0] = 1.0
    else:
        y = rng.normal(size=y.shape)
    return [tlrs.tensor(x, dtype=dtype), tlrs.tensor(y, dtype=dtype)]


def time_tlrs(defn, xs, backend: str, fast: bool, dtype: str, budget: float) -> float:
    m = tlrs.instantiate_with_options(defn, dtype, Options(backend=Backend(backend), fast_kernels=fast))
    m.train_sgd(1e-3, 1, [xs], log_every=0)  # warm-up (and trace)
    steps, t0 = 0, time.perf_counter()
    chunk = 1
    while time.perf_counter() - t0 < budget:
        m.train_sgd(1e-3, chunk, [xs], log_every=0)
        steps += chunk
        chunk = min(chunk * 2, 64)
    return (time.perf_counter() - t0) / steps


def time_torch(defn, xs, dtype: str, budget: float) -> float | None:
    """The same model and loss written with torch ops on the same initial parameters."""
    if torch is None:
        return None
    tdt = torch.float32 if dtype == "float32" else torch.float64
    params = [torch.tensor(p.numpy(), dtype=tdt, requires_grad=True) for p in defn.initial_params()]
    x, y = (torch.tensor(t.numpy(), dtype=tdt) for t in xs)
    body = TORCH_BODIES.get(len(params))
    if body is None:
        return None

    def step():
        loss = body(params, x, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= 1e-3 * g

    step()
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget:
        step()
        steps += 1
    return (time.perf_counter() - t0) / steps


def _torch_mlp(ps, x, y):
    import torch.nn.functional as F

    h = x
    for i in range(0, len(ps) - 2, 2):
        h = F.relu(F.linear(h, ps[i], ps[i + 1]))
    logits = F.linear(h, ps[-2], ps[-1])
    return -(y * F.log_softmax(logits, -1)).sum(-1).mean()


# Torch bodies for the MLP cases (by parameter count); other models are tlrs-only here.
TORCH_BODIES = {4: _torch_mlp, 6: _torch_mlp}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="only the MLP cases")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (default: all)")
    p.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    args = p.parse_args()
    if args.threads:
        tlrs.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)
    print(f"threads={tlrs.get_num_threads()} torch={'%s' % torch.__version__ if torch else 'not installed'}")
    head = f"{'case':<26} {'dtype':<8} | {'eager ref':>10} {'comp ref':>10} {'eager fast':>10} {'comp fast':>10} {'torch':>9} | {'comp/torch':>10}"
    print(head + "   (ms per step)")
    for name, make, batch in cases(args.quick):
        for dtype in ("float32", "float64"):
            defn, _ = make(dtype)
            xs = sample(defn, batch, dtype)
            row = {}
            for backend in ("eager", "compiled"):
                for fast in (False, True):
                    row[(backend, fast)] = time_tlrs(defn, xs, backend, fast, dtype, args.budget)
            t_torch = time_torch(defn, xs, dtype, args.budget)
            ms = [row[k] * 1e3 for k in (("eager", False), ("compiled", False), ("eager", True), ("compiled", True))]
            tt = f"{t_torch * 1e3:9.3f}" if t_torch else f"{'-':>9}"
            ratio = f"{t_torch / row[('compiled', True)]:10.2f}x" if t_torch else f"{'-':>11}"
            print(f"{name:<26} {dtype:<8} | " + " ".join(f"{v:10.3f}" for v in ms) + f" {tt} | {ratio}")


if __name__ == "__main__":
    main()
