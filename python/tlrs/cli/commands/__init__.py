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
        ("autoencoder", autoencoder), ("cnn", cnn), ("gpt", gpt), ("mlp", mlp),
        ("mlp_classifier", mlp_classifier), ("quickstart_mlp", quickstart_mlp),
        ("resnet", resnet), ("softmax_regression", softmax_regression),
        ("transformer", transformer), ("vit", vit),
    )
}
"""Each command's default model definition (no training; per-sample input shapes), for
parameter counts (`tlrs models`), `tlrs graph` and `tlrs export`. gpt's and vit's follow their
built-in data (the text's symbols, the images' shape); gpt's inputs are int64 token ids."""

__all__ = ["DEFAULT_MODELS", "autoencoder", "cnn", "gpt", "mlp", "mlp_classifier", "quickstart_mlp",
           "resnet", "softmax_regression", "transformer", "vit"]
