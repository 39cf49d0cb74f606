"""The type stub python/tlrs/_core.pyi matches the built native module: the same names, the same
parameter names (and literal defaults) wherever the runtime exposes a signature, and it passes
`mypy --strict` when mypy is installed."""

import ast
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import tlrs._core as core

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "python" / "tlrs" / "_core.pyi"
FuncDef = ast.FunctionDef | ast.AsyncFunctionDef


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


def _declared(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Names a module or class body declares (imports excluded), with their last declaration."""
    out: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # A property setter repeats the getter's name; keep the getter.
            out.setdefault(node.name, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
    return out


def _decorators(fn: FuncDef) -> set[str]:
    names = set()
    for d in fn.decorator_list:
        if isinstance(d, ast.Name):
            names.add(d.id)
        elif isinstance(d, ast.Attribute):
            names.add(d.attr)
    return names


def _stub_params(fn: FuncDef, drop_self: bool) -> list[tuple[str, object]]:
    """(name, default) per parameter in order; default is `inspect.Parameter.empty` when absent,
    `_UNREADABLE` when it is not a literal."""
    a = fn.args
    positional = a.posonlyargs + a.args
    pos_defaults: list[object] = [inspect.Parameter.empty] * (len(positional) - len(a.defaults))
    pos_defaults += [_literal(d) for d in a.defaults]
    params = list(zip([p.arg for p in positional], pos_defaults))
    if a.vararg is not None:
        params.append((a.vararg.arg, inspect.Parameter.empty))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append((p.arg, inspect.Parameter.empty if d is None else _literal(d)))
    if a.kwarg is not None:
        params.append((a.kwarg.arg, inspect.Parameter.empty))
    if drop_self and params and params[0][0] in ("self", "cls"):
        params = params[1:]
    return params


_UNREADABLE = object()


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _UNREADABLE


def _runtime_params(obj: object, drop_self: bool) -> list[tuple[str, object]] | None:
    if not getattr(obj, "__text_signature__", None):
        return None
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    params = [(p.name, p.default) for p in sig.parameters.values()]
    if drop_self and params and params[0][0] in ("self", "$self", "cls", "$type"):
        params = params[1:]
    return params


def _runtime_public() -> set[str]:
    return {n for n in dir(core) if not n.startswith("_")} | {"__version__"}


def _stub_public(decl: dict[str, ast.stmt]) -> set[str]:
    return {n for n in decl if not n.startswith("_")} | ({"__version__"} & decl.keys())


def test_stub_and_module_declare_the_same_names():
    decl = _declared(_stub_tree().body)
    runtime, stub = _runtime_public(), _stub_public(decl)
    assert not runtime - stub, f"in tlrs._core but not in the stub: {sorted(runtime - stub)}"
    assert not stub - runtime, f"in the stub but not in tlrs._core: {sorted(stub - runtime)}"
    # Anything else the stub declares (dunders) must exist too.
    for name in decl:
        assert hasattr(core, name), f"stub declares {name}, missing at runtime"


def test_stub_kinds_and_exception_bases_match():
    decl = _declared(_stub_tree().body)
    for name, node in decl.items():
        obj = getattr(core, name)
        if isinstance(node, ast.ClassDef):
            assert isinstance(obj, type), f"{name} is a class in the stub, {type(obj)} at runtime"
            stub_bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            rt_bases = [b.__name__ for b in obj.__bases__]
            if stub_bases or issubclass(obj, BaseException):
                assert stub_bases == rt_bases, f"{name}: stub bases {stub_bases}, runtime {rt_bases}"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert callable(obj) and not isinstance(obj, type), f"{name} is not a function"
    expected = {
        "ShapeError": ValueError,
        "DTypeError": TypeError,
        "DeviceError": ValueError,
        "CudaUnavailableError": RuntimeError,
        "AutogradError": RuntimeError,
        "CheckpointError": ValueError,
    }
    for name, base in expected.items():
        assert getattr(core, name).__bases__ == (base,)


def test_stub_classes_declare_the_runtime_members():
    decl = _declared(_stub_tree().body)
    classes = [n for n in decl.values() if isinstance(n, ast.ClassDef)]
    assert {c.name for c in classes} >= {"Tensor", "FloatInit", "Plan", "Graph"}
    for cls in classes:
        rt = getattr(core, cls.name)
        if issubclass(rt, BaseException):
            continue
        members = _declared(cls.body)
        stub_public = {n for n in members if not n.startswith("_")}
        rt_public = {n for n in vars(rt) if not n.startswith("_")}
        assert stub_public == rt_public, (
            f"{cls.name}: missing in stub {sorted(rt_public - stub_public)}, "
            f"missing at runtime {sorted(stub_public - rt_public)}"
        )
        for n in members:
            if n not in ("__init__", "__hash__"):
                assert hasattr(rt, n), f"{cls.name}.{n} declared in the stub, missing at runtime"


def _check_params(where: str, stub: list[tuple[str, object]], rt: list[tuple[str, object]]):
    assert [n for n, _ in stub] == [n for n, _ in rt], f"{where}: stub {stub}, runtime {rt}"
    for (n, sd), (_, rd) in zip(stub, rt):
        if rd is inspect.Parameter.empty:
            assert sd is inspect.Parameter.empty, f"{where}: {n} has a default only in the stub"
        else:
            assert sd is not inspect.Parameter.empty, f"{where}: {n} lacks its default {rd!r}"
            # PyO3 shows defaults it cannot render (e.g. -1) as `...`; compare the rest.
            if rd is not Ellipsis and sd is not _UNREADABLE:
                assert sd == rd and type(sd) is type(rd), f"{where}: {n}={sd!r}, runtime {rd!r}"


def test_function_parameters_match_text_signatures():
    decl = _declared(_stub_tree().body)
    checked: set[str] = set()
    for name, node in decl.items():
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        rt = _runtime_params(getattr(core, name), drop_self=False)
        if rt is None:
            continue
        _check_params(name, _stub_params(node, drop_self=False), rt)
        checked.add(name)
    with_sig = {
        n
        for n in _runtime_public()
        if inspect.isbuiltin(getattr(core, n)) and getattr(core, n).__text_signature__
    }
    assert with_sig and with_sig <= checked, f"not checked: {sorted(with_sig - checked)}"


def test_method_parameters_match_text_signatures():
    decl = _declared(_stub_tree().body)
    checked = 0
    for cls in (n for n in decl.values() if isinstance(n, ast.ClassDef)):
        rt_cls = getattr(core, cls.name)
        if issubclass(rt_cls, BaseException):
            continue
        for node in cls.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.name == "__init__":
                rt = _runtime_params(rt_cls, drop_self=False)  # the class's own signature
            elif node.name.startswith("__") or "property" in _decorators(node):
                continue  # slot wrappers carry generic names (value, /)
            elif "setter" in _decorators(node):
                continue
            else:
                rt = _runtime_params(getattr(rt_cls, node.name), drop_self=True)
            if rt is None:
                continue
            static = "staticmethod" in _decorators(node)
            stub = _stub_params(node, drop_self=not static)
            _check_params(f"{cls.name}.{node.name}", stub, rt)
            checked += 1
    assert checked >= 40


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_stub_passes_mypy_strict(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict", "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "mypy_cache"),
            "python/tlrs/_core.pyi",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
