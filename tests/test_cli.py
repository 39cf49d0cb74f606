"""The `tlrs` command line, in a subprocess (`python -m tlrs`) and in-process (typer's CliRunner):
help, info, models, `run hello` with flags before and after the name, and one-line errors (exit 2).
"""

import os
import subprocess
import re
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
            f"hello from tlrs: first fresh seed = {next_seed(seed, 0)}", "tlrs run hello: ok"]


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
    (["run", "hello", "--dtype", "float32"],
     "tlrs run hello: this program only supports `--dtype float`"),
    (["run"], "missing model name"),
    ([], "missing command"),
    (["nosuch"], ""),
])
def test_proc_errors_are_one_line(args, start):
    p = tlrs_proc(*args)
    assert_one_error(p.stderr, p.returncode, start)


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
