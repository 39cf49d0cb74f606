"""tlrs.distributed: collectives against NumPy, world-size-invariant data parallelism (bit for
bit), a dead rank failing the others within the timeout, checkpoints across world sizes, and
the errors. Multi-process cases launch tests/distributed_worker.py under mpiexec; they need
mpi4py and an MPI (`pip install mpi4py mpich`) and fail, never skip, without them."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tlrs
from tlrs import distributed as dist
from tlrs import optim

HERE = Path(__file__).resolve().parent
WORKER = HERE / "distributed_worker.py"
sys.path.insert(0, str(HERE))
import distributed_worker as dw  # noqa: E402

LAUNCH_TIMEOUT = 180  # seconds for one mpiexec run (tiny models; generous for busy CI cores)
COMBOS = [f"{m}-{o}" for m in dw.MODELS for o in dw.OPTIMIZERS]
INSTALL = "pip install mpi4py mpich"


@functools.cache
def _mpiexec() -> tuple[str, str]:
    """(the mpiexec path, 'mpich' or 'openmpi' or 'other'); fails the test when missing."""
    if importlib.util.find_spec("mpi4py") is None:
        pytest.fail(f"mpi4py is not installed; the distributed tests need it: {INSTALL}")
    beside = Path(sys.executable).parent / "mpiexec"
    exe = str(beside) if beside.exists() else shutil.which("mpiexec")
    if exe is None:
        pytest.fail(f"no mpiexec found (beside {sys.executable} or on PATH): {INSTALL}")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    text = version.stdout + version.stderr
    flavour = "mpich" if "HYDRA" in text else "openmpi" if "Open MPI" in text or \
        "OpenRTE" in text else "other"
    return exe, flavour


def _run(n: int | None, *args: str, env: dict[str, str] | None = None,
         launcher_flags: tuple[str, ...] = (), timeout: float = LAUNCH_TIMEOUT
         ) -> subprocess.CompletedProcess[str]:
    """The worker under `mpiexec -n n` (n=None: plain python, a world of one)."""
    full_env = {**os.environ, "TLRS_DIST_TIMEOUT": "120", **(env or {})}
    cmd = [sys.executable, str(WORKER), *args]
    if n is not None:
        exe, flavour = _mpiexec()
        extra = ["--oversubscribe"] if flavour == "openmpi" else []
        if flavour == "openmpi":
            full_env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            full_env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        cmd = [exe, *launcher_flags, *extra, "-n", str(n), *cmd]
    else:
        _mpiexec()
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=full_env, cwd=HERE.parent)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not finish within {timeout} s (a hang):\n"
                    f"{e.stdout}\n{e.stderr}")


def _ok(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"


def test_mpi4py_and_mpiexec_are_installed():
    exe, _ = _mpiexec()
    assert Path(exe).exists()


@pytest.mark.parametrize("n", [1, 2, 4])
def test_collectives_match_numpy(tmp_path, n):
    out = tmp_path / "summary.json"
    _ok(_run(n, "collectives", "--out", str(out)))
    summary = json.loads(out.read_text())
    assert summary["world"] == n and summary["checked"] == 8
    if n > 1:
        shapes, dtypes, roots, calls = summary["errors"]
        assert "rank 1: float64 [4]" in shapes and "different shapes" in shapes
        assert "rank 1: float32 [3]" in dtypes
        assert "different roots" in roots
        assert "different collectives" in calls and "rank 0: barrier" in calls


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Every model x optimizer trained in this process (no MPI) with grad_shards=4."""
    out = {}
    for combo in COMBOS:
        model, opt_name = combo.split("-")
        trainer, losses = dw.train(model, opt_name, range(5), 4)
        out[combo] = (dw.params_bytes(trainer.module), losses)
    return out


@pytest.mark.parametrize("n", [1, 2, 4])
def test_world_size_invariance_bit_for_bit(tmp_path, reference, n):
    # World size 1 runs as a plain `python` (MPI's singleton start), 2 and 4 under mpiexec.
    _ok(_run(None if n == 1 else n, "train", "--out", str(tmp_path), "--steps", "5",
             "--shards", "4"))
    for combo in COMBOS:
        params, losses = reference[combo]
        got = (tmp_path / f"{combo}.params").read_bytes()
        assert got == params, f"{combo}: parameters differ at world size {n}"
        assert json.loads((tmp_path / f"{combo}.losses").read_text()) == losses, combo


