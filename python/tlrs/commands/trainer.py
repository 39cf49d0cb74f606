"""The small trainer every `tlrs run` model command shares: the common flags, model seeds from
the global stream, the reference's training loop and its printed lines (reference §8.4), the
TrainLog / plot / checkpoint outputs and held-out accuracy.

A command is `command(name, description, args, body)`: it goes through `tlrs.run` (runtime flags,
`--seed`, `--help`, CUDA refusal, banner, ok line) and calls `body(exe, opts, rest)`.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import os
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import optim
from ..cli import exe_name
from ..cli_args import (
    drop_dash_dash, has_help, parse_float_lit, parse_nat, require_no_args, take_flag_value_once,
)
from ..config import Options
from ..data import BatchLoader, Dataset
import contextvars

from ..entry import RunAction, RunOptions, run, run_usage
from ..errors import ArgError
from ..init import layer_init
from ..module import Module, ModuleDef, format_float, instantiate_with_options
from ..random import with_model
from ..tensor import tensor
from ..trainlog import curve_trainlog, plot_loss, require_matplotlib

__all__ = [
    "OPTIMIZERS", "TrainFlags", "TrainResult", "accuracy", "command", "finish", "make_optimizer",
    "model_seeds", "reseed", "take_nat", "take_train_flags", "train",
]

OPTIMIZERS = ("sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw", "adadelta")
_LOG_OFF = ("false", "off", "none", "no", "disabled")
Body = Callable[[str, Options, list[str]], None]
TRAIN_FLAGS_HELP = """Training flags (every command):
  --steps N | --epochs N  optimizer updates, or passes over the training data (pick one)
  --lr F                  learning rate, > 0
  --batch N               minibatch size (the incomplete last batch is dropped)
  --optim NAME            sgd | momentum | adagrad | rmsprop | adam | adamw | adadelta (adam)
  --log PATH              write the loss curve as TrainLog JSON (off/false/none/no: none)
  --plot PATH.png         draw the loss curve (needs tlrs[plot])
  --save PATH             save a checkpoint (parameters and optimizer state)
Nothing is written unless asked. `--seed N` seeds the model's initial values and the
minibatch shuffle."""


def command(name: str, description: str, args: list[str], body: Body) -> int:
    """Run `body(exe, opts, rest)` through `tlrs.run` with the banner
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
        token = _DTYPE.set(cast)
        try:
            body(exe, opts, rest)
        except ImportError as err:
            if "install tlrs[" not in str(err):
                raise  # a broken installation, not a missing optional extra
            raise ArgError(f"{exe}: {err}") from None
        finally:
            _DTYPE.reset(token)

    # The reference model commands run at `float` (binary64); `--dtype float32` is also served.
    args = list(args)
    if not any(a.split("=")[0] in ("--dtype", "--float32-mode") for a in args):
        args = ["--dtype", "float", *args]
    return run(exe, args, RunAction.any(guarded),
               RunOptions(banner=lambda o: f"{exe}: {description} (device={o.device})",
                          print_ok=True))


# The dtype `--dtype` selected for the running command (binary64 unless asked).
_DTYPE: contextvars.ContextVar[str] = contextvars.ContextVar("tlrs_command_dtype", default="float64")


