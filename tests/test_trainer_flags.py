"""The shared trainer's `--clip`, `--schedule`, `--warmup` and `--accumulate` (commands/trainer.py):
each reaches `Module.train_steps` as specified (the same losses as calling it directly), the
learning rates are torch's `LinearLR` warmup chained to the schedule by `SequentialLR`, eager and
compiled give the same bits with every flag, a run interrupted and resumed equals the
uninterrupted one (its learning rates continue from its step), a resumed run with other flags is
refused, bad values are one line and exit 2; integer arrays reach the module as int64
tensors, in the data-parallel trainer too (`tlrs run gpt --distributed`)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tlrs import _core, ops
from tlrs.cli import main
from tlrs.cli.commands import resume, trainer
from tlrs.cli.commands.train_common import step_lrs
from tlrs.config import Backend, Options
from tlrs.data import BatchLoader, Dataset
from tlrs.errors import ArgError
from tlrs.module import Module, ModuleDef, instantiate_with_options
from tlrs.optim import sgd
from tlrs.tensor import tensor

sys.path.insert(0, os.path.dirname(__file__))
from cli_helpers import assert_one_error, run_cli  # noqa: E402

ALL = ["--clip", "0.05", "--schedule", "cosine", "--warmup", "2", "--accumulate", "2"]


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def torch_lrs(schedule, warmup, lr, steps):
    """torch's rates for `--schedule schedule --warmup warmup` over `steps` (trainer.step_lrs's
    documented choice): LinearLR(1/(W+1) -> 1 over W) then the schedule, by SequentialLR."""
    torch = pytest.importorskip("torch")
    sched = torch.optim.lr_scheduler
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    rest = steps - warmup
    parts = [sched.LinearLR(opt, start_factor=1.0 / (warmup + 1), end_factor=1.0, total_iters=warmup)] if warmup else []
    if schedule == "cosine":
        parts.append(sched.CosineAnnealingLR(opt, T_max=rest))
    elif schedule == "step":
        parts.append(sched.StepLR(opt, step_size=-(-rest // 3), gamma=0.1))
    elif schedule == "linear":
        parts.append(sched.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=rest))
    s = parts[0] if len(parts) == 1 else sched.SequentialLR(opt, parts, milestones=[warmup])
    out = []
    for i in range(steps):
        if i:
            opt.step()
            s.step()
        out.append(opt.param_groups[0]["lr"])
    return out


@pytest.fixture
def seen(monkeypatch):
    """Every `Module.train_steps` call the trainer makes: (batches, keyword arguments)."""
    calls = []
    original = Module.train_steps

    def recording(self, opt, state, batches, *args, **kwargs):
        calls.append((list(batches), dict(kwargs)))
        return original(self, opt, state, batches, *args, **kwargs)

    monkeypatch.setattr(Module, "train_steps", recording)
    return calls


def logged(path):
    return json.loads(path.read_text())["series"][0]["values"]


def _ok(capsys, *args):
    code, out, err = run_cli(capsys, *args)
    assert code == 0 and err == "", err
    return out


# --- the shared trainer against Module.train_steps --------------------------------------------

def _tiny(backend="eager", steps=9, batch=4, n=24, **fields):
    """A two-parameter least-squares model trained by `trainer.train` with SGD (lr 0.1) and
    the flag fields given; returns (result, the losses `train_steps` gives directly)."""
    def loss(params, inputs):
        x, y = inputs
        return ops.mse_loss(ops.add(ops.matmul(x, params[0]), params[1]), y)

    defn = ModuleDef([[2, 1], [1]], [[2], [1]], loss)
    x = np.random.default_rng(3).normal(size=(n, 2)) * 3.0
    ds = Dataset(x, x @ np.array([[1.5], [-2.0]]) + 0.5, None, "tiny")
    flags = trainer.TrainFlags(steps, None, 0.1, batch, "sgd", None, False, None, None, **fields)
    opts = Options(backend=Backend(backend))
    result = trainer.train("t", defn, opts, ds, flags, 0)
    module = instantiate_with_options(defn, "float64", opts)
    opt = sgd(0.1)
    k = fields.get("accumulate", 1)
    batches = [[tensor(x[i]), tensor(ds.y[i])] for i in BatchLoader(n, batch, 0).batches(steps * k)]
    lrs = step_lrs(flags, steps)
    _, losses = module.train_steps(opt, module.init_optim(opt), batches, clip=fields.get("clip"),
                                   lrs=None if lrs is None else list(lrs), accumulate=k)
    fixed = [[tensor(x[i]), tensor(ds.y[i])] for i in BatchLoader(n, batch, 0).fixed_batches()]
    assert result.after == module.mean_loss(fixed).item()
    return result, losses


@pytest.mark.parametrize("backend", ["eager", "compiled"])
def test_clip_gives_the_losses_of_train_steps_clip(capsys, backend):
    result, direct = _tiny(backend, clip=0.5)
    assert result.losses == direct and len(direct) == 9
    plain, _ = _tiny(backend)
    assert plain.losses[1:] != result.losses[1:]  # the gradients were clipped


@pytest.mark.parametrize("backend", ["eager", "compiled"])
def test_accumulate_gives_the_losses_of_train_steps_accumulate(capsys, backend):
    result, direct = _tiny(backend, steps=7, accumulate=2)
    assert result.losses == direct and result.steps == 7  # --steps counts optimizer steps


def test_schedule_gives_the_losses_of_train_steps_with_torchs_rates(capsys):
    result, direct = _tiny(steps=10, schedule="cosine", warmup=3)
    assert result.losses == direct  # train_steps(lrs=step_lrs(...)), and those are torch's:
    flags = trainer.TrainFlags(10, None, 0.1, 4, "sgd", None, False, None, None, schedule="cosine", warmup=3)
    assert list(step_lrs(flags, 10)) == torch_lrs("cosine", 3, 0.1, 10)


def test_epochs_with_accumulate_count_whole_steps(capsys, seen):
    out = _ok(capsys, "mlp", "--epochs", "1", "--batch", "10", "--accumulate", "3")
    # 200 samples: 20 batches an epoch, 6 steps of 3 batches.
    assert "  steps=6 " in "\n".join(out)
    assert sum(len(b) for b, _ in seen) == 18 and all(kw["accumulate"] == 3 for _, kw in seen)


# --- through the commands ----------------------------------------------------------------------

@pytest.mark.parametrize("schedule", ["constant", "cosine", "step", "linear"])
def test_the_commands_lrs_are_torchs_warmup_then_schedule(capsys, seen, schedule):
    _ok(capsys, "mlp", "--steps", "12", "--lr", "0.01", "--schedule", schedule, "--warmup", "3")
    got = [lr for _, kw in seen for lr in kw["lrs"]]
    assert got == torch_lrs(schedule, 3, 0.01, 12)
    assert got[:4] == pytest.approx([0.0025, 0.005, 0.0075, 0.01], rel=1e-15)


def test_without_the_flags_train_steps_gets_none_of_them(capsys, seen):
    _ok(capsys, "mlp", "--steps", "5")
    assert seen and all(kw == {"record": kw["record"], "clip": None, "lrs": None, "accumulate": 1}
                        for _, kw in seen)


@pytest.mark.parametrize("model, extra", [("mlp", ["--steps", "9"]),
                                          ("gpt", ["--steps", "5", "--batch", "4", "--layers", "1"])])
def test_eager_and_compiled_give_the_same_losses_with_every_flag(capsys, in_tmp, model, extra):
    runs = {}
    for backend in ("eager", "compiled"):
        out = _ok(capsys, model, *extra, *ALL, "--backend", backend, "--log", f"{backend}.json")
        runs[backend] = ([line for line in out[6:] if "TrainLog" not in line], logged(in_tmp / f"{backend}.json"))
    assert runs["eager"] == runs["compiled"]
    plain = _ok(capsys, model, *extra, "--log", "plain.json")
    assert logged(in_tmp / "plain.json") != runs["eager"][1]
    notes = json.loads((in_tmp / "eager.json").read_text())["notes"]
    assert notes[-4:] == ["clip=0.05", "schedule=cosine", "warmup=2", "accumulate=2"]
    assert not any(n.startswith(("clip=", "schedule=", "accumulate=")) for n in
                   json.loads((in_tmp / "plain.json").read_text())["notes"]) and plain


def test_integer_arrays_reach_the_module_as_int64(capsys, seen):
    _ok(capsys, "vit", "--steps", "2", "--dtype", "float32", "--d-model", "8", "--layers", "1")
    images, labels = seen[0][0][0]
    assert images.dtype == "float32" and labels.dtype == "int64"
    seen.clear()
    _ok(capsys, "gpt", "--steps", "2", "--batch", "4", "--layers", "1", "--d-model", "16")
    ids, targets = seen[0][0][0]
    assert ids.dtype == "int64" and targets.dtype == "int64"
    seen.clear()
    _ok(capsys, "mlp", "--steps", "2")
    assert {x.dtype for x in seen[0][0][0]} == {"float64"}


# --- resume --------------------------------------------------------------------------------------

def _bits(path):
    names, tensors, meta = _core.load_safetensors(str(path))
    return meta, {n: np.asarray(t.numpy()).tobytes() for n, t in zip(names, tensors)}


RUN = ["mlp", "--steps", "40", *ALL]


def test_an_interrupted_run_resumes_with_the_uninterrupted_bits(capsys, in_tmp, monkeypatch, seen):
    """A signal inside a step's forward pass (the 16th of 2 per step: step 7, part way through
    a chunk of two steps) stops the run; the resumed run continues the lr sequence at step 7
    and the loader at batch 14, and ends with the uninterrupted run's checkpoint and log."""
    _ok(capsys, *RUN, "--save", "whole.st", "--log", "whole.json")
    whole_lrs = [lr for _, kw in seen for lr in kw["lrs"]]
    assert whole_lrs == torch_lrs("cosine", 2, 1e-3, 40)
    seen.clear()
    original, calls = Module._value_and_grads, [0]

    def stopping(self, xs):
        calls[0] += 1
        if calls[0] == 16:
            raise KeyboardInterrupt
        return original(self, xs)

    monkeypatch.setattr(Module, "_value_and_grads", stopping)
    code, _, err = run_cli(capsys, *RUN, "--save", "part.st")
    monkeypatch.setattr(Module, "_value_and_grads", original)
    assert code == 130 and "after step 7 of 40" in err, err
    seen.clear()
    _ok(capsys, *RUN, "--resume", "part.st", "--save", "resumed.st", "--log", "resumed.json")
    assert [lr for _, kw in seen for lr in kw["lrs"]] == whole_lrs[7:]
    assert _bits(in_tmp / "whole.st") == _bits(in_tmp / "resumed.st")
    assert logged(in_tmp / "whole.json") == logged(in_tmp / "resumed.json")


