"""What a training run's modules share (trainer.py, data_parallel.py, resume.py import it; it
imports none of them): the flags that shape a run (`TrainFlags`, `RunFlags`), the optimizer
table, the progress bar, what a run returns (`TrainResult`) and which process writes its files."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from .. import optim
from ..module import Module, TrainProgress, format_float

__all__ = ["OPTIMIZERS", "RunFlags", "TrainFlags", "TrainResult", "is_writer", "make_optimizer",
           "progress"]

OPTIMIZERS = ("sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw", "adadelta", "muon", "projected_sgd")


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
    from .. import distributed as dist

    return not dist.is_initialized() or dist.rank() == 0
