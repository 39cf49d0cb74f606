"""`tlrs run quickstart_mlp`: the reference quickstart (a 2 -> 8 -> 1 MLP on a 5x5 grid)."""

from __future__ import annotations

from ... import data, models
from ...config import Options
from ...module import ModuleDef
from ..typer_app import register
from .sources import notes
from .trainer import command, finish, model_seeds, require_no_more, take_train_flags, train

DESCRIPTION = "quickstart MLP on the 5x5 grid"


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Data: the 5x5 grid on [-1, 1]^2 with target 0.8·relu(x1+x2) - 0.4·relu(x2-x1) + 0.2;
    model 2 -> 8 -> 1; training flags (default 200 steps, batch 5, Adam lr 0.03)."""
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=0.03, batch=5, steps=200)
    require_no_more(rest, exe)
    ds = data.quickstart_grid()
    defn, _ = models.mlp(2, 8, 1, *model_seeds(4))
    result = train(exe, defn, opts, ds, flags, opts.seed)
    finish(result, flags, "Quickstart MLP training", notes(ds, opts))


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.mlp(2, 8, 1)[0]


@register("quickstart_mlp")
def quickstart_mlp(args: list[str]) -> int:
    """Quickstart: a 2 -> 8 -> 1 MLP fitting a piecewise-linear target on a 5x5 grid."""
    return command("quickstart_mlp", DESCRIPTION, args, body)
