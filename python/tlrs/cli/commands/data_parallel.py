"""`tlrs run MODEL --distributed [--grad-shards N]` under `mpiexec -n W`: the run joins the MPI
world, rank 0 alone prints (banner, progress, lines, summary) and writes the outputs, and
training goes through `tlrs.distributed.DistributedTrainer`: each step's global batch is split
into N shards (default W), each rank computes whole shards, and the shard gradients are folded
in shard order, so the parameters are bit-identical at every world size dividing N (reference
kernels), and equal to `tlrs run MODEL --distributed --grad-shards N` in one process."""

from __future__ import annotations

import os
import sys
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext, redirect_stdout
from typing import TYPE_CHECKING, Any

from ...errors import ArgError
from ..args import NAT, drop_dash_dash, take_bool_flag_once, take_value_flag_once
from .train_common import TrainResult, make_optimizer, progress

if TYPE_CHECKING:
    import numpy as np

    from ...config import Options
    from ...data import BatchLoader, Dataset
    from ...module import ModuleDef
    from .train_common import TrainFlags

FLAGS_HELP = """  --distributed           data-parallel over the MPI world (launch with mpiexec -n W)
  --grad-shards N         shards per global batch (default W; same N, same bits at any W)"""


def requested(args: Sequence[str]) -> bool:
    return "--distributed" in drop_dash_dash(list(args))


@contextmanager
def session(exe: str, args: Sequence[str]) -> Iterator[None]:
    """Joins the MPI world when `--distributed` is among `args`, silencing stdout on ranks
    other than 0 for the run; leaves the world when the run ends. Nothing happens otherwise.

    Raises: ArgError: mpi4py missing or the launcher's world not joinable (one line).
    """
    if not requested(args):
        yield
        return
    from ... import distributed as dist

    try:
        dist.init()
    except (ImportError, dist.DistributedError, ValueError) as err:
        raise ArgError(f"{exe}: --distributed: {err}") from None
    quiet = dist.rank() != 0
    with open(os.devnull, "w") if quiet else nullcontext(sys.stdout) as out, redirect_stdout(out):
        yield
    dist.shutdown()


def take_flags(args: list[str], exe: str) -> tuple[bool, int | None, list[str]]:
    """(`--distributed` given, `--grad-shards N` or None, the rest).

    Raises: ArgError: a bad or duplicate value, or `--grad-shards` without `--distributed`.
    """
    try:
        on, rest = take_bool_flag_once(args, "distributed")
        taken = take_value_flag_once(rest, "grad-shards", NAT)
    except ArgError as err:
        raise ArgError(f"{exe}: {err}") from None
    shards, rest = taken
    if shards is not None and not on:
        raise ArgError(f"{exe}: --grad-shards needs --distributed")
    if shards == 0:
        raise ArgError(f"{exe}: --grad-shards: expected a positive number of shards, got 0")
    return on, shards, rest


def train(exe: str, defn: ModuleDef, opts: Options, train_set: Dataset, flags: TrainFlags,
          loader: BatchLoader, steps: int, key: dict[str, Any], fixed_idx: Sequence[np.ndarray],
          lrs: array[float] | None) -> TrainResult:
    """The data-parallel form of `trainer.train`, on the loader, step count, run key, mean-loss
    batches and learning rates (`--schedule`/`--warmup`; None: `--lr`) it made: the same
    lines, loader order and summary; each step is one `DistributedTrainer.step` on the global
    batch (its loss is the shard fold's mean, before the update), at its step's rate. Integer
    arrays stay integers (int64 module inputs), float ones are made the command's dtype.
    (`--clip` and `--accumulate` are refused when the flags are read.)

    Raises: ArgError: shards that do not divide among the ranks or split the batch.
    """
    from ... import distributed as dist
    from ...interrupts import Interrupted, deferred
    from ...module import format_float
    from . import resume

    world = dist.world_size() if dist.is_initialized() else 1
    shards = flags.grad_shards or world
    if shards % world:
        raise ArgError(f"{exe}: --grad-shards {shards} must be a multiple of the world size "
                       f"{world} (each rank computes whole shards)")
    if flags.batch % shards:
        raise ArgError(f"{exe}: --batch {flags.batch} must be divisible by --grad-shards {shards}")
    dtype = flags.dtype
    x, y = train_set.x, train_set.y

    def batch(idx: Any) -> list[Any]:
        return [a[idx].astype("int64" if a.dtype.kind in "iu" else dtype) for a in (x, y)]

    fixed = [batch(idx) for idx in fixed_idx]
    opt = make_optimizer(flags.optim, flags.lr)
    # The checkpoint is the same at every world size: a run resumes at any other.
    got = resume.start(exe, flags, defn, opts, key, loader, steps, fixed)
    module, before = got.module, got.before
    trainer = dist.DistributedTrainer(module, opt, shards, got.state)
    print(f"mean_loss(train(before)) = {format_float(before)}")
    sys.stdout.flush()
    run_ = resume.Run(exe, flags, flags.run, key, module, loader, trainer.state, before, steps,
                      got.losses)
    try:
        with progress(steps, exe) as advance:
            if run_.losses:  # a resumed run starts part way
                advance(run_.losses)
            while n := run_.chunk_steps(steps):
                run_.begin_chunk()
                first = len(run_.losses)
                for idx in loader.batches(n):
                    # A signal waits for the whole step: the ranks stay in step together, and
                    # the parameters and state move as one.
                    if lrs is not None:
                        opt.hyper["lr"] = lrs[len(run_.losses)]
                    with deferred():
                        loss = trainer.step(batch(idx))
                        run_.record(trainer.state, [loss])
                    advance(run_.losses[-1:])
                run_.after_chunk(first)
    except Interrupted as err:
        raise run_.interrupted(err) from None
    after = module.mean_loss(fixed).item()
    print(f"mean_loss(train(after)) = {format_float(after)}")
    return TrainResult(module, trainer.state, before, after, run_.losses, flags.batch, exe,
                       run_.progress())
