"""The `tlrs run` model commands: importing this package registers every one of them with
`tlrs.cli.register` (the CLI imports it on first use of the registry)."""

from . import (  # noqa: F401 - imported for their registration side effect
    autoencoder,
    cnn,
    gpt,
    mlp,
    mlp_classifier,
    quickstart_mlp,
    resnet,
    softmax_regression,
    transformer,
    vit,
)

DEFAULT_MODELS = {
    name: module.default_model
    for name, module in (
        ("autoencoder", autoencoder), ("cnn", cnn), ("mlp", mlp),
        ("mlp_classifier", mlp_classifier), ("quickstart_mlp", quickstart_mlp),
        ("resnet", resnet), ("softmax_regression", softmax_regression),
        ("transformer", transformer),
    )
}
"""Each command's default model definition (no training), e.g. for parameter counts. `gpt` and
`vit` have none: their definitions take int64 inputs and their sizes follow the data (the text's
symbols, the images' shape), so `tlrs graph`/`tlrs export` do not list them."""

__all__ = ["DEFAULT_MODELS", "autoencoder", "cnn", "gpt", "mlp", "mlp_classifier", "quickstart_mlp",
           "resnet", "softmax_regression", "transformer", "vit"]
