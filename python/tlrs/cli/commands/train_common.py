"""What a training run's modules share (trainer.py, data_parallel.py, resume.py import it; it
imports none of them): the flags that shape a run (`TrainFlags`, `RunFlags`), the optimizer
table, the learning-rate schedules (`step_lrs`), the progress bar, what a run returns
(`TrainResult`) and which process writes its files."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ... import lr_scheduler, optim
from ...module import Module, TrainProgress, format_float

__all__ = ["OPTIMIZERS", "SCHEDULES", "RunFlags", "TrainFlags", "TrainResult", "is_writer",
           "make_optimizer", "progress", "schedule_key", "step_lrs"]

OPTIMIZERS = ("sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw", "adadelta", "muon", "projected_sgd")
SCHEDULES = ("constant", "cosine", "step", "linear")
"""`--schedule`'s names (see `step_lrs`)."""


@dataclass(frozen=True)
class RunFlags:
    """`--save-every N`, `--resume PATH`, `--allow-nonfinite` (commands/resume.py)."""

    save_every: int | None = None
    resume: str | None = None
    allow_nonfinite: bool = False


@dataclass(frozen=True)
class TrainFlags:
    """The training flags common to every command."""

    steps: int | None
    epochs: int | None
    lr: float
    batch: int
    optim: str
    log: str | None
    log_disabled: bool
    plot: str | None
    save: str | None
    dtype: str = "float64"  # the command's `--dtype`: parameters and batches are made in it
    distributed: bool = False  # `--distributed` (commands/data_parallel.py)
    grad_shards: int | None = None
    run: RunFlags = RunFlags()  # --save-every, --resume, --allow-nonfinite
    init_from: str | None = None  # --init-from: starting parameters (a checkpoint or TorchLean file)
    clip: float | None = None  # --clip: each step's gradients to joint 2-norm at most this
    schedule: str = "constant"  # --schedule: the learning rate over the run (`step_lrs`)
    warmup: int = 0  # --warmup: steps of linear warmup before the schedule
    accumulate: int = 1  # --accumulate: batches averaged per optimizer step


@dataclass
class TrainResult:
    """What `train` did: mean losses before/after, the pre-update loss of every step (a
    resumed run's include the saved steps'), and the progress its checkpoint records."""

    module: Module
    state: optim.OptimState
    before: float
    after: float
    losses: list[float]
    batch: int
    exe: str = "tlrs run"
    progress: TrainProgress | None = None

    @property
    def steps(self) -> int:
        return len(self.losses)


def make_optimizer(name: str, lr: float) -> optim.Optimizer:
    """The optimizer `--optim` names, with the usual defaults for its other hyper-parameters:
    momentum 0.9; adagrad eps 1e-10; rmsprop decay 0.99, eps 1e-8; adam/adamw betas 0.9/0.999,
    eps 1e-8 (adamw weight decay 0.01); adadelta rho 0.9, eps 1e-6; muon momentum 0.9 and
    projected_sgd with TorchLean's default (identity) orthogonalizer and projector."""
    makers: dict[str, Callable[[], optim.Optimizer]] = {
        "sgd": lambda: optim.sgd(lr),
        "momentum": lambda: optim.momentum_sgd(lr, 0.9),
        "adagrad": lambda: optim.adagrad(lr, 1e-10),
        "rmsprop": lambda: optim.rmsprop(lr, 0.99, 1e-8),
        "adam": lambda: optim.adam(lr, 0.9, 0.999, 1e-8),
        "adamw": lambda: optim.adamw(lr, 0.01, 0.9, 0.999, 1e-8),
        "adadelta": lambda: optim.adadelta(lr, 0.9, 1e-6),
        "muon": lambda: optim.muon(lr, 0.9),
        "projected_sgd": lambda: optim.projected_sgd(lr),
    }
    return makers[name]()


