"""Property test of the `tlrs` command line: random argument lists from real flags, values and junk
end in exit 0, or exit 2 with one `tlrs: error:` line; never a traceback or another code.
"""

import contextlib
import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tlrs
from tlrs.cli import main

FLAGS = [
    "--cpu", "--cuda", "--device", "--device=cpu", "--device=cuda:1", "--dtype", "--dtype=float",
    "--dtype=", "--float32-mode", "--float32-mode=fp32", "--backend", "--backend=eager",
    "--fast-kernels", "--fast-gpu-matmul-precision", "--seed", "--seed=3", "--seed=", "--seed=-1",
    "--help", "-h", "--", "-", "--=", "--cuda=true", "--Fast-Kernels", "--lr", "--steps",
]
VALUES = [
    "cpu", "cuda", "cuda:0", "cuda:", "cuda:x", "float", "float32", "f64", "double", "real", "ℝ",
    "fp32", "fp64", "tf32", "complex", "c32:ieee32", "float32:", "ieee754exec", "eager",
    "compiled", "0", "7", "-1", "007", "1e3", "", " ", "x y", "a\nb", "bogus", "hello", "run",
]
TOKENS = st.one_of(st.sampled_from(FLAGS), st.sampled_from(VALUES), st.text(max_size=6))
MODEL = st.sampled_from([["hello"], ["hello"], ["hello"], [], ["nosuch"]])
HEAD = st.sampled_from([["run"]] * 6 + [["models"], ["info"], ["--help"], ["nosuch"], []])


def call(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=HEAD, before=st.lists(TOKENS, max_size=5), model=MODEL,
       after=st.lists(TOKENS, max_size=6))
def test_cli_outcome_is_ok_or_one_error_line(head, before, model, after):
    args = [*head, *before, *model, *after]
    code, out, err = call(args)
    assert "Traceback" not in out + err
    if code == 0:
        assert err == "", (args, err)
    else:
        assert code == 2, (args, code, err)
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("tlrs: error: "), (args, err)
    tlrs.set_fast_kernels(False)


def test_call_helper_sees_success_and_errors():
    assert call(["run", "hello"])[0] == 0
    code, _, err = call(["run", "hello", "--seed", "x"])
    assert code == 2
    assert err == "tlrs: error: tlrs run hello: --seed: expected a natural number, got `x`\n"
