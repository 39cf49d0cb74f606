"""`tlrs run softmax_regression`: one linear layer with cross-entropy (docs/runtime.md)."""

from __future__ import annotations

from ... import data, models
from ...config import Options
from ...data import Dataset
from ...module import ModuleDef
from ..typer_app import register
from .sources import classifier_body
from .trainer import command, model_seeds

DESCRIPTION = "softmax regression classifier"


def build(ds: Dataset):  # type: ignore[no-untyped-def]
    return models.softmax_regression(ds.x.shape[1], ds.num_classes, *model_seeds(2))


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Flags: `--dataset digits|iris|wine|breast_cancer` (default built-in blobs: 600 samples,
    16 features, 4 classes); training flags (default 10 epochs, batch 16, Adam lr 1e-2)."""
    classifier_body(rest, exe, dtype, opts, builtin=data.synthetic_classification, build=build,
                    title="Softmax regression training", lr=1e-2, batch=16, epochs=10)


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.softmax_regression(16, 4)[0]


@register("softmax_regression")
def softmax_regression(args: list[str]) -> int:
    """Softmax regression: one linear layer, cross-entropy, held-out accuracy (--dataset)."""
    return command("softmax_regression", DESCRIPTION, args, body)
