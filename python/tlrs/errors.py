"""The exceptions tlrs raises, all under the standard Python hierarchy."""

from collections.abc import Sequence

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


class NonFiniteLossError(ValueError):
    """A training loop met a NaN or infinite loss (loops called with `check_finite=True`).

    Attributes: step: the step (counted from the loop's start) whose loss it was; loss: that
    loss; last_finite: the last finite loss before it and its step, or None.
    """

    def __init__(self, step: int, loss: float, earlier: Sequence[float], what: str = "training"
                 ) -> None:
        self.step, self.loss = int(step), float(loss)
        found = next(((i, v) for i, v in reversed(list(enumerate(earlier)))
                      if v == v and abs(v) != float("inf")), None)
        self.last_finite = found
        last = ("no finite loss before it" if found is None
                else f"last finite loss {found[1]!r} at step {found[0]}")
        super().__init__(f"{what}: the loss at step {self.step} is {self.loss!r} ({last})")


__all__ = [
    "ArgError",
    "NonFiniteLossError",
    "AutogradError",
    "CheckpointError",
    "CudaUnavailableError",
    "DeviceError",
    "DTypeError",
    "ShapeError",
    "TraceError",
    "format_bytes",
]


def format_bytes(n: int) -> str:
    """A byte count for messages: `512 bytes`, `1.5 KiB`, `4.0 GiB`, ... (any size)."""
    if n < 1024:
        return f"{n} bytes"
    value, unit = float(n), "bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):  # noqa: B007 - read after the loop
        value /= 1024.0
        if value < 1024.0:
            break
    return f"{value:.1f} {unit}" if value < 1e6 else f"{n:.3g} bytes"
