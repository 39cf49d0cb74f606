"""A generated fuzz of the `tlrs` command line, run in worker processes.

Each case is an argument list built from the real flag set (every subcommand and model, runtime,
training, data and model flags) with random values: valid small ones, zero, negative, huge,
NaN/inf, empty, unicode, over-long strings and paths, bad data files, missing values, duplicates
and unknown flags. A worker process calls `tlrs.cli.main` in-process with stdout/stderr captured
(catching SystemExit), in a scratch folder of its own. Every case must end in exit 0, or exit 2
with exactly one non-empty stderr line starting `tlrs: error:`. A traceback, an internal error
(exit 1), any other exit code or stderr shape, a worker killed by a signal or a case that runs past
its timeout is a failure, reported with its argument list.

Cases are reproducible: case `i` of seed `s` comes from `random.Random(f"{s}:{i}")`, whatever the
worker count. The cases that would train keep `--steps` small, so the suite is fast. This module is
the engine of `scripts/fuzz-cli` (the full run, >= 10,000 cases); pytest runs a quick slice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

SEED = 20261202
QUICK_CASES = 1500
FULL_CASES = 10_000
CASE_TIMEOUT_S = 90.0

# --- the flag set and the values ------------------------------------------------------------------

MODELS = ["mlp", "quickstart_mlp", "softmax_regression", "mlp_classifier", "autoencoder", "cnn",
          "resnet", "transformer"]
MODEL_FLAGS = {
    "mlp": ["--csv", "--dataset", "--hidden"],
    "quickstart_mlp": [],
    "softmax_regression": ["--dataset"],
    "mlp_classifier": ["--dataset", "--hidden"],
    "autoencoder": ["--x", "--y", "--n-total", "--dataset", "--hidden"],
    "cnn": ["--x", "--y", "--n-total", "--dataset", "--channels"],
    "resnet": ["--x", "--y", "--n-total", "--dataset", "--width"],
    "transformer": ["--seq-len", "--heads", "--head-dim"],
    "hello": [],
}
EXPENSIVE = {"cnn", "resnet"}  # a valid --epochs or the default step count would take seconds
TRAIN_FLAGS = ["--steps", "--epochs", "--lr", "--batch", "--optim", "--log", "--plot", "--save"]
RUNTIME_FLAGS = ["--cpu", "--cuda", "--device", "--dtype", "--float32-mode", "--backend", "--seed",
                 "--fast-kernels", "--tf32", "--fast-gpu-matmul-precision", "--help", "-h"]
BOOL_FLAGS = {"--cpu", "--cuda", "--fast-kernels", "--tf32", "--help", "-h"}
UNKNOWN_FLAGS = ["--frobnicate", "--Steps", "--step", "---", "-x", "--", "-", "--=", "--lr=",
                 "--cuda=true", "--Fast-Kernels", "--log-every", "-steps", "—steps", "--ｓteps"]
ALL_FLAGS = sorted({f for fs in MODEL_FLAGS.values() for f in fs} | set(TRAIN_FLAGS)
                   | set(RUNTIME_FLAGS))

HUGE_INTS = ["18446744073709551616", "18446744073709551615", "9223372036854775807",
             "9223372036854775808", "1000000000000000", "1" + "0" * 30, "9" * 400, "9" * 5000,
             "4294967296", "2147483648", "100000000"]  # all refused as sizes and step counts
BAD_INTS = ["0", "-1", "-0", "+3", " 3", "3 ", "1.5", "1e3", "0x10", "", "٣", "３", "NaN", "inf",
            "one", "1_000", "00", "007", "\x00", "3\n"]
FLOATS_OK = ["0.01", "1e-3", "0.5", "1", "3e-2", "0.001"]
FLOATS_BAD = ["0", "-1", "-0.0", "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400",
              "1e-400", "1e99999999999999999999999", "1" * 400, "0.1.2", ".5", "1.", "",
              "١", "1e", "1e+", "0x1p3", "1e308", "1e300", "9" * 5000]
LONG = "é" * 300
DEEP = "/".join(["d"] * 2100) + "/x.json"
OUT_PATHS = ["out.json", "a/b/c/log.json", "log.json", "loss.png", "ck.safetensors", "x/y.png",
             "out2", "out2/loss.png", "out2/ck", "日本語.json", "a b.json", "~/l.json",
             "sub/../l.json", "./l.json"]
BAD_OUT_PATHS = ["", " ", ".", "..", "/", "sub/", "/proc/tlrs-fuzz/x.json", "/dev/null", "x" * 300,
                 "y" * 250, DEEP, "a\x00b", LONG, "a\nb.json", "-", "--log", "../fx",
                 "../fx/good_x.npy/l.json", "\ud800.json"]
DATASETS = ["digits", "iris", "wine", "breast_cancer", "diabetes", "mnist", "", "DIGITS",
            "digits ", "../digits", "ℝ"]
FX = "../fx/"
NPY_X = [FX + n for n in ("good_x.npy", "nhwc_x.npy", "empty.npy", "trunc.npy", "long.npy",
                          "junk.npy", "obj.npy", "c64.npy", "rank3.npy", "nan.npy", "tiny.npy",
                          "zero.npy", "bigheader.npy", "folder", "good_y.npy")] + [
    "missing.npy", "", LONG, "x" * 5000, "a\x00b"]
NPY_Y = [FX + n for n in ("good_y.npy", "float_y.npy", "neg_y.npy", "big_y.npy", "short_y.npy",
                          "empty.npy", "trunc.npy", "good_x.npy", "folder")] + ["missing.npy", ""]
CSVS = [FX + n for n in ("good.csv", "nan.csv", "empty.csv", "header.csv", "ragged.csv",
                         "words.csv", "binary.csv", "one_col.csv", "folder")] + [
    "missing.csv", "", LONG, "c" * 300]
CHOICES = {
    "--dtype": ["float", "float32", "float64", "f32", "f64", "double", "real", "fp32", "ℝ",
                "float16", "bogus", "", "ieee754exec", "float32:", "c32:ieee32"],
    "--float32-mode": ["ieee754exec", "fp32", "", "bogus"],
    "--backend": ["eager", "compiled", "Compiled", "jit", ""],
    "--device": ["cpu", "cuda", "cuda:0", "cuda:1", "cuda:", "cuda:x", "cuda:99999999999999999999",
                 "gpu", "", "CPU", "cpu:0"],
    "--fast-gpu-matmul-precision": ["fp32", "fp64", "tf32", "", "FP32"],
    "--optim": ["sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw", "adadelta", "lbfgs",
                "", "ADAM", "adam "],
}


def _nat(rng: random.Random, ok: Sequence[str]) -> str:
    r = rng.random()
    if r < 0.55:
        return rng.choice(ok)
    return rng.choice(HUGE_INTS) if r < 0.78 else rng.choice(BAD_INTS)


def _junk(rng: random.Random) -> str:
    alphabet = "ab01-=._/ é日\t\n\x00\ud800λ"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))


def value_for(flag: str, model: str, rng: random.Random) -> str:
    """A value for `flag` in a `tlrs run <model>` case: mostly of the right kind."""
    if rng.random() < 0.06:
        return _junk(rng)
    if flag == "--steps":
        return "10000001" if rng.random() < 0.03 else _nat(rng, ["1", "2", "3"])
    if flag == "--epochs":
        if model in EXPENSIVE:
            return rng.choice(HUGE_INTS + BAD_INTS)
        return _nat(rng, ["1"])
    if flag == "--batch":
        return _nat(rng, ["1", "2", "3", "4", "8", "16", "32", "1000"])
    if flag in ("--hidden",):
        return _nat(rng, ["1", "2", "3", "16", "100"])
    if flag in ("--channels", "--width", "--heads", "--head-dim"):
        return _nat(rng, ["1", "2", "3", "4"])
    if flag == "--seq-len":
        return _nat(rng, ["1", "2", "8", "64", "320", "321", "322", "400"])
    if flag == "--n-total":
        return _nat(rng, ["1", "2", "5", "10", "30", "200", "100000"])
    if flag == "--seed":
        return _nat(rng, ["0", "1", "7", "42"])
    if flag == "--lr":
        return rng.choice(FLOATS_OK) if rng.random() < 0.5 else rng.choice(FLOATS_BAD)
    if flag in ("--log", "--plot", "--save"):
        if rng.random() < 0.1:
            return rng.choice(["off", "false", "none", " OFF ", "no", "disabled"])
        return rng.choice(OUT_PATHS) if rng.random() < 0.6 else rng.choice(BAD_OUT_PATHS)
    if flag == "--dataset":
        return rng.choice(DATASETS)
    if flag == "--x":
        return rng.choice(NPY_X)
    if flag == "--y":
        return rng.choice(NPY_Y)
    if flag == "--csv":
        return rng.choice(CSVS)
    if flag in CHOICES:
        return rng.choice(CHOICES[flag])
    return _junk(rng)


def _flag_tokens(flag: str, model: str, rng: random.Random) -> list[str]:
    if flag in BOOL_FLAGS:
        r = rng.random()
        return [flag] if r < 0.85 else ([flag, flag] if r < 0.93 else [f"{flag}=1"])
    r = rng.random()
    if r < 0.06:
        return [flag]  # missing value (or the next token is taken as the value)
    value = value_for(flag, model, rng)
    if r < 0.22:
        return [f"{flag}={value}"]
    if r < 0.27:
        return [flag, value, flag, value_for(flag, model, rng)]  # duplicate
    return [flag, value]


def _run_case(rng: random.Random) -> list[str]:
    r = rng.random()
    model = rng.choice(MODELS + ["hello"]) if r < 0.93 else rng.choice(
        ["nosuch", "", "MLP", "run", "--mlp", "mlp_"])
    own = MODEL_FLAGS.get(model, [])
    tokens: list[str] = []
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6])):
        p = rng.random()
        if p < 0.35 and own:
            flag = rng.choice(own)
        elif p < 0.75:
            flag = rng.choice(TRAIN_FLAGS)
        elif p < 0.9:
            flag = rng.choice(RUNTIME_FLAGS)
        elif p < 0.96:
            flag = rng.choice(ALL_FLAGS)
        else:
            tokens.append(rng.choice(UNKNOWN_FLAGS) if rng.random() < 0.8 else _junk(rng))
            continue
        tokens += _flag_tokens(flag, model, rng)
    if rng.random() < 0.03:
        tokens.append(_junk(rng))  # a stray positional
    if model in MODELS and not any(t.split("=")[0] in ("--steps", "--epochs") for t in tokens):
        if model in EXPENSIVE or model == "transformer" or rng.random() < 0.9:
            tokens += ["--steps", rng.choice(["1", "2", "3"])]
    where = rng.randint(0, len(tokens))
    name = [model] if model else []
    return ["run", *tokens[:where], *name, *tokens[where:]]


def generate(seed: int, index: int) -> list[str]:
    """Case `index` of `seed`: one argument list for `tlrs.cli.main`."""
    rng = random.Random(f"{seed}:{index}")
    r = rng.random()
    if r < 0.84:
        return _run_case(rng)
    if r < 0.93:
        args = ["graph"]
        if rng.random() < 0.92:
            args.append(rng.choice(MODELS + ["nosuch", "hello", ""]))
        for _ in range(rng.randint(0, 3)):
            flag = rng.choice(["--dtype", "--batch", "--batch", "--help", "--seed", "--steps"])
            if flag == "--help":
                args.append(flag)
            elif flag == "--batch":
                args += [flag, _nat(rng, ["0", "1", "2", "3", "16"])]
            elif flag == "--dtype":
                args += [flag, rng.choice(["float64", "float32", "float", "f16", ""])]
            else:
                args += [flag, _nat(rng, ["1"])]
        return args
    if r < 0.96:
        return [rng.choice(["models", "info"]), *(
            [rng.choice(["--help", "extra", "--cpu", "-h"])] if rng.random() < 0.4 else [])]
    return [rng.choice(["", "nosuch", "--help", "-h", "--cpu", "RUN", "run ", "--version",
                        "help", "models --all", "--"])] if rng.random() < 0.9 else []


# --- the workers ----------------------------------------------------------------------------------

def make_fixtures(folder: str) -> None:
    """The data files the cases name (`../fx/...` from a case's scratch folder)."""
    import numpy as np

    os.makedirs(folder, exist_ok=True)
    join = lambda name: os.path.join(folder, name)  # noqa: E731
    rng = np.random.default_rng(0)
    labels = np.arange(40) % 3
    x = (rng.uniform(size=(40, 3, 8, 8)) * 200).astype(np.uint8)
    np.save(join("good_x.npy"), x)
    np.save(join("nhwc_x.npy"), x.transpose(0, 2, 3, 1))
    np.save(join("good_y.npy"), labels)
    raw = open(join("good_x.npy"), "rb").read()
    open(join("empty.npy"), "wb").close()
    open(join("trunc.npy"), "wb").write(raw[: len(raw) // 2])
    open(join("long.npy"), "wb").write(raw + b"\0" * 5)
    open(join("junk.npy"), "wb").write(b"this is not a numpy file")
    np.save(join("obj.npy"), np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(join("c64.npy"), x.astype(np.complex64))
    np.save(join("rank3.npy"), x[:, 0])
    np.save(join("nan.npy"), np.full((40, 3, 8, 8), np.nan))
    np.save(join("tiny.npy"), x[:, :, :2, :2])
    np.save(join("zero.npy"), np.zeros((0, 3, 8, 8)))
    header = io.BytesIO()
    from numpy.lib import format as npformat

    npformat.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False,
                                             "shape": (10**12, 3, 32, 32)})
    open(join("bigheader.npy"), "wb").write(header.getvalue() + b"\0" * 64)
    np.save(join("float_y.npy"), labels.astype(np.float64))
    np.save(join("neg_y.npy"), labels - 1)
    np.save(join("big_y.npy"), labels * 10**12)
    np.save(join("short_y.npy"), labels[:5])
    os.makedirs(join("folder"), exist_ok=True)
    rows = rng.uniform(size=(30, 4))
    body = "\n".join(",".join(f"{v:.6f}" for v in r) for r in rows)
    texts = {
        "good.csv": "a,b,c,y\n" + body + "\n", "nan.csv": "a,b,y\n1,nan,2\n", "empty.csv": "",
        "header.csv": "a,b,y\n", "ragged.csv": "a,b,y\n1,2\n", "words.csv": "a,b,y\n1,two,3\n",
        "one_col.csv": "y\n1\n2\n",
    }
    for name, text in texts.items():
        open(join(name), "w", encoding="utf-8").write(text)
    open(join("binary.csv"), "wb").write(b"\xff\xfe\x00\x01\x80")


def call_cli(args: list[str]) -> tuple[int, str, str]:
    """`tlrs.cli.main(args)` with stdout/stderr captured; SystemExit is caught (its code).
    An exception escaping `main` is returned as exit -1 with its traceback on stderr."""
    import traceback

    from tlrs.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        except BaseException:  # noqa: BLE001 - reported as a failure by the parent
            traceback.print_exc(file=err)
            code = -1
    return code, out.getvalue(), err.getvalue()


def worker(conn: Connection, workdir: str) -> None:
    """A worker process: prepare the fixtures, then run the cases it is sent, one at a time, each
    in a fresh scratch folder, and send back (index, exit code, stdout tail, stderr)."""
    os.environ.pop("TLRS_DEBUG", None)
    import tlrs

    with contextlib.suppress(Exception):
        tlrs.set_num_threads(1)  # the workers already use the cores
    plugin = os.environ.get("TLRS_FUZZ_PLUGIN")  # test-only: extra commands to register
    if plugin:
        importlib.import_module(plugin)
    make_fixtures(os.path.join(workdir, "fx"))
    home = os.getcwd()
    conn.send(("ready",))
    while True:
        job = conn.recv()
        if job is None:
            return
        index, args = job
        scratch = os.path.join(workdir, "case")
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(scratch)
        os.chdir(scratch)
        try:
            code, out, err = call_cli(args)
        finally:
            os.chdir(home)
            shutil.rmtree(scratch, ignore_errors=True)
            tlrs.set_fast_kernels(False)
        conn.send((index, code, out[-2000:], err if len(err) < 1_000_000 else err[-1_000_000:]))


@dataclasses.dataclass
class Outcome:
    index: int
    args: list[str]
    kind: str  # exit-0, exit-2, traceback, internal, bad-stderr, bad-exit, crash, hang
    code: int | None
    stderr: str
    seconds: float


def classify(code: int, out: str, err: str) -> str:
    """The outcome kind of one finished case."""
    if "Traceback (most recent call last)" in out + err:
        return "traceback"
    lines = err.splitlines()
    if code == 1 and any(line.startswith("tlrs: internal error:") for line in lines):
        return "internal"
    if code == 0:
        return "exit-0"
    if code == 2:
        ok = len(lines) == 1 and lines[0].startswith("tlrs: error: ") and lines[0][13:].strip()
        return "exit-2" if ok else "bad-stderr"
    return "bad-exit"


FAILURES = ("traceback", "internal", "bad-stderr", "bad-exit", "crash", "hang")


def run_cases(cases: Sequence[tuple[int, list[str]]], workers: int | None = None,
              timeout: float = CASE_TIMEOUT_S, progress: bool = False) -> list[Outcome]:
    """Run `cases` ((index, args) pairs) on `workers` processes (default: the CPU count);
    returns one Outcome per case, in index order. A worker that dies (a signal, an abort) or runs
    past `timeout` on a case is replaced; that case is a `crash` or a `hang`."""
    ctx = multiprocessing.get_context("spawn")
    workers = workers or max(1, min(len(cases), os.cpu_count() or 1))
    root = tempfile.mkdtemp(prefix="tlrs-fuzz-cli-")
    pending = list(reversed(cases))
    results: dict[int, Outcome] = {}
    by_index = dict(cases)
    slots: list[dict[str, Any]] = []
    serial = 0

    def start(slot: dict[str, Any]) -> None:
        nonlocal serial
        serial += 1
        parent, child = ctx.Pipe()
        workdir = os.path.join(root, f"w{serial}")
        os.makedirs(workdir)
        proc = ctx.Process(target=worker, args=(child, workdir), daemon=True)
        proc.start()
        child.close()
        slot.update(proc=proc, conn=parent, job=None, started=0.0, ready=False, workdir=workdir)

    def stop(slot: dict[str, Any]) -> None:
        proc = slot["proc"]
        if proc.is_alive():
            proc.kill()
        proc.join(10)
        slot["conn"].close()
        shutil.rmtree(slot["workdir"], ignore_errors=True)

    def assign(slot: dict[str, Any]) -> None:
        if pending:
            index, args = pending.pop()
            slot["job"] = index
            slot["started"] = time.monotonic()
            slot["conn"].send((index, args))
        else:
            slot["job"] = None

    try:
        for _ in range(workers):
            slot: dict[str, Any] = {}
            start(slot)
            slots.append(slot)
        last_report = time.monotonic()
        while len(results) < len(cases):
            waitables = [s["conn"] for s in slots] + [s["proc"].sentinel for s in slots]
            wait(waitables, timeout=1.0)
            now = time.monotonic()
            for slot in slots:
                conn, proc = slot["conn"], slot["proc"]
                message = None
                try:
                    if conn.poll():
                        message = conn.recv()
                except (EOFError, OSError):
                    message = None
                if message is not None:
                    if message[0] == "ready":
                        slot["ready"] = True
                        assign(slot)
                        continue
                    index, code, out, err = message
                    results[index] = Outcome(index, by_index[index], classify(code, out, err),
                                             code, err, now - slot["started"])
                    assign(slot)
                    continue
                job = slot["job"]
                if not proc.is_alive():
                    if job is None and not slot["ready"]:
                        raise RuntimeError(f"a fuzz worker failed to start (exit {proc.exitcode})")
                    if job is not None:
                        results[job] = Outcome(job, by_index[job], "crash", proc.exitcode,
                                               f"worker exited with {proc.exitcode}",
                                               now - slot["started"])
                    if pending or job is not None:
                        stop(slot)
                        start(slot)
                    continue
                if job is not None and now - slot["started"] > timeout:
                    results[job] = Outcome(job, by_index[job], "hang", None,
                                           f"no answer after {timeout:.0f} s",
                                           now - slot["started"])
                    stop(slot)
                    start(slot)
            if progress and now - last_report > 10:
                last_report = now
                print(f"  {len(results)}/{len(cases)} cases", file=sys.stderr, flush=True)
    finally:
        for slot in slots:
            with contextlib.suppress(Exception):
                slot["conn"].send(None)
            stop(slot)
        shutil.rmtree(root, ignore_errors=True)
    return [results[i] for i, _ in sorted(cases)]


def summary(outcomes: Sequence[Outcome]) -> dict[str, int]:
    kinds = Counter(o.kind for o in outcomes)
    return {"cases": len(outcomes), "exit-0": kinds["exit-0"], "exit-2": kinds["exit-2"],
            "crashes": kinds["crash"], "hangs": kinds["hang"], "tracebacks": kinds["traceback"],
            "internal errors": kinds["internal"], "bad stderr": kinds["bad-stderr"],
            "other exits": kinds["bad-exit"]}


def show_args(args: Sequence[str]) -> str:
    """The argument list as a Python list, over-long strings shortened (`scripts/fuzz-cli --case
    N` prints it in full)."""
    def one(a: str) -> str:
        return repr(a) if len(a) <= 80 else f"{a[:40]!r}...<{len(a)} chars>...{a[-20:]!r}"
    return "[" + ", ".join(one(a) for a in args) + "]"


def describe(o: Outcome) -> str:
    tail = " | ".join(o.stderr.strip().splitlines()[-3:])
    tail = tail if len(tail) <= 600 else tail[:300] + " ... " + tail[-200:]
    return (f"case {o.index} {o.kind} (exit {o.code}, {o.seconds:.1f} s): {show_args(o.args)}"
            f"\n    {tail}")


def fuzz(seed: int = SEED, count: int = FULL_CASES, start: int = 0, workers: int | None = None,
         timeout: float = CASE_TIMEOUT_S, progress: bool = False) -> list[Outcome]:
    """Cases `start .. start+count-1` of `seed`, run on worker processes."""
    cases = [(i, generate(seed, i)) for i in range(start, start + count)]
    return run_cases(cases, workers=workers, timeout=timeout, progress=progress)


# --- pytest ---------------------------------------------------------------------------------------

def test_generation_is_reproducible_and_covers_the_flag_set():
    cases = [generate(SEED, i) for i in range(3000)]
    assert cases[:50] == [generate(SEED, i) for i in range(50)]
    heads = Counter(c[0] if c else "" for c in cases)
    assert heads["run"] > 2000 and heads["graph"] > 100 and heads["models"] + heads["info"] > 30
    seen = {t.split("=")[0] for c in cases for t in c}
    assert set(ALL_FLAGS) <= seen
    assert {m for c in cases for m in MODELS if m in c} == set(MODELS)


def test_classify():
    assert classify(0, "ok\n", "") == "exit-0"
    assert classify(2, "", "tlrs: error: bad\n") == "exit-2"
    assert classify(2, "", "tlrs: error: a\ntlrs: error: b\n") == "bad-stderr"
    assert classify(2, "", "") == "bad-stderr"
    assert classify(1, "", "tlrs: internal error: ValueError: x (TLRS_DEBUG=1 ...)\n") == "internal"
    assert classify(2, "", "Traceback (most recent call last):\n  ...\n") == "traceback"
    assert classify(3, "", "") == "bad-exit"


def test_worker_crash_and_hang_are_detected(monkeypatch, tmp_path):
    """A case that kills its worker is a crash and one that never ends a hang, each naming its
    argument list; the cases after them still run on fresh workers."""
    import signal

    # Spawned workers import tlrs afresh: they register the two test commands from a plugin
    # module named by TLRS_FUZZ_PLUGIN (test-only).
    (tmp_path / "tlrs_fuzz_test_plugin.py").write_text(
        "import os, signal, time\nfrom tlrs.cli import register\n"
        "register('test-segv')(lambda a: os.kill(os.getpid(), signal.SIGSEGV))\n"
        "register('test-sleep')(lambda a: time.sleep(3600))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TLRS_FUZZ_PLUGIN", "tlrs_fuzz_test_plugin")
    cases = [(0, ["run", "hello"]), (1, ["run", "test-segv"]), (2, ["run", "test-sleep"]),
             (3, ["run", "mlp", "--steps", "x"]), (4, ["run", "quickstart_mlp", "--steps", "1"])]
    out = run_cases(cases, workers=2, timeout=8)
    assert [o.kind for o in out] == ["exit-0", "crash", "hang", "exit-2", "exit-0"]
    assert out[1].code == -signal.SIGSEGV and "'test-segv'" in describe(out[1])
    assert "'test-sleep'" in describe(out[2])


def test_quick_slice_ends_in_exit_0_or_one_error_line():
    """The first QUICK_CASES cases of the full run (`scripts/fuzz-cli`)."""
    t0 = time.monotonic()
    outcomes = fuzz(SEED, QUICK_CASES, timeout=CASE_TIMEOUT_S)
    counts = summary(outcomes)
    bad = [describe(o) for o in outcomes if o.kind in FAILURES]
    print(counts, f"{time.monotonic() - t0:.1f} s")
    assert not bad, "\n".join(bad[:20])
    assert counts["exit-0"] > 100 and counts["exit-2"] > 500
