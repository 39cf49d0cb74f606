"""`tlrs run resnet`: the reference ResNet-18 (stem width 8 by default) on small images."""

from __future__ import annotations

import sys

from ... import data, models
from ...config import Options
from ...data import Dataset
from ...module import ModuleDef
from ..typer_app import register
from .sources import run_classifier, take_image_source
from .trainer import check_model_size, command, require_no_more, reseed, take_nat, take_train_flags

DESCRIPTION = "ResNet-18 image classifier"
BUILTIN_SIZE = 36  # the smallest even size whose stage-4 maps are 2x2 (33 is the least)


def builtin_images() -> Dataset:
    """240 built-in 3x36x36 images of 4 classes."""
    return data.synthetic_images(240, 3, BUILTIN_SIZE, BUILTIN_SIZE, 4)


def stage4_size(size: int) -> int:
    """The spatial size after the stem conv, the max-pool and stages 2-4 (five halvings
    `⌊(x - 1)/2⌋ + 1`)."""
    for _ in range(5):
        size = (size - 1) // 2 + 1
    return size


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Flags: as `cnn` for the data (`--x/--y`, `--n-total`, `--dataset digits`; default
    built-in 3x36x36 images); `--width N` (stem width, default 8; the reference network has
    64); training flags (default 2 epochs, batch 8, Adam lr 3e-3).

    Images below 33x33 reach stage 4 at 1x1, where the reference's per-image batch norm gives
    constants (x - mean = 0): the network then cannot see its input. A note on stderr says so.
    """
    source, rest = take_image_source(rest, exe, builtin_images)
    width, rest = take_nat(rest, exe, "width", 8)
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=3e-3, batch=8, epochs=2)
    require_no_more(rest, exe)
    ds = source.load(exe)
    assert width is not None
    _, c, h, w = ds.x.shape
    check_model_size(exe, f"--width {width}",
                     [shape for _, _, shape in models.resnet18_spec(c, max(1, ds.num_classes),
                                                                     width)], flags.optim,
                     dtype=dtype)

    def build(d: Dataset):  # type: ignore[no-untyped-def]
        # Said once every check has passed, just before training.
        if min(stage4_size(h), stage4_size(w)) < 2:
            print(f"{exe}: note: {h}x{w} images reach stage 4 at "
                  f"{stage4_size(h)}x{stage4_size(w)}, where per-image batch norm outputs "
                  "constants; the network cannot use its input (use images of at least 33x33)",
                  file=sys.stderr)
        defn, predict = models.resnet18_model(c, h, w, d.num_classes, width=width)
        kinds = [kind for kind, _, _ in models.resnet18_spec(c, d.num_classes, width)]
        schemes = [("uniform", -0.1, 0.1) if k in ("conv", "head") else None for k in kinds]
        return reseed(defn, schemes), predict

    run_classifier(exe, opts, ds, flags, build, "ResNet-18 training")


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.resnet18_model(3, BUILTIN_SIZE, BUILTIN_SIZE, 4, width=8)[0]


@register("resnet")
def resnet(args: list[str]) -> int:
    """ResNet-18 classifier, stem width 8 (--width), on small images (--x/--y, --dataset)."""
    return command("resnet", DESCRIPTION, args, body)
