"""The small trainer every `tlrs run` model command shares: the common flags, model seeds from
the global stream, the reference's training loop and its printed lines (docs/runtime.md), the
TrainLog / plot / checkpoint outputs and held-out accuracy. The flag readers are in flags.py,
what this file shares with data_parallel.py and resume.py in train_common.py (re-exported here).

A command is `command(name, description, args, body)`: it goes through `tlrs.run` (runtime flags,
`--seed`, `--help`, CUDA refusal, banner, ok line) and calls `body(exe, dtype, opts, rest)`, with
`dtype` the `--dtype` selected (binary64 unless asked), passed on explicitly from there.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import math
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._core import Tensor
from ...complex import op_without_complex_meaning
from ...config import Options
from ...data import BatchLoader, Dataset
from ...entry import RunAction, RunOptions, run, run_usage
from ...errors import ArgError
from ...init import layer_init
from ...interrupts import Interrupted
from ...module import Module, ModuleDef, format_float
from ...random import with_model
from ...tensor import tensor
from ...trainlog import curve_trainlog, plot_loss, require_matplotlib
from ..args import drop_dash_dash, format_bytes, has_help, take_flag_value_once
from ..typer_app import exe_name, memory_limit
from . import data_parallel, resume
from .flags import (
    MAX_SIZE,
    MAX_STEPS,
    prefixed,
    require_no_more,
    take_nat,
    take_path,
    take_positive_float,
)
from .outputs import check_outputs, refuse
from .train_common import (
    OPTIMIZERS,
    SCHEDULES,
    TrainFlags,
    TrainResult,
    is_writer,
    make_optimizer,
    progress,
    step_lrs,
)

__all__ = [
    "MAX_SIZE", "MAX_STEPS", "OPTIMIZERS", "TrainFlags", "TrainResult", "accuracy",
    "check_model_size", "check_outputs", "command", "finish", "make_optimizer", "mlp_shapes",
    "MAX_ACCUMULATE", "model_seeds", "require_no_more", "reseed", "schedule", "take_nat", "take_path",
    "take_positive_float", "take_train_flags", "train",
]

MAX_ACCUMULATE = 1024
"""The most batches `--accumulate` averages per step (a chunk's batches are all in memory)."""

_LOG_OFF = ("false", "off", "none", "no", "disabled")
Body = Callable[[str, str, Options, list[str]], None]  # (exe, dtype, opts, rest)
TRAIN_FLAGS_HELP = """Training flags (every command):
  --steps N | --epochs N  optimizer updates, or passes over the training data (pick one)
  --lr F                  learning rate, > 0
  --batch N               minibatch size (the incomplete last batch is dropped)
  --optim NAME            sgd | momentum | adagrad | rmsprop | adam | adamw | adadelta | muon |
                          projected_sgd (adam)
  --clip X                scale each step's gradients to joint 2-norm at most X (> 0)
  --schedule NAME         the lr over the run: constant | cosine | step | linear (constant);
                          cosine and linear reach 0 just after the last step, step divides it
                          by 10 after each third of the steps (torch's schedulers' rates)
  --warmup N              first N steps warm up linearly, the k-th at lr*k/(N+1) (0); the
                          schedule runs over the steps after
  --accumulate K          each step averages the losses and gradients of K batches (1, at most
                          1024); --steps counts steps, --epochs N makes N*batches/K steps, and
                          each logged loss is its step's mean over its K batches
                          (--clip and --accumulate: not with --distributed)
  --log PATH              write the loss curve as TrainLog JSON (off/false/none/no: none)
  --plot PATH.png         draw the loss curve (needs tlrs[plot])
  --save PATH             save a checkpoint (parameters, optimizer state, the run's progress)
  --init-from PATH        start from these parameters: a tlrs checkpoint or a TorchLean
                          parameter file (torchlean_paramlist_bits_v1)
{rs}
{dp}
Nothing is written unless asked. `--seed N` seeds the model's initial values and the
minibatch shuffle. SIGINT or SIGTERM stops the run between two steps, writing the --save
checkpoint (exit 130 or 143).""".format(dp=data_parallel.FLAGS_HELP, rs=resume.FLAGS_HELP)


def command(name: str, description: str, args: list[str], body: Body) -> int:
    """Run `body(exe, dtype, opts, rest)` through `tlrs.run` with the banner
    `<exe>: <description> (device=<device>)` and the ok line; returns the exit code.

    `--help`/`-h` anywhere prints `run_usage(exe)`, then `Command flags:` and the body's
    docstring, and returns 0 without running anything.

    An ImportError naming a missing optional extra (`install tlrs[...]`) becomes an `ArgError`
    prefixed with the program name, so the CLI reports it on one line.
    """
    exe = exe_name(name)
    if has_help(drop_dash_dash(list(args))):
        print(run_usage(exe))
        print()
        print("Command flags:")
        doc = inspect.cleandoc(body.__doc__ or "See `tlrs models`.")
        print(textwrap.indent(doc, "  "))
        print()
        print(TRAIN_FLAGS_HELP)
        return 0

    def guarded(cast: str, opts: Options, rest: list[str]) -> None:
        # --dtype complex: the body builds its model at float32 and `train` refuses it, naming
        # the op that has no complex meaning.
        token = _complex_run.set(cast == "complex64")
        try:
            body(exe, "float32" if cast == "complex64" else cast, opts, rest)
        except ImportError as err:
            if "install tlrs[" not in str(err):
                raise  # a broken installation, not a missing optional extra
            raise ArgError(f"{exe}: {err}") from None
        finally:
            _complex_run.reset(token)

    # The reference model commands run at `float` (binary64); `--dtype float32` is also served.
    args = list(args)
    if not any(a.split("=")[0] in ("--dtype", "--float32-mode") for a in args):
        args = ["--dtype", "float", *args]
    with data_parallel.session(exe, args):  # `--distributed`: join MPI, rank 0 prints
        return run(exe, args, RunAction.any(guarded),
                   RunOptions(banner=lambda o: f"{exe}: {description} (device={o.device})",
                              print_ok=True))


_complex_run: contextvars.ContextVar[bool] = contextvars.ContextVar("complex_run", default=False)
"""Whether the running command was asked for `--dtype complex` (which `train` refuses)."""


def refuse_complex(exe: str, defn: ModuleDef) -> ArgError:
    """`--dtype complex` for a command: its model's parameters and optimizers are real (as
    TorchLean's complex scalar, which its trainers refuse); the message names the first op of
    the model with no complex meaning where there is one."""
    op = op_without_complex_meaning(defn)
    if op is not None:
        return ArgError(f"{exe}: --dtype complex: the model uses {op}, which has no complex meaning "
                        "(complex numbers have no order)")
    return ArgError(f"{exe}: --dtype complex: the command trainer trains real parameters only; complex "
                    "tensors run in programs (tlrs.complex)")


def mlp_shapes(in_dim: int, hidden: int, out_dim: int) -> list[tuple[int, int] | tuple[int]]:
    """The parameter shapes of a two-layer MLP `in -> hidden -> out` (weights and biases)."""
    return [(hidden, in_dim), (hidden,), (out_dim, hidden), (out_dim,)]


def check_model_size(exe: str, what: str, shapes: Sequence[Sequence[int]], optim_name: str,
                     activations: int = 0, *, dtype: str) -> None:
    """Refuse, before anything is allocated, a model that would not fit in memory: its
    parameters, their gradients, the updated parameters and the optimizer's slots (plus
    `activations` scalars, a rough count for one step) in `dtype`, the command's, against
    `tlrs.cli.memory_limit()`.

    Args: what: the flags and data that sized the model (`--hidden 1000`), for the message.
    Raises: ArgError (prefixed) naming `what`, the parameter count and the bytes.
    """
    count = sum(math.prod(int(d) for d in s) for s in shapes)
    itemsize = 4 if dtype == "float32" else 8
    slots = len(type(make_optimizer(optim_name, 1.0)).slot_names)
    need = (count * (3 + slots) + activations) * itemsize
    limit = memory_limit()
    parts = "parameters, gradients, optimizer state" + (", activations" if activations else "")
    if need > limit:
        raise ArgError(f"{exe}: {what}: the model would have {count:,} parameters; training it "
                       f"in {dtype} with {optim_name} needs about {format_bytes(need)} "
                       f"({parts}), more than the {format_bytes(limit)} limit")


def take_train_flags(args: list[str], exe: str, *, dtype: str, lr: float, batch: int,
                     steps: int | None = None, epochs: int | None = None
                     ) -> tuple[TrainFlags, list[str]]:
    """Take, in order: `--steps N` / `--epochs N` (mutually exclusive, > 0; the default is
    `steps` or `epochs`, whichever is given), `--lr F` (> 0), `--batch N` (> 0), `--optim NAME`,
    `--log PATH` (`false`, `off`, `none`, `no`, `disabled`: no log), `--plot PATH.png` (checks
    that matplotlib is installed), `--save PATH`, `--init-from PATH`, `--save-every N`,
    `--resume PATH`, `--allow-nonfinite`, `--clip X` (> 0), `--schedule NAME` (`SCHEDULES`),
    `--warmup N` (>= 0), `--accumulate K` (1 .. `MAX_ACCUMULATE`); output paths are checked to
    be writable.

    Raises: ArgError prefixed with `exe`: the reference's messages (`--steps and --epochs are
    mutually exclusive (pick one)`, `--lr must be > 0`, ...), an unknown optimizer or
    schedule, or `--clip`/`--accumulate` with `--distributed` (its update neither clips nor
    accumulates).
    """
    n_steps, rest = take_nat(args, exe, "steps", None, maximum=MAX_STEPS)
    n_epochs, rest = take_nat(rest, exe, "epochs", None, maximum=MAX_STEPS)
    if n_steps is not None and n_epochs is not None:
        raise ArgError(f"{exe}: --steps and --epochs are mutually exclusive (pick one)")
    if n_steps is None and n_epochs is None:
        n_steps, n_epochs = steps, epochs
    rate, rest = take_positive_float(rest, exe, "lr", lr)
    size, rest = take_nat(rest, exe, "batch", batch)
    name, rest = prefixed(exe, lambda: take_flag_value_once(rest, "optim"))
    name = "adam" if name is None else name
    if name not in OPTIMIZERS:
        raise ArgError(f"{exe}: --optim: expected one of {' | '.join(OPTIMIZERS)}, got `{name}`")
    log, rest = take_path(rest, exe, "log")
    off = log is not None and log.strip().lower() in _LOG_OFF
    plot, rest = take_path(rest, exe, "plot")
    if plot is not None:
        try:
            require_matplotlib()
        except ImportError as err:
            raise ArgError(f"{exe}: --plot: {err}") from None
    save, rest = take_path(rest, exe, "save")
    init_from, rest = take_path(rest, exe, "init-from")
    clip, rest = take_positive_float(rest, exe, "clip", None)
    sched, rest = prefixed(exe, lambda: take_flag_value_once(rest, "schedule"))
    sched = "constant" if sched is None else sched
    if sched not in SCHEDULES:
        raise ArgError(f"{exe}: --schedule: expected one of {' | '.join(SCHEDULES)}, got `{sched}`")
    warmup, rest = take_nat(rest, exe, "warmup", 0, positive=False, maximum=MAX_STEPS)
    accumulate, rest = take_nat(rest, exe, "accumulate", 1, maximum=MAX_ACCUMULATE)
    run_flags, rest = resume.take_flags(rest, exe, save)
    check_outputs(exe, [("log", None if off else log), ("plot", plot), ("save", save)])
    distributed, shards, rest = data_parallel.take_flags(rest, exe)
    assert size is not None and warmup is not None and accumulate is not None
    if distributed and clip is not None:
        raise ArgError(f"{exe}: --clip is not available with --distributed (the data-parallel "
                       "update does not clip)")
    if distributed and accumulate > 1:
        raise ArgError(f"{exe}: --accumulate is not available with --distributed (each "
                       "data-parallel step takes one global batch; raise --batch instead)")
    flags = TrainFlags(n_steps, n_epochs, rate, size, name, None if off else log, off, plot, save,
                       dtype, distributed, shards, run_flags, init_from, clip, sched, warmup,
                       accumulate)
    return flags, rest


def initial_from(exe: str, defn: ModuleDef, opts: Options, flags: TrainFlags) -> ModuleDef:
    """`defn` starting from the parameters `--init-from` names: a tlrs checkpoint or a TorchLean
    parameter file (its values by position, shapes checked against the model)."""
    if flags.init_from is None:
        return defn
    if flags.run.resume is not None:
        raise ArgError(f"{exe}: --init-from and --resume both choose the starting parameters (pick one)")
    from ...module import Module

    loaded = Module.load(flags.init_from, defn, opts, dtype=flags.dtype)
    return dataclasses.replace(defn, init_params=[p.to(flags.dtype) for p in loaded.params()],
                               init_plan=None)


def model_seeds(count: int) -> list[int]:
    """`count` layer seeds the reference way (`nn.withModel`): one draw from the global seed
    stream (reset by `--seed`), then `count` draws from a local stream started there."""
    return with_model(lambda stream: [stream.fresh_seed() for _ in range(count)])


def reseed(defn: ModuleDef, schemes: Sequence[tuple[Any, ...] | None]) -> ModuleDef:
    """`defn` with fresh initial values for the parameters whose scheme is given, one layer
    seed per parameter from `model_seeds` (so `--seed` changes them). A scheme is
    `("uniform", lo, hi)` or `("xavier",)` (fan-in = shape[1:], fan-out = shape[0]); None
    keeps the definition's value (biases, norm scales)."""
    seeds = model_seeds(len(defn.param_shapes))
    params = []
    for p, shape, scheme, seed in zip(defn.initial_params(), defn.param_shapes, schemes, seeds,
                                      strict=True):
        if scheme is None:
            params.append(p)
        elif scheme[0] == "uniform":
            params.append(layer_init("uniform", list(shape), seed=seed, lo=scheme[1], hi=scheme[2]))
        else:
            fan_in = int(np.prod(shape[1:]))
            params.append(layer_init("xavier_uniform", list(shape), seed=seed, fan_in=fan_in,
                                     fan_out=int(shape[0])))
    return dataclasses.replace(defn, init_params=params, init_plan=None)


CHUNK_STEPS = 50
"""Steps per `Module.train_steps` call: the compiled backend runs each chunk in one native
call, and the progress bar moves after each chunk."""


def chunk_size(steps: int) -> int:
    """The steps per `train_steps` call for a run of `steps`: `CHUNK_STEPS`, or fewer for a
    short run (about a tenth of it, at least 1) so that its progress bar still moves."""
    return max(1, min(CHUNK_STEPS, steps // 10))


def schedule(exe: str, n: int, flags: TrainFlags, seed: int = 0) -> tuple[BatchLoader, int]:
    """The loader over `n` training samples and the optimizer step count the flags ask for
    (`--steps`, or `--epochs` times the full batches per epoch, divided by `--accumulate` and
    rounded down).

    Raises: ArgError (prefixed): a batch larger than the training set, more than `MAX_STEPS`
    steps, epochs that make no whole step of `--accumulate` batches, or a `--warmup` that
    leaves no step."""
    try:
        loader = BatchLoader(n, flags.batch, seed)
    except ValueError as err:
        raise ArgError(f"{exe}: --batch: {err}") from None
    per_epoch = loader.batches_per_epoch
    k = flags.accumulate
    steps = flags.steps if flags.steps is not None else (flags.epochs or 1) * per_epoch // k
    of_k = "" if k == 1 else f" of --accumulate {k} batches"
    if steps > MAX_STEPS:
        raise ArgError(f"{exe}: --epochs {flags.epochs} at {per_epoch:,} batches per epoch is "
                       f"{steps:,} steps{of_k}, more than the {MAX_STEPS:,} a run may take")
    if steps == 0:
        raise ArgError(f"{exe}: --epochs {flags.epochs} at {per_epoch:,} batches per epoch is "
                       f"no whole step{of_k}")
    if flags.warmup >= steps:
        raise ArgError(f"{exe}: --warmup {flags.warmup} must be less than the run's {steps:,} "
                       "steps (the schedule runs after it)")
    return loader, steps


def as_input(a: np.ndarray, dtype: str) -> Tensor:
    """A batch array as a module input: integer arrays as int64 tensors (token ids, labels; the
    definition declares them with `ModuleDef(input_dtypes=[..., "int64"])`), anything else in
    the command's float dtype."""
    return tensor(a, dtype="int64") if a.dtype.kind in "iu" else tensor(a, dtype=dtype)


def train(exe: str, defn: ModuleDef, opts: Options, train_set: Dataset, flags: TrainFlags,
          seed: int, *, model_key: str | None = None, key_data: Dataset | None = None,
          evaluate: Callable[[BatchLoader], Sequence[np.ndarray]] | None = None) -> TrainResult:
    """Instantiate `defn` in the command's dtype (`flags.dtype`) and train it the reference way
    (`fitModuleLoaderSteps`), or continue the run `--resume` names (commands/resume.py).

    Prints `mean_loss(train(before)) = v` (mean over the loader's full batches in the original
    order; a resumed run prints the saved run's), runs the steps (`--steps`, or `--epochs` ×
    full batches per epoch / `--accumulate`, counted from the run's start) on minibatches
    shuffled with the dataset-shuffle LCG seeded by `seed`, recording each step's pre-update
    loss (with `--accumulate K`, the mean over its K batches), then prints
    `mean_loss(train(after)) = v`. Each batch is `[x[idx], y[idx]]` made by `as_input`:
    integer arrays in `train_set` become int64 tensors, float arrays the command's dtype.
    `--clip`, the `--schedule`/`--warmup` learning rates (`step_lrs`, computed once for the
    whole run; a resumed run takes them from its step on) and `--accumulate` go to
    `Module.train_steps`.

    Args: model_key: what `--resume` compares as "the model" (default `exe`: name the flags
    that shape the model that parameter shapes do not show); key_data: the data `--resume`
    digests (default `train_set`); evaluate: the index batches of the mean loss before and
    after (default every full batch in order).
    Raises: ArgError: a batch larger than the training set, more than `MAX_STEPS` steps, a
    checkpoint of another run, or a NaN/infinite loss (without --allow-nonfinite);
    Interrupted: SIGINT/SIGTERM, after writing the checkpoint when `--save` is given.
    """
    if _complex_run.get():
        raise refuse_complex(exe, defn)
    defn = initial_from(exe, defn, opts, flags)
    loader, steps = schedule(exe, len(train_set), flags, seed)
    key = resume.run_key(exe, flags, seed, train_set if key_data is None else key_data, steps)
    if model_key is not None:
        key["model"] = model_key
    fixed_idx = loader.fixed_batches() if evaluate is None else list(evaluate(loader))
    lrs = step_lrs(flags, steps)
    if flags.distributed:
        return data_parallel.train(exe, defn, opts, train_set, flags, loader, steps, key, fixed_idx,
                                   lrs)
    dtype = flags.dtype
    opt = make_optimizer(flags.optim, flags.lr)
    x, y = train_set.x, train_set.y

    def batch(idx: np.ndarray) -> list[Tensor]:
        return [as_input(x[idx], dtype), as_input(y[idx], dtype)]

    fixed = [batch(idx) for idx in fixed_idx]
    got = resume.start(exe, flags, defn, opts, key, loader, steps, fixed)
    module, before = got.module, got.before
    state = module.init_optim(opt) if got.state is None else got.state
    print(f"mean_loss(train(before)) = {format_float(before)}")
    sys.stdout.flush()
    run_ = resume.Run(exe, flags, flags.run, key, module, loader, state, before, steps,
                      got.losses)
    k = flags.accumulate
    size = max(1, chunk_size(steps) // k)  # at most about CHUNK_STEPS batches a call
    try:
        with progress(steps, exe) as advance:
            if run_.losses:  # a resumed run starts part way
                advance(run_.losses)
            while n := run_.chunk_steps(size):
                run_.begin_chunk()
                batches = [batch(idx) for idx in loader.batches(n * k)]
                first = len(run_.losses)
                # One update per k batches; each step's loss is the pre-update loss its
                # gradients came from (one native call per chunk on the compiled backend).
                module.train_steps(opt, run_.state, batches, record=run_.record, clip=flags.clip,
                                   lrs=None if lrs is None else list(lrs[first:first + n]),
                                   accumulate=k)
                advance(run_.losses[first:])
                run_.after_chunk(first)
    except Interrupted as err:
        raise run_.interrupted(err) from None
    after = module.mean_loss(fixed).item()
    print(f"mean_loss(train(after)) = {format_float(after)}")
    return TrainResult(module, run_.state, before, after, run_.losses, flags.batch, exe,
                       run_.progress())


def finish(result: TrainResult, flags: TrainFlags, title: str, notes: Sequence[str]) -> None:
    """The outputs asked for, then the summary line: `  wrote TrainLog JSON: PATH` (`--log`) or
    `  TrainLog JSON disabled` (`--log off`), `  wrote loss plot: PATH` (`--plot`),
    `  saved checkpoint: PATH` (`--save`, parameters and optimizer state), and
    `  steps=N loss0=<before> loss1=<after>`.

    Raises: ArgError: an output that cannot be written after all (a full disk, a folder removed
    meanwhile), naming the flag, the path and the reason; an earlier output stays written.
    """
    all_notes = [*notes, f"lr={flags.lr:f}", f"steps={result.steps}", f"batch={result.batch}",
                 f"optim={flags.optim}"]
    if flags.clip is not None:
        all_notes.append(f"clip={flags.clip!r}")
    if flags.schedule != "constant" or flags.warmup:
        all_notes += [f"schedule={flags.schedule}", f"warmup={flags.warmup}"]
    if flags.accumulate != 1:
        all_notes.append(f"accumulate={flags.accumulate}")
    exe = result.exe
    if flags.log is not None:
        log = flags.log
        _write(exe, "log", log, lambda: curve_trainlog(log, title, result.losses, all_notes))
        print(f"  wrote TrainLog JSON: {log}")
    elif flags.log_disabled:
        print("  TrainLog JSON disabled")
    if flags.plot is not None:
        plot = flags.plot
        _write(exe, "plot", plot,
               lambda: plot_loss(plot, range(result.steps), result.losses, title))
        print(f"  wrote loss plot: {plot}")
    if flags.save is not None:
        target = os.path.abspath(flags.save)

        def save() -> None:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            result.module.save(target, result.state, result.progress)

        _write(exe, "save", flags.save, save)
        print(f"  saved checkpoint: {flags.save}")
    print(f"  steps={result.steps} loss0={format_float(result.before)} "
          f"loss1={format_float(result.after)}")


def _write(exe: str, key: str, path: str, write: Callable[[], object]) -> None:
    if not is_writer():
        return  # a data-parallel run's files are rank 0's
    try:
        write()
    except OSError as err:
        raise refuse(exe, key, path, err.strerror or str(err)) from None


def accuracy(predict: Callable[[Any, Any], Any], module: Module, test_set: Dataset,
             chunk: int = 256) -> float:
    """The fraction of `test_set` whose arg-max logit is its label (predicted in chunks)."""
    assert test_set.labels is not None
    params = module.params()
    hits = 0
    for start in range(0, len(test_set), chunk):
        x = tensor(test_set.x[start:start + chunk], dtype=params[0].dtype, device=params[0].device)
        logits = np.asarray(predict(params, x).numpy())
        hits += int((logits.argmax(axis=-1) == test_set.labels[start:start + chunk]).sum())
    return hits / max(1, len(test_set))


def print_accuracy(predict: Callable[[Any, Any], Any], module: Module, test_set: Dataset) -> float:
    """Print `accuracy(test) = <percent>%` (two decimals) and return the fraction."""
    acc = accuracy(predict, module, test_set)
    print(f"accuracy(test) = {100.0 * acc:.2f}%")
    return acc
