"""The README's Python samples run as written (in a temporary folder: one saves a checkpoint)."""

import pathlib
import re


def test_readme_python_sample_runs(tmp_path, monkeypatch, capsys):
    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    code = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert code, "the README has a Python sample"
    monkeypatch.chdir(tmp_path)
    exec(compile(code[0], "README.md", "exec"), {})
    assert (tmp_path / "model.safetensors").stat().st_size > 0
    assert "step 0: loss=" in capsys.readouterr().out


def test_readme_nn_sample_runs(tmp_path, monkeypatch, capsys):
    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    code = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    sample = next(c for c in code if "nn.Module" in c)
    monkeypatch.chdir(tmp_path)
    exec(compile(sample, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "True"  # the compiled module and the model agree
