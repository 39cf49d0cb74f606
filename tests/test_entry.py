"""Entry helpers (docs/runtime.md): `run`'s control flow and output order for both actions,
banner/flush/ok line, `--help`, `--seed`, `--`, `--cuda`, `--backend compiled`, `with_*` contracts.
"""

import importlib.util
import io
import sys
import types

import pytest

import tlrs
from tlrs.entry import (
    RunAction,
    RunOptions,
    require_cuda,
    run,
    run_usage,
    with_module,
    with_module_runtime,
    with_runtime,
)
from tlrs.errors import ArgError
from tlrs.random import next_seed, seed_stream_state

EXE = "prog"
# `config.log` lines (docs/runtime.md order, tlrs wording: `[tlrs]` prefix, plain names).
FLOAT_LINE = "[tlrs] dtype: float (IEEE-754 binary64)"
EXEC_LINE = (
    "[tlrs] Float32 mode: ieee754exec: executable IEEE-754 binary32 kernel"
    " (bit-level; includes NaN/Inf)"
)
FP32_LINE = "[tlrs] Float32 mode: fp32: proof semantics (round-on-ℝ), finite-only; no NaN/Inf"
CPU_TAIL = [
    "[tlrs] backend: eager",
    "[tlrs] device: cpu",
    "[tlrs] fastKernels: false",
    "[tlrs] fastGpuMatmulPrecision: fp32",
]
FLOAT_LOG = [FLOAT_LINE, *CPU_TAIL]
F32_LOG = [EXEC_LINE, *CPU_TAIL]
SEED0_FIRST = 7960286522194355700  # Appendix A: first draw after manualSeed(0)
FLOAT_ONLY = "prog: this program only supports `--dtype float`"


lines = str.splitlines


def cuda_usable() -> bool:
    try:
        require_cuda()
    except tlrs.CudaUnavailableError:
        return False
    return True


needs_no_cuda = pytest.mark.skipif(cuda_usable(), reason="a usable CUDA device is present")


