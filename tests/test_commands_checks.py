"""`tlrs run` checks everything before training starts: output paths (writable, not colliding,
nothing left behind when refused), data files (headers against sizes, dtypes, ranks, values),
and huge or odd flag values, each one error line with exit code 2."""

import importlib.util
import json
import os
import sys

import numpy as np
import pytest

from tlrs import data

sys.path.insert(0, os.path.dirname(__file__))
from cli_helpers import assert_one_error, npy_images, run_cli  # noqa: E402

needs_mpl = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                               reason="matplotlib is not installed")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- outputs are checked before training ----------------------------------------------------------

def _refused(capsys, in_tmp, args, text):
    """Run, expect one error line containing `text`, and nothing written (no file, no folder)."""
    before = sorted(p.relative_to(in_tmp) for p in in_tmp.rglob("*"))
    code, out, err = run_cli(capsys, *args)
    assert_one_error(err, code, text)
    assert not any(line.startswith("mean_loss") for line in out)  # no training started
    assert sorted(p.relative_to(in_tmp) for p in in_tmp.rglob("*")) == before


@pytest.mark.parametrize("args,text", [
    (["--log", "out.json", "--save", "out.json"], "--log and --save name the same file"),
    (["--log", "a/b.json", "--save", "a/./c/../b.json"], "--log and --save name the same file"),
    (["--log", "out2", "--save", "out2/ck.safetensors"],
     "--save out2/ck.safetensors lies inside --log out2"),
    (["--save", "new/deep", "--log", "new/deep/x/log.json"], "lies inside --save new/deep"),
    (["--log", "x" * 300 + ".json"], "File name too long"),
    (["--log", "d/" + "y" * 250], "File name too long"),  # the temporary name is longer still
    (["--save", "/".join(["z"] * 2100) + "/ck"], "File name too long"),
    (["--log", "sub/"], "expected a file path, got a folder path"),
    (["--log", "a\x00b"], "NUL character"),
    (["--log", "/proc/tlrs-no-such/log.json"], "cannot write /proc/tlrs-no-such/log.json"),
    (["--save", "/dev/null"], "it exists and is not a regular file"),
])
def test_bad_outputs_are_refused_before_training(args, text, capsys, in_tmp):
    _refused(capsys, in_tmp, ["mlp", "--steps", "2", *args], text)


@needs_mpl
def test_plot_inside_the_log_is_refused(capsys, in_tmp):
    _refused(capsys, in_tmp, ["mlp", "--steps", "2", "--log", "out2", "--plot", "out2/loss.png"],
             "--plot out2/loss.png lies inside --log out2")
    _refused(capsys, in_tmp, ["mlp", "--log", "same.png", "--plot", "same.png"],
             "--log and --plot name the same file")


def test_outputs_that_are_folders_or_under_files_are_refused(capsys, in_tmp):
    (in_tmp / "taken").mkdir()
    (in_tmp / "taken" / "keep.txt").write_text("x")
    (in_tmp / "file.txt").write_text("x")
    _refused(capsys, in_tmp, ["mlp", "--log", "taken"], "--log: taken is a folder")
    _refused(capsys, in_tmp, ["mlp", "--save", "file.txt/ck.safetensors"],
             "file.txt is not a folder")
    _refused(capsys, in_tmp, ["mlp", "--log", "file.txt/a/b/log.json"], "is not a folder")
    (in_tmp / "link").symlink_to(in_tmp / "taken")
    _refused(capsys, in_tmp, ["mlp", "--log", "taken/l.json", "--save", "link/l.json"],
             "name the same file")
    os.link(in_tmp / "file.txt", in_tmp / "hard.txt")
    _refused(capsys, in_tmp, ["mlp", "--log", "file.txt", "--save", "hard.txt"],
             "name the same file")


def test_unwritable_folder_is_refused(capsys, in_tmp):
    if os.geteuid() == 0:
        # Root may write anywhere a mode allows; sysfs refuses new folders even to root.
        _refused(capsys, in_tmp, ["mlp", "--log", "/sys/tlrs-no-such/log.json"], "Operation not permitted")
        return
    locked = in_tmp / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        _refused(capsys, in_tmp, ["mlp", "--log", "locked/new/log.json"], "Permission denied")
    finally:
        locked.chmod(0o755)


def test_a_refused_run_leaves_the_checked_folders_away(capsys, in_tmp):
    """The output check makes the missing folders to probe them, then removes them: a run
    refused later (here: a missing data file) leaves no empty folder."""
    _refused(capsys, in_tmp, ["mlp", "--log", "a/b/c/log.json", "--save", "a/d/ck",
                              "--csv", "missing.csv"], "missing.csv: no such file")
    assert not (in_tmp / "a").exists()


