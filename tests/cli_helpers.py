"""Helpers shared by the `tlrs run` command tests: run the CLI in-process, check a one-line
error, write small `.npy` image sets."""

import numpy as np

from tlrs.cli import main


def run_cli(capsys, *args):
    code = main(["run", *args])
    cap = capsys.readouterr()
    return code, cap.out.splitlines(), cap.err


def assert_one_error(err, code, text):
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tlrs: error: "), err
    assert text in lines[0], lines[0]


def npy_images(folder, n=24, nhwc=True, size=8, classes=3):
    rng = np.random.default_rng(5)
    labels = np.arange(n) % classes
    x = (rng.uniform(size=(n, 3, size, size)) * 80 + labels[:, None, None, None] * 60)
    x = x.astype(np.uint8)
    if nhwc:
        x = x.transpose(0, 2, 3, 1)
    xp, yp = folder / "x.npy", folder / "y.npy"
    np.save(xp, x)
    np.save(yp, labels.astype(np.int64))
    return str(xp), str(yp)
