"""What keeps a long `tlrs run` alive: `--save-every N` (the `--save` checkpoint, written
atomically every N steps), `--resume PATH` (continue the run a checkpoint holds, with the bits
of the uninterrupted run), the checkpoint written when SIGINT or SIGTERM stops the run, and the
stop at a NaN or infinite loss (`--allow-nonfinite` trains on).

A run's checkpoint holds its parameters, optimizer state and step count, every completed
step's loss, the global seed stream's position, the data loader's cursor and the flags that
shape the run (`TrainProgress`); `--steps`/`--epochs` count from the start of the run, so a
resumed run stops where the uninterrupted one would.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ArgError, CheckpointError, NonFiniteLossError
from ...interrupts import Interrupted, deferred, signal_name
from ...module import Module, ModuleDef, TrainProgress, check_finite_losses
from ...random import seed_stream_state, set_seed_stream_state
from ..args import take_bool_flag_once
from .flags import MAX_STEPS, take_nat, take_path
from .train_common import RunFlags, is_writer, schedule_key

if TYPE_CHECKING:
    from ... import optim
    from ...config import Options
    from ...data import BatchLoader, Dataset
    from .train_common import TrainFlags

__all__ = ["FLAGS_HELP", "Run", "RunFlags", "resume", "run_key", "start", "take_flags"]

FLAGS_HELP = """  --save-every N          also write the --save checkpoint every N steps (atomically)
  --resume PATH           continue the run saved in PATH (flags that shape it must match)
  --allow-nonfinite       train on when the loss is NaN or infinite (default: stop, exit 2)"""

SHAPING = ("model", "dtype", "batch", "optim", "lr", "seed", "grad_shards", "clip", "schedule",
           "accumulate", "data")
"""The flags a resumed run must share with the saved one (the data by a digest). `clip`,
`schedule` (with `--warmup`, and the run's step count where the schedule decays over it) and
`accumulate` are recorded only when they differ from the defaults, so the checkpoints of runs
without them are as before."""

_FLAG_OF = {"model": "the model", "dtype": "--dtype", "batch": "--batch", "optim": "--optim",
            "lr": "--lr", "seed": "--seed", "grad_shards": "--grad-shards", "clip": "--clip",
            "schedule": "the lr schedule", "accumulate": "--accumulate", "data": "the data"}
_DEFAULT_SHOWN = {"schedule": "constant", "accumulate": "1"}


def take_flags(args: list[str], exe: str, save: str | None) -> tuple[RunFlags, list[str]]:
    """Take `--save-every N`, `--resume PATH` and `--allow-nonfinite`, once each.

    Raises: ArgError (prefixed): a bad value, a duplicate, or `--save-every` without `--save`.
    """
    every, rest = take_nat(args, exe, "save-every", None, maximum=MAX_STEPS)
    path, rest = take_path(rest, exe, "resume")
    try:
        allow, rest = take_bool_flag_once(rest, "allow-nonfinite")
    except ArgError as err:
        raise ArgError(f"{exe}: {err}") from None
    if every is not None and save is None:
        raise ArgError(f"{exe}: --save-every needs --save PATH (the checkpoint to write)")
    return RunFlags(every, path, allow), rest


def _digest(data: Dataset) -> str:
    h = hashlib.sha256()
    for a in (data.x, data.y):
        arr = np.ascontiguousarray(a)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:32]


def run_key(exe: str, flags: TrainFlags, seed: int, data: Dataset, steps: int) -> dict[str, Any]:
    """The values of the flags that shape a run (`SHAPING`) of `steps` optimizer steps, as the
    checkpoint records them."""
    key: dict[str, Any] = {"model": exe, "dtype": flags.dtype, "batch": flags.batch,
                           "optim": flags.optim, "lr": flags.lr, "seed": int(seed),
                           "grad_shards": flags.grad_shards, "data": _digest(data)}
    if flags.clip is not None:
        key["clip"] = flags.clip
    sched = schedule_key(flags, steps)
    if sched is not None:
        key["schedule"] = sched
    if flags.accumulate != 1:
        key["accumulate"] = flags.accumulate
    return key


def _differences(saved: dict[str, Any], here: dict[str, Any]) -> list[str]:
    out = []
    for key in SHAPING:
        if saved.get(key) != here.get(key):
            if key == "data":
                out.append("the data differ")
            else:
                out.append(f"{_FLAG_OF[key]} {_show(key, saved.get(key))} there, "
                           f"{_show(key, here.get(key))} here")
    return out


def _show(key: str, value: Any) -> str:
    return _DEFAULT_SHOWN.get(key, "(none)") if value is None else str(value)


@dataclass
class Resumed:
    """Where a run starts: the module and optimizer state (None: a fresh one) at the saved step
    or at the start, the losses of the steps done and the run's mean loss before training."""

    module: Module
    state: optim.OptimState | None
    losses: list[float]
    before: float


def start(exe: str, flags: TrainFlags, defn: ModuleDef, opts: Options, key: dict[str, Any],
          loader: BatchLoader, steps: int, fixed: Sequence[Any]) -> Resumed:
    """The run `--resume` names (see `resume`), or a new one: the module instantiated in the
    command's dtype and its mean loss over `fixed` before training."""
    if flags.run.resume is not None:
        return resume(exe, flags.run.resume, defn, opts, key, loader, steps)
    from ...module import instantiate_with_options

    module = instantiate_with_options(defn, flags.dtype, opts)
    return Resumed(module, None, [], module.mean_loss(fixed).item())


def resume(exe: str, path: str, defn: ModuleDef, opts: Options, key: dict[str, Any],
           loader: BatchLoader, steps: int) -> Resumed:
    """Load the run `--resume PATH` saved, put the loader and the global seed stream where it
    stood, and check that it is this run, with at most `steps` steps done.

    Raises: ArgError (prefixed, naming the flag and the path): not a checkpoint of a run, flags
    that shape the run differ (each named, with both values), parameter shapes that differ,
    or more steps done than this run asks for.
    """
    from .outputs import show_path

    where = f"{exe}: --resume {show_path(path)}"
    try:
        module, state, progress = Module.load_training(path, defn, opts)
    except CheckpointError as err:
        raise ArgError(f"{exe}: --resume: {err}") from None
    except ValueError as err:
        raise ArgError(f"{where}: {err} (the model's flags differ)") from None
    if progress is None or state is None or progress.loader is None or progress.before is None:
        raise ArgError(f"{where}: a checkpoint without a run's progress; --resume takes one "
                       "written by `tlrs run ... --save` (or --save-every)")
    diffs = _differences(progress.run, key)
    if diffs:
        raise ArgError(f"{where}: the checkpoint is of another run: {'; '.join(diffs)}")
    if progress.steps > steps:
        raise ArgError(f"{where}: the checkpoint has {progress.steps:,} steps done, more than "
                       f"the {steps:,} this run asks for (--steps/--epochs count from the start)")
    try:
        loader.restore(progress.loader)
    except (KeyError, TypeError, ValueError) as err:
        raise ArgError(f"{where}: the data loader's position is not valid here ({err})") from None
    set_seed_stream_state(*progress.seed_stream)
    return Resumed(module, state, list(progress.losses), float(progress.before))


@dataclass
class Run:
    """A run in progress, kept consistent under signals: `record` (passed to
    `Module.train_steps`) moves the state and losses inside each update's commit, and
    `begin_chunk` notes where the loader stood, so that at any moment the module, `state`,
    `losses` and the loader's cursor describe the same completed step."""

    exe: str
    flags: TrainFlags
    run_flags: RunFlags
    key: dict[str, Any]
    module: Module
    loader: BatchLoader
    state: optim.OptimState
    before: float
    steps: int
    losses: list[float] = field(default_factory=list)
    _mark: tuple[dict[str, Any], int] | None = None

    def record(self, state: optim.OptimState, losses: Sequence[float]) -> None:
        self.state = state
        self.losses.extend(losses)

    def begin_chunk(self) -> None:
        """Note the loader's cursor before drawing a chunk's batches."""
        self._mark = (self.loader.state(), len(self.losses))

    def _sync_loader(self) -> None:
        """Put the loader at the last completed step (a chunk may have stopped part way)."""
        if self._mark is None:
            return
        state, done = self._mark
        taken = (len(self.losses) - done) * self.flags.accumulate  # batches: k per step
        self.loader.restore(state)
        for _ in self.loader.batches(taken):
            pass
        self._mark = (self.loader.state(), len(self.losses))

    def chunk_steps(self, size: int) -> int:
        """The steps of the next chunk: at most `size`, never past a `--save-every` boundary
        or the run's end."""
        done = len(self.losses)
        n = min(size, self.steps - done)
        every = self.run_flags.save_every
        if every is not None:
            n = min(n, every - done % every)
        return max(n, 0)

    def progress(self) -> TrainProgress:
        """The run's progress, for the checkpoint (the loader at the last completed step)."""
        self._sync_loader()
        return TrainProgress(list(self.losses), seed_stream_state(), self.loader.state(),
                             dict(self.key), self.before)

    def save(self) -> None:
        """Write the `--save` checkpoint (atomically); a signal waits until it is written."""
        path = self.flags.save
        assert path is not None
        if not is_writer():
            return
        with deferred():
            target = os.path.abspath(path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            self.module.save(target, self.state, self.progress())

    def after_chunk(self, first: int) -> None:
        """The checks after a chunk whose first step was `first`: the non-finite stop, then
        the periodic checkpoint.

        Raises: ArgError: a NaN or infinite loss (without `--allow-nonfinite`), naming its step
        and the last finite loss.
        """
        if not self.run_flags.allow_nonfinite:
            try:
                check_finite_losses(self.losses, self.exe, first)
            except NonFiniteLossError as err:
                raise ArgError(f"{err}; stopped (--allow-nonfinite trains on)") from None
        every = self.run_flags.save_every
        if every is not None and len(self.losses) % every == 0 and len(self.losses) > 0:
            self.save()

    def interrupted(self, err: Interrupted) -> Interrupted:
        """Save the checkpoint when asked (`--save`/`--save-every`) and return the interrupt
        with the one line that says where the run stopped and how to go on."""
        done = len(self.losses)
        where = (f"{self.exe}: interrupted by {signal_name(err.signum)} after step "
                 f"{done:,} of {self.steps:,}")
        if self.flags.save is None:
            text = f"{where}; nothing saved (--save PATH keeps a checkpoint to --resume from)"
        else:
            self.save()
            text = (f"{where}; saved checkpoint: {self.flags.save} (continue with "
                    f"--resume {self.flags.save})")
        return Interrupted(err.signum, self.state, self.losses, text)
