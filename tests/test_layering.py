"""The Rust crate's layers point one way (docs/ARCHITECTURE.md): nothing under backend/ names the
op layer, autograd, the compiled graph, tensors, storage or the bindings; the modules of backend/
import one another without cycles; the op layer never picks a device itself. Read from the sources, so a new `use` that breaks
the rule fails here with the file and the line. The Python package's rules (the library never
imports the CLI side; commands/ has no import cycle) are read the same way, from the end of this
file on."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "rust" / "src"
# A device buffer holds the `Gpu` that made it and the `Gpu` makes buffers: one unit, split in two
# files for size. The only edge of a cycle allowed.
ALLOWED = {(("backend", "cuda", "buffer"), ("backend", "cuda", "gpu"))}
UPPER = ("ops", "autograd", "graph", "tensor", "storage", "py", "Tensor")
REF = re.compile(r"\b(crate|super)::((?:\{[^}]*\}|\w+)(?:::(?:\{[^}]*\}|\w+))*)")


def _module(path: Path) -> tuple[str, ...]:
    parts = path.relative_to(SRC).with_suffix("").parts
    return parts[:-1] if parts[-1] in ("mod", "lib") else parts


MODULES = {_module(p): p for p in SRC.rglob("*.rs")}


def _code_lines(path: Path):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("//", 1)[0]
        if code.strip():
            yield n, code


def _targets(mod: tuple[str, ...], root: str, rest: str) -> list[tuple[str, ...]]:
    """The modules a `crate::...` / `super::...` path names (each one's longest module prefix)."""
    base = mod[:-1] if root == "super" else ()
    items = rest[1:].split("}")[0].split(",") if rest.startswith("{") else [rest]
    out = []
    for item in items:
        segs = [x.strip("{} ").split(" as ")[0].strip() for x in item.split("::")]
        if not segs[0] or segs[0] == "self":
            continue
        path = base + (segs[0],)
        for seg in segs[1:]:
            if not seg or path + (seg,) not in MODULES:
                break
            path = path + (seg,)
        while path and path not in MODULES:
            path = path[:-1]
        out.append(path)
    return out


def _edges():
    for mod, path in MODULES.items():
        for n, code in _code_lines(path):
            for root, rest in REF.findall(code):
                for target in _targets(mod, root, rest):
                    yield mod, target, path, n, code.strip()


def test_backend_names_no_higher_layer():
    bad = []
    for mod, _target, path, n, code in _edges():
        if mod[:1] == ("backend",):
            for root, rest in REF.findall(code):
                if root == "crate" and rest.split("::")[0].strip("{}") in UPPER:
                    bad.append(f"{path.relative_to(SRC)}:{n}: {code}")
    assert not bad, "backend/ imports a higher layer:\n" + "\n".join(sorted(set(bad)))


def test_the_op_layer_never_picks_a_device():
    """ops/ checks arguments and records autograd; the device is chosen once, in storage.rs."""
    bad = []
    for path in (SRC / "ops").rglob("*.rs"):
        for n, code in _code_lines(path):
            if re.search(r"crate::backend|Storage::(Cpu|Cuda)|map_cpu", code):
                bad.append(f"{path.relative_to(SRC)}:{n}: {code.strip()}")
    assert not bad, "ops/ dispatches on the device itself:\n" + "\n".join(bad)


# The places that may name a device (`Device::...`, `is_cuda`): everywhere else asks storage.rs a
# device-neutral question (`Tensor::on_host`) or calls a device-neutral constructor
# (`Storage::full`, `Storage::filled`, `Storage::to_device`). Each entry with its reason.
DEVICE_NAMERS = {
    "storage.rs": "the one place an operation or a new storage picks its device",
    "storage/": "storage.rs's operations, one match on the devices each (storage/dispatch.rs)",
    "device.rs": "defines `Device`: its variants, parsing and printing",
    "backend/": "each backend is one device and runs there",
    "py/": "the bindings parse and print device strings and hand device buffers to DLPack and NCCL",
}
NAMES_A_DEVICE = re.compile(r"\bDevice::|\bis_cuda\b")


def _device_namers(paths):
    bad = []
    for path in paths:
        rel = path.relative_to(SRC).as_posix()
        if any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in DEVICE_NAMERS):
            continue
        for n, code in _code_lines(path):
            if NAMES_A_DEVICE.search(code):
                bad.append(f"{rel}:{n}: {code.strip()}")
    return bad


def test_only_storage_picks_a_device():
    """Outside storage.rs (and the device's definition, the backends and the bindings) no code
    names a device: a new device then means new arms in storage.rs, not a hunt through the crate."""
    bad = _device_namers(sorted(SRC.rglob("*.rs")))
    assert not bad, (
        "device named outside storage.rs (ask storage.rs instead, or add the file to DEVICE_NAMERS "
        "with its reason):\n" + "\n".join(bad)
    )
    # Every allowed entry exists, so a rename cannot silently widen the rule.
    for entry in DEVICE_NAMERS:
        assert (SRC / entry).exists(), entry