def test_existing_outputs_are_replaced(capsys, in_tmp):
    (in_tmp / "log.json").write_text("old")
    code, out, _ = run_cli(capsys, "mlp", "--steps", "2", "--log", "log.json", "--save",
                           "sub/../ck.safetensors")
    assert code == 0
    assert json.loads((in_tmp / "log.json").read_text())["steps"] == [0, 1]
    assert (in_tmp / "ck.safetensors").exists()
    assert sorted(p.name for p in in_tmp.iterdir()) == ["ck.safetensors", "log.json"]


# --- data files: one line naming the file and what was expected -----------------------------------

def _npy_cases(folder):
    x = np.zeros((10, 3, 8, 8), np.uint8)
    np.save(folder / "x.npy", x)
    np.save(folder / "y.npy", np.arange(10) % 3)
    raw = (folder / "x.npy").read_bytes()
    (folder / "empty.npy").write_bytes(b"")
    (folder / "trunc.npy").write_bytes(raw[:len(raw) // 2])
    (folder / "long.npy").write_bytes(raw + b"\0" * 7)
    (folder / "junk.npy").write_bytes(b"not a numpy file at all")
    header = raw[:128].replace(b"'shape': (10, 3, 8, 8), ", b"'shape': (10**12,3,8,8), ")
    (folder / "bighead.npy").write_bytes(header)
    np.save(folder / "c64.npy", x.astype(np.complex64))
    np.save(folder / "rank3.npy", x[:, 0])
    np.save(folder / "yfloat.npy", np.zeros(10))
    np.save(folder / "nan.npy", np.full((10, 3, 8, 8), np.nan))
    np.save(folder / "tiny.npy", np.zeros((10, 3, 2, 2)))
    np.save(folder / "y5.npy", np.arange(5))
    np.save(folder / "obj.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(folder / "ybig.npy", np.arange(10) * 10**9)
    (folder / "folder.npy").mkdir()


@pytest.mark.parametrize("x,y,text", [
    ("empty.npy", "y.npy", "empty.npy: empty file, expected images"),
    ("trunc.npy", "y.npy", "trunc.npy: truncated: its header declares a uint8 array of shape"),
    ("long.npy", "y.npy", "long.npy: corrupt: its header declares"),
    ("junk.npy", "y.npy", "junk.npy: not a .npy file"),
    ("bighead.npy", "y.npy", "bighead.npy: not a .npy file or a corrupt header"),
    ("c64.npy", "y.npy", "c64.npy: expected numeric images (integers or floats), got dtype "
     "complex64"),
    ("rank3.npy", "y.npy", "rank3.npy: expected images [N, C, H, W] or [N, H, W, C], got shape"),
    ("x.npy", "yfloat.npy", "yfloat.npy: expected integer labels [N], got float64"),
    ("nan.npy", "y.npy", "nan.npy: expected finite pixel values"),
    ("tiny.npy", "y.npy", "the CNN needs images of at least 4x4 pixels"),
    ("x.npy", "y5.npy", "x.npy has 10 images but y5.npy has 5 labels"),
    ("obj.npy", "y.npy", "obj.npy: holds Python objects"),
    ("x.npy", "ybig.npy", "ybig.npy: labels must be below 100,000"),
    ("folder.npy", "y.npy", "folder.npy: is a folder, expected images"),
    ("missing.npy", "y.npy", "missing.npy: no such file, expected images"),
])
def test_bad_npy_files_are_one_error_line(x, y, text, capsys, in_tmp):
    _npy_cases(in_tmp)
    code, out, err = run_cli(capsys, "cnn", "--x", x, "--y", y, "--steps", "1", "--batch", "4")
    assert_one_error(err, code, "tlrs run cnn: ")
    assert text in err
    assert not any(line.startswith("mean_loss") for line in out)


def test_npy_header_is_checked_before_allocating(in_tmp, monkeypatch):
    """A header declaring a terabyte of data on a small file is refused from the header alone."""
    import io

    from numpy.lib import format as npformat

    header = io.BytesIO()
    npformat.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False,
                                             "shape": (4 * 10**12, 3, 8, 8)})
    (in_tmp / "big.npy").write_bytes(header.getvalue() + bytes(4 * 3 * 8 * 8))
    allocations = []
    real_asarray = np.asarray
    monkeypatch.setattr(np, "asarray",
                        lambda *a, **k: allocations.append(1) or real_asarray(*a, **k))
    with pytest.raises(data.DataFileError, match="truncated"):
        data.npy_header(in_tmp / "big.npy")
    assert allocations == []


@pytest.mark.parametrize("text,msg", [
    ("", "empty CSV file"),
    ("a,b,y\n1,nan,3\n", "line 2: expected finite numbers"),
    ("a,b,y\n1,2,inf\n", "line 2: expected finite numbers"),
    ("y\n1\n", "line 1: expected a header of at least 2 columns"),
    ("a,b,y\n", "no data rows after the header line"),
    ("a,b,y\n1,2\n", "line 2: expected 3 columns"),
])
def test_bad_csv_files_are_one_error_line(text, msg, capsys, in_tmp):
    (in_tmp / "d.csv").write_text(text)
    code, _, err = run_cli(capsys, "mlp", "--csv", "d.csv", "--steps", "1")
    assert_one_error(err, code, f"tlrs run mlp: d.csv: {msg}")


def test_non_utf8_csv_is_one_error_line(capsys, in_tmp):
    (in_tmp / "b.csv").write_bytes(b"\xff\xfe\x00\x01binary")
    code, _, err = run_cli(capsys, "mlp", "--csv", "b.csv")
    assert_one_error(err, code, "tlrs run mlp: b.csv: not UTF-8 text")


# --- huge and odd values: one line, exit 2, before anything is allocated --------------------------

@pytest.mark.parametrize("args,text", [
    (["mlp", "--hidden", "18446744073709551616"],
     "--hidden must be at most 9,223,372,036,854,775,807"),
    (["mlp", "--hidden", "1000000000000000"],
     "--hidden 1000000000000000: the model would have 9,000,000,000,000,001 parameters"),
    (["mlp", "--hidden", "9" * 5000], "--hidden must be at most"),
    (["mlp_classifier", "--hidden", "100000000"], "more than the"),
    (["autoencoder", "--hidden", "10000000000"], "--hidden 10000000000 with 16 input features"),
    (["cnn", "--channels", "100000"], "--channels 100000 on 3x16x16 images"),
    (["resnet", "--width", "1000"], "--width 1000: the model would have"),
    (["transformer", "--heads", "1000000"], "--heads 1000000 --head-dim 8: the model would"),
    (["transformer", "--head-dim", "100000000"], "--heads 2 --head-dim 100000000"),
    (["transformer", "--seq-len", "1000"], "--seq-len must be at most"),
    (["transformer", "--batch", str(10**30)], "--batch must be at most"),
    (["transformer", "--batch", "1000"],
     "--batch: the batch size 1,000 is larger than the dataset"),
    (["mlp", "--batch", "1000000000000"], "larger than the dataset"),
    (["mlp", "--steps", str(10**30)], "--steps must be at most 10,000,000"),
    (["mlp", "--epochs", "10000000"], "--epochs 10000000 at 40 batches per epoch"),
    (["mlp", "--lr", "1e400"], "--lr: expected a finite number, got `1e400`"),
    (["mlp", "--lr", "-1e400"], "--lr: expected a finite number"),
    (["mlp", "--lr", "NaN"], "--lr: expected a JSON-style float literal, got `NaN`"),
    (["mlp", "--lr", "inf"], "--lr: expected a JSON-style float literal"),
    (["mlp", "--lr", "1e-400"], "--lr must be > 0"),
    (["mlp", "--n-total", "5"], "unexpected arguments"),
    (["cnn", "--x", "a" * 5000, "--y", "b"], "File name too long"),
    (["mlp", "--csv", "c" * 300], "File name too long"),
])
def test_huge_values_are_one_error_line(args, text, capsys, in_tmp):
    code, _, err = run_cli(capsys, *args)
    assert_one_error(err, code, text if text.startswith("tlrs") else "")
    assert text in err
    assert list(in_tmp.iterdir()) == []


def test_model_size_message_names_the_dtype(capsys):
    code, _, err = run_cli(capsys, "mlp", "--dtype", "float32", "--optim", "sgd", "--hidden",
                           "1000000000")
    assert_one_error(err, code, "tlrs run mlp: --hidden 1000000000: the model would have")
    assert "in float32 with sgd needs about 100.6 GiB" in err  # 9e9 x 4 bytes x 3


def test_refused_resnet_run_prints_no_note(capsys, in_tmp):
    """The small-image note comes only once every check has passed: a refused run prints its
    error line alone."""
    xp, yp = npy_images(in_tmp)
    code, _, err = run_cli(capsys, "resnet", "--x", xp, "--y", yp, "--epochs", "10000000",
                           "--batch", "1")
    assert_one_error(err, code, "--epochs 10000000 at 19 batches per epoch")
    code, _, err = run_cli(capsys, "resnet", "--x", xp, "--y", yp, "--batch", "100")
    assert_one_error(err, code, "--batch: the batch size 100 is larger than the dataset")
