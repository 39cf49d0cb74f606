"""Datasets for the `tlrs run` commands, as NumPy arrays: built-in deterministic data, the
reference's Auto MPG CSV and CIFAR-10 `.npy` layouts, scikit-learn's bundled datasets, a
deterministic train/test split and the reference's batch loader (dataset-shuffle LCG, fixed batch
size, incomplete last batch dropped).

Features are binary64 arrays; targets are binary64 too (one-hot rows for classification, with the
integer class labels kept alongside in `Dataset.labels`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .random import shuffle_permutation

__all__ = [
    "SKLEARN_DATASETS", "BatchLoader", "Dataset", "digits_images", "load_csv", "load_npy",
    "load_sklearn", "one_hot", "quickstart_grid", "synthetic_autoencoder",
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
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
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

def load_csv(path: str | os.PathLike[str]) -> Dataset:
    """A CSV in the reference's Auto MPG layout: one header line (skipped), then numeric rows
    `x1,...,xk,y` (k >= 1; the prepared Auto MPG file has x1..x7,y scaled to [0, 1]).

    Returns x [N, k], y [N, 1]. Blank lines are skipped. Raises: FileNotFoundError: no such file
    (naming the path); ValueError: no data rows, or a row with a non-numeric field or another
    column count than the header (naming the line number).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"CSV file not found: {path}")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines:
        raise ValueError(f"{path}: empty CSV file (expected a header line and numeric rows)")
    width = len(lines[0].split(","))
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        try:
            values = [float(v) for v in fields]
        except ValueError:
            raise ValueError(f"{path}: line {number}: expected {width} numbers separated by "
                             f"commas, got {line!r}") from None
        if len(values) != width or width < 2:
            raise ValueError(f"{path}: line {number}: expected {width} columns (x1..x{width - 1},"
                             f" y) as in the header, got {len(values)}")
        rows.append(values)
    if not rows:
        raise ValueError(f"{path}: no data rows after the header line")
    data = np.array(rows)
    return Dataset(data[:, :-1].copy(), data[:, -1:].copy(), None, path)


def _npy(path: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"NumPy file not found: {path}")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        raise ValueError(f"{path}: not a readable .npy array ({e})") from None


def load_npy(x_path: str | os.PathLike[str], y_path: str | os.PathLike[str],
             n_total: int | None = None) -> Dataset:
    """Images and labels in the CIFAR-10 `.npy` layout: X [N, C, H, W] or [N, H, W, C] (C = 1
    or 3; uint8 scaled by 1/255, floats above 1 likewise, other floats kept), y [N] integer
    labels. Only the first `n_total` rows are read when given.

    Returns x [N, C, H, W] binary64 in [0, 1], one-hot y, labels. Raises: FileNotFoundError: a
    missing file; ValueError: wrong ranks, lengths or label values, non-numeric arrays.
    """
    x_path, y_path = os.fspath(x_path), os.fspath(y_path)
    xa, ya = _npy(x_path), _npy(y_path)
    if xa.ndim != 4:
        raise ValueError(f"{x_path}: expected images [N, C, H, W] or [N, H, W, C], got shape "
                         f"{list(xa.shape)}")
    if ya.ndim != 1 or ya.dtype.kind not in "iu":
        raise ValueError(f"{y_path}: expected integer labels [N], got {ya.dtype} shape "
                         f"{list(ya.shape)}")
    if len(xa) != len(ya):
        raise ValueError(f"{x_path} has {len(xa)} images but {y_path} has {len(ya)} labels")
    if xa.dtype.kind not in "uif":
        raise ValueError(f"{x_path}: expected numeric images, got dtype {xa.dtype}")
    n = len(xa) if n_total is None else min(int(n_total), len(xa))
    x = np.asarray(xa[:n], dtype=np.float64)
    labels = np.asarray(ya[:n], dtype=np.int64)
    if x.shape[1] not in (1, 3) and x.shape[3] in (1, 3):
        x = x.transpose(0, 3, 1, 2)
    if x.shape[1] not in (1, 3):
        raise ValueError(f"{x_path}: expected 1 or 3 channels (NCHW or NHWC), got shape "
                         f"{list(xa.shape)}")
    if xa.dtype.kind in "ui" or (x.size and x.max() > 1.0):
        x = x / 255.0
    if n == 0:
        raise ValueError(f"{x_path}: no images")
    if labels.min() < 0:
        raise ValueError(f"{y_path}: labels must be >= 0, got {labels.min()}")
    return _classes(np.ascontiguousarray(x), labels, x_path)


# --- scikit-learn -------------------------------------------------------------------------------

def _sklearn_datasets():  # type: ignore[no-untyped-def]
    try:
        from sklearn import datasets
    except ImportError:
        raise ImportError("the --dataset option needs scikit-learn: install tlrs[datasets] "
                          "(scikit-learn)") from None
    return datasets


def _standardise(a: np.ndarray) -> np.ndarray:
    std = a.std(axis=0)
    return (a - a.mean(axis=0)) / np.where(std > 0, std, 1.0)


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
        return self._chunks(self.order)

    def batches(self, steps: int) -> Iterator[np.ndarray]:
        """`steps` index batches, epoch after epoch."""
        done = 0
        while done < steps:
            for idx in self.next_epoch():
                if done == steps:
                    return
                yield idx
                done += 1
