"""`tlrs run MODEL --distributed [--grad-shards N]` under mpiexec: the same losses and the same
checkpoint bits at world sizes 1, 2 and 4 for one N, rank 0 alone printing and writing, and the
flag errors. Runs the CLI in subprocesses (MPI is initialised once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from test_distributed import _mpiexec

TIMEOUT = 240
BASE = ["run", "mlp_classifier", "--dataset", "digits", "--distributed", "--steps", "6",
        "--optim", "adam"]
RUN = [*BASE, "--batch", "16"]


def _tlrs(n: int | None, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "tlrs", *args]
    if n is not None:
        exe, flavour = _mpiexec()
        cmd = [exe, *(["--oversubscribe"] if flavour == "openmpi" else []), "-n", str(n), *cmd]
    env = {**os.environ, "TLRS_DIST_TIMEOUT": "120", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=cwd)


def _ok(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"


@pytest.mark.parametrize("shards, worlds", [(2, (None, 2)), (4, (None, 2, 4))])
def test_world_sizes_give_the_same_losses_and_checkpoint_bits(tmp_path, shards, worlds):
    logs, params = [], []
    for n in worlds:
        tag = f"w{n or 1}"
        r = _tlrs(n, *RUN, "--grad-shards", str(shards), "--log", f"{tag}.json",
                  "--save", f"{tag}.safetensors", cwd=tmp_path)
        _ok(r)
        logs.append(json.loads((tmp_path / f"{tag}.json").read_text())["series"])
        params.append(load_file(str(tmp_path / f"{tag}.safetensors")))
    for log, p in zip(logs[1:], params[1:]):
        assert log == logs[0]
        assert p.keys() == params[0].keys()
        for k in p:
            assert np.array_equal(p[k], params[0][k]) and p[k].tobytes() == params[0][k].tobytes(), k


def test_compiled_backend_gives_the_eager_bits_at_world_size_2(tmp_path):
    _ok(_tlrs(None, *RUN, "--grad-shards", "2", "--log", "eager.json", cwd=tmp_path))
    _ok(_tlrs(2, *RUN, "--grad-shards", "2", "--backend", "compiled", "--log", "compiled.json",
              cwd=tmp_path))
    eager, compiled = (json.loads((tmp_path / f).read_text())["series"]
                       for f in ("eager.json", "compiled.json"))
    assert compiled == eager


def test_only_rank_0_prints(tmp_path):
    r = _tlrs(2, *RUN, "--grad-shards", "2", cwd=tmp_path)
    _ok(r)
    out = r.stdout.splitlines()
    assert sum(line.startswith("tlrs run mlp_classifier: MLP classifier") for line in out) == 1
    assert sum(line.strip().startswith("steps=6 loss0=") for line in out) == 1
    assert out.count("tlrs run mlp_classifier: ok") == 1


def _one_error(r: subprocess.CompletedProcess[str], text: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("tlrs: error: ") and text in line for line in lines), r.stderr
    assert "Traceback" not in r.stderr


def test_flag_errors(tmp_path):
    _one_error(_tlrs(None, "run", "mlp_classifier", "--grad-shards", "2", cwd=tmp_path),
               "--grad-shards needs --distributed")
    _one_error(_tlrs(None, *RUN, "--grad-shards", "0", cwd=tmp_path),
               "--grad-shards: expected a positive number of shards, got 0")
    _one_error(_tlrs(None, *RUN, "--grad-shards", "3", cwd=tmp_path),
               "--batch 16 must be divisible by --grad-shards 3")
    _one_error(_tlrs(2, *BASE, "--grad-shards", "3", "--batch", "15", cwd=tmp_path),
               "--grad-shards 3 must be a multiple of the world size 2")


@pytest.mark.parametrize("first, then", [(2, 4), (4, None)])
def test_a_run_resumed_at_another_world_size_has_the_uninterrupted_bits(tmp_path, first, then):
    from tlrs import _core

    run = [*BASE[:-4], "--optim", "adam", "--batch", "16", "--grad-shards", "4"]
    _ok(_tlrs(None, *run, "--steps", "9", "--save", "whole.st", "--log", "whole.json",
              cwd=tmp_path))
    _ok(_tlrs(first, *run, "--steps", "4", "--save", "part.st", "--save-every", "2",
              cwd=tmp_path))
    _ok(_tlrs(then, *run, "--steps", "9", "--resume", "part.st", "--save", "resumed.st",
              "--log", "resumed.json", cwd=tmp_path))
    a = _core.load_safetensors(str(tmp_path / "whole.st"))
    b = _core.load_safetensors(str(tmp_path / "resumed.st"))
    assert a[2] == b[2]  # metadata: step count, loader cursor, seed stream, flags
    ta, tb = dict(zip(a[0], a[1])), dict(zip(b[0], b[1]))
    assert sorted(ta) == sorted(tb)
    for k in ta:
        assert ta[k].numpy().tobytes() == tb[k].numpy().tobytes(), k
    assert (json.loads((tmp_path / "whole.json").read_text())
            == json.loads((tmp_path / "resumed.json").read_text()))
