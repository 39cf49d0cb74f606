"""Long runs survive (commands/resume.py): a run saved part way (`--save-every`) and continued
with `--resume` ends with the uninterrupted run's bits (parameters, optimizer state, every
logged loss, the loader's cursor, the seed stream), for every built-in command, on the eager
and compiled backends; a run killed with SIGKILL resumes from its last periodic checkpoint;
SIGINT and SIGTERM stop a run between two steps, write the checkpoint and exit 130 / 143; a
NaN loss stops the run (exit 2); a checkpoint of another run is refused in one line."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tlrs import _core
from tlrs.cli import main

sys.path.insert(0, os.path.dirname(__file__))
from cli_helpers import assert_one_error  # noqa: E402


def _same_checkpoint(a, b):
    """Every tensor bit for bit (parameters, optimizer slots, losses, loader order) and every
    metadata entry (step count, seed stream, loader cursor, run flags, mean loss before)."""
    na, ta, ma = _core.load_safetensors(str(a))
    nb, tb, mb = _core.load_safetensors(str(b))
    ta, tb = dict(zip(na, ta)), dict(zip(nb, tb))
    assert sorted(ta) == sorted(tb)
    for k in ta:
        x, y = np.asarray(ta[k].numpy()), np.asarray(tb[k].numpy())
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), k
    assert ma == mb
    assert "__train__/losses" in ta and "__optim__/" in " ".join(ta)


def _run(capsys, *args):
    code = main(["run", *args])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    return cap


COMMANDS = {
    "mlp": ["--steps", "23"],
    "mlp_classifier": ["--steps", "23"],
    "softmax_regression": ["--steps", "23"],
    "quickstart_mlp": ["--steps", "23"],
    "autoencoder": ["--steps", "23"],
    "cnn": ["--steps", "23"],
    "transformer": ["--steps", "23"],
    "resnet": ["--steps", "9", "--batch", "4"],
}


@pytest.mark.parametrize("backend", ["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_resumed_run_has_the_uninterrupted_bits(tmp_path, capsys, name, backend):
    flags = [*COMMANDS[name], "--backend", backend, "--optim", "adam"]
    total = int(flags[1])
    part = str(total // 2 - 1)
    whole, saved, resumed = (tmp_path / f"{t}.safetensors" for t in ("whole", "part", "resumed"))
    _run(capsys, name, *flags, "--save", str(whole), "--log", str(tmp_path / "whole.json"))
    # The first part stops early (its own --steps), saving every 4 steps and at its end.
    _run(capsys, name, *flags[2:], "--steps", part, "--save", str(saved), "--save-every", "4")
    out = _run(capsys, name, *flags, "--resume", str(saved), "--save", str(resumed),
               "--log", str(tmp_path / "resumed.json")).out
    _same_checkpoint(whole, resumed)
    a = json.loads((tmp_path / "whole.json").read_text())
    b = json.loads((tmp_path / "resumed.json").read_text())
    assert a == b and len(a["series"][0]["values"]) == total
    assert f"steps={total} " in out


@pytest.mark.parametrize("backend", ["eager", "compiled"])
def test_fast_kernels_resume_with_the_same_bits_on_one_machine(tmp_path, capsys, backend):
    flags = ["cnn", "--fast-kernels", "--backend", backend, "--optim", "adamw"]
    whole, part, resumed = (tmp_path / f"{t}.st" for t in ("w", "p", "r"))
    _run(capsys, *flags, "--steps", "17", "--save", str(whole))
    _run(capsys, *flags, "--steps", "6", "--save", str(part))
    _run(capsys, *flags, "--steps", "17", "--resume", str(part), "--save", str(resumed))
    _same_checkpoint(whole, resumed)


def test_epochs_count_from_the_start_of_the_run(tmp_path, capsys):
    whole, part, resumed = (tmp_path / f"{t}.st" for t in ("w", "p", "r"))
    _run(capsys, "mlp", "--epochs", "3", "--save", str(whole))
    _run(capsys, "mlp", "--steps", "50", "--save", str(part))  # 40 batches an epoch
    _run(capsys, "mlp", "--epochs", "3", "--resume", str(part), "--save", str(resumed))
    _same_checkpoint(whole, resumed)


def test_a_checkpoint_of_another_run_is_refused_in_one_line(tmp_path, capsys):
    saved = tmp_path / "p.st"
    _run(capsys, "mlp", "--steps", "5", "--save", str(saved))
    for flags, text in [(["--batch", "10"], "--batch 5 there, 10 here"),
                        (["--optim", "sgd"], "--optim adam there, sgd here"),
                        (["--seed", "3"], "--seed 0 there, 3 here"),
                        (["--dtype", "float32"], "--dtype"),
                        (["--hidden", "16"], "shapes"),
                        (["--steps", "4"], "5 steps done, more than the 4")]:
        code = main(["run", "mlp", *flags, "--resume", str(saved)])
        assert_one_error(capsys.readouterr().err, code, text)
    code = main(["run", "mlp_classifier", "--resume", str(saved)])
    assert_one_error(capsys.readouterr().err, code, "--resume")
    code = main(["run", "mlp", "--save-every", "3"])
    assert_one_error(capsys.readouterr().err, code, "--save-every needs --save")


def test_a_nonfinite_loss_stops_the_run(tmp_path, capsys):
    args = ["mlp", "--optim", "sgd", "--lr", "1e30", "--steps", "30"]
    code = main(["run", *args])
    cap = capsys.readouterr()
    assert_one_error(cap.err, code, "--allow-nonfinite")
    assert "the loss at step" in cap.err and "last finite loss" in cap.err
    step = int(cap.err.split("the loss at step ")[1].split()[0])
    assert 0 < step < 30
    assert main(["run", *args, "--allow-nonfinite"]) == 0


def _tlrs(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "tlrs", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _wait_for_training(p):
    while True:
        line = p.stdout.readline()
        assert line, p.stderr.read()
        if line.startswith("mean_loss(train(before))"):
            return


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("backend", ["compiled", "eager"])
def test_a_signal_stops_the_run_saves_it_and_it_resumes_exactly(tmp_path, sig, code, backend):
    # A run far too long to finish: the signal lands in the middle of training (inside the
    # native compiled loop on the compiled backend).
    flags = ["run", "cnn", "--backend", backend, "--steps", "1000000"]
    saved = tmp_path / "ck.st"
    p = _tlrs(*flags, "--save", str(saved), cwd=tmp_path)
    _wait_for_training(p)
    time.sleep(random.uniform(0.3, 1.0))
    t0 = time.perf_counter()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    waited = time.perf_counter() - t0
    assert p.returncode == code, err
    assert waited < 0.5, waited
    lines = err.splitlines()
    assert len(lines) == 1 and signal.Signals(sig).name in lines[0], err
    assert f"--resume {saved}" in lines[0]
    # The checkpoint is whole; continuing it to a later step gives the uninterrupted bits.
    done = _steps_done(saved)
    assert done > 0
    target = str(done + 7)
    short = ["run", "cnn", "--backend", backend, "--steps", target]
    assert main([*short, "--save", str(tmp_path / "w.st")]) == 0
    assert main([*short, "--resume", str(saved), "--save", str(tmp_path / "r.st")]) == 0
    _same_checkpoint(tmp_path / "w.st", tmp_path / "r.st")


def _steps_done(path):
    names, tensors, _ = _core.load_safetensors(str(path))
    return len(np.asarray(tensors[names.index("__train__/losses")].numpy()))


def test_sigkill_then_resume_from_the_last_periodic_checkpoint(tmp_path, capsys):
    saved = tmp_path / "ck.st"
    p = _tlrs("run", "mlp", "--steps", "1000000", "--save", str(saved), "--save-every", "3",
              cwd=tmp_path)
    _wait_for_training(p)
    deadline = time.monotonic() + 60
    while not saved.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(random.uniform(0.0, 0.5))
    p.kill()
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    # Nothing half-written: the checkpoint is the last whole one (a temporary the kill cut
    # short may lie beside it until the checkpoint is next loaded or saved).
    assert [f.name for f in tmp_path.iterdir() if not f.name.startswith(".")] == [saved.name]
    done = _steps_done(saved)
    assert done > 0 and done % 3 == 0
    steps = str(done + 11)
    _run(capsys, "mlp", "--steps", steps, "--save", str(tmp_path / "w.st"))
    _run(capsys, "mlp", "--steps", steps, "--resume", str(saved), "--save",
         str(tmp_path / "r.st"))
    _same_checkpoint(tmp_path / "w.st", tmp_path / "r.st")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["ck.st", "r.st", "w.st"]


@pytest.mark.parametrize("backend", ["eager", "compiled"])
def test_keyboard_interrupt_leaves_the_module_at_the_last_completed_step(backend):
    # SIGINT from another thread at a random moment: train_steps raises Interrupted (a
    # KeyboardInterrupt) carrying the state and losses of the steps done, and the module
    # holds exactly those steps' parameters: finishing the rest gives the uninterrupted bits.
    import threading

    import tlrs
    from tlrs import Options, instantiate_with_options, models, optim
    from tlrs.interrupts import Interrupted

    defn, _ = models.mlp_classifier(64, 256, 10)
    rng = np.random.default_rng(0)
    batches = [[tlrs.tensor(rng.normal(size=(64, 64))),
                tlrs.tensor(np.eye(10)[rng.integers(0, 10, 64)])] for _ in range(4000)]
    opt = optim.adam(1e-3, 0.9, 0.999, 1e-8)

    def fresh():
        return instantiate_with_options(defn, "float64", Options(backend=backend))

    whole = fresh()
    started = time.monotonic()
    _, want = whole.train_steps(opt, whole.init_optim(opt), batches)
    took = time.monotonic() - started
    module = fresh()
    if backend == "compiled":
        # Trace before the timer starts, so the signal lands in the training loop rather than
        # in the tracing before it (whose length varies with the machine's load).
        assert module._compiled is not None
        module._compiled.graph_for([list(x.shape) for x in batches[0]])
    # At a random moment inside the run, whatever this machine's speed.
    timer = threading.Timer(random.uniform(0.05, 0.4) * took,
                            lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as info:
        module.train_steps(opt, module.init_optim(opt), batches)
    timer.join()
    err = info.value
    assert isinstance(err, Interrupted) and err.signum == signal.SIGINT
    done = len(err.losses)
    assert 0 < done < len(batches), done
    assert err.state.step == done and err.losses == want[:done]
    _, rest = module.train_steps(opt, err.state, batches[done:])
    assert err.losses + rest == want
    for p, q in zip(module.params(), whole.params(), strict=True):
        assert p.numpy().tobytes() == q.numpy().tobytes()


def test_check_finite_names_the_step_and_the_last_finite_loss():
    import tlrs
    from tlrs import instantiate_with_options, models, optim
    from tlrs.errors import NonFiniteLossError

    defn, _ = models.mlp(3, 8, 1)
    module = instantiate_with_options(defn, "float64", None)
    xs = [[tlrs.tensor(np.ones((4, 3))), tlrs.tensor(np.full((4, 1), 1e200))]] * 5
    opt = optim.sgd(1e-3)
    with pytest.raises(NonFiniteLossError) as info:
        module.train_steps(opt, module.init_optim(opt), xs, check_finite=True)
    assert info.value.step == 0 and "no finite loss before it" in str(info.value)
    module.train_steps(opt, module.init_optim(opt), xs)  # off by default