def test_a_compiled_run_resumed_from_its_periodic_checkpoint_has_the_uninterrupted_bits(
        capsys, in_tmp, monkeypatch):
    run = [*RUN, "--backend", "compiled"]
    _ok(capsys, *run, "--save", "whole.st")
    original = resume.Run.save

    def keeping(self):  # keep the step-12 checkpoint, as a run killed after it would
        original(self)
        if len(self.losses) == 12:
            (in_tmp / "part.st").write_bytes((in_tmp / "kept.st").read_bytes())

    monkeypatch.setattr(resume.Run, "save", keeping)
    _ok(capsys, *run, "--save", "kept.st", "--save-every", "4")
    monkeypatch.setattr(resume.Run, "save", original)
    _ok(capsys, *run, "--resume", "part.st", "--save", "resumed.st")
    assert _bits(in_tmp / "whole.st") == _bits(in_tmp / "resumed.st")


def test_a_resumed_run_with_other_flags_is_refused(capsys, in_tmp):
    _ok(capsys, *RUN, "--save", "p.st")
    for args, text in [(["--clip", "0.1"], "--clip 0.05 there, 0.1 here"),
                       (["--schedule", "step"], "the lr schedule cosine over 40 steps, warmup 2 there, "
                                                "step over 40 steps, warmup 2 here"),
                       (["--warmup", "3"], "warmup 2 there"),
                       (["--accumulate", "3"], "--accumulate 2 there, 3 here"),
                       (["--steps", "50"], "cosine over 40 steps, warmup 2 there, cosine over 50 steps")]:
        flags = dict(zip(ALL[::2], ALL[1::2]))
        flags.update({args[0]: args[1]} if args[0] != "--steps" else {})
        steps = args[1] if args[0] == "--steps" else "40"
        code = main(["run", "mlp", "--steps", steps, *[a for kv in flags.items() for a in kv],
                     "--resume", "p.st"])
        assert_one_error(capsys.readouterr().err, code, text)
    _ok(capsys, "mlp", "--steps", "4", "--save", "plain.st")
    meta, _ = _bits(in_tmp / "plain.st")
    assert set(json.loads(meta["train"])["run"]) == {"model", "dtype", "batch", "optim", "lr", "seed",
                                                     "grad_shards", "data"}  # as before the flags
    code = main(["run", "mlp", "--steps", "8", "--accumulate", "2", "--resume", "plain.st"])
    assert_one_error(capsys.readouterr().err, code, "--accumulate 1 there, 2 here")
    code = main(["run", "mlp", "--steps", "8", "--warmup", "2", "--resume", "plain.st"])
    assert_one_error(capsys.readouterr().err, code, "the lr schedule constant there, constant, warmup 2 here")


