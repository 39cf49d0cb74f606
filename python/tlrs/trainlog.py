"""The reference's training log ("TrainLog") JSON and a loss-curve plot.

A TrainLog is a pretty-printed JSON object followed by a newline:
`{"title": str, "steps": [nat...], "series": [{"name", "values", "color"}], "notes": [str...]}`.
Non-finite values are written as the strings "NaN", "Infinity" and "-Infinity" (JSON has no such
numbers). Files are written atomically (a temporary file in the same folder, then `os.replace`),
and missing parent folders are created.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO

__all__ = [
    "DEFAULT_COLOR", "PALETTE", "curve_trainlog", "plot_loss", "read_trainlog",
    "require_matplotlib", "temporary_name", "trainlog_dict", "write_trainlog",
]

DEFAULT_COLOR = "#4e79a7"
"""The colour of a curve log's single `loss` series (the reference's)."""
PALETTE = (DEFAULT_COLOR, "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948")
"""Colours of a log's series, in order (repeating)."""
_PLOT_HINT = "plotting needs matplotlib: install tlrs[plot] (matplotlib)"


def _json_value(v: float) -> float | str:
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


_JSON_FLOATS: dict[str, float | str] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _from_json_value(v: Any) -> float | str:
    # Another string stays as it came (a log written by something else).
    if isinstance(v, str):
        return _JSON_FLOATS.get(v, v)
    return float(v)


def trainlog_dict(
    title: str,
    steps: Sequence[int],
    series: Mapping[str, Sequence[float]] | Sequence[tuple[str, Sequence[float]]],
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The TrainLog object: series in the given order, coloured from `PALETTE`.

    Raises: ValueError: a negative or non-integer step, or a series whose length differs from
    the number of steps.
    """
    steps = list(steps)
    for s in steps:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ValueError(f"TrainLog steps must be natural numbers, got {s!r}")
    items = list(series.items()) if isinstance(series, Mapping) else list(series)
    out = []
    for i, (name, values) in enumerate(items):
        values = list(values)
        if len(values) != len(steps):
            raise ValueError(f"TrainLog series {name!r} has {len(values)} values for "
                             f"{len(steps)} steps")
        out.append({"name": str(name), "values": [_json_value(v) for v in values],
                    "color": PALETTE[i % len(PALETTE)]})
    return {"title": str(title), "steps": steps, "series": out, "notes": [str(n) for n in notes]}


def temporary_name(name: str) -> str:
    """The name of the temporary file an atomic write of the file `name` goes through (in the
    same folder): `.<name>.<pid>.<8 hex digits>.tmp`, fresh on every call."""
    return f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


@contextmanager
def _atomic_file(path: str) -> Iterator[BinaryIO]:
    """An open binary file that replaces `path` (creating parent folders) when the block ends
    without an error; on an error the temporary file is removed and `path` is untouched. The
    file gets the usual permissions (0666 less the umask)."""
    path = os.path.abspath(path)  # "a/../b" is b, whether or not a exists
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, temporary_name(os.path.basename(path)))
    try:
        with open(tmp, "xb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def write_trainlog(
    path: str | os.PathLike[str],
    title: str,
    steps: Sequence[int],
    series: Mapping[str, Sequence[float]] | Sequence[tuple[str, Sequence[float]]],
    notes: Sequence[str] = (),
) -> str:
    """Write a TrainLog (see `trainlog_dict`) to `path` atomically; returns the path as a str.

    Raises: ValueError: as `trainlog_dict`; OSError: the file cannot be written (any previous
    file at `path` is left as it was).
    """
    path = os.fspath(path)
    text = json.dumps(trainlog_dict(title, steps, series, notes), indent=2, allow_nan=False)
    with _atomic_file(path) as f:
        f.write((text + "\n").encode("utf-8"))
    return path


def curve_trainlog(path: str | os.PathLike[str], title: str, values: Sequence[float],
                   notes: Sequence[str] = ()) -> str:
    """A curve log: steps 0..N-1 and one series `loss` (colour `#4e79a7`); returns the path."""
    return write_trainlog(path, title, list(range(len(values))), [("loss", values)], notes)


def read_trainlog(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A TrainLog read back, with "NaN"/"Infinity"/"-Infinity" turned into floats again and the
    reference readers' defaults (title `Training`, colour `#0a7`) filled in."""
    with open(path, encoding="utf-8") as f:
        log: dict[str, Any] = json.load(f)
    log.setdefault("title", "Training")
    log.setdefault("notes", [])
    for s in log.get("series", []):
        s.setdefault("color", "#0a7")
        s["values"] = [_from_json_value(v) for v in s.get("values", [])]
    return log


def require_matplotlib() -> None:
    """Fail early, before any training, when the plot extra is missing.

    Raises: ImportError: matplotlib is not installed (the message names `tlrs[plot]`).
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(_PLOT_HINT) from None


def plot_loss(path_png: str | os.PathLike[str], steps: Sequence[int], values: Sequence[float],
              title: str = "Training") -> str:
    """Draw the loss curve to a PNG file (matplotlib's Agg backend; log scale when every value
    is positive); parent folders are created and the file is written atomically.

    Returns the path. Raises: ImportError: matplotlib is missing (names `tlrs[plot]`);
    ValueError: steps and values of different lengths.
    """
    require_matplotlib()
    # The object-oriented API renders PNGs with the Agg canvas and leaves pyplot's global
    # backend alone.
    from matplotlib.figure import Figure

    steps, values = list(steps), [float(v) for v in values]
    if len(steps) != len(values):
        raise ValueError(f"plot_loss: {len(steps)} steps but {len(values)} values")
    fig = Figure(figsize=(6.0, 4.0), dpi=100)
    ax = fig.add_subplot()
    ax.plot(steps, values, color=DEFAULT_COLOR, linewidth=1.5, label="loss")
    finite = [v for v in values if math.isfinite(v)]
    if finite and min(finite) > 0:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = os.fspath(path_png)
    with _atomic_file(path) as f:
        fig.savefig(f, format="png")
    return path
