"""Datasets for the `tlrs run` commands, as NumPy arrays: built-in deterministic data, the
reference's Auto MPG CSV and CIFAR-10 `.npy` layouts, scikit-learn's bundled datasets, a
deterministic train/test split and the reference's batch loader (dataset-shuffle LCG, fixed batch
size, incomplete last batch dropped).

Features are binary64 arrays; targets are binary64 too (one-hot rows for classification, with the
integer class labels kept alongside in `Dataset.labels`).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib import format as npformat

from .errors import ArgError, format_bytes
from .random import shuffle_permutation

__all__ = [
    "MAX_CLASSES", "MAX_LOAD_BYTES", "SKLEARN_DATASETS", "BatchLoader", "DataFileError",
    "DataFileNotFoundError", "Dataset", "digits_images", "load_csv", "load_npy",
    "load_sklearn", "npy_header", "one_hot", "quickstart_grid", "synthetic_autoencoder",
    "synthetic_classification", "synthetic_images", "synthetic_regression", "synthetic_text",
    "train_test_split",
]

SKLEARN_DATASETS = ("digits", "iris", "wine", "breast_cancer", "diabetes")
"""The scikit-learn bundled datasets `load_sklearn` knows (`diabetes` is a regression set)."""
_DATA_SEED = 20240601  # the fixed seed of every built-in synthetic dataset


@dataclass(frozen=True)
class Dataset:
    """Samples `x` [N, ...] and targets `y` [N, ...] (binary64); `labels` [N] (int64) for
    classification sets, whose `y` rows are the one-hot labels; `name` says where it came from."""

    x: np.ndarray
    y: np.ndarray
    labels: np.ndarray | None = None
    name: str = ""

    def __post_init__(self) -> None:
        n = len(self.x)
        if len(self.y) != n or (self.labels is not None and len(self.labels) != n):
            raise ValueError(f"dataset {self.name!r}: x, y and labels must have the same length, "
                             f"got {len(self.x)}, {len(self.y)} and "
                             f"{None if self.labels is None else len(self.labels)}")

    def __len__(self) -> int:
        return len(self.x)

    @property
    def num_classes(self) -> int:
        """The number of classes (the width of the one-hot targets); 0 for regression sets."""
        return 0 if self.labels is None else int(self.y.shape[1])

    def subset(self, index: Sequence[int] | np.ndarray) -> Dataset:
        """The samples at `index`, in that order."""
        idx = np.asarray(index, dtype=np.int64)
        labels = None if self.labels is None else self.labels[idx]
        return Dataset(self.x[idx], self.y[idx], labels, self.name)


def one_hot(labels: Sequence[int] | np.ndarray, num_classes: int) -> np.ndarray:
    """Rows of zeros with a 1 at each label, [N, num_classes] binary64.

    Raises: ValueError: a label outside [0, num_classes).
    """
    lab = np.asarray(labels, dtype=np.int64)
    if lab.size and (lab.min() < 0 or lab.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes}), got {lab.min()}..{lab.max()}")
    out = np.zeros((len(lab), num_classes))
    out[np.arange(len(lab)), lab] = 1.0
    return out


def _classes(x: np.ndarray, labels: np.ndarray, name: str,
             num_classes: int | None = None) -> Dataset:
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1 if num_classes is None else num_classes
    return Dataset(np.ascontiguousarray(x, dtype=np.float64), one_hot(labels, k), labels, name)


# --- built-in data ------------------------------------------------------------------------------

def quickstart_grid() -> Dataset:
    """The reference quickstart data: the 5×5 grid on [-1, 1]² (x1 outer, x2 inner, row-major)
    with target `0.8·relu(x1 + x2) - 0.4·relu(x2 - x1) + 0.2`; x [25, 2], y [25, 1]."""
    axis = np.linspace(-1.0, 1.0, 5)
    x = np.array([[a, b] for a in axis for b in axis])

    def relu(v: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.maximum(v, 0.0)
        return out

    y = 0.8 * relu(x[:, 0] + x[:, 1]) - 0.4 * relu(x[:, 1] - x[:, 0]) + 0.2
    return Dataset(x, y[:, None], None, "builtin:quickstart_grid")


def synthetic_regression(n: int = 200, in_dim: int = 7) -> Dataset:
    """Auto-MPG-shaped data: features in [0, 1] and a smooth target min-max scaled to [0, 1]
    (plus a little noise); x [n, in_dim], y [n, 1]. Fixed seed: always the same arrays."""
    rng = np.random.default_rng(_DATA_SEED)
    x = rng.uniform(0.0, 1.0, size=(n, in_dim))
    w = rng.normal(size=in_dim)
    raw = np.tanh(x @ w - w.sum() / 2) + 0.5 * np.sin(3.0 * x[:, 0]) + 0.05 * rng.normal(size=n)
    y = (raw - raw.min()) / (raw.max() - raw.min())
    return Dataset(x, y[:, None], None, "builtin:regression")


def synthetic_classification(n: int = 600, in_dim: int = 16, num_classes: int = 4) -> Dataset:
    """Gaussian blobs, one per class (centres about 4 apart, unit noise), balanced labels
    `i mod num_classes`; x [n, in_dim], one-hot y [n, num_classes]. Fixed seed."""
    rng = np.random.default_rng(_DATA_SEED + 1)
    centres = rng.normal(scale=0.7, size=(num_classes, in_dim))
    labels = np.arange(n) % num_classes
    x = centres[labels] + rng.normal(size=(n, in_dim))
    return _classes(x, labels, "builtin:blobs", num_classes)


def synthetic_images(n: int = 240, channels: int = 3, h: int = 16, w: int = 16,
                     num_classes: int = 4) -> Dataset:
    """Noisy images of one fixed smooth template per class, values in [0, 1]; x [n, C, H, W],
    balanced labels `i mod num_classes`, one-hot y. Fixed seed."""
    rng = np.random.default_rng(_DATA_SEED + 2)
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    templates = []
    for _ in range(num_classes):
        fy, fx, phase = rng.uniform(0.5, 3.0), rng.uniform(0.5, 3.0), rng.uniform(0, 2 * np.pi)
        tints = rng.uniform(0.3, 1.0, size=(channels, 1, 1))
        templates.append(tints * (0.5 + 0.5 * np.sin(2 * np.pi * (fy * yy + fx * xx) + phase)))
    labels = np.arange(n) % num_classes
    x = 0.5 * np.stack(templates)[labels] + 0.5 * rng.uniform(size=(n, channels, h, w))
    return _classes(x, labels, "builtin:images", num_classes)


def synthetic_autoencoder(n: int = 256, in_dim: int = 16, latent: int = 3) -> Dataset:
    """Vectors in [0, 1] on a `latent`-dimensional curved manifold (sigmoid of a linear map);
    x [n, in_dim] and y = x. Fixed seed."""
    rng = np.random.default_rng(_DATA_SEED + 3)
    z = rng.normal(size=(n, latent))
    x = 1.0 / (1.0 + np.exp(-(z @ rng.normal(size=(latent, in_dim)))))
    return Dataset(x, x.copy(), None, "builtin:manifold")


_TEXT = ("to be, or not to be, that is the question: whether tis nobler in the mind to suffer "
         "the slings and arrows of outrageous fortune, or to take arms against a sea of troubles "
         "and by opposing end them. to die, to sleep, no more; and by a sleep to say we end the "
         "heart-ache and the thousand natural shocks that flesh is heir to.")


def synthetic_text(seq_len: int = 8, text: str = _TEXT) -> Dataset:
    """Next-character prediction on a short built-in text: every window of `seq_len` characters,
    one-hot over the text's sorted character set; x [M, seq_len, V], y = x shifted by one."""
    vocab = sorted(set(text))
    codes = np.array([vocab.index(c) for c in text])
    starts = np.arange(len(codes) - seq_len)
    eye = np.eye(len(vocab))
    x = eye[codes[starts[:, None] + np.arange(seq_len)]]
    y = eye[codes[starts[:, None] + np.arange(1, seq_len + 1)]]
    return Dataset(x, y, None, "builtin:text")