# --- refusals ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, text", [
    (["--clip", "0"], "--clip must be > 0"),
    (["--clip", "-1"], "--clip must be > 0"),
    (["--clip=abc"], "--clip"),
    (["--clip", "1e999"], "--clip: expected a finite number"),
    (["--clip", "1", "--clip=2"], "--clip: duplicate flag"),
    (["--schedule", "exp"], "--schedule: expected one of constant | cosine | step | linear, got `exp`"),
    (["--schedule=cosine", "--schedule", "step"], "--schedule: duplicate flag"),
    (["--schedule"], "--schedule"),
    (["--warmup", "-1"], "--warmup"),
    (["--warmup", "5", "--steps", "5"], "--warmup 5 must be less than the run's 5 steps"),
    (["--warmup", "1", "--warmup", "1"], "--warmup: duplicate flag"),
    (["--accumulate", "0"], "--accumulate must be > 0"),
    (["--accumulate=1025"], "--accumulate must be at most 1,024"),
    (["--accumulate", "2", "--accumulate", "2"], "--accumulate: duplicate flag"),
    (["--epochs", "1", "--batch", "50", "--accumulate", "5"],
     "--epochs 1 at 4 batches per epoch is no whole step of --accumulate 5 batches"),
])
def test_bad_values_are_one_line_and_exit_2(capsys, in_tmp, args, text):
    code, _, err = run_cli(capsys, "mlp", *args)
    assert_one_error(err, code, f"tlrs run mlp: {text}")
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("args, text", [(["--clip", "1"], "--clip is not available with --distributed"),
                                        (["--accumulate", "2"], "--accumulate is not available with --distributed")])
