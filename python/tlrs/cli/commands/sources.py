"""Where a command's data comes from: the `--csv`, `--dataset`, `--x/--y` and `--n-total` flags,
the built-in fallbacks, the held-out split, and the shared body of the classifier commands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ... import data
from ...config import Options
from ...data import Dataset
from ...errors import ArgError
from ...module import ModuleDef
from ..args import format_nat
from .flags import prefixed, require_no_more, take_nat, take_path
from .train_common import TrainFlags
from .trainer import finish, print_accuracy, schedule, take_train_flags, train

__all__ = ["CLASSIFICATION_SETS", "IMAGE_SETS", "ImageFlags", "ImageSource", "classifier_body",
           "exclusive", "load_file", "notes", "run_classifier", "split", "tabular", "take_dataset",
           "take_image_source", "take_images"]

CLASSIFICATION_SETS = ("digits", "iris", "wine", "breast_cancer")
IMAGE_SETS = ("digits",)
TEST_FRACTION = 0.2
SPLIT_SEED = 0  # the held-out split never depends on --seed, so accuracies stay comparable


def take_dataset(rest: list[str], exe: str, allowed: Sequence[str]) -> tuple[str | None, list[str]]:
    """Take `--dataset NAME` once; NAME must be one of `allowed`.

    Raises: ArgError (prefixed): a missing value, a duplicate, or a name not allowed here.
    """
    name, rest = take_path(rest, exe, "dataset")
    if name is not None and name not in allowed:
        raise ArgError(f"{exe}: --dataset: expected one of {' | '.join(allowed)}, got `{name}`")
    return name, rest


class ImageFlags:
    """`--x PATH --y PATH` (together or not at all) and `--n-total N` (rows read, default 200)."""

    def __init__(self, x: str | None, y: str | None, n_total: int) -> None:
        self.x, self.y, self.n_total = x, y, n_total

    @property
    def given(self) -> bool:
        return self.x is not None

    def load(self, exe: str = "") -> Dataset:
        """The first `n_total` images of the `.npy` pair (CIFAR-10 layout).

        Raises: ArgError (prefixed with `exe` when given): a file `data.load_npy` refuses."""
        assert self.x is not None and self.y is not None
        x, y, n = self.x, self.y, self.n_total
        return load_file(exe, lambda: data.load_npy(x, y, n))


def take_images(rest: list[str], exe: str, n_total: int = 200) -> tuple[ImageFlags, list[str]]:
    """Take `--x`, `--y` and `--n-total`. Raises: ArgError (prefixed): one of --x/--y without
    the other, or bad values."""
    x, rest = take_path(rest, exe, "x")
    y, rest = take_path(rest, exe, "y")
    if (x is None) != (y is None):
        given, other = ("x", "y") if x is not None else ("y", "x")
        raise ArgError(f"{exe}: --{given} requires --{other}")
    n, rest = take_nat(rest, exe, "n-total", n_total)
    assert n is not None
    return ImageFlags(x, y, n), rest


class ImageSource:
    """The images a command trains on: `--x/--y` (CIFAR-10 layout), `--dataset digits`
    (scikit-learn, 1x8x8) or, by default, the command's built-in images."""

    def __init__(self, images: ImageFlags, dataset: str | None,
                 builtin: Callable[[], Dataset]) -> None:
        self.images, self.dataset, self.builtin = images, dataset, builtin

    def load(self, exe: str = "") -> Dataset:
        if self.images.given:
            return self.images.load(exe)
        return data.digits_images() if self.dataset else self.builtin()


def take_image_source(rest: list[str], exe: str,
                      builtin: Callable[[], Dataset] = data.synthetic_images,
                      ) -> tuple[ImageSource, list[str]]:
    """Take `--x/--y`, `--n-total` and `--dataset digits` (at most one source); `builtin` gives
    the default images.

    Raises: ArgError (prefixed): bad values, or both --x and --dataset."""
    images, rest = take_images(rest, exe)
    name, rest = take_dataset(rest, exe, IMAGE_SETS)
    exclusive(exe, x=images.given, dataset=name)
    return ImageSource(images, name, builtin), rest


def load_file(exe: str, load: Callable[[], Dataset]) -> Dataset:
    """`load()`, with its `DataFileError` prefixed by `exe` (when given) for the CLI."""
    if not exe:
        return load()
    return prefixed(exe, load)  # type: ignore[no-any-return]


def exclusive(exe: str, **given: Any) -> None:
    """At most one data source: ArgError `<exe>: --a and --b are mutually exclusive`."""
    names = [f"--{k.replace('_', '-')}" for k, v in given.items() if v]
    if len(names) > 1:
        raise ArgError(f"{exe}: {' and '.join(names)} are mutually exclusive (pick one)")


def tabular(name: str) -> Dataset:
    """A scikit-learn dataset by name (ImportError naming tlrs[datasets] without sklearn)."""
    return data.load_sklearn(name)


def split(ds: Dataset) -> tuple[Dataset, Dataset]:
    """The fixed 80/20 train/test split (dataset-shuffle LCG, seed 0)."""
    return data.train_test_split(ds, TEST_FRACTION, SPLIT_SEED)


def notes(ds: Dataset, opts: Options) -> list[str]:
    """The TrainLog notes every command writes first."""
    return [f"dataset={ds.name}", f"device={opts.device}", f"seed={format_nat(opts.seed)}"]


BuildResult = tuple[ModuleDef, Callable[[Any, Any], Any]]
Build = Callable[[Dataset], BuildResult]


def run_classifier(exe: str, opts: Options, ds: Dataset, flags: TrainFlags, build: Build,
                   title: str) -> float:
    """Split `ds`, build the model for it, train on the training part, print the summary and
    `accuracy(test) = <percent>%` on the held-out part; returns the accuracy."""
    train_set, test_set = split(ds)
    schedule(exe, len(train_set), flags)  # refuse a bad --batch/--epochs before building
    defn, predict = build(train_set)
    result = train(exe, defn, opts, train_set, flags, opts.seed)
    finish(result, flags, title, [*notes(ds, opts), f"test={len(test_set)}"])
    return print_accuracy(predict, result.module, test_set)


def classifier_body(rest: list[str], exe: str, dtype: str, opts: Options, *,
                    builtin: Callable[[], Dataset],
                    build: Callable[..., BuildResult], title: str, lr: float, batch: int, epochs: int,
                    hidden: int | None = None) -> None:
    """The whole body of a tabular classifier command: `--dataset`, `--hidden N` (only when
    `hidden`, its default, is given; then `build(ds, N)` is called instead of `build(ds)`), the
    training flags, then `run_classifier` on the chosen or built-in data."""
    name, rest = take_dataset(rest, exe, CLASSIFICATION_SETS)
    if hidden is not None:
        hidden, rest = take_nat(rest, exe, "hidden", hidden)
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=lr, batch=batch, epochs=epochs)
    require_no_more(rest, exe)
    ds = tabular(name) if name is not None else builtin()
    run_classifier(exe, opts, ds, flags,
                   build if hidden is None
                   else (lambda d: build(d, hidden, exe, flags.optim, flags.dtype)),
                   title)
