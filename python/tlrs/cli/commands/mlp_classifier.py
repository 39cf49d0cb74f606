"""`tlrs run mlp_classifier`: linear -> ReLU -> linear logits with cross-entropy."""

from __future__ import annotations

from ... import data, models
from ...config import Options
from ...data import Dataset
from ...module import ModuleDef
from ..typer_app import register
from .sources import classifier_body
from .trainer import check_model_size, command, mlp_shapes, model_seeds

DESCRIPTION = "MLP classifier"


def build(ds: Dataset, hidden: int, exe: str = "",  # type: ignore[no-untyped-def]
          optim: str = "adam", dtype: str = "float64"):
    check_model_size(exe or "tlrs run mlp_classifier", f"--hidden {hidden}",
                     mlp_shapes(ds.x.shape[1], hidden, ds.num_classes), optim, dtype=dtype)
    return models.mlp_classifier(ds.x.shape[1], hidden, ds.num_classes, *model_seeds(4))


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Flags: `--dataset digits|iris|wine|breast_cancer` (default built-in blobs: 600 samples,
    16 features, 4 classes); `--hidden N` (64); training flags (default 10 epochs, batch 32,
    Adam lr 3e-3)."""
    classifier_body(rest, exe, dtype, opts, builtin=data.synthetic_classification, build=build,
                    title="MLP classifier training", lr=3e-3, batch=32, epochs=10, hidden=64)


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.mlp_classifier(16, 64, 4)[0]


@register("mlp_classifier")
def mlp_classifier(args: list[str]) -> int:
    """MLP classifier: cross-entropy, held-out accuracy (--dataset digits reaches >= 95%)."""
    return command("mlp_classifier", DESCRIPTION, args, body)