def test_the_device_reader_catches_a_device_name():
    for code in ("if p.is_cuda() {", "let crate::Device::Cuda(n) = d else {", "(Device::Cpu, d) => 1,",
                 "inputs.iter().any(Tensor::is_cuda)"):
        assert NAMES_A_DEVICE.search(code), code
    # Naming the type (a parameter, the error variant) is not choosing a device.
    for code in ("crate::Error::Device {", "device: crate::Device,", "fn to_device(&self, d: Device)"):
        assert not NAMES_A_DEVICE.search(code), code


def test_backend_modules_import_each_other_without_cycles():
    graph: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for mod, target, *_ in _edges():
        # A parent naming its own children (declarations, re-exports) is structure, not a use.
        if mod[:1] != ("backend",) or target[:1] != ("backend",) or target[: len(mod)] == mod:
            continue
        if mod[: len(target)] == target:  # a child reaching its parent's re-exports
            continue
        if (mod, target) in ALLOWED:
            continue
        graph.setdefault(mod, set()).add(target)

    cycles = _cycles(graph, "::".join)
    assert not cycles, "import cycles under backend/:\n" + "\n".join(cycles)
    # The reader works: it sees the edges it must.
    assert ("backend", "cuda", "ops", "layout") in graph[("backend", "cuda", "ops", "convert")]
    assert ("backend", "cpu", "elementwise") in graph[("backend", "cpu", "table_kernels")]


def test_the_reader_catches_a_forbidden_import():
    code = "use crate::ops::elementwise::dev;"
    assert [rest.split("::")[0] for _, rest in REF.findall(code)] == ["ops"]
    assert _targets(("backend", "cuda", "gpu"), "crate", "storage::try_alloc") == [("storage",)]
    assert _targets(("backend", "cuda", "emu"), "super", "{blas::GemmCall, kernels}") == [
        ("backend", "cuda", "blas"), ("backend", "cuda", "kernels")]


