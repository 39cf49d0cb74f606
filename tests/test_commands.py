"""The `tlrs run` model commands end to end (in-process through `tlrs.cli.main`, plus a
subprocess): exact line structure and order, loss going down, `--log`/`--plot`/`--save` outputs,
`--seed`, data flags (`--csv`, `--x/--y`, `--dataset`), one-line errors with exit code 2, and
nothing written unless asked."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tlrs
from tlrs import data, models
from tlrs.cli import main
from tlrs.cli.commands import (
    DEFAULT_MODELS,
    autoencoder,
    cnn,
    mlp,
    mlp_classifier,
    quickstart_mlp,
    resnet,
    softmax_regression,
    transformer,
)
from tlrs.entry import run_usage
from tlrs.module import Module, format_float
from tlrs.tensor import tensor

sys.path.insert(0, os.path.dirname(__file__))
from cli_helpers import assert_one_error, npy_images, run_cli  # noqa: E402

HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
needs_sklearn = pytest.mark.skipif(not HAVE_SKLEARN, reason="scikit-learn is not installed")
needs_mpl = pytest.mark.skipif(not HAVE_MPL, reason="matplotlib is not installed")

LOG = [
    "[tlrs] dtype: float (IEEE-754 binary64)",
    "[tlrs] backend: eager",
    "[tlrs] device: cpu",
    "[tlrs] fastKernels: false",
    "[tlrs] fastGpuMatmulPrecision: fp32",
]
DESCRIPTIONS = {
    "mlp": mlp.DESCRIPTION, "quickstart_mlp": quickstart_mlp.DESCRIPTION,
    "softmax_regression": softmax_regression.DESCRIPTION,
    "mlp_classifier": mlp_classifier.DESCRIPTION, "autoencoder": autoencoder.DESCRIPTION,
    "cnn": cnn.DESCRIPTION, "resnet": resnet.DESCRIPTION, "transformer": transformer.DESCRIPTION,
}
CLASSIFIERS = {"softmax_regression", "mlp_classifier", "cnn", "resnet"}
# A few steps each, enough for the loss to go down.
QUICK = {
    "mlp": ["--steps", "30"], "quickstart_mlp": ["--steps", "30"],
    "softmax_regression": ["--steps", "20"], "mlp_classifier": ["--steps", "20"],
    "autoencoder": ["--steps", "30"], "cnn": ["--steps", "15"],
    "resnet": ["--steps", "6", "--n-total", "40"], "transformer": ["--steps", "20"],
}
FLOAT = r"-?\d+\.\d{6}"


def check_output(model, out, extra=()):
    """Assert the reference line structure; return (loss0, loss1, steps, accuracy or None)."""
    assert out[:5] == LOG
    assert out[5] == f"tlrs run {model}: {DESCRIPTIONS[model]} (device=cpu)"
    before = re.fullmatch(rf"mean_loss\(train\(before\)\) = ({FLOAT})", out[6])
    after = re.fullmatch(rf"mean_loss\(train\(after\)\) = ({FLOAT})", out[7])
    assert before and after, out
    n = len(extra)
    assert out[8:8 + n] == list(extra)
    summary = re.fullmatch(rf"  steps=(\d+) loss0=({FLOAT}) loss1=({FLOAT})", out[8 + n])
    assert summary, out
    assert summary[2] == before[1] and summary[3] == after[1]
    acc = None
    rest = out[9 + n:]
    if model in CLASSIFIERS:
        m = re.fullmatch(r"accuracy\(test\) = (\d+\.\d\d)%", rest[0])
        assert m, out
        acc = float(m[1])
        rest = rest[1:]
    assert rest == [f"tlrs run {model}: ok"]
    return float(before[1]), float(after[1]), int(summary[1]), acc


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- every command ------------------------------------------------------------------------------

@pytest.mark.parametrize("model", sorted(QUICK))
def test_command_structure_and_loss(model, capsys, in_tmp):
    code, out, err = run_cli(capsys, model, *QUICK[model])
    assert code == 0 and err == ""
    loss0, loss1, steps, acc = check_output(model, out)
    assert steps == int(QUICK[model][1])
    assert loss1 < loss0
    assert acc is None or 0.0 <= acc <= 100.0
    assert list(in_tmp.iterdir()) == []  # nothing written without flags
    assert all("\x1b" not in line and "\r" not in line for line in out)  # no progress bar


def test_subprocess_flags_before_and_after_the_name(in_tmp):
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-m", "tlrs", "run", "--steps=4", "--seed", "3", "mlp",
                        "--batch", "10", "--cpu"], capture_output=True, text=True, timeout=120,
                       env=env, cwd=in_tmp)
    assert p.returncode == 0 and p.stderr == ""
    _, _, steps, _ = check_output("mlp", p.stdout.splitlines())
    assert steps == 4
    assert list(in_tmp.iterdir()) == []


def test_epochs_count_full_batches(capsys):
    code, out, _ = run_cli(capsys, "mlp", "--epochs", "2", "--batch", "30")
    assert code == 0
    assert check_output("mlp", out)[2] == 2 * (200 // 30)


def test_same_seed_same_output_other_seed_other_init(capsys):
    runs = {}
    for seed in ("0", "7", "0"):
        code, out, _ = run_cli(capsys, "mlp", "--steps", "3", "--seed", seed)
        assert code == 0
        runs.setdefault(seed, []).append(out)
    assert runs["0"][0] == runs["0"][1]
    assert check_output("mlp", runs["7"][0])[0] != check_output("mlp", runs["0"][0])[0]


def test_default_seed_is_the_reference_model_init():
    # --seed 0: one draw from the global stream, then the reference's nn.withModel seeds.
    from tlrs.cli.commands.trainer import model_seeds
    from tlrs.random import manual_seed, next_seed

    manual_seed(0)
    s0 = next_seed(0, 0)
    assert model_seeds(4) == [next_seed(s0, i) for i in range(4)]
    assert model_seeds(1) != [next_seed(s0, 0)]  # the global stream moved on


@pytest.mark.parametrize("model,args", [
    ("transformer", ["--steps", "5"]),
    ("mlp", ["--steps", "120", "--optim", "momentum"]),
    ("cnn", ["--steps", "4", "--dtype", "float32"]),
    ("softmax_regression", ["--epochs", "2", "--optim", "adadelta"]),
])
def test_compiled_backend_prints_the_eager_losses(model, args, capsys, in_tmp):
    """The same command on both backends prints the same lines and logs the same per-step
    losses, bit for bit (only the backend log line differs)."""
    outs, logs = {}, {}
    for backend in ("eager", "compiled"):
        code, out, err = run_cli(capsys, model, *args, "--backend", backend, "--log",
                                 f"{backend}.json")
        assert code == 0 and err == ""
        assert out[1] == f"[tlrs] backend: {backend}"
        outs[backend] = [line.replace(f"{backend}.json", "L") for line in out[:1] + out[2:]]
        logs[backend] = json.loads((in_tmp / f"{backend}.json").read_text())["series"][0]["values"]
    assert outs["compiled"] == outs["eager"]
    assert logs["compiled"] == logs["eager"] and len(logs["eager"]) >= 4


def _tiny_training(counter, backend="eager", steps=7, batch=4, n=20):
    """Train a one-parameter least-squares model through the commands' `train`, counting loss
    evaluations; returns (result, number of full batches in one pass)."""
    from tlrs import ops
    from tlrs.cli.commands import trainer
    from tlrs.config import Backend, Options
    from tlrs.data import Dataset
    from tlrs.module import ModuleDef

    def loss(params, inputs):
        counter.append(1)
        x, y = inputs
        return ops.mse_loss(ops.matmul(x, params[0]), y)

    defn = ModuleDef([[2, 1]], [[2], [1]], loss)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 2))
    ds = Dataset(x, x @ np.array([[1.5], [-2.0]]), None, "tiny")
    flags = trainer.TrainFlags(steps, None, 0.1, batch, "sgd", None, False, None, None)
    opts = Options(backend=Backend(backend))
    return trainer.train("t", defn, opts, ds, flags, 0), n // batch


def test_train_runs_one_forward_per_step(capsys):
    """Each step evaluates the loss once (its pre-update loss is the one its gradients come
    from); the only other evaluations are the mean losses before and after."""
    calls: list[int] = []
    result, per_pass = _tiny_training(calls, steps=7)
    assert result.steps == 7
    assert len(calls) == per_pass + 7 + per_pass
    # The recorded losses are each step's pre-update loss: SGD replayed by hand gives them.
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 2))
    y = x @ np.array([[1.5], [-2.0]])
    w, want = np.zeros((2, 1)), []
    for idx in data.BatchLoader(20, 4, 0).batches(7):
        r = x[idx] @ w - y[idx]
        want.append(float(np.mean(r ** 2)))
        w = w - 0.1 * (2.0 / len(idx)) * x[idx].T @ r
    assert result.losses == pytest.approx(want, rel=1e-12)
    assert capsys.readouterr().out.count("mean_loss") == 2


def test_train_on_the_compiled_backend_uses_the_native_loop(monkeypatch, capsys):
    """Under --backend compiled the steps never go through the eager gradient path: the whole
    chunk of batches is one native call, and the loss is only traced."""
    from tlrs.cli.commands import trainer

    def refuse(*args, **kwargs):
        raise AssertionError("eager gradient path used on the compiled backend")

    monkeypatch.setattr(Module, "_value_and_grads", refuse)
    monkeypatch.setattr(Module, "step_with", refuse)
    native_calls = []
    original = Module._train_native

    def counting(self, samples, steps, *rest):
        native_calls.append(steps)
        return original(self, samples, steps, *rest)

    monkeypatch.setattr(Module, "_train_native", counting)
    calls: list[int] = []
    result, _ = _tiny_training(calls, backend="compiled", steps=530)
    assert result.steps == 530 and len(result.losses) == 530
    assert native_calls == [trainer.CHUNK_STEPS] * 10 + [30]
    assert len(calls) == 4  # traced twice (opposite signs) per input shape, never per step
    eager_calls: list[int] = []
    monkeypatch.undo()
    eager, _ = _tiny_training(eager_calls, steps=530)
    assert eager.losses == result.losses and eager.after == result.after


def test_progress_moves_after_each_chunk(monkeypatch, capsys):
    from contextlib import contextmanager

    from tlrs.cli.commands import trainer

    seen = []

    @contextmanager
    def recording(total, label):
        seen.append(("total", total))
        yield lambda losses: seen.append(("advance", len(losses)))

    monkeypatch.setattr(trainer, "progress", recording)
    result, _ = _tiny_training([], steps=73)
    assert seen[0] == ("total", 73)
    advances = [n for kind, n in seen[1:]]
    assert sum(advances) == 73 == result.steps and len(advances) == 11  # chunks of 7, then 3
    assert trainer.chunk_size(1) == 1 and trainer.chunk_size(10_000) == trainer.CHUNK_STEPS


def test_default_models_cover_every_command():
    assert sorted(DEFAULT_MODELS) == sorted([*QUICK, "gpt", "vit"])  # gpt/vit: tests/test_zoo_gpt_vit.py
    counts = {name: models.param_count(make()) for name, make in DEFAULT_MODELS.items()}
    from tlrs.models.nn_transformers import GPTConfig, ViTConfig

    # The sizes `tlrs run gpt` and `tlrs run vit` train with their defaults (77 symbols of text).
    assert counts["gpt"] == sum(int(np.prod(s)) for s in GPTConfig(77, 32, 48, 4, 2).param_shapes())
    assert counts["vit"] == sum(int(np.prod(s)) for s in ViTConfig(3, 16, 16, 4, 4, 32, 4, 2, 2).param_shapes())
    # Their random initial values are --seed 0's, drawn without moving the caller's stream.
    tlrs.manual_seed(5)
    state = tlrs._core.seed_stream_state()
    first, again = DEFAULT_MODELS["gpt"](), DEFAULT_MODELS["gpt"]()
    assert tlrs._core.seed_stream_state() == state
    assert [p.numpy().tobytes() for p in first.initial_params()] == [
        p.numpy().tobytes() for p in again.initial_params()]
    assert counts["mlp"] == 7 * 32 + 32 + 32 + 1
    assert counts["quickstart_mlp"] == 2 * 8 + 8 + 8 + 1
    assert counts["softmax_regression"] == 16 * 4 + 4
    assert all(n > 0 for n in counts.values())


def test_help_lists_command_flags(capsys):
    code = main(["run", "cnn", "--help", "--lr", "nonsense"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(run_usage("tlrs run cnn") + "\n\nCommand flags:\n")
    assert "--dataset" in out and "--steps N | --epochs N" in out


# --- outputs ------------------------------------------------------------------------------------

def test_log_writes_the_trainlog(capsys, in_tmp):
    code, out, _ = run_cli(capsys, "softmax_regression", "--steps", "6", "--log", "a/b/log.json")
    assert code == 0
    check_output("softmax_regression", out, ["  wrote TrainLog JSON: a/b/log.json"])
    text = (in_tmp / "a" / "b" / "log.json").read_text()
    assert text.endswith("}\n")
    log = json.loads(text)
    assert list(log) == ["title", "steps", "series", "notes"]
    assert log["title"] == "Softmax regression training"
    assert log["steps"] == list(range(6))
    [series] = log["series"]
    assert series["name"] == "loss" and series["color"] == "#4e79a7"
    assert len(series["values"]) == 6 and all(isinstance(v, float) for v in series["values"])
    assert "lr=0.010000" in log["notes"] and "steps=6" in log["notes"]
    assert sorted(p.name for p in (in_tmp / "a" / "b").iterdir()) == ["log.json"]


def test_log_off_writes_nothing(capsys, in_tmp):
    code, out, _ = run_cli(capsys, "mlp", "--steps", "2", "--log", " OFF ")
    assert code == 0
    check_output("mlp", out, ["  TrainLog JSON disabled"])
    assert list(in_tmp.iterdir()) == []


@needs_mpl
def test_plot_writes_a_png(capsys, in_tmp):
    code, out, _ = run_cli(capsys, "quickstart_mlp", "--steps", "5", "--plot", "plots/loss.png")
    assert code == 0
    check_output("quickstart_mlp", out, ["  wrote loss plot: plots/loss.png"])
    assert (in_tmp / "plots" / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_one_error(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = run_cli(capsys, "mlp", "--steps", "2", "--plot", "x.png")
    assert_one_error(err, code, "tlrs[plot]")


def test_save_checkpoint_loads_back(capsys, in_tmp):
    code, out, _ = run_cli(capsys, "mlp", "--steps", "4", "--save", "ck/mlp.safetensors")
    assert code == 0
    check_output("mlp", out, ["  saved checkpoint: ck/mlp.safetensors"])
    defn, _ = models.mlp(7, 32, 1)
    module, state = Module.load_checkpoint(str(in_tmp / "ck" / "mlp.safetensors"), defn)
    assert state is not None and state.kind == "adam" and state.step == 4
    ds = data.synthetic_regression()
    batches = [[tensor(ds.x[i:i + 5]), tensor(ds.y[i:i + 5])] for i in range(0, 200, 5)]
    assert format_float(module.mean_loss(batches).item()) == out[7].split(" = ")[1]


# --- data flags ---------------------------------------------------------------------------------

def test_csv(capsys, in_tmp):
    rng = np.random.default_rng(1)
    rows = rng.uniform(size=(40, 8))
    path = in_tmp / "auto.csv"
    path.write_text("x1,x2,x3,x4,x5,x6,x7,y\n" + "\n".join(",".join(map(str, r)) for r in rows))
    code, out, _ = run_cli(capsys, "mlp", "--csv", str(path), "--steps", "16", "--log", "l.json")
    assert code == 0
    loss0, loss1, _, _ = check_output("mlp", out, ["  wrote TrainLog JSON: l.json"])
    assert loss1 < loss0
    assert f"dataset={path}" in json.loads((in_tmp / "l.json").read_text())["notes"]


def test_csv_bad_row_names_the_line(capsys, in_tmp):
    (in_tmp / "bad.csv").write_text("a,b,y\n1,2,3\n1,oops,3\n")
    code, _, err = run_cli(capsys, "mlp", "--csv", "bad.csv")
    assert_one_error(err, code, "line 3")


@pytest.mark.parametrize("model", ["cnn", "resnet", "autoencoder"])
def test_npy_images(model, capsys, in_tmp):
    xp, yp = npy_images(in_tmp)
    code, out, err = run_cli(capsys, model, "--x", xp, "--y", yp, "--steps", "3", "--batch", "4")
    assert code == 0
    check_output(model, out)
    if model == "resnet":
        assert "stage 4 at 1x1" in err  # 8x8 images: the reference network cannot see them


def test_npy_n_total_limits_rows(capsys, in_tmp):
    xp, yp = npy_images(in_tmp, n=30, nhwc=False)
    code, out, _ = run_cli(capsys, "cnn", "--x", xp, "--y", yp, "--n-total", "10", "--epochs",
                           "1", "--batch", "4", "--log", "l.json")
    assert code == 0
    check_output("cnn", out, ["  wrote TrainLog JSON: l.json"])
    assert "test=2" in json.loads((in_tmp / "l.json").read_text())["notes"]


@needs_sklearn
@pytest.mark.parametrize("model,args", [
    ("mlp", ["--dataset", "diabetes", "--steps", "10"]),
    ("softmax_regression", ["--dataset", "iris", "--steps", "10"]),
    ("autoencoder", ["--dataset", "wine", "--steps", "10"]),
    ("resnet", ["--dataset", "digits", "--steps", "1", "--batch", "64"]),
])
def test_dataset_paths(model, args, capsys):
    code, out, _ = run_cli(capsys, model, *args)
    assert code == 0
    check_output(model, out)


@needs_sklearn
@pytest.mark.parametrize("model", ["mlp_classifier", "cnn"])
def test_digits_defaults_reach_95_percent(model, capsys):
    code, out, _ = run_cli(capsys, model, "--dataset", "digits")
    assert code == 0
    loss0, loss1, _, acc = check_output(model, out)
    assert loss1 < loss0 and acc >= 95.0


def test_dataset_without_sklearn_is_one_error(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    code, _, err = run_cli(capsys, "mlp_classifier", "--dataset", "iris", "--steps", "1")
    assert_one_error(err, code, "install tlrs[datasets] (scikit-learn)")


# --- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,text", [
    (["mlp", "--steps", "0"], "tlrs run mlp: --steps must be > 0"),
    (["mlp", "--epochs", "0"], "tlrs run mlp: --epochs must be > 0"),
    (["mlp", "--steps", "3", "--epochs", "2"],
     "tlrs run mlp: --steps and --epochs are mutually exclusive (pick one)"),
    (["mlp", "--steps", "x"], "tlrs run mlp: --steps: expected a natural number, got `x`"),
    (["mlp", "--lr", "abc"], "tlrs run mlp: --lr: expected a JSON-style float literal, got `abc`"),
    (["mlp", "--lr", "-1"], "tlrs run mlp: --lr must be > 0"),
    (["mlp", "--lr", "1", "--lr", "2"], "tlrs run mlp: --lr: duplicate flag"),
    (["mlp", "--log"], "tlrs run mlp: --log: expected a value"),
    (["cnn", "--optim", "lbfgs"], "tlrs run cnn: --optim: expected one of sgd"),
    (["mlp", "--frobnicate", "1"], "tlrs run mlp: unexpected arguments: [--frobnicate, 1]"),
    (["mlp", "--batch", "1000"], "larger than the dataset (200 samples)"),
    (["mlp", "--csv", "missing.csv"], "missing.csv"),
    (["mlp", "--csv", "a.csv", "--dataset", "iris"], "--csv and --dataset are mutually exclusive"),
    (["cnn", "--x", "a.npy"], "tlrs run cnn: --x requires --y"),
    (["cnn", "--x", "a.npy", "--y", "b.npy"], "a.npy"),
    (["cnn", "--dataset", "iris"], "tlrs run cnn: --dataset: expected one of digits, got `iris`"),
    (["mlp_classifier", "--dataset", "diabetes"], "--dataset: expected one of digits | iris"),
    (["transformer", "--heads", "0"], "tlrs run transformer: --heads must be > 0"),
    (["mlp", "--seed", "-1"], "tlrs run mlp: --seed: expected a natural number, got `-1`"),
    (["mlp", "--dtype", "fp32"], "proof-only"),
    (["mlp", "--log", "."], "tlrs run mlp: --log: . is a folder, expected a file path"),
    (["mlp", "--save", "."], "tlrs run mlp: --save: . is a folder"),
])
def test_bad_flags_are_one_error_line(args, text, capsys, in_tmp):
    code, _, err = run_cli(capsys, *args)
    assert_one_error(err, code, text)
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("backend", ["eager", "compiled"])
def test_float32_runs_in_binary32(tmp_path, backend):
    """`tlrs run mlp --cpu --dtype float32` (the README's main job) trains in binary32: its
    logged losses are float32 values and differ from the binary64 run's."""
    import json

    import numpy as np

    from tlrs import cli

    logs = {}
    for dtype in ("float32", "float64"):
        path = tmp_path / f"{dtype}.json"
        code = cli.main(["run", "mlp", "--cpu", "--dtype", dtype, "--backend", backend,
                         "--steps", "3", "--log", str(path)])
        assert code == 0
        logs[dtype] = json.loads(path.read_text())["series"][0]["values"]
    f32 = np.array(logs["float32"])
    assert np.array_equal(f32.astype(np.float32).astype(np.float64), f32)
    assert not np.array_equal(f32, np.array(logs["float64"]))
    assert np.allclose(f32, logs["float64"], rtol=1e-5)


def test_seed_reaches_the_data_order(capsys, monkeypatch):
    """`--seed N` seeds the dataset-shuffle LCG (not only the model init): the first batch
    trained on is the first batch of the reference shuffle for that seed."""
    import numpy as np

    from tlrs.cli.commands import trainer
    from tlrs.random import shuffle_permutation

    seen = []

    class Recording(trainer.BatchLoader):
        def next_epoch(self):
            batches = super().next_epoch()
            seen.append((self.n, self.batch, batches[0].tolist()))
            return batches

    monkeypatch.setattr(trainer, "BatchLoader", Recording)
    firsts = {}
    for seed in ("0", "7"):
        seen.clear()
        code, _, _ = run_cli(capsys, "mlp", "--steps", "1", "--seed", seed)
        assert code == 0
        n, batch, first = seen[0]
        perm, _ = shuffle_permutation(int(seed), n)
        assert first == np.asarray(perm)[:batch].tolist()  # the reference shuffle of 0..n-1
        firsts[seed] = first
    assert firsts["0"] != firsts["7"]
