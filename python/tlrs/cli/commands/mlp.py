"""`tlrs run mlp`: the reference's tabular MLP regression (docs/runtime.md)."""

from __future__ import annotations

from ... import data, models
from ...config import Options
from ...module import ModuleDef
from ..typer_app import register
from .sources import exclusive, load_file, notes, tabular, take_dataset
from .trainer import (
    check_model_size,
    command,
    finish,
    mlp_shapes,
    model_seeds,
    require_no_more,
    take_nat,
    take_path,
    take_train_flags,
    train,
)

DESCRIPTION = "MLP regression (Auto MPG layout)"


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Flags: `--csv PATH` (Auto MPG layout) or `--dataset NAME` (scikit-learn; classification
    sets regress their one-hot labels), default built-in Auto-MPG-shaped data (200 rows, 7
    features); `--hidden N` (32); training flags (default 5 epochs, batch 5, Adam lr 1e-3)."""
    csv, rest = take_path(rest, exe, "csv")
    name, rest = take_dataset(rest, exe, data.SKLEARN_DATASETS)
    hidden, rest = take_nat(rest, exe, "hidden", 32)
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=1e-3, batch=5, epochs=5)
    require_no_more(rest, exe)
    exclusive(exe, csv=csv, dataset=name)
    if csv is not None:
        path = csv
        ds = load_file(exe, lambda: data.load_csv(path))
    else:
        ds = tabular(name) if name is not None else data.synthetic_regression()
    assert hidden is not None
    in_dim, out_dim = ds.x.shape[1], ds.y.shape[1]
    check_model_size(exe, f"--hidden {hidden}", mlp_shapes(in_dim, hidden, out_dim), flags.optim,
                     dtype=dtype)
    # One draw from the global stream, then (W1, b1, W2, b2) seeds: the reference's nn.withModel.
    defn, _ = models.mlp(ds.x.shape[1], hidden, ds.y.shape[1], *model_seeds(4))
    result = train(exe, defn, opts, ds, flags, opts.seed)
    finish(result, flags, "MLP tabular training", notes(ds, opts))


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.mlp(7, 32, 1)[0]


@register("mlp")
def mlp(args: list[str]) -> int:
    """MLP regression: linear -> ReLU -> linear with MSE (--csv Auto MPG, --dataset, built-in)."""
    return command("mlp", DESCRIPTION, args, body)