# --- files --------------------------------------------------------------------------------------

class DataFileError(ArgError):
    """A data file (`--csv`, `--x`, `--y`) that cannot be used: the message names the file, what
    was expected and what was found. An `ArgError`, so the CLI reports it on one line (exit 2)."""


class DataFileNotFoundError(DataFileError, FileNotFoundError):
    """A data file that does not exist (also a `FileNotFoundError`)."""


MAX_LOAD_BYTES = 2 * 2**30
"""The most bytes the binary64 arrays built from one data file may take (checked before they
are allocated)."""
MAX_CLASSES = 100_000
"""The largest class count a label file may imply (labels must be below it)."""
_NPY_HEADER_MAX = 1 << 20


def _fmt_bytes(n: int) -> str:
    if n == 1:
        return "1 byte"
    return f"{n:,} bytes" if n < 2**20 else f"{format_bytes(n)} ({n:,} bytes)"


def _check_file(path: str, what: str) -> int:
    """The size of the regular file `path`, else DataFileError naming it and `what`."""
    if "\0" in path:
        raise DataFileError(f"{path!r}: a file name cannot contain a NUL character")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DataFileNotFoundError(f"{path}: no such file, expected {what}") from None
    except (OSError, ValueError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise DataFileError(f"{path}: cannot read it ({reason}); expected {what}") from None
    if stat.S_ISDIR(st.st_mode):
        raise DataFileError(f"{path}: is a folder, expected {what}")
    if not stat.S_ISREG(st.st_mode):
        raise DataFileError(f"{path}: not a regular file, expected {what}")
    return int(st.st_size)


def _read_bytes(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise DataFileError(f"{path}: cannot read it ({err.strerror or err}); expected {what}") \
            from None


def load_csv(path: str | os.PathLike[str]) -> Dataset:
    """A CSV in the reference's Auto MPG layout: one header line (skipped), then numeric rows
    `x1,...,xk,y` (k >= 1; the prepared Auto MPG file has x1..x7,y scaled to [0, 1]).

    Returns x [N, k], y [N, 1]. Blank lines are skipped. Raises: DataFileNotFoundError (a
    FileNotFoundError): no such file; DataFileError (a ValueError): a folder, an unreadable or
    non-UTF-8 file, a file over `MAX_LOAD_BYTES`, no header or data rows, a header of fewer than
    two columns, or a row with a non-numeric or non-finite field or another column count than
    the header (naming the line number).
    """
    path = os.fspath(path)
    what = "a CSV file (a header line x1,...,xk,y, then numeric rows)"
    size = _check_file(path, what)
    if size > MAX_LOAD_BYTES:
        raise DataFileError(f"{path}: the CSV file has {_fmt_bytes(size)}, more than the "
                            f"{_fmt_bytes(MAX_LOAD_BYTES)} limit")
    try:
        lines = _read_bytes(path, what).decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise DataFileError(f"{path}: not UTF-8 text (byte {err.start}); expected {what}") \
            from None
    if not lines or not lines[0].strip():
        raise DataFileError(f"{path}: empty CSV file (expected a header line and numeric rows)"
                            if not lines else f"{path}: line 1: expected a header line "
                            "x1,...,xk,y, got an empty line")
    width = len(lines[0].split(","))
    if width < 2:
        raise DataFileError(f"{path}: line 1: expected a header of at least 2 columns "
                            f"(x1..xk, y), got {width}")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        try:
            values = [float(v) for v in fields]
        except ValueError:
            shown = line if len(line) <= 80 else line[:77] + "..."
            raise DataFileError(f"{path}: line {number}: expected {width} numbers separated by "
                                f"commas, got {shown!r}") from None
        if len(values) != width:
            raise DataFileError(f"{path}: line {number}: expected {width} columns (x1..x"
                                f"{width - 1}, y) as in the header, got {len(values)}")
        if not all(math.isfinite(v) for v in values):
            raise DataFileError(f"{path}: line {number}: expected finite numbers, got a NaN or "
                                "infinite value")
        rows.append(values)
    if not rows:
        raise DataFileError(f"{path}: no data rows after the header line")
    data = np.array(rows)
    return Dataset(data[:, :-1].copy(), data[:, -1:].copy(), None, path)


def npy_header(path: str | os.PathLike[str],
               what: str = "a .npy array") -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, data offset) of a `.npy` file, read from its header without loading it,
    after checking that the file holds exactly the bytes its header declares.

    Raises: DataFileNotFoundError: no such file; DataFileError: a folder, an empty, foreign,
    corrupt or truncated file (or one with bytes past its array), or an array of Python objects.
    """
    path = os.fspath(path)
    size = _check_file(path, what)
    if size == 0:
        raise DataFileError(f"{path}: empty file, expected {what}")
    try:
        with open(path, "rb") as f:
            try:
                version = npformat.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = npformat.read_array_header_1_0(
                        f, max_header_size=_NPY_HEADER_MAX)
                elif version == (2, 0):
                    shape, fortran, dtype = npformat.read_array_header_2_0(
                        f, max_header_size=_NPY_HEADER_MAX)
                else:
                    read = getattr(npformat, "_read_array_header")  # noqa: B009 - private
                    shape, fortran, dtype = read(f, version, max_header_size=_NPY_HEADER_MAX)
            except Exception as err:  # noqa: BLE001 - a foreign file's header may fail any way
                text = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise DataFileError(f"{path}: not a .npy file or a corrupt header ({text}); "
                                    f"expected {what}") from None
            offset = f.tell()
    except OSError as err:
        raise DataFileError(f"{path}: cannot read it ({err.strerror or err}); expected {what}") \
            from None
    if dtype.hasobject:
        raise DataFileError(f"{path}: holds Python objects (dtype {dtype}), expected {what} of "
                            "numbers")
    shape = tuple(int(d) for d in shape)
    declared = math.prod(shape) * dtype.itemsize
    held = size - offset
    if held < declared:
        raise DataFileError(f"{path}: truncated: its header declares a {dtype} array of shape "
                            f"{list(shape)} ({_fmt_bytes(declared)} of data), but the file holds "
                            f"{_fmt_bytes(held)}")
    if held > declared:
        raise DataFileError(f"{path}: corrupt: its header declares a {dtype} array of shape "
                            f"{list(shape)} ({_fmt_bytes(declared)} of data), but the file holds "
                            f"{_fmt_bytes(held)}")
    return shape, dtype, offset


def _npy(path: str, what: str) -> np.ndarray:
    """The array of a checked `.npy` file, memory-mapped (nothing is read yet)."""
    shape, dtype, _ = npy_header(path, what)
    if math.prod(shape) == 0:
        return np.empty(shape, dtype=dtype)
    try:
        arr: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
        return arr
    except (OSError, ValueError) as err:
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DataFileError(f"{path}: not a readable .npy array ({text}); expected {what}") \
            from None


def load_npy(x_path: str | os.PathLike[str], y_path: str | os.PathLike[str],
             n_total: int | None = None) -> Dataset:
    """Images and labels in the CIFAR-10 `.npy` layout: X [N, C, H, W] or [N, H, W, C] (C = 1
    or 3; uint8 scaled by 1/255, floats above 1 likewise, other floats kept), y [N] integer
    labels. Only the first `n_total` rows are read when given. Both headers are checked against
    the file sizes, and the size of the binary64 copy against `MAX_LOAD_BYTES`, before anything
    is read.

    Returns x [N, C, H, W] binary64 in [0, 1], one-hot y, labels. Raises: DataFileNotFoundError
    (a FileNotFoundError): a missing file; DataFileError (a ValueError): a file as `npy_header`
    refuses, wrong ranks, dtypes, lengths, sizes or label values, non-finite pixels.
    """
    x_path, y_path = os.fspath(x_path), os.fspath(y_path)
    x_what = "images [N, C, H, W] or [N, H, W, C] (.npy, numeric)"
    y_what = "integer labels [N] (.npy)"
    xa, ya = _npy(x_path, x_what), _npy(y_path, y_what)
    if xa.ndim != 4:
        raise DataFileError(f"{x_path}: expected images [N, C, H, W] or [N, H, W, C], got shape "
                            f"{list(xa.shape)}")
    if xa.dtype.kind not in "uif":
        raise DataFileError(f"{x_path}: expected numeric images (integers or floats), got dtype "
                            f"{xa.dtype}")
    if ya.ndim != 1 or ya.dtype.kind not in "iu":
        raise DataFileError(f"{y_path}: expected integer labels [N], got {ya.dtype} shape "
                            f"{list(ya.shape)}")
    if len(xa) != len(ya):
        raise DataFileError(f"{x_path} has {len(xa)} images but {y_path} has {len(ya)} labels")
    if len(xa) == 0:
        raise DataFileError(f"{x_path}: no images (shape {list(xa.shape)})")
    if 0 in xa.shape[1:]:
        raise DataFileError(f"{x_path}: expected images of at least 1x1 pixels, got shape "
                            f"{list(xa.shape)}")
    nchw = xa.shape[1] in (1, 3)
    if not nchw and xa.shape[3] not in (1, 3):
        raise DataFileError(f"{x_path}: expected 1 or 3 channels (NCHW or NHWC), got shape "
                            f"{list(xa.shape)}")
    n = len(xa) if n_total is None else min(int(n_total), len(xa))
    need = n * math.prod(xa.shape[1:]) * 8
    if need > MAX_LOAD_BYTES:
        raise DataFileError(f"{x_path}: {n:,} images of shape {list(xa.shape[1:])} need "
                            f"{_fmt_bytes(need)} in binary64, more than the "
                            f"{_fmt_bytes(MAX_LOAD_BYTES)} limit (read fewer with --n-total)")
    try:
        x = np.asarray(xa[:n], dtype=np.float64)
        labels = np.asarray(ya[:n], dtype=np.int64)
    except OSError as err:
        raise DataFileError(f"{x_path}: cannot read it ({err.strerror or err})") from None
    if not np.isfinite(x).all():
        raise DataFileError(f"{x_path}: expected finite pixel values, got "
                            f"{int((~np.isfinite(x)).sum())} NaN or infinite values")
    if not nchw:
        x = x.transpose(0, 3, 1, 2)
    if xa.dtype.kind in "ui" or x.max() > 1.0:
        x = x / 255.0
    if labels.min() < 0:
        raise DataFileError(f"{y_path}: labels must be >= 0, got {labels.min()}")
    if labels.max() >= MAX_CLASSES:
        raise DataFileError(f"{y_path}: labels must be below {MAX_CLASSES:,} (the class count "
                            f"is the largest label + 1), got {labels.max()}")
    if n * (int(labels.max()) + 1) * 8 > MAX_LOAD_BYTES:
        classes = int(labels.max()) + 1
        raise DataFileError(f"{y_path}: one-hot targets for {n:,} labels of {classes:,} classes "
                            f"need more than the {_fmt_bytes(MAX_LOAD_BYTES)} limit")
    return _classes(np.ascontiguousarray(x), labels, x_path)


# --- scikit-learn -------------------------------------------------------------------------------

def _sklearn_datasets() -> Any:
    try:
        from sklearn import datasets  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise ImportError("the --dataset option needs scikit-learn: install tlrs[datasets] "
                          "(scikit-learn)") from None
    return datasets


def _standardise(a: np.ndarray) -> np.ndarray:
    std = a.std(axis=0)
    out: np.ndarray = (a - a.mean(axis=0)) / np.where(std > 0, std, 1.0)
    return out


def load_sklearn(name: str) -> Dataset:
    """One of scikit-learn's bundled datasets (no download): digits, iris, wine, breast_cancer
    (classification: one-hot y and labels) or diabetes (regression: y [N, 1]). Features, and
    the diabetes target, are standardised to mean 0 and standard deviation 1 per column.

    Raises: ValueError: an unknown name; ImportError: scikit-learn is not installed (the message
    says to install `tlrs[datasets]`).
    """
    if name not in SKLEARN_DATASETS:
        raise ValueError(f"unknown dataset {name!r} (expected one of: "
                         f"{', '.join(SKLEARN_DATASETS)})")
    bunch = getattr(_sklearn_datasets(), f"load_{name}")()
    x = _standardise(np.asarray(bunch.data, dtype=np.float64))
    if name == "diabetes":
        y = _standardise(np.asarray(bunch.target, dtype=np.float64)[:, None])
        return Dataset(x, y, None, f"sklearn:{name}")
    return _classes(x, bunch.target, f"sklearn:{name}")


def digits_images() -> Dataset:
    """scikit-learn's digits as images x [1797, 1, 8, 8] scaled to [0, 1] (pixel / 16), with
    one-hot y over 10 classes. Raises: ImportError: as `load_sklearn`."""
    bunch = _sklearn_datasets().load_digits()
    x = np.asarray(bunch.images, dtype=np.float64)[:, None] / 16.0
    return _classes(x, bunch.target, "sklearn:digits", 10)


# --- split and loader ---------------------------------------------------------------------------

def train_test_split(ds: Dataset, test_fraction: float = 0.2,
                     seed: int = 0) -> tuple[Dataset, Dataset]:
    """A deterministic split: permute with the dataset-shuffle LCG for `seed`, then the last
    `round(N · test_fraction)` samples of the permutation (at least 1 when 0 < fraction and N > 1)
    are the test set. The same arguments always give the same split.

    Raises: ValueError: a fraction outside [0, 1).
    """
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in [0, 1), got {test_fraction}")
    n = len(ds)
    n_test = int(round(n * test_fraction))
    if test_fraction > 0 and n > 1:
        n_test = min(max(n_test, 1), n - 1)
    perm, _ = shuffle_permutation(seed % 2**64, n)
    perm_a = np.asarray(perm, dtype=np.int64)
    return ds.subset(perm_a[:n - n_test]), ds.subset(perm_a[n - n_test:])


class BatchLoader:
    """The reference's data loader over `n` samples: fixed batch size, the incomplete last batch
    dropped, and (with `shuffle`) the dataset-shuffle LCG applied at the start of every epoch to
    the *current* order, the LCG's final state becoming the next seed — so epoch e reshuffles
    the order of epoch e - 1.

    Args: n: the sample count; batch: the batch size (> 0); seed: the shuffle seed (a natural;
    taken mod 2^64). Raises: ValueError: batch < 1 or no full batch (batch > n).
    """

    def __init__(self, n: int, batch: int, seed: int = 0, shuffle: bool = True) -> None:
        if batch < 1:
            raise ValueError(f"the batch size must be > 0, got {batch}")
        if batch > n:
            raise ValueError(f"the batch size {batch} is larger than the dataset ({n} samples)")
        self.n, self.batch, self.shuffle = n, batch, shuffle
        self.seed = seed % 2**64
        self.order = np.arange(n, dtype=np.int64)
        self.epochs_started = 0
        self.index = 0  # batches taken from the current epoch

    @property
    def batches_per_epoch(self) -> int:
        """The number of full batches in one epoch (`n // batch`)."""
        return self.n // self.batch

    def _chunks(self, order: np.ndarray) -> list[np.ndarray]:
        b = self.batch
        return [order[i * b:(i + 1) * b] for i in range(self.batches_per_epoch)]

    def fixed_batches(self) -> list[np.ndarray]:
        """The full batches of the original (unshuffled) order, for evaluation."""
        return self._chunks(np.arange(self.n, dtype=np.int64))

    def next_epoch(self) -> list[np.ndarray]:
        """Start an epoch: reshuffle the current order (when shuffling), return its batches."""
        if self.shuffle:
            perm, self.seed = shuffle_permutation(self.seed, self.n)
            self.order = self.order[np.asarray(perm, dtype=np.int64)]
        self.epochs_started += 1
        self.index = 0
        return self._chunks(self.order)

    def batches(self, steps: int) -> Iterator[np.ndarray]:
        """The next `steps` index batches, epoch after epoch, from where the loader stands
        (`state()`: a resumed loader continues the sequence)."""
        b = self.batch
        for _ in range(steps):
            if self.epochs_started == 0 or self.index == self.batches_per_epoch:
                self.next_epoch()
            idx = self.order[self.index * b:(self.index + 1) * b]
            self.index += 1
            yield idx

    def state(self) -> dict[str, Any]:
        """Where the loader stands: `epoch` (epochs started), `index` (batches taken from it),
        `seed` (the shuffle LCG's next seed), `order` (the current epoch's order), and the
        sizes it was made with; `restore` takes it back."""
        return {"n": self.n, "batch": self.batch, "shuffle": self.shuffle,
                "epoch": self.epochs_started, "index": self.index, "seed": self.seed,
                "order": self.order.copy()}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from `state()`.

        Raises: ValueError: a state of a loader over another sample count, batch size or
        shuffle setting, or one that is not self-consistent.
        """
        mine = (self.n, self.batch, self.shuffle)
        theirs = (state["n"], state["batch"], state["shuffle"])
        if mine != theirs:
            raise ValueError(f"the loader state is for (samples, batch, shuffle) = {theirs}, "
                             f"this loader has {mine}")
        order = np.asarray(state["order"], dtype=np.int64)
        epoch, index = int(state["epoch"]), int(state["index"])
        if (order.shape != (self.n,) or not 0 <= index <= self.batches_per_epoch or epoch < 0
                or not np.array_equal(np.sort(order), np.arange(self.n))):
            raise ValueError("the loader state is not a valid position (order, epoch, index)")
        self.order, self.epochs_started, self.index = order, epoch, index
        self.seed = int(state["seed"]) % 2**64
