"""tlrs.trainlog: the reference TrainLog JSON (format, non-finite values, atomic writes, parent
folders) and the loss plot."""

import importlib.util
import json
import math
import os
import sys

import pytest

from tlrs import trainlog

needs_mpl = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                               reason="matplotlib is not installed")


def test_curve_log_format(tmp_path):
    path = tmp_path / "a" / "b" / "log.json"
    assert trainlog.curve_trainlog(path, "MLP tabular training", [1.5, 0.25], ["lr=0.001000"]) \
        == str(path)
    text = path.read_text()
    assert text.endswith("}\n") and text.startswith("{\n  \"title\"")
    assert json.loads(text) == {
        "title": "MLP tabular training", "steps": [0, 1],
        "series": [{"name": "loss", "values": [1.5, 0.25], "color": "#4e79a7"}],
        "notes": ["lr=0.001000"],
    }


def test_non_finite_values_are_strings(tmp_path):
    path = tmp_path / "log.json"
    trainlog.write_trainlog(path, "t", [0, 1, 2], {"loss": [math.nan, math.inf, -math.inf]})
    raw = json.loads(path.read_text())
    assert raw["series"][0]["values"] == ["NaN", "Infinity", "-Infinity"]
    back = trainlog.read_trainlog(path)["series"][0]["values"]
    assert math.isnan(back[0]) and back[1:] == [math.inf, -math.inf]


def test_two_point_and_several_series(tmp_path):
    log = trainlog.trainlog_dict("t", [0, 10], [("a", [1, 2]), ("b", [3, 4])])
    assert [s["color"] for s in log["series"]] == ["#4e79a7", "#f28e2b"]
    assert log["steps"] == [0, 10] and log["notes"] == []


@pytest.mark.parametrize("steps,series,match", [
    ([0, 1], {"loss": [1.0]}, "has 1 values for 2 steps"),
    ([0, -1], {"loss": [1.0, 2.0]}, "natural numbers"),
])
def test_bad_logs(steps, series, match):
    with pytest.raises(ValueError, match=match):
        trainlog.trainlog_dict("t", steps, series)


def test_reader_defaults(tmp_path):
    path = tmp_path / "old.json"
    path.write_text('{"steps": [0], "series": [{"name": "loss", "values": [1]}]}')
    log = trainlog.read_trainlog(path)
    assert log["title"] == "Training" and log["series"][0]["color"] == "#0a7"


def test_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "log.json"
    trainlog.curve_trainlog(path, "first", [1.0])
    before = path.read_text()

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        trainlog.curve_trainlog(path, "second", [2.0])
    assert path.read_text() == before
    assert os.listdir(tmp_path) == ["log.json"]  # the temporary file is gone


def test_file_mode_follows_umask(tmp_path):
    path = tmp_path / "log.json"
    trainlog.curve_trainlog(path, "t", [1.0])
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask


@needs_mpl
def test_plot_loss_png(tmp_path):
    path = tmp_path / "plots" / "loss.png"
    assert trainlog.plot_loss(path, range(4), [1.0, 0.5, math.nan, 0.1], "t") == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(path.parent) == ["loss.png"]
    with pytest.raises(ValueError, match="3 steps but 2 values"):
        trainlog.plot_loss(path, range(3), [1.0, 2.0])


def test_plot_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"install tlrs\[plot\] \(matplotlib\)"):
        trainlog.plot_loss(tmp_path / "x.png", [0], [1.0])
    assert not (tmp_path / "x.png").exists()


def test_temporary_name_and_normalised_paths(tmp_path, monkeypatch):
    import re

    from tlrs.trainlog import temporary_name

    name = temporary_name("log.json")
    assert re.fullmatch(rf"\.log\.json\.{os.getpid()}\.[0-9a-f]{{8}}\.tmp", name)
    assert temporary_name("log.json") != name
    monkeypatch.chdir(tmp_path)
    # "missing/../l.json" is l.json here, though `missing` does not exist
    assert trainlog.curve_trainlog("missing/../l.json", "t", [1.0]) == "missing/../l.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.json"]
