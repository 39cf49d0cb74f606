"""Checks of integer arguments shared by the Python wrappers: out of range is a ValueError
naming the argument (the bindings would raise OverflowError)."""

from __future__ import annotations


def natural(what: str, value: object, bound: int) -> int:
    """`value` if it is an int (not a bool) in [0, bound), else ValueError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < bound:
        raise ValueError(f"{what} must be an integer in [0, {bound}), got {value!r}")
    return value
