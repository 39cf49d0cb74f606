"""`tlrs run gpt` and `tlrs run vit`, the tlrs.nn commands (int64 token ids and labels), end to
end through `tlrs.cli.main` as the other command tests: the GPT's loss goes down and it writes a
sample, eager and compiled give the same losses, the ViT classifies held-out digits."""

import importlib.util
import json
import os
import re
import sys

import pytest

from tlrs.models.nn_transformers import GPT, GPTConfig, ViT, ViTConfig

sys.path.insert(0, os.path.dirname(__file__))
from cli_helpers import assert_one_error, run_cli  # noqa: E402

needs_sklearn = pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                                   reason="scikit-learn is not installed")
FLOAT = r"-?\d+\.\d{6}"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def summary(out):
    """(loss0, loss1, steps) from the summary line, checked against the mean-loss lines."""
    before = next(re.fullmatch(rf"mean_loss\(train\(before\)\) = ({FLOAT})", s) for s in out if s.startswith("mean_loss(train(before"))
    after = next(re.fullmatch(rf"mean_loss\(train\(after\)\) = ({FLOAT})", s) for s in out if s.startswith("mean_loss(train(after"))
    [line] = [s for s in out if s.startswith("  steps=")]
    m = re.fullmatch(rf"  steps=(\d+) loss0=({FLOAT}) loss1=({FLOAT})", line)
    assert m and before and after and m[2] == before[1] and m[3] == after[1], out
    return float(m[2]), float(m[3]), int(m[1])


def logged(path):
    return json.loads(path.read_text())["series"][0]["values"]


def test_gpt_loss_goes_down_and_it_writes_200_characters(capsys, in_tmp):
    code, out, err = run_cli(capsys, "gpt", "--steps", "300", "--sample", "200", "--log", "log.json")
    assert code == 0 and err == ""
    assert out[5] == "tlrs run gpt: char-level GPT (nanoGPT layout), next-character cross-entropy (device=cpu)"
    assert re.fullmatch(r"text: builtin:stdlib-docstrings \(8,000 characters, \d+ symbols\); [\d,]+ parameters "
                        r"\(lm_head tied to wte\)", out[6]), out[6]
    loss0, loss1, steps = summary(out)
    assert steps == 300 and loss1 < loss0 - 0.5
    losses = logged(in_tmp / "log.json")
    assert len(losses) == 300 and sum(losses[-50:]) < sum(losses[:50])
    m = re.fullmatch(r"sample \(200 characters, sampled, seed 0\): (.*)", out[-2])
    assert m, out[-2]
    assert len(m[1]) == 200  # the built-in text is one line: nothing escaped
    assert out[-1] == "tlrs run gpt: ok"


def test_gpt_eager_and_compiled_give_the_same_losses(capsys, in_tmp):
    runs = {}
    for backend in ("eager", "compiled"):
        code, out, err = run_cli(capsys, "gpt", "--steps", "4", "--batch", "8", "--backend", backend,
                                 "--log", f"{backend}.json", "--sample", "20", "--dtype", "float32")
        assert code == 0 and err == "", err
        runs[backend] = (summary(out), logged(in_tmp / f"{backend}.json"), out[-2])
    assert runs["eager"] == runs["compiled"]
    assert len(runs["eager"][1]) == 4


def test_gpt_reads_text_and_writes_greedily(capsys, in_tmp):
    (in_tmp / "t.txt").write_text("abc\tdef\n" * 30, encoding="utf-8")
    code, out, err = run_cli(capsys, "gpt", "--text", "t.txt", "--block", "8", "--steps", "30", "--lr", "1e-2",
                             "--sample", "16", "--greedy", "--layers", "1")
    assert code == 0 and err == ""
    assert out[6].startswith("text: t.txt (240 characters, 8 symbols); ")
    m = re.fullmatch(r"sample \(16 characters, greedy\): (.*)", out[-2])
    assert m and set(m[1].replace("\\t", "").replace("\\n", "")) <= set("abcdef"), out[-2]


@pytest.mark.parametrize("args,text", [
    (["--d-model", "10", "--heads", "4"], "--d-model 10 is not a multiple of --heads 4"),
    (["--text", "missing.txt"], "--text missing.txt: cannot read it"),
])
def test_gpt_refusals(capsys, args, text):
    code, _, err = run_cli(capsys, "gpt", *args)
    assert_one_error(err, code, f"tlrs run gpt: {text}")


@needs_sklearn
def test_vit_classifies_held_out_digits(capsys):
    code, out, err = run_cli(capsys, "vit", "--dataset", "digits")
    assert code == 0 and err == ""
    assert out[6].startswith("images: sklearn:digits (1,438 training, 359 held out, 1x8x8, 10 classes); 17 tokens; ")
    loss0, loss1, _ = summary(out)
    assert loss1 < loss0 / 10
    m = re.fullmatch(r"accuracy\(test\) = (\d+\.\d\d)%", out[-2])
    assert m, out
    assert float(m[1]) >= 90.0
    assert out[-1] == "tlrs run vit: ok"


def test_vit_eager_and_compiled_give_the_same_losses(capsys, in_tmp):
    runs = {}
    for backend in ("eager", "compiled"):
        code, out, err = run_cli(capsys, "vit", "--steps", "3", "--pool", "mean", "--backend", backend,
                                 "--log", f"{backend}.json")
        assert code == 0 and err == "", err
        runs[backend] = (summary(out), logged(in_tmp / f"{backend}.json"), out[-2])
    assert runs["eager"] == runs["compiled"]


def test_vit_refuses_a_patch_larger_than_the_images(capsys):
    code, _, err = run_cli(capsys, "vit", "--patch", "17")
    assert_one_error(err, code, "tlrs run vit: --patch 17 is larger than the 16x16 images")


def test_param_shapes_follow_the_models():
    gpt = GPTConfig(vocab=11, block=8, d_model=16, heads=2, layers=2, dtype="float64")
    assert [tuple(p.shape) for p in GPT(gpt).parameters()] == gpt.param_shapes()
    for pool in ("cls", "mean"):
        vit = ViTConfig(3, 9, 10, 4, patch=3, d_model=8, heads=2, layers=1, pool=pool)
        model = ViT(vit)
        assert [tuple(p.shape) for p in model.parameters()] == vit.param_shapes()
        assert vit.tokens == 9 + (pool == "cls")
