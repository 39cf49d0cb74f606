"""`tlrs run vit`: a small vision transformer written with tlrs.nn (models/nn_transformers.py):
patch embedding by a strided Conv2d, a class token or mean pooling, pre-LN blocks with
`scaled_dot_product_attention`, a linear head; int64 labels and cross-entropy, trained by
the shared trainer (`trainer.train`, which makes integer arrays int64 tensors), held-out accuracy at
the end."""

from __future__ import annotations

import numpy as np

from ...config import Options
from ...data import Dataset
from ...errors import ArgError
from ...models.nn_transformers import VIT_POOLS, ViT, ViTConfig, vit_module_def
from ...module_def import ModuleDef
from ...random import seeded
from ..typer_app import register
from .sources import notes, split, take_image_source
from .train_common import TrainFlags
from .trainer import (
    check_model_size,
    command,
    finish,
    print_accuracy,
    require_no_more,
    schedule,
    take_nat,
    take_path,
    take_train_flags,
    train,
)

__all__ = ["DESCRIPTION", "default_model", "vit"]

DESCRIPTION = "vision transformer (tlrs.nn) image classifier"


def refuse_distributed(exe: str, flags: TrainFlags) -> None:
    """ArgError for `--distributed`: the data-parallel trainer splits each batch into shards, and
    the definition declares its images' batch size (`vit_module_def`: [batch, C, H, W] in the
    module's dtype, checked), so a shard is not an input it takes."""
    if flags.distributed:
        raise ArgError(f"{exe}: --distributed is not available for this command: its model declares "
                       "the batch of images, and the data-parallel trainer's shards are smaller")


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Data: as `cnn` (`--x/--y` CIFAR-10 `.npy`, `--n-total N`; `--dataset digits`, scikit-learn's
    1x8x8 digits; default built-in 3x16x16 images of 4 classes), split 80/20 (fixed) into
    training and held-out images; labels int64. Model: `--patch N` (default a quarter of the
    shorter image side, so a 4x4 grid of patches; a remainder at the edges is dropped), `--d-model N` (32),
    `--heads N` (4), `--layers N` (2), `--mlp-ratio N` (2), `--pool cls|mean` (cls: a class
    token). Training flags (default 15 epochs, batch 32, Adam lr 3e-3); not --distributed.
    With the defaults `--dataset digits` reaches about 95% held-out accuracy.
    """
    source, rest = take_image_source(rest, exe)
    patch, rest = take_nat(rest, exe, "patch", None, maximum=2**20)
    d_model, rest = take_nat(rest, exe, "d-model", 32, maximum=2**20)
    heads, rest = take_nat(rest, exe, "heads", 4, maximum=2**20)
    layers, rest = take_nat(rest, exe, "layers", 2, maximum=2**10)
    mlp_ratio, rest = take_nat(rest, exe, "mlp-ratio", 2, maximum=2**10)
    pool, rest = take_path(rest, exe, "pool")
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=3e-3, batch=32, epochs=15)
    require_no_more(rest, exe)
    refuse_distributed(exe, flags)
    assert d_model is not None and heads is not None and layers is not None and mlp_ratio is not None
    pool = "cls" if pool is None else pool
    if pool not in VIT_POOLS:
        raise ArgError(f"{exe}: --pool: expected one of {' | '.join(VIT_POOLS)}, got `{pool}`")
    if d_model % heads:
        raise ArgError(f"{exe}: --d-model {d_model} is not a multiple of --heads {heads}")
    ds = source.load(exe)
    assert ds.labels is not None
    _, c, h, w = ds.x.shape
    patch = max(1, min(h, w) // 4) if patch is None else patch
    if patch > min(h, w):
        raise ArgError(f"{exe}: --patch {patch} is larger than the {h}x{w} images ({ds.name})")
    train_set, test_set = split(ds)
    assert train_set.labels is not None
    schedule(exe, len(train_set), flags)  # refuse a bad --batch/--epochs before building
    config = ViTConfig(c, h, w, ds.num_classes, patch, d_model, heads, layers, mlp_ratio, pool, dtype)
    size_flags = f"--patch {patch} --d-model {d_model} --heads {heads} --layers {layers} --mlp-ratio {mlp_ratio}"
    t = config.tokens
    check_model_size(exe, f"{size_flags} on {c}x{h}x{w} images", config.param_shapes(), flags.optim,
                     flags.batch * (c * h * w + t * layers * (d_model * (8 + 2 * mlp_ratio) + 4 * heads * t)),
                     dtype=dtype)
    model = ViT(config)
    count = sum(int(np.prod(s)) for s in config.param_shapes())
    print(f"images: {ds.name} ({len(train_set):,} training, {len(test_set):,} held out, {c}x{h}x{w}, "
          f"{ds.num_classes} classes); {t} tokens; {count:,} parameters")
    defn = vit_module_def(model, flags.batch)
    labelled = Dataset(train_set.x, train_set.labels, train_set.labels, train_set.name)
    result = train(exe, defn, opts, labelled, flags, opts.seed,
                   model_key=f"{exe} {size_flags} --pool {pool}")
    finish(result, flags, "ViT training", [*notes(ds, opts), f"test={len(test_set)}"])
    assert defn.predict is not None
    print_accuracy(defn.predict, result.module, test_set)


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in images (3x16x16, 4
    classes: patch 4, `tlrs models`/`graph`/`export`), per-sample inputs [3, 16, 16] and []."""
    with seeded(0):  # `--seed 0`'s initial values, whatever the caller's stream
        return vit_module_def(ViT(ViTConfig(3, 16, 16, 4, 4, 32, 4, 2, 2, "cls", "float64")), None)


@register("vit")
def vit(args: list[str]) -> int:
    """Small vision transformer (tlrs.nn); --dataset digits reaches >= 90% held out."""
    return command("vit", DESCRIPTION, args, body)