def test_one_shard_is_module_step_with():
    for opt in (optim.sgd(0.1), optim.adam(0.01, 0.9, 0.999, 1e-8)):
        plain, wrapped = dw.new_module("cnn"), dw.new_module("cnn")
        state = plain.init_optim(opt)
        trainer = dist.DistributedTrainer(wrapped, opt, grad_shards=1)
        for k in range(3):
            xs = dw.batch("cnn", k)
            before = plain.forward(xs).item()
            state = plain.step_with(opt, state, xs)
            assert trainer.step(xs) == before
        assert dw.params_bytes(plain) == dw.params_bytes(wrapped)
        assert trainer.state.step == state.step == 3


def test_shard_fold_is_the_mean_of_shard_gradients():
    module = dw.new_module("softmax_regression")
    trainer = dist.data_parallel(module, optim.sgd(1.0), grad_shards=4)
    xs = dw.batch("softmax_regression", 0)
    grads = [module.backward(trainer.shard(xs, k)) for k in range(4)]
    before = [p.numpy().copy() for p in module.params()]
    trainer.step(xs)
    for i, p in enumerate(module.params()):
        g = ((grads[0][i].numpy() + grads[1][i].numpy()) + grads[2][i].numpy()) \
            + grads[3][i].numpy()
        assert p.numpy().tobytes() == (before[i] - g * 0.25).tobytes()


def test_killed_rank_fails_the_others_with_a_message():
    exe, flavour = _mpiexec()
    if flavour == "mpich":
        # Hydra normally kills the job itself when a rank dies; without that cleanup the
        # survivors must notice on their own, through the collective's deadline.
        start = time.monotonic()
        r = _run(4, "kill", "--victim", "1", "--timeout", "5",
                 launcher_flags=("-disable-auto-cleanup",))
        elapsed = time.monotonic() - start
        assert r.returncode != 0
        assert "timed out after 5 s waiting for the other ranks" in r.stderr, \
            f"exit {r.returncode} after {elapsed:.1f} s\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        # Which survivor reaches the abort first (and whether its line is flushed before MPI
        # tears the job down) depends on scheduling; the timeout message above is the contract.
        assert "unreachable" not in r.stdout
        assert elapsed < 90, elapsed
    start = time.monotonic()
    r = _run(2, "kill", "--victim", "0", "--timeout", "5")
    assert r.returncode != 0 and "unreachable" not in r.stdout
    assert time.monotonic() - start < 90


def test_checkpoint_from_world_4_resumes_at_world_1(tmp_path, reference):
    _ok(_run(4, "train", "--out", str(tmp_path), "--steps", "5", "--save-at", "3"))
    _ok(_run(None, "train", "--out", str(tmp_path), "--steps", "5", "--resume"))
    for combo in COMBOS:
        params, losses = reference[combo]
        assert (tmp_path / f"{combo}.params").read_bytes() == params, combo
        assert json.loads((tmp_path / f"{combo}.losses").read_text()) == losses[3:], combo


def test_checkpoint_from_one_process_resumes_at_world_2(tmp_path, reference):
    combo = "cnn-adam"
    trainer, _ = dw.train("cnn", "adam", range(2), 4)
    trainer.save(str(tmp_path / f"{combo}.ckpt"))
    _ok(_run(2, "train", "--out", str(tmp_path), "--combos", "cnn:adam", "--steps", "5",
             "--resume"))
    assert (tmp_path / f"{combo}.params").read_bytes() == reference[combo][0]


def test_trainer_refuses_shards_that_do_not_divide_among_ranks():
    _ok(_run(2, "init"))


def test_environment_world_size_must_match_mpi():
    r = _run(2, "init", env={"WORLD_SIZE": "3"})
    assert r.returncode != 0
    assert "WORLD_SIZE=3, but MPI sees 2 process(es)" in r.stderr, r.stderr
    # torchrun-style variables without an MPI launcher: one MPI process, not two.
    r = _run(None, "init", env={"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"})
    assert r.returncode != 0
    assert "launch with mpiexec -n 2" in r.stderr, r.stderr


def test_unknown_backends_are_refused():
    with pytest.raises(ValueError, match="unknown backend 'gloo'"):
        dist.init("gloo")
    assert not dist.is_initialized()


_NCCL_INIT = """
import tlrs
from tlrs import distributed as dist
try:
    dist.init("nccl")
except tlrs.CudaUnavailableError as e:
    # One write per rank, so two ranks' lines do not interleave.
    first = str(e).splitlines()[0]
    print(f"refused: {first} | initialized after: {dist.is_initialized()}", flush=True)
"""