def test_only_storage_reaches_the_cuda_backend():
    """A device's kernels are reached through storage.rs (`Storage::to_dtype`, `dropout_scale`,
    `filled`, ...): code elsewhere naming `backend::cuda` would be a side door around it."""
    bad = []
    for path in sorted(SRC.rglob("*.rs")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "storage.rs" or rel.startswith(("storage/", "backend/", "py/")):
            continue
        for n, code in _code_lines(path):
            if "backend::cuda" in code:
                bad.append(f"{rel}:{n}: {code.strip()}")
    assert not bad, "the CUDA backend named outside storage.rs:\n" + "\n".join(bad)


# --- Python: the library never imports the CLI; the trainer's modules import without cycles ----
#
# The CLI side of python/tlrs: its folder cli/ (the typer app, the flag helpers, the model
# commands and their trainer), the flag helpers' old name (cli_args.py), `python -m tlrs`
# (__main__.py) and the run entrypoint
# (entry.py: `tlrs.run`, `with_runtime`, ... read a program's argument list). Everything else is
# the library, and imports none of them: a library type reads its values with `_flag_tokens.py`
# (the token-level primitives the CLI helpers are built on), never through the CLI.
PY_SRC = Path(__file__).resolve().parents[1] / "python" / "tlrs"
CLI_SIDE = ("tlrs.cli", "tlrs.cli_args", "tlrs.entry", "tlrs.__main__")
# Library -> CLI edges allowed, each with its reason (each must still exist: a fixed one is
# removed from here, so the list only shrinks).
CLI_IMPORTS_ALLOWED = {
    ("tlrs", "tlrs.entry"): "the package re-exports the run entrypoints (`tlrs.run`, `tlrs.with_module`, ...)",
}


def _py_module(path: Path) -> str:
    parts = ("tlrs", *path.relative_to(PY_SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


PY_MODULES = {_py_module(p): p for p in PY_SRC.rglob("*.py")}


def _is_package(mod: str) -> bool:
    return PY_MODULES.get(mod, Path()).name == "__init__.py"


def _py_imports(mod: str, source: str):
    """(target module, line) for every import in `source`, as module `mod` would resolve it:
    top-level, inside functions and under `if TYPE_CHECKING:` alike (each is a dependency)."""
    import ast

    package = mod if _is_package(mod) else mod.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names = [(base, a.name) for a in node.names]
        else:
            continue
        for base, name in names:
            target = f"{base}.{name}" if name and f"{base}.{name}" in PY_MODULES else base
            while target and target not in PY_MODULES and "." in target:
                target = target.rpartition(".")[0]
            if target in PY_MODULES:
                yield target, node.lineno


def _py_edges():
    for mod, path in sorted(PY_MODULES.items()):
        for target, line in _py_imports(mod, path.read_text(encoding="utf-8")):
            yield mod, target, path, line


def _cli_side(mod: str) -> bool:
    return any(mod == c or mod.startswith(c + ".") for c in CLI_SIDE)


def _library_imports_of_the_cli(edges):
    return [(mod, target, path, line) for mod, target, path, line in edges
            if not _cli_side(mod) and _cli_side(target) and (mod, target) not in CLI_IMPORTS_ALLOWED]


def test_the_library_never_imports_the_cli():
    edges = list(_py_edges())
    bad = [f"{path.relative_to(PY_SRC.parent)}:{line}: {mod} imports {target}"
           for mod, target, path, line in _library_imports_of_the_cli(edges)]
    assert not bad, ("a library module imports the CLI side (cli, cli_args, commands, entry): move "
                     "what it needs below the CLI:\n" + "\n".join(bad))
    pairs = {(mod, target) for mod, target, *_ in edges}
    for edge, reason in CLI_IMPORTS_ALLOWED.items():
        assert edge in pairs, f"allowed edge {edge} ({reason}) is gone: remove it from CLI_IMPORTS_ALLOWED"
    # The reader works: it sees the edges it must.
    assert ("tlrs.cli.commands.trainer", "tlrs.cli.typer_app") in pairs
    assert ("tlrs.dtype", "tlrs._flag_tokens") in pairs and ("tlrs.config", "tlrs.dtype") in pairs


def test_the_python_reader_catches_a_forbidden_import():
    for code in ("from .cli_args import take_flag_value_once", "from . import cli_args",
                 "from .cli.args import take_seed", "from .cli.commands import trainer",
                 "import tlrs.cli", "def f():\n    from .cli.commands.trainer import train",
                 "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .entry import run"):
        edges = [("tlrs.dtype", t, PY_MODULES["tlrs.dtype"], n) for t, n in _py_imports("tlrs.dtype", code)]
        assert _library_imports_of_the_cli(edges), code
    assert [t for t, _ in _py_imports("tlrs.cli.commands.resume", "from .train_common import RunFlags")] == [
        "tlrs.cli.commands.train_common"]
    assert [t for t, _ in _py_imports("tlrs.cli.commands", "from . import trainer")] == ["tlrs.cli.commands.trainer"]


def _py_cycles(graph: dict[str, set[str]]) -> list[str]:
    return _cycles(graph, str)


def _cycles(graph: dict, name) -> list[str]:
    """Every import cycle a depth-first walk of `graph` meets, each as `a -> b -> a`."""
    cycles = []

    def visit(node, stack, seen):
        if node in stack:
            cycles.append(" -> ".join(name(m) for m in stack[stack.index(node):] + [node]))
            return
        if node in seen:
            return
        seen.add(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, stack + [node], seen)

    seen: set = set()
    for node in sorted(graph):
        visit(node, [], seen)
    return cycles


def _commands_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, target, *_ in _py_edges():
        if mod.startswith("tlrs.cli.commands.") and target.startswith("tlrs.cli.commands.") and mod != target:
            graph.setdefault(mod, set()).add(target)
    return graph


def test_the_commands_import_each_other_without_cycles():
    """trainer.py runs data_parallel.py's loop and resume.py's checkpoints; what the three share
    is in train_common.py and flags.py, which import none of them (lazy and type-only imports
    count too)."""
    graph = _commands_graph()
    cycles = _py_cycles(graph)
    assert not cycles, "import cycles under commands/:\n" + "\n".join(cycles)
    assert "tlrs.cli.commands.data_parallel" in graph["tlrs.cli.commands.trainer"]
    assert "tlrs.cli.commands.train_common" in graph["tlrs.cli.commands.data_parallel"]


def test_data_parallel_never_reaches_the_trainer():
    graph = _commands_graph()
    reached, todo = set(), ["tlrs.cli.commands.data_parallel"]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in reached:
                reached.add(nxt)
                todo.append(nxt)
    assert "tlrs.cli.commands.trainer" not in reached
    assert _py_cycles({"a": {"b"}, "b": {"a"}}) == ["a -> b -> a"]


def test_the_cli_side_lives_in_its_folder():
    """Besides cli/, only the run entrypoint, `python -m tlrs` and the flag helpers' old name are
    CLI side; the library's files are the rest of python/tlrs."""
    outside = sorted(m for m in PY_MODULES if _cli_side(m) and not (m == "tlrs.cli" or m.startswith("tlrs.cli.")))
    assert outside == ["tlrs.__main__", "tlrs.cli_args", "tlrs.entry"]
    assert {"tlrs.cli.typer_app", "tlrs.cli.args", "tlrs.cli.commands.trainer"} <= set(PY_MODULES)


def test_importing_the_package_loads_no_typer():
    """`tlrs.run` reads its flags with cli/args.py: the folder's __init__ loads the typer app only
    when one of its names is used."""
    import subprocess
    import sys

    code = ("import sys, tlrs; assert 'typer' not in sys.modules, 'typer loaded'\n"
            "from tlrs.cli import main, register; assert 'typer' in sys.modules and callable(main)\n"
            "import tlrs.cli\n"
            "try:\n    tlrs.cli.no_such_name\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "no attribute 'no_such_name'" in out.stdout
