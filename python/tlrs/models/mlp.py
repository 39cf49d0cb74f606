"""Vector models (docs/runtime.md): `mlp`, `mlp_classifier`, `softmax_regression`,
`autoencoder`. Single samples are vectors; a leading batch axis gives rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from .._core import Tensor
from ..module import ModuleDef
from . import _common as c

__all__ = ["autoencoder", "mlp", "mlp_classifier", "softmax_regression"]

Model = tuple[ModuleDef, Callable[[Sequence[Tensor], Any], Tensor]]


def _two_layer(model: str, in_dim: int, hid_dim: int, out_dim: int, seeds: Sequence[int],
               act: Callable[[Tensor], Tensor], names: Sequence[str], loss_kind: str,
               dtype: Any) -> Model:
    """linear(in→hid) → act → linear(hid→out), params [W1, b1, W2, b2]."""
    in_dim, hid_dim = c.dim(model, "in_dim", in_dim), c.dim(model, "hid_dim", hid_dim)
    out_dim = c.dim(model, "out_dim", out_dim)
    seed_w1, _, seed_w2, _ = (c.nat(model, n, s) for n, s in
                              zip(("seed_w1", "seed_b1", "seed_w2", "seed_b2"), seeds, strict=True))
    dtype = c.dtype_name(dtype)
    init = (c.linear_params(hid_dim, in_dim, seed_w1, dtype)
            + c.linear_params(out_dim, hid_dim, seed_w2, dtype))
    shapes = [list(t.shape) for t in init]

    def predict(params: Sequence[Tensor], x: Any) -> Tensor:
        w1, b1, w2, b2 = c.check_params(model, params, shapes)
        x = c.as_input(x, params)
        c.batched(model, x, [in_dim])
        return ops.linear(act(ops.linear(x, w1, b1)), w2, b2)

    defn = c.module_def(model, names, init, [in_dim], [out_dim], predict, loss_kind)
    return defn, predict


def mlp(in_dim: int, hid_dim: int, out_dim: int, seed_w1: int = 0, seed_b1: int = 0,
        seed_w2: int = 0, seed_b2: int = 0, *, dtype: Any = "float64") -> Model:
    """The reference `mlp`: `linear(in→hid) → ReLU → linear(hid→out)` with MSE loss.

    Params `fc1.weight [hid, in], fc1.bias [hid], fc2.weight [out, hid], fc2.bias [out]`;
    weights Xavier-uniform from the LCG with `seed_w1` / `seed_w2` (with the default seeds both
    weights use the same stream, as in the reference), biases zero.
    Returns (defn, predict); inputs `[x [in], target [out]]`, optionally with a batch axis.
    Raises: ValueError: a non-positive size or a negative seed.
    """
    return _two_layer("mlp", in_dim, hid_dim, out_dim, (seed_w1, seed_b1, seed_w2, seed_b2),
                      ops.relu, ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"), "mse", dtype)


def mlp_classifier(in_dim: int, hid_dim: int, num_classes: int, seed_w1: int = 0,
                   seed_b1: int = 0, seed_w2: int = 0, seed_b2: int = 0, *,
                   dtype: Any = "float64") -> Model:
    """The reference `mlpClassifier`: `mlp(in, hid, num_classes)` giving logits, with the
    one-hot cross-entropy loss (target: one-hot rows [num_classes], mean over rows)."""
    return _two_layer("mlp_classifier", in_dim, hid_dim, num_classes,
                      (seed_w1, seed_b1, seed_w2, seed_b2), ops.relu,
                      ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"), "ce", dtype)


def autoencoder(in_dim: int, hid_dim: int, seed_w1: int = 0, seed_b1: int = 0,
                seed_w2: int = 0, seed_b2: int = 0, *, dtype: Any = "float64") -> Model:
    """The reference `autoencoder`: `linear(in→hid) → tanh → linear(hid→in)`, MSE loss
    against a separate target `[in]`. Params `encoder.weight [hid, in], encoder.bias [hid],
    decoder.weight [in, hid], decoder.bias [in]`."""
    return _two_layer("autoencoder", in_dim, hid_dim, in_dim, (seed_w1, seed_b1, seed_w2, seed_b2),
                      ops.tanh,
                      ("encoder.weight", "encoder.bias", "decoder.weight", "decoder.bias"),
                      "mse", dtype)


def softmax_regression(in_dim: int, num_classes: int, seed_w: int = 0, seed_b: int = 0, *,
                       dtype: Any = "float64") -> Model:
    """The reference `softmaxRegression`: one `linear(in→num_classes)` giving logits (no
    softmax inside), one-hot cross-entropy loss. Params `linear.weight [C, in], linear.bias [C]`."""
    model = "softmax_regression"
    in_dim, num_classes = c.dim(model, "in_dim", in_dim), c.dim(model, "num_classes", num_classes)
    seed_w = c.nat(model, "seed_w", seed_w)
    c.nat(model, "seed_b", seed_b)
    dtype = c.dtype_name(dtype)
    init = c.linear_params(num_classes, in_dim, seed_w, dtype)
    shapes = [list(t.shape) for t in init]

    def predict(params: Sequence[Tensor], x: Any) -> Tensor:
        w, b = c.check_params(model, params, shapes)
        x = c.as_input(x, params)
        c.batched(model, x, [in_dim])
        return ops.linear(x, w, b)

    defn = c.module_def(model, ("linear.weight", "linear.bias"), init, [in_dim], [num_classes],
                        predict, "ce")
    return defn, predict