@pytest.mark.parametrize("n", [None, 2])
def test_nccl_without_a_gpu_fails_cleanly_on_every_rank(n):
    # This machine (and CI) has no GPU: every rank probes, the results travel over MPI, and
    # every rank raises naming the ranks and its own reason (none waits for the others).
    cmd = [sys.executable, "-c", _NCCL_INIT]
    if n is not None:
        exe, flavour = _mpiexec()
        cmd = [exe, *(["--oversubscribe"] if flavour == "openmpi" else []), "-n", str(n), *cmd]
    env = {k: v for k, v in os.environ.items() if k != "TLRS_CUDA_EMULATOR"}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT, env=env)
    _ok(r)
    # mpiexec forwards each rank's output in its own chunks, so two ranks' lines may interleave
    # without newlines between them: find the records, not lines.
    refused = re.findall(r"refused: (.*?) \| initialized after: (True|False)", r.stdout)
    assert len(refused) == (n or 1), r.stdout
    ranks = list(range(n or 1))
    for message, initialized in refused:
        assert f"backend 'nccl' cannot be used on rank(s) {ranks}; this rank: NCCL is not " \
               "available:" in message, message
        assert initialized == "False"


def test_nccl_probe_says_why_not():
    ok, why = tlrs._core.nccl_probe()
    assert not ok
    expected = ("has no NCCL; NCCL needs a real GPU" if tlrs.cuda.is_available()
                else "it needs a usable CUDA device")
    assert why.startswith("NCCL is not available: ") and expected in why, why


def test_calls_before_init_name_the_problem():
    for call in (dist.rank, dist.world_size, dist.barrier,
                 lambda: dist.all_reduce(tlrs.zeros(1))):
        with pytest.raises(dist.NotInitializedError, match="call tlrs.distributed.init"):
            call()
    dist.shutdown()  # nothing to do


def test_missing_mpi4py_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(dist.MPIUnavailableError, match="pip install mpi4py mpich"):
        dist.init()
    with pytest.raises(ImportError):
        dist.init("mpi")
    assert not dist.is_initialized()


def test_bad_timeouts_are_refused(monkeypatch):
    monkeypatch.setenv("TLRS_DIST_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="TLRS_DIST_TIMEOUT='soon'"):
        dist.init()
    with pytest.raises(ValueError, match="positive"):
        dist.init(timeout=0)


def test_batches_must_split_into_the_shards():
    trainer = dist.DistributedTrainer(dw.new_module("mlp_classifier"), optim.sgd(0.1), 4)
    x, y = dw.batch("mlp_classifier", 0)
    with pytest.raises(tlrs.ShapeError, match="divisible by 4"):
        trainer.step([x[:6], y[:6]])
    with pytest.raises(ValueError, match="positive integer"):
        dist.DistributedTrainer(dw.new_module("mlp_classifier"), optim.sgd(0.1), 0)
    assert np.isfinite(trainer.step([x, y]))


def test_skipping_the_loss_leaves_the_update_unchanged():
    xs = dw.batch("cnn", 0)
    with_loss = dist.DistributedTrainer(dw.new_module("cnn"), dw.build_opt("adam"), 4)
    without = dist.DistributedTrainer(dw.new_module("cnn"), dw.build_opt("adam"), 4,
                                      compute_loss=False)
    assert np.isfinite(with_loss.step(xs)) and np.isnan(without.step(xs))
    assert dw.params_bytes(with_loss.module) == dw.params_bytes(without.module)


def test_tlrs_info_shows_the_distributed_setup():
    from tlrs.cli import info_lines

    text = "\n".join(info_lines())
    assert "distributed: MPI through mpi4py " in text
    assert f"  mpiexec: {_mpiexec()[0]}" in text
    assert "  nccl: NCCL is not available: " in text
    launched = subprocess.run([_mpiexec()[0], "-n", "2", sys.executable, "-m", "tlrs", "info"],
                              capture_output=True, text=True, timeout=LAUNCH_TIMEOUT)
    _ok(launched)
    # Each rank says which it is. The launcher forwards the two ranks' output as it comes, so
    # their lines can run into each other (seen: "...=0/2tlrs 0.1.0"): count, don't split.
    for rank in (0, 1):
        assert launched.stdout.count(f"  launcher: PMI_RANK/PMI_SIZE={rank}/2") == 1, \
            launched.stdout
