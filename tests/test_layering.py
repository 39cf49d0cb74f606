"""The Rust crate's layers point one way (docs/ARCHITECTURE.md): nothing under backend/ names the
op layer, autograd, the compiled graph, tensors, storage or the bindings; the modules of backend/
import one another without cycles; the op layer never picks a device itself. Read from the sources, so a new `use` that breaks
the rule fails here with the file and the line."""

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

    cycles = []

    def visit(node, stack, seen):
        if node in stack:
            cycles.append(" -> ".join("::".join(m) for m in stack[stack.index(node):] + [node]))
            return
        if node in seen:
            return
        seen.add(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, stack + [node], seen)

    seen: set = set()
    for node in sorted(graph):
        visit(node, [], seen)
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
        if rel == "storage.rs" or rel.startswith(("backend/", "py/")):
            continue
        for n, code in _code_lines(path):
            if "backend::cuda" in code:
                bad.append(f"{rel}:{n}: {code.strip()}")
    assert not bad, "the CUDA backend named outside storage.rs:\n" + "\n".join(bad)
