"""Executable entrypoints (docs/runtime.md): `with_runtime`, `with_module`, `with_module_runtime`,
`RunOptions`, `RunAction`, `run_usage` and `run`, in the reference's control flow and output order.

docs/runtime.md describes these: `--help`/`-h` answers with the usage; the parsed `--seed` reaches the program
(`opts.seed` and the global stream); `--cuda` is checked before the body runs (the compiled backend runs on CUDA too); `--cuda --dtype
float32` is not refused by dtype.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from ._core import CudaUnavailableError, DeviceError, manual_seed
from .cli.args import drop_dash_dash, has_help, take_seed
from .config import ExecConfig, Options
from .dtype import FLOAT
from .errors import ArgError
from .kernels import fast_kernels

T = TypeVar("T")

AnyBody = Callable[[str, Options, list[str]], object]
"""A dtype-polymorphic program: `k(cast, opts, rest)`, cast = `'float64'`, `'float32'` or
`'complex64'` (`--dtype complex`: `tlrs.tensor(data, dtype=cast)` makes complex tensors)."""
FloatBody = Callable[[Options, list[str]], object]
"""A binary64-only program: `k(opts, rest)`."""

_RUNTIME_FLAGS = (
    ("--cpu | --cuda | --device cpu|cuda|cuda:N",
     "where to run (default cpu; cuda:N is GPU number N; the last one given wins)"),
    ("--dtype float|float32",
     "float: IEEE binary64 (also float64, f64, double); float32: IEEE binary32 (also f32,",
     "ieee754exec); default float32, or float with --cuda and for float-only programs"),
    ("--float32-mode ieee754exec", "binary32 mode (fp32 is proof-only)"),
    ("--backend eager|compiled", "execution backend (default eager; compiled traces the loss once, replays natively)"),
    ("--seed N", "seed of the global random stream, a natural number (default 0)"),
    ("--fast-kernels", "fast CPU kernels (FMA, blocked GEMM) instead of the reference ones"),
    ("--tf32", "allow TF32 tensor-core math in float32 GPU matmuls (off unless given)"),
    ("--fast-gpu-matmul-precision fp32|fp64", "CUDA matmul precision (default fp32)"),
    ("-h, --help", "show this help and exit"),
)


def runtime_flags_help() -> str:
    """The `Runtime flags:` block of the usage text: each flag, then its description indented."""
    lines = ["Runtime flags:"]
    for flag, *text in _RUNTIME_FLAGS:
        lines += [f"  {flag}", *(f"      {t}" for t in text)]
    return "\n".join(lines)


def run_usage(exe_name: str) -> str:
    """The help text `run` prints for `--help`/`-h` (the reference's `runUsage`, corrected).

    Args: exe_name: the program name shown in the usage line. The text has no trailing newline.
    """
    return "\n".join([
        f"Usage: {exe_name} [runtime flags] [command flags]",
        "",
        runtime_flags_help(),
        "",
        "Runtime flags may stand anywhere; a leading `--` is ignored. See `tlrs models` for the",
        "commands and each command's documentation for its own flags.",
    ])


def require_cuda(device: str = "cuda") -> None:
    """Fail unless `device` (`cuda` or `cuda:N`) is a usable CUDA device.

    Raises: CudaUnavailableError: CUDA is not built into this tlrs, or no such device is visible;
    the message names the device and the core's reason.
    """
    from .tensor import zeros

    try:
        zeros(1).to(device)
    except (CudaUnavailableError, DeviceError, ValueError, OverflowError) as err:
        reason = str(err).splitlines()[0].split(": cuda: searched")[0]
        raise CudaUnavailableError(
            f"CUDA was requested (device {device}), but it cannot be used: {reason}; "
            "run on the CPU with --cpu (`tlrs info` shows the CUDA diagnostics)"
        ) from None


def check_executable(cfg: ExecConfig) -> None:
    """Refuse a configuration tlrs cannot execute, before any program code runs.

    Raises: CudaUnavailableError: a CUDA device was asked for and is not usable.
    """
    if cfg.use_gpu:
        require_cuda(cfg.device)
        from . import cuda

        cuda.allow_tf32(cfg.tf32)


def _as_args(args: Sequence[str]) -> list[str]:
    if isinstance(args, (str, bytes)):
        raise TypeError("args must be a sequence of strings (e.g. sys.argv[1:]), not a string")
    out = list(args)
    for a in out:
        if not isinstance(a, str):
            raise TypeError(f"args must be strings, got {type(a).__name__} {a!r}")
    return out


def _check_callable(name: str, k: object) -> None:
    if not callable(k):
        raise TypeError(f"{name} must be callable, got {type(k).__name__}")


def _call_body(opts: Options, body: Callable[[], T]) -> T:
    """Run `body` with the CPU kernel kind that `opts` selects, restoring the previous one."""
    with fast_kernels(opts.fast_kernels):
        return body()


def _parse_checked(args: Sequence[str]) -> tuple[ExecConfig, list[str]]:
    """Parse (reference default-dtype policy), log, then the dtype and executability checks."""
    cfg, rest = ExecConfig.parse_and_strip(_as_args(args))
    # docs/runtime.md: a run that cannot execute (no usable GPU) fails before anything runs.
    check_executable(cfg)
    cfg.log()
    cfg.dtype.check_runnable()
    return cfg, rest


def _cast_of(cfg: ExecConfig) -> str:
    name = cfg.dtype.numpy_name
    assert name in ("float64", "float32", "complex64"), name  # check_runnable let only these through
    return name


def with_runtime(args: Sequence[str], k: Callable[[str, Options, list[str]], T]) -> T:
    """Parse the runtime flags, log them, and run `k(cast, opts, rest)` (docs/runtime.md).

    Args: args: the argument list (`--seed` is not taken here: it stays in `rest`); k: the program;
    cast is the tensor dtype name (`'float64'`, `'float32'` or `'complex64'`), opts has seed 0.
    Returns k's result. Raises: ArgError: a parse error (reference text, no prefix), a proof-only
    or unsupported dtype (after the log lines); CudaUnavailableError:
    `--cuda` without a usable GPU (after the log lines, before k).
    """
    _check_callable("k", k)
    cfg, rest = _parse_checked(args)
    opts = cfg.to_options()
    return _call_body(opts, lambda: k(_cast_of(cfg), opts, rest))


def _instantiate(defn: Any, args: Sequence[str]) -> tuple[str, Any, list[str], Options]:
    from .module import instantiate_with_options

    cfg, rest = _parse_checked(args)
    opts = cfg.to_options()
    cast = _cast_of(cfg)
    if cast == "complex64":
        raise ArgError("--dtype complex: a module's parameters are real (complex tensors run in programs "
                       "given to tlrs.run as RunAction.any, through tlrs.complex)")
    return cast, instantiate_with_options(defn, cast, opts), rest, opts


def with_module(defn: Any, args: Sequence[str], k: Callable[[str, Any, list[str]], T]) -> T:
    """Parse and log the runtime flags, instantiate `defn`, run `k(cast, module, rest)`.

    Args: defn: a `ModuleDef`; args: the argument list; k: the program, given the dtype name
    (`'float64'`/`'float32'`), the `Module` (following the parsed options) and the rest.
    Returns k's result. Raises: as `with_runtime`; `--cuda` with `--dtype float32` is not refused
    for its dtype (docs/runtime.md) but only when CUDA is unusable.
    """
    _check_callable("k", k)
    cast, module, rest, opts = _instantiate(defn, args)
    return _call_body(opts, lambda: k(cast, module, rest))


def with_module_runtime(defn: Any, args: Sequence[str], k: Callable[[Any, list[str]], T]) -> T:
    """As `with_module`, but the program is `k(module, rest)` (the reference's runtime variant).

    Returns k's result. Raises: as `with_module`.
    """
    _check_callable("k", k)
    _, module, rest, opts = _instantiate(defn, args)
    return _call_body(opts, lambda: k(module, rest))


@dataclass(frozen=True)
class RunOptions:
    """How `run` frames the program (docs/runtime.md).

    Args: banner: `Options -> str`, printed (one line) before the body, or None; flush: flush
    stdout right after the banner (only when there is one); print_ok: print `<exe_name>: ok`
    after the body returns. Raises: TypeError: a banner that is not callable.
    """

    banner: Callable[[Options], str] | None = None
    flush: bool = True
    print_ok: bool = False

    def __post_init__(self) -> None:
        if self.banner is not None:
            _check_callable("banner", self.banner)


@dataclass(frozen=True)
class RunAction:
    """The program `run` executes (docs/runtime.md): build with `RunAction.any` or `.float`.

    Args: kind: `'any'` (dtype selectable, `k(cast, opts, rest)`) or `'float'` (binary64 only,
    `k(opts, rest)`); body: the program. Raises: TypeError/ValueError: bad body or kind.
    """

    kind: Literal["any", "float"]
    body: Callable[..., object]

    def __post_init__(self) -> None:
        if self.kind not in ("any", "float"):
            raise ValueError(f"RunAction kind must be 'any' or 'float', got {self.kind!r}")
        _check_callable("RunAction body", self.body)

    @classmethod
    def any(cls, k: AnyBody) -> RunAction:
        """A dtype-polymorphic program `k(cast, opts, rest)`; raises TypeError if not callable."""
        return cls("any", k)

    @classmethod
    def float(cls, k: FloatBody) -> RunAction:
        """A binary64-only program `k(opts, rest)`; raises TypeError if not callable."""
        return cls("float", k)


def _frame(exe_name: str, run_opts: RunOptions, opts: Options, body: Callable[[], object]) -> None:
    """Banner (and flush), the body under the options' kernel kind, then the optional ok line."""
    if run_opts.banner is not None:
        print(run_opts.banner(opts))
        if run_opts.flush:
            sys.stdout.flush()
    _call_body(opts, body)
    if run_opts.print_ok:
        print(f"{exe_name}: ok")


def run(
    exe_name: str,
    args: Sequence[str],
    action: RunAction,
    run_opts: RunOptions | None = RunOptions(),  # noqa: B008 - frozen, never mutated
) -> int:
    """Run a program the reference way and return its exit code, 0.

    Order: drop a leading `--`; `--help`/`-h` anywhere prints `run_usage(exe_name)` and returns 0
    (nothing else happens); take `--seed` (natural, default 0) and reset the global seed stream to
    (seed, 0); then for `any`: parse (default-dtype policy), log, dtype check; for `float`: parse
    (default `float`), refuse a non-float dtype before logging, log; then refuse what cannot run
    (unusable CUDA); banner (with opts, seed included), body, ok line.
    Args: exe_name: program name for the usage, prefixes and the ok line; args: the argument list;
    action: the program; run_opts: framing (None: `RunOptions()`).
    Raises: ArgError: `<exe_name>: --seed: ...` errors, ``<exe_name>: this program only supports
    `--dtype float` ``, unprefixed parse/dtype errors; CudaUnavailableError:
    `--cuda` without a usable GPU (before the banner and body); TypeError: bad arguments.
    """
    if not isinstance(exe_name, str):
        raise TypeError(f"exe_name must be a str, got {type(exe_name).__name__}")
    if not isinstance(action, RunAction):
        raise TypeError(f"action must be a RunAction, got {type(action).__name__}")
    run_opts = RunOptions() if run_opts is None else run_opts
    if not isinstance(run_opts, RunOptions):
        raise TypeError(f"run_opts must be a RunOptions, got {type(run_opts).__name__}")
    args = drop_dash_dash(_as_args(args))
    if has_help(args):
        print(run_usage(exe_name))
        return 0
    try:
        seed, args = take_seed(args, 0)
    except ArgError as err:
        raise ArgError(f"{exe_name}: {err}") from None
    manual_seed(seed % 2**64)  # the reference's natural-number seed, reduced as it does
    if action.kind == "any":
        def continuation(cast: str, opts: Options, rest: list[str]) -> None:
            opts = replace(opts, seed=seed)
            _frame(exe_name, run_opts, opts, lambda: action.body(cast, opts, rest))

        # with_runtime already runs the continuation under the options' kernel kind.
        with_runtime(args, continuation)
    else:
        cfg, rest = ExecConfig.parse_and_strip_with_default_dtype(args, FLOAT)
        if cfg.dtype != FLOAT:
            raise ArgError(f"{exe_name}: this program only supports `--dtype float`")
        check_executable(cfg)
        cfg.log()
        opts = cfg.to_options(seed)
        _frame(exe_name, run_opts, opts, lambda: action.body(opts, rest))
    return 0
