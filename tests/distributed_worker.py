"""The program tests/test_distributed.py launches under `mpiexec -n N` (or plain `python`).

Subcommands: `collectives` (checks against NumPy, exit 0 when all hold), `train` (model x
optimizer combinations with DistributedTrainer; rank 0 writes the final parameters' bytes),
`kill` (one rank exits before a collective), `init` (just joins the group). The model and data
builders are also imported by the test for its in-process reference runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

import tlrs
from tlrs import distributed as dist
from tlrs import optim

BATCH = 8  # global batch rows; grad_shards=4 gives 2 rows per shard


def build_model(name: str) -> tuple[Any, str, tuple[int, ...], int]:
    """(defn, dtype, input shape, classes) of the tiny models the tests train."""
    if name == "mlp_classifier":
        return tlrs.models.mlp_classifier(6, 8, 3)[0], "float32", (6,), 3
    if name == "softmax_regression":
        return tlrs.models.softmax_regression(5, 4)[0], "float64", (5,), 4
    if name == "cnn":
        defn = tlrs.models.two_conv_cnn(1, 2, 3, 3, 10, 10, 3, 3)[0]
        return defn, "float32", (1, 10, 10), 3
    raise ValueError(f"unknown model {name!r}")


MODELS = ("mlp_classifier", "softmax_regression", "cnn")
OPTIMIZERS = ("sgd", "adam")


def build_opt(name: str) -> optim.Optimizer:
    if name == "sgd":
        return optim.sgd(0.1)
    if name == "adam":
        return optim.adam(0.01, 0.9, 0.999, 1e-8)
    raise ValueError(f"unknown optimizer {name!r}")


def batch(model: str, step: int) -> list[np.ndarray]:
    """The global batch of a step: the same on every rank and in every run."""
    _, dtype, shape, classes = build_model(model)
    rng = np.random.default_rng(1000 + step)
    x = rng.normal(size=(BATCH, *shape)).astype(dtype)
    y = np.eye(classes, dtype=dtype)[rng.integers(0, classes, BATCH)]
    return [x, y]


def new_module(model: str) -> tlrs.Module:
    defn, dtype, _, _ = build_model(model)
    return tlrs.instantiate_with_options(defn, dtype, tlrs.Options())


def params_bytes(module: tlrs.Module) -> bytes:
    return b"".join(np.ascontiguousarray(p.numpy()).tobytes() for p in module.params())


def train(model: str, opt_name: str, steps: range, shards: int,
          trainer: dist.DistributedTrainer | None = None) -> tuple[dist.DistributedTrainer,
                                                                   list[float]]:
    """Steps `steps` of one combination (a fresh trainer unless one is given)."""
    if trainer is None:
        trainer = dist.DistributedTrainer(new_module(model), build_opt(opt_name), shards)
    losses = [trainer.step(batch(model, k)) for k in steps]
    return trainer, losses


def cmd_train(args: argparse.Namespace) -> None:
    dist.init()
    out = Path(args.out)
    for combo in args.combos.split(","):
        model, opt_name = combo.split(":")
        name = f"{model}-{opt_name}"
        if args.resume:
            defn = build_model(model)[0]
            trainer = dist.DistributedTrainer.load(str(out / f"{name}.ckpt"), defn,
                                                   build_opt(opt_name), args.shards)
            first = trainer.state.step
            trainer, losses = train(model, opt_name, range(first, args.steps), args.shards,
                                    trainer)
        else:
            stop = args.save_at if args.save_at else args.steps
            trainer, losses = train(model, opt_name, range(stop), args.shards)
            if args.save_at:
                trainer.save(str(out / f"{name}.ckpt"))
        if dist.rank() == 0:
            (out / f"{name}.params").write_bytes(params_bytes(trainer.module))
            (out / f"{name}.losses").write_text(json.dumps(losses))
    dist.shutdown()


def _expect_error(kind: type[BaseException], fn: Any, *words: str) -> str:
    try:
        fn()
    except kind as e:
        msg = str(e)
        for w in words:
            assert w in msg, (w, msg)
        return msg
    raise AssertionError(f"expected {kind.__name__}")


def cmd_collectives(args: argparse.Namespace) -> None:
    dist.init()
    r, w = dist.rank(), dist.world_size()
    checked = 0
    for dtype in ("float32", "float64"):
        for shape in ((), (0,), (3,), (2, 5)):
            def data(rank: int, kind: str = "normal") -> np.ndarray:
                rng = np.random.default_rng([rank, len(shape), 7])
                if kind == "int":
                    return rng.integers(-50, 50, size=shape).astype(dtype)
                return rng.normal(size=shape).astype(dtype)
            mine = tlrs.tensor(data(r), dtype=dtype)
            every = [data(i) for i in range(w)]
            # Integer-valued data: MPI's sum is exact whatever its order.
            got = dist.all_reduce(tlrs.tensor(data(r, "int"), dtype=dtype))
            assert got.dtype == dtype and tuple(got.shape) == shape
            assert np.array_equal(got.numpy(), np.sum([data(i, "int") for i in range(w)], axis=0,
                                                      dtype=dtype))
            got = dist.all_reduce(mine)
            assert np.allclose(got.numpy(), np.sum(every, axis=0, dtype=dtype), rtol=1e-5)
            for op, fold in (("sum", np.add), ("prod", np.multiply), ("min", np.minimum),
                             ("max", np.maximum)):
                exact = functools.reduce(fold, every)
                got = dist.all_reduce(mine, op, ordered=True)
                assert got.dtype == dtype and got.numpy().tobytes() == exact.tobytes(), op
                via_mpi = dist.all_reduce(mine, op).numpy()
                if op in ("min", "max"):
                    assert np.array_equal(via_mpi, exact), op
                else:
                    assert np.allclose(via_mpi, exact, rtol=1e-5), op
            for root in sorted({0, w - 1}):
                got = dist.broadcast(mine, root=root)
                assert got.dtype == dtype and got.numpy().tobytes() == every[root].tobytes()
            gathered = dist.all_gather(mine)
            assert len(gathered) == w
            for i, g in enumerate(gathered):
                assert g.dtype == dtype and g.numpy().tobytes() == every[i].tobytes()
            dist.barrier()
            checked += 1
    errors = []
    if w > 1:
        # Every rank raises the same error, and the group still works afterwards.
        bad = tlrs.zeros(3 + (r == 1))
        errors.append(_expect_error(tlrs.ShapeError, lambda: dist.all_reduce(bad),
                                    "different shapes", "rank 0: float64 [3]",
                                    "rank 1: float64 [4]"))
        bad = tlrs.zeros(3, dtype="float32" if r == 1 else "float64")
        errors.append(_expect_error(tlrs.DTypeError, lambda: dist.all_gather(bad),
                                    "different dtypes", "rank 1: float32 [3]"))
        errors.append(_expect_error(dist.DistributedError,
                                    lambda: dist.broadcast(tlrs.zeros(2), root=r),
                                    "different roots"))
        call: Any = (dist.barrier if r == 0 else lambda: dist.all_reduce(tlrs.zeros(1)))
        errors.append(_expect_error(dist.DistributedError, call, "different collectives"))
        total = dist.all_reduce(tlrs.ones(2))
        assert total.numpy().tolist() == [float(w)] * 2
    _expect_error(ValueError, lambda: dist.all_reduce(tlrs.zeros(1), "mean"), "unknown op")
    _expect_error(tlrs.DTypeError, lambda: dist.all_reduce([1.0]),  # type: ignore[arg-type]
                  "expected a tlrs Tensor")
    if r == 0:
        Path(args.out).write_text(json.dumps({"world": w, "checked": checked, "errors": errors}))
    dist.shutdown()
    assert not dist.is_initialized()


def cmd_kill(args: argparse.Namespace) -> None:
    dist.init(timeout=args.timeout)
    trainer, _ = train("mlp_classifier", "sgd", range(1), 4)
    if dist.rank() == args.victim:
        os._exit(1)
    trainer.step(batch("mlp_classifier", 1))
    print("unreachable: the step completed without the dead rank", flush=True)


def cmd_init(args: argparse.Namespace) -> None:
    dist.init()
    w = dist.world_size()
    print(f"rank {dist.rank()} of {w}", flush=True)
    if w > 1:
        _expect_error(ValueError, lambda: dist.DistributedTrainer(
            new_module("mlp_classifier"), build_opt("sgd"), 2 * w + 1),
            f"must be a multiple of the world size {w}")
    dist.shutdown()


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--combos", default=",".join(f"{m}:{o}" for m in MODELS for o in OPTIMIZERS))
    t.add_argument("--steps", type=int, default=5)
    t.add_argument("--shards", type=int, default=4)
    t.add_argument("--save-at", type=int, default=0)
    t.add_argument("--resume", action="store_true")
    c = sub.add_parser("collectives")
    c.add_argument("--out", required=True)
    k = sub.add_parser("kill")
    k.add_argument("--victim", type=int, default=1)
    k.add_argument("--timeout", type=float, default=5.0)
    sub.add_parser("init")
    args = p.parse_args()
    tlrs.set_num_threads(1)  # several ranks share few cores; results do not depend on it
    {"train": cmd_train, "collectives": cmd_collectives, "kill": cmd_kill,
     "init": cmd_init}[args.cmd](args)


if __name__ == "__main__":
    main()