class _Rate:
    """What the schedules drive: an optimizer's `hyper["lr"]` (weakly referable, so that the
    schedulers of a `SequentialLR` share its initial rate, as torch's share `initial_lr`)."""

    def __init__(self, lr: float) -> None:
        self.hyper = {"lr": lr}


def step_lrs(flags: TrainFlags, steps: int) -> array[float] | None:
    """The learning rate of each of a run's `steps` optimizer steps (None: `--lr` throughout,
    i.e. `--schedule constant` without `--warmup`), computed once for the whole run by the
    `tlrs.lr_scheduler` classes, so they are torch's rates bit for bit: entry i is the rate
    torch's scheduler holds after i `step()` calls.

    With `--warmup W` (W < steps), steps 0..W-1 warm up by `LinearLR(start_factor=1/(W+1),
    total_iters=W)` (lr/(W+1), 2·lr/(W+1), ..., W·lr/(W+1)); the schedule then runs over the
    remaining R = steps - W steps from `--lr`, chained by `SequentialLR(milestones=[W])`:
    `constant` (`--lr`; after a warmup, where `LinearLR` leaves it, maybe an ulp off), `cosine` (`CosineAnnealingLR(T_max=R)`, to 0 at step R, just after
    the run), `step` (`StepLR(step_size=ceil(R/3), gamma=0.1)`: a tenth after each third) or
    `linear` (`LinearLR(start_factor=1, end_factor=0, total_iters=R)`, to 0 at step R).
    """
    if flags.schedule == "constant" and flags.warmup == 0:
        return None
    rate = _Rate(flags.lr)
    warmup, rest = flags.warmup, steps - flags.warmup
    if rest < 1:
        raise ValueError(f"--warmup {warmup} leaves no step of the run's {steps}")
    parts: list[lr_scheduler.LRScheduler] = []
    if warmup:
        parts.append(lr_scheduler.LinearLR(rate, start_factor=1.0 / (warmup + 1), end_factor=1.0,
                                           total_iters=warmup))
    if flags.schedule == "cosine":
        parts.append(lr_scheduler.CosineAnnealingLR(rate, T_max=rest))
    elif flags.schedule == "step":
        parts.append(lr_scheduler.StepLR(rate, step_size=-(-rest // 3), gamma=0.1))
    elif flags.schedule == "linear":
        parts.append(lr_scheduler.LinearLR(rate, start_factor=1.0, end_factor=0.0, total_iters=rest))
    sched = parts[0] if len(parts) == 1 else lr_scheduler.SequentialLR(rate, parts, milestones=[warmup])
    out = array("d")
    for i in range(steps):
        if i:
            sched.step()
        out.append(rate.hyper["lr"])
    return out


def schedule_key(flags: TrainFlags, steps: int) -> str | None:
    """What of the learning-rate schedule a resumed run must share (None: none): the schedule,
    the warmup, and the run's step count where the schedule decays over it."""
    if flags.schedule == "constant" and flags.warmup == 0:
        return None
    parts = [flags.schedule if flags.schedule == "constant" else f"{flags.schedule} over {steps} steps"]
    if flags.warmup:
        parts.append(f"warmup {flags.warmup}")
    return ", ".join(parts)


@contextmanager
def progress(total: int, label: str) -> Iterator[Callable[[Sequence[float]], None]]:
    """A rich progress bar on a terminal (removed when done); a no-op otherwise. The callback
    takes the losses of the steps just done (it advances by their count, shows the last)."""
    if total == 0 or not sys.stdout.isatty():
        yield lambda losses: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("loss {task.fields[loss]}"), TimeRemainingColumn(),
                  transient=True) as bar:
        task = bar.add_task(label, total=total, loss="-")
        yield lambda losses: bar.update(task, advance=len(losses),
                                        loss=format_float(losses[-1]) if losses else "-")


def is_writer() -> bool:
    """Whether this process writes the run's files: rank 0, or any run without a world."""
    from ... import distributed as dist

    return not dist.is_initialized() or dist.rank() == 0
