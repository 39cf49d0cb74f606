"""The `tlrs run` model commands: importing this package registers every one of them with
`tlrs.cli.register` (the CLI imports it on first use of the registry)."""

from . import (  # noqa: F401 - imported for their registration side effect
    autoencoder,
    cnn,
    mlp,
    mlp_classifier,
    quickstart_mlp,
    resnet,
    softmax_regression,
    transformer,
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
"""Each command's default model definition (no training), e.g. for parameter counts."""

__all__ = ["DEFAULT_MODELS", "autoencoder", "cnn", "mlp", "mlp_classifier", "quickstart_mlp",
           "resnet", "softmax_regression", "transformer"]
