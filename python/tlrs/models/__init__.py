"""Ready-made models with the reference's parameter order, shapes and initialisation
(see docs/runtime.md): each constructor returns `(defn, predict)` where `defn` is a `tlrs.ModuleDef`
(inputs `[x, target]` without a batch axis; loss MSE or one-hot cross-entropy as the reference
helpers attach) and `predict(params, x)` gives the model output. Both accept inputs with or
without one leading batch axis."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..module import ModuleDef
from .cnn import cnn2, two_conv_cnn
from .mlp import autoencoder, mlp, mlp_classifier, softmax_regression
from .resnet import (
    resnet18_init_params,
    resnet18_model,
    resnet18_program,
    resnet18_spec,
)
from .transformer import transformer_block

__all__ = [
    "MODEL_CONSTRUCTORS",
    "autoencoder",
    "cnn2",
    "mlp",
    "mlp_classifier",
    "param_count",
    "resnet18_init_params",
    "resnet18_model",
    "resnet18_program",
    "resnet18_spec",
    "softmax_regression",
    "transformer_block",
    "two_conv_cnn",
]

# Every constructor returning `(defn, predict)`, by its function name.
MODEL_CONSTRUCTORS: dict[str, Callable[..., Any]] = {
    "mlp": mlp,
    "mlp_classifier": mlp_classifier,
    "softmax_regression": softmax_regression,
    "autoencoder": autoencoder,
    "two_conv_cnn": two_conv_cnn,
    "cnn2": cnn2,
    "transformer_block": transformer_block,
    "resnet18_model": resnet18_model,
}


def param_count(defn: ModuleDef) -> int:
    """The number of scalar parameters: the sum over `param_shapes` of each shape's product."""
    return sum(math.prod(s) for s in defn.param_shapes)