def _prefixed(exe: str, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ArgError as err:
        text = str(err)
        raise ArgError(text if text.startswith(f"{exe}: ") else f"{exe}: {text}") from None


def take_nat(args: list[str], exe: str, key: str, default: int | None,
             positive: bool = True) -> tuple[int | None, list[str]]:
    """Take `--key N` once (a natural; > 0 when `positive`), with `default` when absent.

    Raises: ArgError, prefixed with `exe`: a missing value, a duplicate, not a natural, or 0.
    """
    raw, rest = _prefixed(exe, lambda: take_flag_value_once(args, key))
    if raw is None:
        return default, rest
    n = parse_nat(raw)
    if n is None:
        raise ArgError(f"{exe}: --{key}: expected a natural number, got `{raw}`")
    if positive and n == 0:
        raise ArgError(f"{exe}: --{key} must be > 0")
    return n, rest


def take_positive_float(args: list[str], exe: str, key: str,
                        default: float) -> tuple[float, list[str]]:
    """Take `--key F` once (a JSON-style float literal > 0), with `default` when absent.

    Raises: ArgError, prefixed with `exe`.
    """
    raw, rest = _prefixed(exe, lambda: take_flag_value_once(args, key))
    if raw is None:
        return default, rest
    x = parse_float_lit(raw)
    if x is None:
        raise ArgError(f"{exe}: --{key}: expected a JSON-style float literal, got `{raw}`")
    if not x > 0.0:
        raise ArgError(f"{exe}: --{key} must be > 0")
    return x, rest


def take_path(args: list[str], exe: str, key: str) -> tuple[str | None, list[str]]:
    """Take `--key PATH` once (verbatim). Raises: ArgError (prefixed): missing value, duplicate,
    or an empty path."""
    raw, rest = _prefixed(exe, lambda: take_flag_value_once(args, key))
    if raw is not None and not raw.strip():
        raise ArgError(f"{exe}: --{key}: expected a path, got an empty value")
    return raw, rest


def check_output_path(exe: str, key: str, path: str) -> None:
    """Fail before training when `--key PATH` cannot be written: PATH is a folder, or its
    nearest existing ancestor is not a writable folder. Raises: ArgError (prefixed)."""
    target = os.path.abspath(path)
    if os.path.isdir(target):
        raise ArgError(f"{exe}: --{key}: {path} is a folder, expected a file path")
    parent = os.path.dirname(target)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise ArgError(f"{exe}: --{key}: cannot write {path} ({parent} is not a writable folder)")


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


def take_train_flags(args: list[str], exe: str, *, lr: float, batch: int,
                     steps: int | None = None, epochs: int | None = None
                     ) -> tuple[TrainFlags, list[str]]:
    """Take, in order: `--steps N` / `--epochs N` (mutually exclusive, > 0; the default is
    `steps` or `epochs`, whichever is given), `--lr F` (> 0), `--batch N` (> 0), `--optim NAME`,
    `--log PATH` (`false`, `off`, `none`, `no`, `disabled`: no log), `--plot PATH.png` (checks
    that matplotlib is installed), `--save PATH`; output paths are checked to be writable.

    Raises: ArgError prefixed with `exe`: the reference's messages (`--steps and --epochs are
    mutually exclusive (pick one)`, `--lr must be > 0`, ...) or an unknown optimizer.
    """
    n_steps, rest = take_nat(args, exe, "steps", None)
    n_epochs, rest = take_nat(rest, exe, "epochs", None)
    if n_steps is not None and n_epochs is not None:
        raise ArgError(f"{exe}: --steps and --epochs are mutually exclusive (pick one)")
    if n_steps is None and n_epochs is None:
        n_steps, n_epochs = steps, epochs
    rate, rest = take_positive_float(rest, exe, "lr", lr)
    size, rest = take_nat(rest, exe, "batch", batch)
    name, rest = _prefixed(exe, lambda: take_flag_value_once(rest, "optim"))
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
    for key, path in (("log", None if off else log), ("plot", plot), ("save", save)):
        if path is not None:
            check_output_path(exe, key, path)
    assert size is not None
    flags = TrainFlags(n_steps, n_epochs, rate, size, name, None if off else log, off, plot, save)
    return flags, rest


def require_no_more(rest: list[str], exe: str) -> None:
    """`<exe>: unexpected arguments: [a, b]` when anything is left."""
    _prefixed(exe, lambda: require_no_args(rest))


def make_optimizer(name: str, lr: float) -> optim.Optimizer:
    """The optimizer `--optim` names, with the usual defaults for its other hyper-parameters:
    momentum 0.9; adagrad eps 1e-10; rmsprop decay 0.99, eps 1e-8; adam/adamw betas 0.9/0.999,
    eps 1e-8 (adamw weight decay 0.01); adadelta rho 0.9, eps 1e-6."""
    makers: dict[str, Callable[[], optim.Optimizer]] = {
        "sgd": lambda: optim.sgd(lr),
        "momentum": lambda: optim.momentum_sgd(lr, 0.9),
        "adagrad": lambda: optim.adagrad(lr, 1e-10),
        "rmsprop": lambda: optim.rmsprop(lr, 0.99, 1e-8),
        "adam": lambda: optim.adam(lr, 0.9, 0.999, 1e-8),
        "adamw": lambda: optim.adamw(lr, 0.01, 0.9, 0.999, 1e-8),
        "adadelta": lambda: optim.adadelta(lr, 0.9, 1e-6),
    }
    return makers[name]()


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


@contextmanager
def _progress(total: int, label: str) -> Iterator[Callable[[Sequence[float]], None]]:
    """A rich progress bar on a terminal (removed when done); a no-op otherwise. The callback
    takes the losses of the steps just done (it advances by their count, shows the last)."""
    if total == 0 or not sys.stdout.isatty():
        yield lambda losses: None
        return
    from rich.progress import (
        BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("loss {task.fields[loss]}"), TimeRemainingColumn(),
                  transient=True) as bar:
        task = bar.add_task(label, total=total, loss="-")
        yield lambda losses: bar.update(task, advance=len(losses),
                                        loss=format_float(losses[-1]) if losses else "-")


CHUNK_STEPS = 50
"""Steps per `Module.train_steps` call: the compiled backend runs each chunk in one native
call, and the progress bar moves after each chunk."""


def chunk_size(steps: int) -> int:
    """The steps per `train_steps` call for a run of `steps`: `CHUNK_STEPS`, or fewer for a
    short run (about a tenth of it, at least 1) so that its progress bar still moves."""
    return max(1, min(CHUNK_STEPS, steps // 10))


@dataclass
class TrainResult:
    """What `train` did: mean losses before/after, the pre-update loss of every step."""

    module: Module
    state: optim.OptimState
    before: float
    after: float
    losses: list[float]
    batch: int

    @property
    def steps(self) -> int:
        return len(self.losses)


def train(exe: str, defn: ModuleDef, opts: Options, train_set: Dataset, flags: TrainFlags,
          seed: int) -> TrainResult:
    """Instantiate `defn` (binary64) and train it the reference way (`fitModuleLoaderSteps`).

    Prints `mean_loss(train(before)) = v` (mean over the loader's full batches in the original
    order), runs the steps (`--steps`, or `--epochs` × full batches per epoch) on minibatches
    shuffled with the dataset-shuffle LCG seeded by `seed`, recording each step's pre-update
    loss, then prints `mean_loss(train(after)) = v`.
    Raises: ValueError: a batch larger than the training set.
    """
    try:
        loader = BatchLoader(len(train_set), flags.batch, seed)
    except ValueError as err:
        raise ArgError(f"{exe}: --batch: {err}") from None
    dtype = _DTYPE.get()
    module = instantiate_with_options(defn, dtype, opts)
    opt = make_optimizer(flags.optim, flags.lr)
    per_epoch = loader.batches_per_epoch
    steps = flags.steps if flags.steps is not None else (flags.epochs or 1) * per_epoch
    x, y = train_set.x, train_set.y
    fixed = [[tensor(x[idx], dtype=dtype), tensor(y[idx], dtype=dtype)] for idx in loader.fixed_batches()]
    before = module.mean_loss(fixed).item()
    print(f"mean_loss(train(before)) = {format_float(before)}")
    sys.stdout.flush()
    state = module.init_optim(opt)
    losses: list[float] = []
    order = loader.batches(steps)
    size = chunk_size(steps)
    with _progress(steps, exe) as advance:
        while chunk := list(itertools.islice(order, size)):
            batches = [[tensor(x[idx], dtype=dtype), tensor(y[idx], dtype=dtype)]
                       for idx in chunk]
            # One update per batch; each step's loss is the pre-update loss its gradients came
            # from (one forward per step; one native call per chunk on the compiled backend).
            state, chunk_losses = module.train_steps(opt, state, batches)
            losses.extend(chunk_losses)
            advance(chunk_losses)
    after = module.mean_loss(fixed).item()
    print(f"mean_loss(train(after)) = {format_float(after)}")
    return TrainResult(module, state, before, after, losses, flags.batch)


def finish(result: TrainResult, flags: TrainFlags, title: str, notes: Sequence[str]) -> None:
    """The outputs asked for, then the summary line: `  wrote TrainLog JSON: PATH` (`--log`) or
    `  TrainLog JSON disabled` (`--log off`), `  wrote loss plot: PATH` (`--plot`),
    `  saved checkpoint: PATH` (`--save`, parameters and optimizer state), and
    `  steps=N loss0=<before> loss1=<after>`."""
    all_notes = [*notes, f"lr={flags.lr:f}", f"steps={result.steps}", f"batch={result.batch}",
                 f"optim={flags.optim}"]
    if flags.log is not None:
        path = curve_trainlog(flags.log, title, result.losses, all_notes)
        print(f"  wrote TrainLog JSON: {path}")
    elif flags.log_disabled:
        print("  TrainLog JSON disabled")
    if flags.plot is not None:
        path = plot_loss(flags.plot, range(result.steps), result.losses, title)
        print(f"  wrote loss plot: {path}")
    if flags.save is not None:
        folder = os.path.dirname(os.path.abspath(flags.save))
        os.makedirs(folder, exist_ok=True)
        result.module.save(flags.save, result.state)
        print(f"  saved checkpoint: {flags.save}")
    print(f"  steps={result.steps} loss0={format_float(result.before)} "
          f"loss1={format_float(result.after)}")


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
