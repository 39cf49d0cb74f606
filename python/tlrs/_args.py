"""Checks of integer arguments shared by the Python wrappers: out of range is a ValueError
naming the argument and the accepted range (the bindings would raise OverflowError)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

SIGNED = (-(2**63), 2**63)
"""Axes and positions (negative counts from the end)."""
SIZE = (0, 2**63)
"""Sizes, counts, strides, paddings, fans."""
WORD = (0, 2**64)
"""Seeds, keys, counters: 64-bit words."""

RANGES: Mapping[str, tuple[int, int]] = {
    **dict.fromkeys(("dim", "dim0", "dim1", "start_dim", "end_dim", "axis", "start", "end"),
                    SIGNED),
    **dict.fromkeys(("seed", "key", "counter", "x", "index"), WORD),
}
"""The accepted range of an integer argument by its name; any other name is a `SIZE`."""


def _show_bound(v: int) -> str:
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    return f"{sign}2**{abs(v).bit_length() - 1}"


def natural(what: str, value: object, bound: int) -> int:
    """`value` if it is an int (not a bool) in [0, bound), else ValueError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < bound:
        raise ValueError(f"{what} must be an integer in [0, {bound}), got {value!r}")
    return value


def _ints(value: Any, name: str) -> list[tuple[str, int]]:
    """The integers in an argument (itself, or the items of a list/tuple, nested)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [(name, value)]
    if isinstance(value, (list, tuple)):
        return [found for i, v in enumerate(value) for found in _ints(v, f"{name}[{i}]")]
    return []


def out_of_range(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> str | None:
    """`name=value is out of range (expected an integer in [lo, hi))` for the first integer
    argument of the call outside its `RANGES` entry, or None."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    for name, value in bound.arguments.items():
        lo, hi = RANGES.get(name, SIZE)
        for label, v in _ints(value, name):
            if not lo <= v < hi:
                return (f"{label}={v} is out of range (expected an integer in "
                        f"[{_show_bound(lo)}, {_show_bound(hi)}))")
    return None


def integer_arguments(fn: F) -> F:
    """`fn` with an integer that does not fit its argument (the bindings' OverflowError) made a
    ValueError naming the function, the argument and its accepted range (`RANGES`)."""
    name = getattr(fn, "__name__", "call")

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OverflowError as e:
            why = out_of_range(fn, args, kwargs) or f"an integer argument is out of range ({e})"
            raise ValueError(f"{name}: {why}") from None
        except ValueError as e:
            # The bindings' own range check names the argument but not the function.
            if "is out of range (expected an integer" in str(e) and not str(e).startswith(f"{name}:"):
                raise ValueError(f"{name}: {e}") from None
            raise

    return call  # type: ignore[return-value]
