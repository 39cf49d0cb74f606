"""`tlrs run cnn`: the reference two-convolution CNN classifier (docs/runtime.md)."""

from __future__ import annotations

from ... import models
from ...config import Options
from ...data import Dataset
from ...errors import ArgError
from ...module import ModuleDef
from ..typer_app import register
from .sources import run_classifier, take_image_source
from .trainer import check_model_size, command, require_no_more, reseed, take_nat, take_train_flags

DESCRIPTION = "two-conv CNN image classifier"
_UNIFORM = ("uniform", -0.1, 0.1)
MIN_SIZE = 4  # the smallest image side two 2x2 max-pools (stride 2) leave at least one pixel of


def _pooled(size: int) -> int:
    return (size - 2) // 2 + 1


def cnn_shapes(c: int, c1: int, classes: int, h: int, w: int) -> list[tuple[int, ...]]:
    """The parameter shapes of the command's CNN (3x3 convs with padding 1, 2x2 pools)."""
    feat = 2 * c1 * _pooled(_pooled(h)) * _pooled(_pooled(w))
    return [(c1, c, 3, 3), (c1,), (2 * c1, c1, 3, 3), (2 * c1,), (classes, feat), (classes,)]


def cnn_activations(c: int, c1: int, h: int, w: int) -> int:
    """A rough count of the scalars one image needs in a training step (im2col columns, conv
    and pool outputs and their gradients)."""
    h1, w1 = _pooled(h), _pooled(w)
    return 9 * c * h * w + 12 * c1 * h * w + 9 * c1 * h1 * w1 + 12 * c1 * h1 * w1


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Flags: `--x/--y` (CIFAR-10 `.npy` layout; `--n-total N`, default 200) or `--dataset
    digits` (1x8x8), default built-in images (240 x 3x16x16, 4 classes); `--channels N` (c1,
    default 8; c2 = 2·c1); training flags (default 20 epochs, batch 16, Adam lr 5e-3)."""
    source, rest = take_image_source(rest, exe)
    c1, rest = take_nat(rest, exe, "channels", 8)
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=5e-3, batch=16, epochs=20)
    require_no_more(rest, exe)
    ds = source.load(exe)
    assert c1 is not None

    def build(d: Dataset):  # type: ignore[no-untyped-def]
        _, c, h, w = d.x.shape
        if h < MIN_SIZE or w < MIN_SIZE:
            raise ArgError(f"{exe}: the CNN needs images of at least {MIN_SIZE}x{MIN_SIZE} pixels "
                           f"(two 2x2 max-pools), got {h}x{w} ({d.name})")
        check_model_size(exe, f"--channels {c1} on {c}x{h}x{w} images", cnn_shapes(
            c, c1, d.num_classes, h, w), flags.optim, flags.batch * cnn_activations(c, c1, h, w),
            dtype=dtype)
        # 3x3 convolutions with padding 1, 2x2 max-pools with stride 2.
        defn, predict = models.two_conv_cnn(c, c1, 2 * c1, d.num_classes, h, w, 3, 3, 1, 1, 1, 1)
        return reseed(defn, [_UNIFORM, None, _UNIFORM, None, ("xavier",), None]), predict

    run_classifier(exe, opts, ds, flags, build, "CNN training")


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.two_conv_cnn(3, 8, 16, 4, 16, 16, 3, 3, 1, 1, 1, 1)[0]


@register("cnn")
def cnn(args: list[str]) -> int:
    """Two-conv CNN classifier (--x/--y CIFAR-10 .npy, --dataset digits reaches >= 95%)."""
    return command("cnn", DESCRIPTION, args, body)