class Recorder(io.StringIO):
    """A stdout that remembers what had been written at each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[str] = []

    def flush(self) -> None:
        self.flushed_at.append(self.getvalue())
        super().flush()


def float_body(calls):
    def body(opts, rest):
        calls.append((opts, rest))
        print("body")
    return RunAction.float(body)


def any_body(calls):
    def body(cast, opts, rest):
        calls.append((cast, opts, rest))
        print("body")
    return RunAction.any(body)


BODIES = {"any": any_body, "float": float_body}
BANNER = RunOptions(banner=lambda o: f"banner seed={o.seed}", print_ok=True)


# --- output order -------------------------------------------------------------------------------

def test_float_action_output_order(capsys):
    calls = []
    assert run(EXE, ["--cpu"], float_body(calls), BANNER) == 0
    assert lines(capsys.readouterr().out) == [*FLOAT_LOG, "banner seed=0", "body", "prog: ok"]
    (opts, rest), = calls
    assert rest == [] and opts.seed == 0 and opts.device == "cpu" and opts.backend == "eager"


def test_any_action_output_order_and_cast(capsys):
    calls = []
    assert run(EXE, [], any_body(calls), BANNER) == 0
    assert lines(capsys.readouterr().out) == [*F32_LOG, "banner seed=0", "body", "prog: ok"]
    assert calls[0][0] == "float32"
    run(EXE, ["--dtype", "float"], any_body(calls), BANNER)
    assert lines(capsys.readouterr().out) == [*FLOAT_LOG, "banner seed=0", "body", "prog: ok"]
    assert calls[1][0] == "float64"


def test_all_log_lines_follow_the_flags(capsys):
    args = ["--fast-kernels", "--fast-gpu-matmul-precision", "double", "--device", "cpu"]
    run(EXE, args, float_body([]))
    assert lines(capsys.readouterr().out) == [
        FLOAT_LINE, "[tlrs] backend: eager", "[tlrs] device: cpu", "[tlrs] fastKernels: true",
        "[tlrs] fastGpuMatmulPrecision: fp64", "body",
    ]


def test_default_run_options_print_no_banner_and_no_ok(capsys):
    assert run(EXE, [], float_body([])) == 0
    assert lines(capsys.readouterr().out) == [*FLOAT_LOG, "body"]
    run(EXE, [], float_body([]), RunOptions(print_ok=True))
    assert lines(capsys.readouterr().out) == [*FLOAT_LOG, "body", "prog: ok"]
    run(EXE, [], float_body([]), RunOptions(banner=lambda o: "B", print_ok=False))
    assert lines(capsys.readouterr().out) == [*FLOAT_LOG, "B", "body"]


def test_banner_is_flushed_before_the_body(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(sys, "stdout", rec)
    run(EXE, [], float_body([]), RunOptions(banner=lambda o: "B"))
    assert rec.flushed_at == ["\n".join([*FLOAT_LOG, "B"]) + "\n"]


def test_no_flush_when_asked_or_without_banner(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(sys, "stdout", rec)
    run(EXE, [], float_body([]), RunOptions(banner=lambda o: "B", flush=False))
    run(EXE, [], float_body([]), RunOptions(flush=True))
    assert rec.flushed_at == []


def test_run_returns_zero_whatever_the_body_returns(capsys):
    assert run(EXE, [], RunAction.float(lambda opts, rest: 5)) == 0
    assert run(EXE, [], RunAction.any(lambda cast, opts, rest: "x")) == 0


# --- dtype checks -------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--dtype", "float32"], ["--dtype=f32"], ["--float32-mode", "ieee754exec"], ["--dtype", "real"],
    ["--dtype", "fp32"], ["--cpu", "--dtype", "complex"],
])
def test_float_action_refuses_other_dtypes_before_logging(capsys, args):
    calls = []
    with pytest.raises(ArgError) as info:
        run(EXE, args, float_body(calls), BANNER)
    assert str(info.value) == FLOAT_ONLY
    assert capsys.readouterr().out == "" and calls == []


@pytest.mark.parametrize("spelling", ["float", "float64", "f64", "double"])
def test_float_action_accepts_binary64_spellings(capsys, spelling):
    calls = []
    run(EXE, ["--dtype", spelling], float_body(calls))
    assert len(calls) == 1 and lines(capsys.readouterr().out)[0] == FLOAT_LINE


def test_any_action_proof_only_dtype_fails_after_logging(capsys):
    calls = []
    with pytest.raises(ArgError) as info:
        run(EXE, ["--dtype", "fp32"], any_body(calls), BANNER)
    assert str(info.value).startswith(
        "float32-mode=fp32 is proof-only (noncomputable); use it in theorems/verification proofs"
    )
    assert lines(capsys.readouterr().out) == [FP32_LINE, *CPU_TAIL] and calls == []
    with pytest.raises(ArgError, match="^dtype=real is proof-only"):
        run(EXE, ["--dtype", "real"], any_body(calls))
    assert calls == []


def test_any_action_runs_its_program_under_complex(capsys):
    """--dtype complex (and its spellings) logs TorchLean's two lines and hands the program the
    cast 'complex64', with which tlrs.tensor makes complex tensors."""
    seen = []

    def body(cast, opts, rest):
        z = tlrs.tensor([1 + 2j], dtype=cast)
        seen.append((cast, type(z).__name__, z.dtype, (z * z).item()))

    for spelling in ("complex", "c32", "complex:ieee754exec"):
        run(EXE, ["--dtype", spelling], RunAction.any(body))
        assert lines(capsys.readouterr().out)[:2] == ["[tlrs] dtype: complex (complex over float32)", EXEC_LINE]
    assert seen == [("complex64", "ComplexTensor", "complex64", -3 + 4j)] * 3
    with pytest.raises(ArgError, match="--dtype complex: a module's parameters are real"):
        tlrs.with_module(tlrs.models.mlp(2, 3, 1)[0], ["--dtype", "complex"], lambda *a: None)


@pytest.mark.parametrize("action", ["any", "float"])
def test_parse_errors_are_unprefixed(capsys, action):
    make = BODIES[action]
    with pytest.raises(ArgError) as info:
        run(EXE, ["--backend", "--cuda"], make([]))
    assert str(info.value) == "unknown --backend --cuda (supported: eager | compiled)"
    with pytest.raises(ArgError) as info:
        run(EXE, ["--dtype"], make([]))
    assert str(info.value) == "--dtype: expected a value"
    assert capsys.readouterr().out == ""


# --- help ---------------------------------------------------------------------------------------

def test_run_usage_text():
    text = run_usage("tlrs run mlp")
    assert text.splitlines()[:3] == [
        "Usage: tlrs run mlp [runtime flags] [command flags]", "", "Runtime flags:",
    ]
    for flag in ["--cpu | --cuda | --device cpu|cuda|cuda:N", "--dtype float|float32",
                 "--backend eager|compiled", "--seed N", "--fast-kernels",
                 "--fast-gpu-matmul-precision fp32|fp64", "--tf32", "-h, --help"]:
        assert f"\n  {flag}\n" in text
    assert not text.endswith("\n")


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["x", "--cpu", "-h", "y"], ["--", "--help"], ["--seed", "-1", "--help"],
    ["--dtype", "bogus", "-h"], ["--cuda", "--help"],
])
@pytest.mark.parametrize("action", ["any", "float"])
def test_help_prints_usage_and_nothing_else(capsys, args, action):
    calls = []
    make = BODIES[action]
    tlrs.manual_seed(99)
    tlrs.fresh_seed()
    assert run(EXE, args, make(calls), BANNER) == 0
    assert capsys.readouterr().out == run_usage(EXE) + "\n"
    assert calls == [] and seed_stream_state() == (99, 1)  # nothing else happened


# --- seed ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--seed", "7"], ["--seed=7"], ["--cpu", "--seed", "7", "a"]])
@pytest.mark.parametrize("action", ["any", "float"])
def test_seed_reaches_the_program_and_resets_the_stream(capsys, args, action):
    seen = {}

    def record(opts, rest):
        seen.update(state=seed_stream_state(), seed=opts.seed, rest=rest, first=tlrs.fresh_seed())

    tlrs.manual_seed(3)
    tlrs.fresh_seed()
    act = RunAction.float(record) if action == "float" else RunAction.any(
        lambda cast, opts, rest: record(opts, rest))
    run(EXE, args, act, RunOptions(banner=lambda o: f"seed={o.seed}"))
    assert seen["state"] == (7, 0) and seen["seed"] == 7
    assert "--seed" not in " ".join(seen["rest"])
    assert seen["first"] == next_seed(7, 0) != SEED0_FIRST
    assert "seed=7" in lines(capsys.readouterr().out)


def test_default_seed_resets_to_zero(capsys):
    seen = []
    tlrs.manual_seed(5)
    tlrs.fresh_seed()
    run(EXE, [], RunAction.float(lambda opts, rest: seen.append((seed_stream_state(),
                                                                  tlrs.fresh_seed()))))
    assert seen == [((0, 0), SEED0_FIRST)]


@pytest.mark.parametrize("args,message", [
    (["--seed", "-1"], "prog: --seed: expected a natural number, got `-1`"),
    (["--seed=abc"], "prog: --seed: expected a natural number, got `abc`"),
    (["--seed="], "prog: --seed: expected a natural number, got ``"),
    (["--seed", "1", "--seed=2"], "prog: --seed: duplicate flag"),
    (["--seed"], "prog: --seed: expected a value"),
    (["--dtype", "bogus", "--seed", "x"], "prog: --seed: expected a natural number, got `x`"),
])
@pytest.mark.parametrize("action", ["any", "float"])
def test_seed_errors_carry_the_exe_prefix(capsys, args, message, action):
    make = BODIES[action]
    with pytest.raises(ArgError) as info:
        run(EXE, args, make([]))
    assert str(info.value) == message and capsys.readouterr().out == ""


# --- `--`, rest, kernels ------------------------------------------------------------------------

@pytest.mark.parametrize("args,rest", [
    (["--", "a", "--", "b"], ["a", "--", "b"]),
    (["a", "--"], ["a", "--"]),
    (["--", "--"], ["--"]),
    (["--", "--cpu", "x"], ["x"]),
    (["a", "--cpu", "--lr", "0.1", "--cuda=true", "b"], ["a", "--lr", "0.1", "--cuda=true", "b"]),
])
def test_dash_dash_and_rest(capsys, args, rest):
    calls = []
    run(EXE, args, float_body(calls))
    assert calls[0][1] == rest


def test_fast_kernels_follow_the_options_for_the_body(capsys):
    seen = []
    tlrs.set_fast_kernels(False)
    run(EXE, ["--fast-kernels"], RunAction.float(lambda o, r: seen.append(tlrs.get_fast_kernels())))
    with_runtime(["--fast-kernels"], lambda c, o, r: seen.append(tlrs.get_fast_kernels()))
    tlrs.set_fast_kernels(True)
    run(EXE, [], RunAction.float(lambda o, r: seen.append(tlrs.get_fast_kernels())))
    assert seen == [True, True, False] and tlrs.get_fast_kernels() is True
    tlrs.set_fast_kernels(False)


# --- refused configurations ---------------------------------------------------------------------

@needs_no_cuda
@pytest.mark.parametrize("args", [["--cuda"], ["--device", "cuda"], ["--device=cuda:1"],
                                  ["--cuda", "--dtype", "float32"]])
def test_cuda_is_checked_before_the_body(capsys, args):
    calls = []
    make = float_body if "float32" not in args else any_body
    with pytest.raises(tlrs.CudaUnavailableError) as info:
        run(EXE, args, make(calls), BANNER)
    assert "CUDA was requested" in str(info.value) and "cpu" in str(info.value)
    out = lines(capsys.readouterr().out)
    assert calls == [] and "banner seed=0" not in out and "prog: ok" not in out
    assert out == []  # refused before anything runs or is logged (docs/runtime.md)
    with pytest.raises(tlrs.CudaUnavailableError):
        with_runtime(["--cuda"], lambda *a: calls.append(a))
    assert calls == [] and lines(capsys.readouterr().out) == []


@pytest.mark.parametrize("action", ["any", "float"])
def test_compiled_backend_runs(capsys, action):
    calls = []
    assert run(EXE, ["--backend", "compiled"], BODIES[action](calls)) == 0
    assert len(calls) == 1
    assert "[tlrs] backend: compiled" in lines(capsys.readouterr().out)


# --- with_runtime / with_module -----------------------------------------------------------------

def test_with_runtime_contract(capsys):
    got = with_runtime(["--seed", "5", "--cpu", "x"], lambda cast, opts, rest: (cast, opts, rest))
    cast, opts, rest = got
    assert cast == "float32" and opts.seed == 0 and rest == ["--seed", "5", "x"]
    assert lines(capsys.readouterr().out) == F32_LOG
    assert with_runtime(["--dtype", "double"], lambda cast, opts, rest: cast) == "float64"


@pytest.fixture
def fake_module(monkeypatch):
    """Stands in for tlrs.module: records instantiate_with_options calls."""
    calls = []
    fake = types.ModuleType("tlrs.module")

    def instantiate_with_options(defn, cast, opts):
        calls.append((defn, cast, opts))
        return ("module", defn, cast)

    fake.instantiate_with_options = instantiate_with_options
    monkeypatch.setitem(sys.modules, "tlrs.module", fake)
    return calls


def test_with_module_contract(capsys, fake_module):
    defn = object()
    cast, module, rest = with_module(defn, ["--dtype", "float", "--steps", "3"], lambda *a: a)
    assert (cast, module, rest) == ("float64", ("module", defn, "float64"), ["--steps", "3"])
    (d, c, opts), = fake_module
    assert d is defn and c == "float64" and opts.seed == 0 and opts.device == "cpu"
    assert lines(capsys.readouterr().out) == FLOAT_LOG
    module, rest = with_module_runtime(defn, ["--fast-kernels", "y"], lambda *a: a)
    assert module == ("module", defn, "float32") and rest == ["y"]
    assert fake_module[1][2].fast_kernels is True


def test_with_module_errors(capsys, fake_module):
    for fn in (with_module, with_module_runtime):
        with pytest.raises(ArgError, match="^float32-mode=fp32 is proof-only"):
            fn(object(), ["--float32-mode", "fp32"], lambda *a: None)
        with pytest.raises(tlrs.CudaUnavailableError, match="run on the CPU with --cpu"):
            fn(object(), ["--backend=compiled", "--cuda"], lambda *a: None)
    assert fake_module == []


@needs_no_cuda
def test_with_module_cuda_float32_is_refused_only_for_cuda(capsys, fake_module):
    with pytest.raises(tlrs.CudaUnavailableError):
        with_module(object(), ["--cuda", "--dtype", "float32"], lambda *a: None)
    assert fake_module == []


@pytest.mark.skipif(importlib.util.find_spec("tlrs.module") is None,
                    reason="tlrs.module (ModuleDef, Module) has not landed yet")
def test_with_module_with_the_real_module(capsys):
    from tlrs.module import Module, ModuleDef

    defn = ModuleDef([[2]], [[2]], lambda ps, xs: tlrs.ops.mse_loss(ps[0], xs[0]))
    seen = with_module(defn, ["--dtype", "float"], lambda cast, m, rest: (cast, m, rest))
    assert seen[0] == "float64" and isinstance(seen[1], Module) and seen[2] == []
    m, rest = with_module_runtime(defn, ["z"], lambda m, rest: (m, rest))
    assert isinstance(m, Module) and rest == ["z"] and m.params()[0].dtype == "float32"


# --- argument checks ----------------------------------------------------------------------------

def test_argument_checks(capsys):
    with pytest.raises(ArgError, match=r"^unknown --dtype bogus \(supported: float \| real"):
        with_runtime(["--dtype", "bogus"], lambda *a: None)
    with pytest.raises(ArgError, match="^dtype=real is proof-only"):
        with_runtime(["--dtype", "real"], lambda *a: None)
    with pytest.raises(TypeError, match="not a string"):
        with_runtime("--cpu", lambda *a: None)
    with pytest.raises(TypeError, match="callable"):
        with_runtime([], None)
    for bad in (lambda: RunAction.any(3), lambda: RunAction.float(None),
                lambda: RunOptions(banner="hello"), lambda: run(EXE, "--cpu", float_body([])),
                lambda: run(EXE, [1], float_body([])), lambda: run(EXE, [], lambda o, r: None)):
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(ValueError):
        RunAction("both", lambda: None)
    assert RunOptions() == RunOptions(banner=None, flush=True, print_ok=False)
