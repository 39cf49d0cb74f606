"""The `tlrs` command line, in a subprocess (`python -m tlrs`) and in-process (typer's CliRunner):
help, info, models, `run hello` with flags before and after the name, and one-line errors (exit 2).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tlrs import __version__
from tlrs.cli import COMMANDS, app, error_line, main, register, split_model
from tlrs.entry import require_cuda, run_usage
from tlrs.errors import ArgError, CudaUnavailableError
from tlrs.random import next_seed

LOG = [
    "[tlrs] dtype: float (IEEE-754 binary64)",
    "[tlrs] backend: eager",
    "[tlrs] device: cpu",
    "[tlrs] fastKernels: false",
    "[tlrs] fastGpuMatmulPrecision: fp32",
]


def hello_out(seed: int = 0) -> list[str]:
    return [*LOG, f"hello: seed={seed} device=cpu",
            f"hello from tlrs: first fresh seed = {next_seed(seed, 0)}", "hello: 1.5^2 = 2.25 in float64",
            "tlrs run hello: ok"]


def cuda_usable() -> bool:
    try:
        require_cuda()
    except CudaUnavailableError:
        return False
    return True


def tlrs_proc(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "tlrs", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def assert_one_error(stderr: str, code: int, start: str = "") -> str:  
    assert code == 2, stderr
    assert "Traceback" not in stderr
    err = stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("tlrs: error: " + start), stderr
    return err[0]


# --- subprocess ---------------------------------------------------------------------------------

def test_proc_help():
    p = tlrs_proc("--help")
    assert p.returncode == 0 and p.stderr == ""
    for word in ["run", "models", "info"]:
        assert word in p.stdout


def test_proc_run_help_lists_models_and_flags():
    p = tlrs_proc("run", "--help")
    assert p.returncode == 0 and p.stderr == ""
    out = p.stdout.splitlines()
    assert out[0] == "Usage: tlrs run MODEL [runtime flags] [model flags]"
    assert any(line.startswith("  hello  ") for line in out)
    assert "  --seed N" in out and "Runtime flags:" in out


def test_proc_model_help_is_run_usage():
    p = tlrs_proc("run", "hello", "-h", "--seed", "-1")
    assert p.returncode == 0 and p.stdout == run_usage("tlrs run hello") + "\n"


def test_proc_info():
    p = tlrs_proc("info")
    assert p.returncode == 0 and p.stderr == ""
    out = p.stdout.splitlines()
    assert out[0] == f"tlrs {__version__}"
    assert any(line.startswith("cuda: unavailable (CUDA") for line in out) or cuda_usable()
    assert "  device tensors: f32 and f64 (NVRTC kernels, cuBLAS GEMM)" in out
    assert any(line.startswith("cpu features: ") for line in out)
    assert any(line.startswith("threads: ") and line[9:].isdigit() for line in out)
    assert any(line.startswith("fast kernels by default: ") for line in out)
    assert any(line.startswith("build features: ") for line in out)


def test_proc_models():
    p = tlrs_proc("models")
    assert p.returncode == 0 and re.search(r"^hello +Demo: ", p.stdout, re.M)


def test_proc_run_hello():
    p = tlrs_proc("run", "hello", "--cpu")
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.splitlines() == hello_out()


@pytest.mark.parametrize("args", [
    ["run", "--seed", "3", "--dtype", "float", "hello"],
    ["run", "hello", "--cpu", "--seed=3"],
    ["run", "--cpu", "hello", "--seed", "3", "--dtype=float64"],
    ["run", "--", "--seed", "3", "hello"],
])
def test_proc_flags_before_and_after_the_model(args):
    p = tlrs_proc(*args)
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.splitlines() == hello_out(3)


@pytest.mark.parametrize("args,start", [
    (["run", "nosuch", "--cpu"], "unknown model 'nosuch' (known models: "),
    (["run", "hello", "--dtype", "bogus"], "unknown --dtype bogus (supported: float | real"),
    (["run", "hello", "--seed", "-1"],
     "tlrs run hello: --seed: expected a natural number, got `-1`"),
    (["run", "hello", "--dtype", "real"], "dtype=real is proof-only (noncomputable)"),
    (["run"], "missing model name"),
    ([], "missing command"),
    (["nosuch"], ""),
])
def test_proc_errors_are_one_line(args, start):
    p = tlrs_proc(*args)
    assert_one_error(p.stderr, p.returncode, start)


@pytest.mark.parametrize("spelling", ["complex", "complex32", "cfloat32", "c32", "complex:ieee754exec"])
def test_proc_run_hello_under_complex(spelling):
    """`--dtype complex` (each spelling) runs hello's program on complex64 tensors: TorchLean's two
    dtype lines, then (1.5 - 0.5i)² = 2 - 1.5i computed by tlrs.complex."""
    p = tlrs_proc("run", "hello", "--dtype", spelling)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out[:2] == ["[tlrs] dtype: complex (complex over float32)",
                       "[tlrs] Float32 mode: ieee754exec: executable IEEE-754 binary32 kernel (bit-level; "
                       "includes NaN/Inf)"]
    assert out[-2:] == ["hello: (1.5-0.5j)^2 = (2-1.5j) in complex64", "tlrs run hello: ok"]


def test_proc_run_hello_float32():
    p = tlrs_proc("run", "hello", "--dtype", "float32")
    assert p.returncode == 0 and p.stdout.splitlines()[-2:] == ["hello: 1.5^2 = 2.25 in float32", "tlrs run hello: ok"]


@pytest.mark.skipif(cuda_usable(), reason="a usable CUDA device is present")
def test_proc_cuda_is_refused_clearly():
    p = tlrs_proc("run", "hello", "--cuda")
    line = assert_one_error(p.stderr, p.returncode, "CUDA was requested (device cuda)")
    assert "cpu" in line
    assert "hello from tlrs" not in p.stdout and "ok" not in p.stdout


def test_console_script_if_installed():
    script = Path(sys.executable).with_name("tlrs")
    if not script.exists():
        pytest.skip("the tlrs console script is not installed next to this Python")
    p = subprocess.run([str(script), "run", "hello"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.splitlines() == hello_out()


# --- in-process ---------------------------------------------------------------------------------

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_runner_help_and_commands():
    for args in (["--help"], ["run", "--help"], ["run", "-h"], ["info", "--help"],
                 ["models", "--help"], ["info"], ["models"]):
        res = invoke(*args)
        assert res.exit_code == 0 and res.stderr == "", args
    assert invoke("run", "hello", "--help").stdout == run_usage("tlrs run hello") + "\n"


def test_runner_run_hello():
    res = invoke("run", "--cpu", "hello", "--seed", "3")
    assert res.exit_code == 0 and res.stdout.splitlines() == hello_out(3)


@pytest.mark.parametrize("args,start", [
    (["run", "hello", "extra"], "unexpected arguments: [extra]"),
    (["run", "hello", "--cpu", "--", "x"], "unexpected arguments: [--, x]"),  # `--` kept
    (["run", "hello", "--device", "gpu"], "unknown --device gpu"),
    (["run", "hello", "--fast-gpu-matmul-precision", "tf32"],
     "unknown --fast-gpu-matmul-precision tf32 (supported: fp32 | fp64)"),
    (["--cpu", "run", "hello"], "No such option: --cpu"),
    (["info", "extra"], ""),
])
def test_runner_errors_are_one_line(args, start):
    res = invoke(*args)
    assert_one_error(res.stderr, res.exit_code, start)


def test_main_returns_codes(capsys):
    assert main(["run", "hello"]) == 0
    assert capsys.readouterr().out.splitlines() == hello_out()
    assert main(["run", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("tlrs: error: unknown model 'nosuch'")
    assert main(["--help"]) == 0


def test_registry_and_split_model(capsys):
    assert "hello" in COMMANDS
    assert split_model(["--seed", "3", "--dtype", "float", "hello", "--x"]) == (
        "hello", ["--seed", "3", "--dtype", "float", "--x"])
    assert split_model(["--steps", "10", "hello"]) == ("hello", ["--steps", "10"])
    assert split_model(["--", "--cpu"]) == (None, ["--cpu"])
    with pytest.raises(ArgError, match="unknown model 'x' "):
        split_model(["x", "--cpu"])

    @register("test-echo")
    def echo(args: list[str]) -> int:
        """Test command: exits with the number it is given."""
        return int(args[0])

    try:
        assert invoke("run", "test-echo", "3").exit_code == 3
        assert re.search(r"^test-echo +Test command: exits", invoke("models").stdout, re.M)
        with pytest.raises(ValueError, match="already registered"):
            register("test-echo")(lambda args: 0)
        with pytest.raises(ValueError):
            register("--bad")
    finally:
        COMMANDS.pop("test-echo", None)


def test_error_line_is_one_line():
    assert error_line("a\nb\r\n c") == "tlrs: error: a; b; c"
    assert error_line("") == "tlrs: error: unknown error"


# --- error classes: a user's mistake is exit 2, a bug in tlrs is exit 1 -------------------------

def _raising_command(exc: BaseException):
    @register("test-raise")
    def raiser(args: list[str]) -> int:
        """Test command: raises the exception it was made with."""
        raise exc

    return raiser


def _user_errors():
    from tlrs import _core
    from tlrs.compiled import TraceError
    from tlrs.errors import CheckpointError, DTypeError, ShapeError

    return [
        (ArgError("bad flag"), "bad flag"),
        (ShapeError("shape [2] vs [3]"), "shape [2] vs [3]"),
        (DTypeError("float32 vs float64"), "float32 vs float64"),
        (CheckpointError("ck: truncated"), "ck: truncated"),
        (CudaUnavailableError("no driver"), "no driver"),
        (TraceError("cannot compile the loss: reads values"), "cannot compile the loss"),
        (MemoryError("cannot allocate 10 TiB"), "out of memory: cannot allocate 10 TiB"),
        (MemoryError(), "out of memory"),
        (FileNotFoundError("CSV file not found: a.csv"), "CSV file not found: a.csv"),
        (PermissionError(13, "Permission denied", "/x/y"), "/x/y: Permission denied"),
        (OSError(36, "File name too long", "aaaa"), "aaaa: File name too long"),
        (_core.ShapeError("two\nlines"), "two; lines"),
    ]


@pytest.mark.parametrize("exc,text", _user_errors())
def test_user_errors_are_one_line_exit_2(exc, text, capsys):
    _raising_command(exc)
    try:
        code = main(["run", "test-raise"])
    finally:
        COMMANDS.pop("test-raise", None)
    err = capsys.readouterr().err
    line = assert_one_error(err, code)
    assert text in line


@pytest.mark.parametrize("exc", [
    ValueError("boom"), TypeError("unsupported operand"), RuntimeError("state"), KeyError("k"),
    OverflowError("int too large to convert"), ZeroDivisionError("division by zero"),
    AssertionError(), IndexError("list index out of range"), OSError("no file name"),
    AttributeError("'NoneType' object has no attribute 'x'"),
])
def test_bugs_are_one_internal_error_line_exit_1(exc, capsys, monkeypatch):
    monkeypatch.delenv("TLRS_DEBUG", raising=False)
    _raising_command(exc)
    try:
        code = main(["run", "test-raise"])
    finally:
        COMMANDS.pop("test-raise", None)
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    [line] = err.splitlines()
    assert line.startswith(f"tlrs: internal error: {type(exc).__name__}")
    assert line.endswith(" (TLRS_DEBUG=1 shows the traceback)")
    if str(exc):
        assert str(exc) in line


def test_tlrs_debug_shows_the_traceback(capsys, monkeypatch):
    monkeypatch.setenv("TLRS_DEBUG", "1")
    _raising_command(ValueError("boom"))
    try:
        code = main(["run", "test-raise"])
    finally:
        COMMANDS.pop("test-raise", None)
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err[0] == "Traceback (most recent call last):"
    assert "ValueError: boom" in err
    assert err[-1] == "tlrs: internal error: ValueError: boom (see the traceback above)"


def test_internal_error_in_a_subprocess():
    code = ("import sys; from tlrs.cli import main, register\n"
            "register('test-bug')(lambda args: {}['missing'])\n"
            "sys.exit(main(['run', 'test-bug']))\n")
    env = {k: v for k, v in os.environ.items() if k != "TLRS_DEBUG"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=env)
    assert p.returncode == 1
    assert p.stderr == ("tlrs: internal error: KeyError: 'missing' "
                        "(TLRS_DEBUG=1 shows the traceback)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**env, "TLRS_DEBUG": "1"})
    assert p.returncode == 1 and "Traceback (most recent call last)" in p.stderr
    assert p.stderr.splitlines()[-1].startswith("tlrs: internal error: KeyError: 'missing'")


@pytest.mark.parametrize("args,text", [
    (["graph", "nosuch"], "graph: unknown model 'nosuch'"),
    (["graph", "mlp", "--dtype", "float16"], "graph: --dtype: expected float64 or float32"),
    (["graph", "mlp", "--batch", "18446744073709551616"], "graph: --batch: expected a size"),
    (["graph", "mlp", "--batch", str(10**30)], "graph: --batch: expected a size"),
    (["graph", "mlp", "--batch", "-1"], "graph: --batch: expected a size"),
    (["graph", "resnet", "--batch", "60000"], "of activations, more than the"),
    (["graph", "mlp", "--batch", "x"], "Invalid value for '--batch'"),
    (["graph", "mlp", "--batch", "9" * 5000], "Invalid value for '--batch'"),
])
def test_graph_errors_are_one_line(args, text):
    res = invoke(*args)
    line = assert_one_error(res.stderr, res.exit_code)
    assert text in line


def test_graph_with_a_batch():
    res = invoke("graph", "mlp", "--batch", "3")
    assert res.exit_code == 0 and "inputs [[3, 7], [3, 1]]" in res.stdout


def test_huge_seed_is_shown_without_failing(capsys):
    seed = 10**5000 - 1  # more digits than Python turns into text
    assert main(["run", "hello", "--seed", "9" * 5000]) == 0
    out = capsys.readouterr().out
    assert f"seed=<{seed.bit_length()}-bit number, {seed % 2**64} mod 2^64>" in out


@pytest.mark.parametrize("device", ["cuda:99999999999999999999", "cuda:18446744073709551616"])
def test_absurd_cuda_index_is_one_error(device, capsys):
    code = main(["run", "hello", "--device", device])
    assert_one_error(capsys.readouterr().err, code, f"CUDA was requested (device {device})")
