"""The `tlrs` command line (`tlrs run MODEL ...`, `tlrs models`, `tlrs info`, `tlrs graph`,
`tlrs export onnx MODEL OUT`, `tlrs convert IN OUT`), a typer app whose errors are one line on stderr, never a traceback:

- a user's mistake (a bad flag or value, a bad data file, an unwritable output, a model too large
  for memory, CUDA not usable, a loss that cannot be compiled) is `tlrs: error: <message>`, exit 2;
- anything else is a bug in tlrs: `tlrs: internal error: <Type>: <message> (TLRS_DEBUG=1 shows
  the traceback)`, exit 1; with the environment variable `TLRS_DEBUG=1` the traceback comes first.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

try:  # typer >= 0.22 carries its own copy of click
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer on top of click
    from click.exceptions import ClickException, UsageError  # type: ignore[no-redef,import-not-found,unused-ignore]

from .. import _core, interrupts
from ..compiled import TraceError
from ..entry import RunAction, RunOptions, run, runtime_flags_help
from ..errors import ArgError, CheckpointError, CudaUnavailableError, DTypeError, ShapeError
from ..interrupts import Interrupted
from ..tensor import tensor
from .args import (
    drop_dash_dash,
    format_bytes,
    format_nat,
    has_help,
    require_no_args,
    shorten,
)

if TYPE_CHECKING:
    from ..module import ModuleDef

PROG = "tlrs"
CommandFn = Callable[[list[str]], int]

COMMANDS: dict[str, CommandFn] = {}
"""Model commands of `tlrs run`, by name: each takes the argument list (model name removed) and
returns an exit code. Add to it with `register`."""

# Runtime flags that take the next token as their value: the model name is never such a value.
RUNTIME_VALUE_FLAGS = frozenset({
    "--dtype", "--float32-mode", "--backend", "--fast-gpu-matmul-precision", "--seed", "--device",
})
# Modules that register model commands when they exist (imported on first use of the registry).
_COMMAND_MODULES = ("tlrs.cli.commands",)
# Exceptions that are the user's fault: reported as one `tlrs: error:` line, exit 2. A bare
# ValueError/TypeError/RuntimeError/KeyError... is a bug in tlrs (`tlrs: internal error:`, exit 1).
USER_ERRORS: tuple[type[BaseException], ...] = (
    ArgError, ShapeError, DTypeError, CheckpointError, CudaUnavailableError, TraceError,
)
# File errors on a path the user gave (tlrs's own file code names the path in the message).
FILE_ERRORS: tuple[type[OSError], ...] = (
    FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError,
)
EXIT_INTERNAL = 1
MAX_GRAPH_BATCH = 65536
"""The largest `tlrs graph --batch` (the loss is traced twice on inputs of that batch)."""
MAX_MEMORY_BYTES = 4 * 2**30
"""The cap of `memory_limit`."""
EXIT_INTERRUPTED = 130
EXIT_USAGE = 2


def memory_limit() -> int:
    """The most bytes a command may plan to allocate for a model or a traced batch: 4 GiB, or
    half the machine's physical memory when that is less."""
    limit = MAX_MEMORY_BYTES
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        physical = 0
    return min(limit, physical // 2) if physical > 0 else limit


def register(name: str) -> Callable[[CommandFn], CommandFn]:
    """Decorator adding a model command to `COMMANDS` under `name` (its docstring's first line is
    its summary in `tlrs models`).

    Raises: ValueError: an empty name, one starting with `-` or holding whitespace, or a name
    already taken by another function.
    """
    if not isinstance(name, str) or not name or name.startswith("-") or name.split() != [name]:
        raise ValueError(f"a model command name must be a plain word, got {name!r}")

    def decorate(fn: CommandFn) -> CommandFn:
        old = COMMANDS.get(name)
        if old is not None and _ident(old) != _ident(fn):
            raise ValueError(f"model command {name!r} is already registered by {_ident(old)}")
        COMMANDS[name] = fn
        return fn

    return decorate


def _ident(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def exe_name(model: str) -> str:
    """The program name a model command passes to `tlrs.run` (usage line, prefixes, ok line)."""
    return f"{PROG} run {model}"


def known_commands() -> dict[str, CommandFn]:
    """`COMMANDS`, after importing the modules that register model commands, if installed."""
    for mod in _COMMAND_MODULES:
        if mod not in sys.modules and importlib.util.find_spec(mod) is not None:
            importlib.import_module(mod)
    return COMMANDS


def summary(fn: Callable[..., Any]) -> str:
    """The first line of `fn`'s docstring, or an empty string."""
    doc = (fn.__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def split_model(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """Find the model name among `tlrs run`'s arguments; return (name or None, the other args).

    A leading `--` is dropped. Candidates are the tokens that do not start with `-` and are not the
    value of a runtime flag that takes one (`--dtype X`, `--seed N`, ...); the first candidate that
    names a registered command is the model, so runtime and model flags may stand before or after
    it. Raises: ArgError: candidates exist but none is a known model (the first one is named).
    """
    args = drop_dash_dash(list(args))
    commands = known_commands()
    candidates: list[int] = []
    i = 0
    while i < len(args):
        if args[i] in RUNTIME_VALUE_FLAGS:
            i += 2
            continue
        if not args[i].startswith("-"):
            candidates.append(i)
        i += 1
    for i in candidates:
        if args[i] in commands:
            return args[i], args[:i] + args[i + 1:]
    if candidates:
        raise ArgError(f"unknown model {shorten(args[candidates[0]])!r} (known models: "
                       f"{_known_list()})")
    return None, args


def _known_list() -> str:
    return ", ".join(sorted(known_commands())) or "none registered"


def run_help() -> str:
    """The text of `tlrs run --help`."""
    commands = known_commands()
    width = max((len(n) for n in commands), default=0)
    models = [f"  {n:<{width}}  {summary(commands[n])}".rstrip() for n in sorted(commands)]
    return "\n".join([
        f"Usage: {PROG} run MODEL [runtime flags] [model flags]",
        "",
        "Runs a model command. Runtime and model flags may stand before or after MODEL;",
        f"`{PROG} run MODEL --help` shows the runtime flags a model takes.",
        "",
        "Models:",
        *(models or ["  (none registered)"]),
        "",
        runtime_flags_help(),
    ])


class _PassThroughCommand(TyperCommand):
    """A command that receives its arguments verbatim (no option parsing, `--` kept)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        ctx.args = list(args)
        return list(args)


class _Stopped(Exception):
    """A KeyboardInterrupt (or `Interrupted`) carried past typer, which would turn it into a
    silent exit 130, to `guarded`, which says where the run stopped."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__(str(interrupt))
        self.interrupt = interrupt


class _Group(TyperGroup):
    """The top-level group: handles every error as one `tlrs: error:` line, exit code 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as err:
            raise _Stopped(err) from None

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        code = guarded(lambda: super(_Group, self).main(
            args=argv, prog_name=prog_name or PROG, complete_var=complete_var,
            standalone_mode=False, **extra,
        ), empty=not argv)
        if standalone_mode:
            sys.exit(code)
        return code


def error_line(message: str) -> str:
    """`tlrs: error: <message>` on one line (newlines in the message become `; `)."""
    parts = [p.strip() for p in str(message).splitlines() if p.strip()]
    return f"{PROG}: error: {'; '.join(parts) or 'unknown error'}"


def _report(message: str) -> int:
    sys.stdout.flush()
    print(error_line(message), file=sys.stderr)
    sys.stderr.flush()
    return EXIT_USAGE


def debug_enabled() -> bool:
    """True when the environment variable `TLRS_DEBUG` asks for tracebacks (`1`, `true`, `yes`)."""
    return os.environ.get("TLRS_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def internal_error_line(err: BaseException) -> str:
    """`tlrs: internal error: <Type>: <message> (TLRS_DEBUG=1 shows the traceback)`, one line."""
    parts = [p.strip() for p in str(err).splitlines() if p.strip()]
    text = f"{type(err).__name__}: {'; '.join(parts)}" if parts else type(err).__name__
    hint = "see the traceback above" if debug_enabled() else "TLRS_DEBUG=1 shows the traceback"
    return f"{PROG}: internal error: {text} ({hint})"


def _internal(err: BaseException) -> int:
    sys.stdout.flush()
    if debug_enabled():
        traceback.print_exception(err, file=sys.stderr)
    print(internal_error_line(err), file=sys.stderr)
    sys.stderr.flush()
    return EXIT_INTERNAL


def _file_message(err: OSError) -> str:
    """An OSError as `<path>: <reason>` (its own text when tlrs wrote one)."""
    if err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return str(err) or type(err).__name__


def user_message(err: BaseException) -> str | None:
    """The one-line message for an exception that is the user's fault, else None (a bug)."""
    if isinstance(err, USER_ERRORS):
        return str(err) or type(err).__name__
    if isinstance(err, MemoryError):
        text = str(err).strip()
        return f"out of memory{': ' + text if text else ''} (try smaller sizes or fewer samples)"
    if isinstance(err, FILE_ERRORS) or (isinstance(err, OSError) and err.filename is not None):
        return _file_message(err)
    return None


def guarded(call: Callable[[], Any], empty: bool = False) -> int:
    """Run the click command `call` (non-standalone) and turn its outcome into an exit code.

    Args: empty: the argument list was empty (reported as a missing command).
    Returns 0 or the command's code; a user's error prints one `tlrs: error:` line and gives 2,
    any other exception one `tlrs: internal error:` line (and, with TLRS_DEBUG=1, the traceback)
    and gives 1; SIGINT (Ctrl-C) gives 130 and SIGTERM 143, with one line saying where the
    run stopped.
    """
    try:
        try:
            with interrupts.handled(sigterm=True):  # SIGTERM too raises Interrupted, not a kill
                rv = call()
        except _Stopped as stopped:
            raise stopped.interrupt from None
    except Interrupted as err:  # where the run stopped (and its checkpoint), one line
        sys.stdout.flush()
        text = str(err)
        print(text if text.startswith(f"{PROG} ") else f"{PROG}: {text}", file=sys.stderr)
        sys.stderr.flush()
        return err.exit_code
    except ClickException as err:
        if empty and isinstance(err, UsageError):
            return _report(
                f"missing command (one of: run, models, info, graph, export, convert; see `{PROG} --help`)")
        return _report(err.format_message())
    except typer.Abort:
        return _report("aborted")
    except KeyboardInterrupt:
        _report("interrupted")
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - every failure ends as one line, never a traceback
        message = user_message(err)
        if message is None:
            return _internal(err)
        return _report(message)
    if isinstance(rv, bool) or not isinstance(rv, int):
        return 0
    return rv


app = typer.Typer(
    name=PROG,
    cls=_Group,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="tlrs: a small, fast, deterministic neural-network runtime (Rust core, Python front).",
)


@app.command(
    "run",
    cls=_PassThroughCommand,
    add_help_option=False,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    options_metavar="MODEL [RUNTIME FLAGS] [MODEL FLAGS]",
)
def run_command(ctx: typer.Context) -> int:
    """Run a model command; runtime and model flags may stand before or after MODEL."""
    model, rest = split_model(ctx.args)
    if model is None:
        if has_help(rest):
            print(run_help())
            return 0
        raise ArgError(f"missing model name (known models: {_known_list()})")
    code = COMMANDS[model](rest)
    if code:
        raise typer.Exit(code)
    return 0


@app.command("models")
def models_command() -> None:
    """List the model commands `tlrs run` knows."""
    commands = known_commands()
    width = max((len(n) for n in commands), default=0)
    defaults = getattr(sys.modules.get("tlrs.cli.commands"), "DEFAULT_MODELS", {})
    from ..models import param_count

    for name in sorted(commands):
        make = defaults.get(name)
        count = f"{param_count(make()):>9,} params" if make else " " * 16
        print(f"{name:<{width}}  {count}  {summary(commands[name])}".rstrip())


def info_lines() -> list[str]:
    """The lines `tlrs info` prints: version, build, CPU features, threads, kernels, CUDA."""
    from .. import __version__
    from ..kernels import get_fast_kernels, get_num_threads

    build = getattr(_core, "build_features", None)
    features = list(build()) if callable(build) else ["cpu"]
    return [
        f"tlrs {__version__}",
        f"python: {platform.python_version()} ({platform.machine() or 'unknown machine'})",
        f"build features: {', '.join(features) or 'none'}",
        f"cpu features: {' '.join(_core.cpu_features()) or 'none detected'}",
        f"threads: {get_num_threads()}",
        f"fast kernels by default: {'on' if get_fast_kernels() else 'off (reference kernels)'}",
        f"cuda: {cuda_status()}",
        *distributed_lines(),
    ]


def distributed_lines() -> list[str]:
    """MPI, the launcher's world and NCCL (tlrs/distributed/info.py)."""
    from ..distributed import info

    return info.lines()


def cuda_status() -> str:
    """CUDA in a few lines: available or the short reason, then the diagnostics (long library
    search lists shortened; `tlrs.cuda.diagnostics()` has them in full)."""
    from .. import cuda

    reason = cuda.unavailable_reason().splitlines()[0]
    head = "available" if cuda.is_available() else f"unavailable ({reason})"
    lines = [head]
    for key, value in cuda.diagnostics().items():
        if key == "status":
            continue
        short = value if len(value) <= 90 else value[:87] + "..."
        lines.append(f"  {key}: {short}")
    return "\n".join(lines)


@app.command("graph")
def graph_command(
    model: str = typer.Argument(..., help="a model command name (see `tlrs models`)"),
    dtype: str = typer.Option("float64", "--dtype", help="float64 or float32"),
    batch: int = typer.Option(0, "--batch", help="trace with a leading batch axis of this size"),
) -> None:
    """Print a model's graph for the compiled backend (nodes, shapes, fused chains, activation
    memory) and the memory one training step takes, measured."""
    from ..config import Backend, Options
    from ..module import instantiate_with_options

    defn = _default_model("graph", model, dtype, batch)
    module = instantiate_with_options(defn, dtype, Options(backend=Backend.COMPILED))
    compiled = module._compiled
    assert compiled is not None
    shapes = [list(s) for s in defn.input_shapes]
    if batch:
        _check_trace_memory("graph", model, compiled.graph_for(defn.input_shapes).activation_bytes, batch)
        shapes = [[batch, *s] for s in defn.input_shapes]
        compiled.graph_for(shapes)
    print(compiled.describe())
    mem = compiled.step_memory(module.params(), shapes)
    print(f"one training step (forward + backward, measured): peak {mem['peak_bytes']:,} bytes; "
          f"{mem['large_buffers']} buffers of 256 KiB or more, {mem['fresh_first']} new from the system "
          f"on the first step, {mem['fresh_next']} on the next")


def _default_model(command: str, model: str, dtype: str, batch: int) -> ModuleDef:
    """The default definition of a model command, after checking `--dtype` and `--batch`."""
    known_commands()
    defaults = getattr(sys.modules.get("tlrs.cli.commands"), "DEFAULT_MODELS", {})
    make = defaults.get(model)
    if make is None:
        raise ArgError(f"{command}: unknown model {shorten(model)!r} (known: {', '.join(sorted(defaults))})")
    if dtype not in ("float64", "float32"):
        raise ArgError(f"{command}: --dtype: expected float64 or float32, got `{shorten(dtype)}`")
    if batch < 0 or batch > MAX_GRAPH_BATCH:
        raise ArgError(f"{command}: --batch: expected a size from 0 to {MAX_GRAPH_BATCH:,} (tracing "
                       f"runs the model on inputs of that batch), got {batch}")
    defn: ModuleDef = make()
    return defn


def _check_trace_memory(command: str, model: str, sample_bytes: int, batch: int) -> None:
    """Tracing runs the model on real inputs: refuse a batch whose activations (estimated from
    the unbatched graph's `sample_bytes`) exceed `memory_limit()`."""
    need = batch * sample_bytes
    limit = memory_limit()
    if need > limit:
        raise ArgError(f"{command}: --batch {batch}: tracing {model} at that batch needs about "
                       f"{format_bytes(need)} of activations, more than the {format_bytes(limit)} limit")


@app.command("export")
def export_command(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="the file format: onnx"),
    model: str = typer.Argument(..., metavar="MODEL", help="a model command name (see `tlrs models`)"),
    out: str = typer.Argument(..., metavar="OUT", help="the file to write (replaced atomically)"),
    dtype: str = typer.Option("float32", "--dtype", help="float32 or float64"),
    batch: int = typer.Option(0, "--batch", help="fix the batch axis at this size (0: a dynamic batch axis)"),
) -> None:
    """Export a model's forward (default definition, initial parameters) as an ONNX file."""
    import numpy as np

    from ..compiled import CompiledLoss
    from ..interop.onnx_export import DEFAULT_OPSET, OnnxExportError, OnnxUnavailableError, export_module
    from ..module import instantiate_with_options

    if fmt != "onnx":
        raise ArgError(f"export: unknown format {shorten(fmt)!r} (known: onnx)")
    defn = _default_model("export", model, dtype, batch)
    if batch:
        loss = CompiledLoss(defn.loss, defn.param_shapes, defn.input_shapes, dtype)
        _check_trace_memory("export", model, loss.graph_for(defn.input_shapes).activation_bytes, batch)
    module = instantiate_with_options(defn, dtype, None)
    ints = list(defn.input_dtypes or [None])[0] == "int64"  # token ids (gpt)
    example = np.zeros([max(batch, 1), *defn.input_shapes[0]], dtype="int64" if ints else dtype)
    try:
        onnx_model = export_module(module, out, example, dynamic_batch=not batch)
    except (OnnxExportError, OnnxUnavailableError) as err:
        raise ArgError(f"export: {err}") from None
    print(f"wrote {out}: {model} ({dtype}), ONNX opset {DEFAULT_OPSET}, {len(onnx_model.graph.node)} nodes, "
          f"batch axis {batch or 'dynamic'}")


@app.command("convert")
def convert_command(
    src: str = typer.Argument(..., metavar="IN", help="a TorchLean parameter file (JSON) or a safetensors file"),
    out: str = typer.Argument(..., metavar="OUT", help="the file to write (replaced atomically)"),
) -> None:
    """Convert TorchLean parameter files (torchlean_paramlist_bits_v1) to safetensors and back,
    exact bits; IN's content picks the direction."""
    from ..interop.torchlean_params import (
        is_torchlean_file,
        safetensors_to_torchlean,
        torchlean_to_safetensors,
    )

    if not os.path.isfile(src):
        raise ArgError(f"convert: {shorten(src)}: no such file")
    to_safetensors = is_torchlean_file(src)
    wrong = ".json" if to_safetensors else ".safetensors"
    if out.lower().endswith(wrong):
        target = "safetensors" if to_safetensors else "a TorchLean JSON file"
        raise ArgError(f"convert: {shorten(src)} converts to {target}, but OUT ends with {wrong}")
    count = (torchlean_to_safetensors if to_safetensors else safetensors_to_torchlean)(src, out)
    kind = "safetensors" if to_safetensors else "TorchLean torchlean_paramlist_bits_v1"
    print(f"wrote {out}: {count} parameters ({kind})")


@app.command("info")
def info_command() -> None:
    """Show the version, build features, CPU features, threads and CUDA status."""
    for line in info_lines():
        print(line)


@register("hello")
def hello(args: list[str]) -> int:
    """Demo: goes through tlrs.run (runtime flags, seed, banner), prints the first fresh seed and
    squares a number in the run's dtype (float by default; --dtype float32 or complex too)."""

    def body(cast: str, opts: Any, rest: list[str]) -> None:
        require_no_args(rest)
        print(f"hello from tlrs: first fresh seed = {_core.fresh_seed()}")
        if cast == "complex64":
            z = tensor([1.5 - 0.5j], dtype=cast, device=opts.device)
            print(f"hello: (1.5-0.5j)^2 = {(z * z).item()} in {cast}")
        else:
            x = tensor([1.5], dtype=cast, device=opts.device)
            print(f"hello: 1.5^2 = {(x * x).item()} in {cast}")

    if not any(a.split("=")[0] in ("--dtype", "--float32-mode") for a in args):
        args = ["--dtype", "float", *args]  # the reference's programs run at `float` unless asked
    return run(
        exe_name("hello"),
        args,
        RunAction.any(body),
        RunOptions(banner=lambda o: f"hello: seed={format_nat(o.seed)} device={o.device}",
                   print_ok=True),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tlrs` console script and `python -m tlrs`; returns the exit code.

    Args: argv: the arguments after the program name (default `sys.argv[1:]`).
    """
    command = typer.main.get_command(app)
    code: int = command.main(args=argv, prog_name=PROG, standalone_mode=False)
    return code
