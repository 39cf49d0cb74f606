"""`tlrs run autoencoder`: linear -> tanh -> linear reconstructing its input (docs/runtime.md)."""

from __future__ import annotations

from ... import data, models
from ...config import Options
from ...data import Dataset
from ...module import ModuleDef
from ..typer_app import register
from .sources import exclusive, notes, tabular, take_dataset, take_images
from .trainer import (
    check_model_size,
    command,
    finish,
    mlp_shapes,
    model_seeds,
    require_no_more,
    take_nat,
    take_train_flags,
    train,
)

DESCRIPTION = "autoencoder reconstruction"


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Flags: `--x/--y` images (CIFAR-10 layout, flattened; `--n-total N`, default 200) or
    `--dataset NAME` (scikit-learn features), default built-in vectors (256 x 16 on a 3-d
    manifold); `--hidden N` (8); training flags (default 10 epochs, batch 8, Adam lr 1e-2)."""
    images, rest = take_images(rest, exe)
    name, rest = take_dataset(rest, exe, data.SKLEARN_DATASETS)
    hidden, rest = take_nat(rest, exe, "hidden", 8)
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=1e-2, batch=8, epochs=10)
    require_no_more(rest, exe)
    exclusive(exe, x=images.given, dataset=name)
    if images.given:
        src = images.load(exe)
    else:
        src = tabular(name) if name is not None else data.synthetic_autoencoder()
    x = src.x.reshape(len(src), -1)
    ds = Dataset(x, x.copy(), None, src.name)
    assert hidden is not None
    check_model_size(exe, f"--hidden {hidden} with {x.shape[1]:,} input features",
                     mlp_shapes(x.shape[1], hidden, x.shape[1]), flags.optim, dtype=dtype)
    defn, _ = models.autoencoder(x.shape[1], hidden, *model_seeds(4))
    result = train(exe, defn, opts, ds, flags, opts.seed)
    finish(result, flags, "Autoencoder training", notes(ds, opts))


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.autoencoder(16, 8)[0]


@register("autoencoder")
def autoencoder(args: list[str]) -> int:
    """Autoencoder: reconstructs vectors or flattened images through a tanh bottleneck (MSE)."""
    return command("autoencoder", DESCRIPTION, args, body)
