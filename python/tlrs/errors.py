"""The exceptions tlrs raises, all under the standard Python hierarchy."""

from ._core import (
    AutogradError,
    CheckpointError,
    CudaUnavailableError,
    DeviceError,
    DTypeError,
    ShapeError,
    TraceError,
)


class ArgError(ValueError):
    """A command-line or configuration argument could not be parsed; the text is the reference message."""


__all__ = [
    "ArgError",
    "AutogradError",
    "CheckpointError",
    "CudaUnavailableError",
    "DeviceError",
    "DTypeError",
    "ShapeError",
    "TraceError",
]