def test_distributed_refuses_clip_and_accumulate(args, text):
    with pytest.raises(ArgError, match=text):
        trainer.take_train_flags(["--distributed", *args], "tlrs run mlp", dtype="float64", lr=0.1, batch=4,
                                 steps=3)


def _tlrs(n, *args, cwd):
    """`python -m tlrs ARGS` in a subprocess (MPI is initialised once per process), under
    `mpiexec -n n` unless n is None (a world of one)."""
    cmd = [sys.executable, "-m", "tlrs", *args]
    if n is not None:
        from test_distributed import _mpiexec

        exe, flavour = _mpiexec()
        cmd = [exe, *(["--oversubscribe"] if flavour == "openmpi" else []), "-n", str(n), *cmd]
    env = {**os.environ, "TLRS_DIST_TIMEOUT": "120", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=cwd)


def test_distributed_runs_the_schedule(capsys, in_tmp):
    """One process, one shard: the data-parallel loop gives the eager loop's losses, schedule
    included."""
    run = ["run", "mlp", "--steps", "8", "--schedule", "linear", "--warmup", "2"]
    p = _tlrs(None, *run, "--distributed", "--grad-shards", "1", "--log", "dist.json", cwd=in_tmp)
    assert p.returncode == 0, p.stderr
    _ok(capsys, *run[1:], "--log", "eager.json")
    assert logged(in_tmp / "dist.json") == logged(in_tmp / "eager.json")


def test_gpt_trains_data_parallel_with_int64_shards(in_tmp):
    """`tlrs run gpt --distributed`: the int64 token batches split into shards; two ranks give
    one process's losses (the same --grad-shards), on the compiled backend too."""
    run = ["run", "gpt", "--steps", "3", "--batch", "4", "--layers", "1", "--d-model", "16",
           "--distributed", "--grad-shards", "2", "--schedule", "cosine"]
    for n, log, extra in [(None, "one.json", []), (2, "two.json", ["--backend", "compiled"])]:
        p = _tlrs(n, *run, *extra, "--log", log, cwd=in_tmp)
        assert p.returncode == 0, p.stderr
    assert logged(in_tmp / "one.json") == logged(in_tmp / "two.json")
    p = _tlrs(None, "run", "vit", "--distributed", cwd=in_tmp)
    assert p.returncode == 2 and p.stderr.splitlines() == [
        "tlrs: error: tlrs run vit: --distributed is not available for this command: its model declares the "
        "batch of images, and the data-parallel trainer's shards are smaller"], p.stderr
