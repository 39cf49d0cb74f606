"""The flag readers every model command shares: naturals with a ceiling, positive finite floats
and paths, each taken once, with `ArgError`s prefixed by the program name (`tlrs run MODEL: ...`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, overload

from ...errors import ArgError
from ..args import (
    FLOAT,
    NAT,
    flag_value,
    format_nat,
    require_no_args,
    take_flag_value_once,
    take_value_flag_once,
)
from .outputs import show_path

__all__ = ["MAX_SIZE", "MAX_STEPS", "prefixed", "require_no_more", "take_nat", "take_path",
           "take_positive_float"]

MAX_STEPS = 10_000_000
"""The most optimizer updates one run may ask for (`--steps`, or `--epochs` times the batches per
epoch): every step's loss is kept for the log and the plot."""
MAX_SIZE = 2**63 - 1
"""The largest value a size flag (`--hidden`, `--batch`, ...) may have at all; sizes below it are
still refused when the model would not fit in memory (`trainer.check_model_size`)."""


def prefixed(exe: str, call: Callable[[], Any]) -> Any:
    """`call()`, with an `ArgError` it raises prefixed by `exe` (once)."""
    try:
        return call()
    except ArgError as err:
        text = str(err)
        raise ArgError(text if text.startswith(f"{exe}: ") else f"{exe}: {text}") from None


def take_nat(args: list[str], exe: str, key: str, default: int | None,
             positive: bool = True, maximum: int | None = MAX_SIZE) -> tuple[int | None, list[str]]:
    """Take `--key N` once (a natural; > 0 when `positive`; at most `maximum` unless None), with
    `default` when absent.

    Raises: ArgError, prefixed with `exe`: a missing value, a duplicate, not a natural, 0, or
    more than `maximum`.
    """
    n, rest = prefixed(exe, lambda: take_value_flag_once(args, key, NAT))
    if n is None:
        return default, rest
    if positive and n == 0:
        raise ArgError(f"{exe}: --{key} must be > 0")
    if maximum is not None and n > maximum:
        raise ArgError(f"{exe}: --{key} must be at most {maximum:,}, got "
                       f"{show_path(format_nat(n))}")
    return n, rest


@overload
def take_positive_float(args: list[str], exe: str, key: str,
                        default: float) -> tuple[float, list[str]]: ...
@overload
def take_positive_float(args: list[str], exe: str, key: str,
                        default: None) -> tuple[float | None, list[str]]: ...
def take_positive_float(args: list[str], exe: str, key: str,
                        default: float | None) -> tuple[float | None, list[str]]:
    """Take `--key F` once (a finite JSON-style float literal > 0), with `default` when absent.

    Raises: ArgError, prefixed with `exe`: not a float literal, not finite (`1e999`), or <= 0.
    """
    x, rest = prefixed(exe, lambda: take_value_flag_once(args, key, FLOAT))
    if x is None:
        return default, rest
    if not math.isfinite(x):
        raw = flag_value(args, key) or ""
        raise ArgError(f"{exe}: --{key}: expected a finite number, got `{show_path(raw)}` "
                       "(beyond the binary64 range)")
    if not x > 0.0:
        raise ArgError(f"{exe}: --{key} must be > 0")
    return x, rest


def take_path(args: list[str], exe: str, key: str) -> tuple[str | None, list[str]]:
    """Take `--key PATH` once (verbatim). Raises: ArgError (prefixed): missing value, duplicate,
    an empty path, or one holding a NUL character."""
    raw, rest = prefixed(exe, lambda: take_flag_value_once(args, key))
    if raw is not None and not raw.strip():
        raise ArgError(f"{exe}: --{key}: expected a path, got an empty value")
    if raw is not None and "\0" in raw:
        raise ArgError(f"{exe}: --{key}: a path cannot contain a NUL character, got {raw!r}")
    return raw, rest


def require_no_more(rest: list[str], exe: str) -> None:
    """`<exe>: unexpected arguments: [a, b]` when anything is left."""
    prefixed(exe, lambda: require_no_args(rest))
