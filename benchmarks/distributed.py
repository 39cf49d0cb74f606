"""Data-parallel step time: `tlrs.distributed.DistributedTrainer` at 1 and 2 processes (MPI)
for an MLP and the two-convolution CNN, and PyTorch DDP (gloo, via torchrun) on equivalent
models when `torch` is importable. Prints milliseconds per step and the 1-process/2-process
ratios; never fails.

    python benchmarks/distributed.py [--steps N] [--threads T]

The same global batch and grad_shards=2 at both world sizes: 1 process computes both shards,
2 processes one each, then every rank gathers and folds them and applies the update. Each
process runs with T kernel threads (default 1), so the 2-process run uses twice the cores.
Needs mpi4py and an MPI (`pip install mpi4py mpich`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SHARDS = 2
# name -> (constructor arguments, input shape, classes, global batch)
CASES: dict[str, tuple[str, tuple[int, ...], int, int]] = {
    "mlp 784-256-10 b256": ("mlp", (784,), 10, 256),
    "cnn 1x28x28 b64": ("cnn", (1, 28, 28), 10, 64),
}


def _tlrs_defn(kind: str) -> Any:
    import tlrs
    if kind == "mlp":
        return tlrs.models.mlp_classifier(784, 256, 10, dtype="float32")[0]
    return tlrs.models.two_conv_cnn(1, 8, 16, 10, 28, 28, 3, 3, padding1=1, padding2=1,
                                    dtype="float32")[0]


def _batch(shape: tuple[int, ...], classes: int, rows: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, *shape)).astype(np.float32)
    return [x, np.eye(classes, dtype=np.float32)[rng.integers(0, classes, rows)]]


def tlrs_worker(steps: int, threads: int, out: str) -> None:
    """One rank: time `steps` DistributedTrainer steps per case; rank 0 writes JSON."""
    import tlrs
    from tlrs import distributed as dist
    tlrs.set_num_threads(threads)
    dist.init()
    result = {}
    for name, (kind, shape, classes, rows) in CASES.items():
        module = tlrs.instantiate_with_options(_tlrs_defn(kind), "float32", tlrs.Options())
        trainer = dist.DistributedTrainer(module, tlrs.optim.sgd(0.01), SHARDS)
        xs = _batch(shape, classes, rows)
        trainer.step(xs)  # warm-up
        dist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            trainer.step(xs)
        dist.barrier()
        result[name] = (time.perf_counter() - start) / steps * 1e3
    if dist.rank() == 0:
        Path(out).write_text(json.dumps(result))
    dist.shutdown()


def torch_worker(steps: int, threads: int, out: str) -> None:
    """One torchrun rank: DDP (gloo) on equivalent models, the global batch split by rank."""
    import torch
    import torch.distributed as tdist
    from torch import nn
    torch.set_num_threads(threads)
    tdist.init_process_group("gloo")
    rank, world = tdist.get_rank(), tdist.get_world_size()
    result = {}
    for name, (kind, shape, classes, rows) in CASES.items():
        torch.manual_seed(0)
        if kind == "mlp":
            net: nn.Module = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        else:
            net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
        model = nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = (torch.from_numpy(a) for a in _batch(shape, classes, rows))
        per = rows // world
        x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per].argmax(1)

        def step() -> None:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        step()
        tdist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        tdist.barrier()
        result[name] = (time.perf_counter() - start) / steps * 1e3
    if rank == 0:
        Path(out).write_text(json.dumps(result))
    tdist.destroy_process_group()


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _launch(cmd: list[str], out: Path) -> dict[str, float] | str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "timed out"
    if r.returncode != 0 or not out.exists():
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"failed (exit {r.returncode}): {tail[0]}"
    data: dict[str, float] = json.loads(out.read_text())
    out.unlink()
    return data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--worker", choices=["tlrs", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker == "tlrs":
        tlrs_worker(args.steps, args.threads, args.out)
        return
    if args.worker == "torch":
        torch_worker(args.steps, args.threads, args.out)
        return
    me = [str(Path(__file__).resolve()), "--steps", str(args.steps), "--threads",
          str(args.threads)]
    rows: dict[str, dict[str, dict[str, float] | str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        mpiexec = _mpiexec()
        for n in (1, 2):
            key = f"tlrs {n}p"
            if mpiexec is None or importlib.util.find_spec("mpi4py") is None:
                rows[key] = {"": "skipped: needs mpi4py and mpiexec (pip install mpi4py mpich)"}
                continue
            got = _launch([mpiexec, "-n", str(n), sys.executable, *me, "--worker", "tlrs",
                           "--out", str(out)], out)
            rows[key] = got if isinstance(got, dict) else {"": got}
        for n in (1, 2):
            key = f"torch DDP gloo {n}p"
            torchrun = shutil.which("torchrun")
            if importlib.util.find_spec("torch") is None or torchrun is None:
                rows[key] = {"": "skipped: torch is not importable"}
                continue
            env_cmd = [torchrun, "--standalone", f"--nproc_per_node={n}", *me, "--worker",
                       "torch", "--out", str(out)]
            got = _launch(env_cmd, out)
            rows[key] = got if isinstance(got, dict) else {"": got}
    print(f"ms per step (grad_shards={SHARDS}, {args.steps} steps, {args.threads} thread(s) "
          f"per process, {os.cpu_count()} CPUs)")
    for key, times in rows.items():
        if "" in times:
            print(f"  {key:20s} {times['']}")
            continue
        for name, ms in times.items():
            print(f"  {key:20s} {name:22s} {ms:9.2f}")
    for system in ("tlrs", "torch DDP gloo"):
        one, two = rows.get(f"{system} 1p", {}), rows.get(f"{system} 2p", {})
        for name in CASES:
            a, b = one.get(name), two.get(name)
            if isinstance(a, float) and isinstance(b, float):
                print(f"  ratio 1p/2p {system:14s} {name:22s} {a / b:6.2f}x")
    t1, d1 = rows.get("tlrs 1p", {}), rows.get("torch DDP gloo 1p", {})
    t2, d2 = rows.get("tlrs 2p", {}), rows.get("torch DDP gloo 2p", {})
    for name in CASES:
        for n, t, d in ((1, t1, d1), (2, t2, d2)):
            a, b = t.get(name), d.get(name)
            if isinstance(a, float) and isinstance(b, float):
                print(f"  ratio tlrs/torch {n}p {name:22s} {a / b:6.2f}x")


if __name__ == "__main__":
    main()
