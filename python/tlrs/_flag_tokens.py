"""Reading one flag out of an argument list, and a natural number out of a string: the
token-level primitives under the CLI helpers (cli/args.py re-exports them). They use nothing but
the standard library and `ArgError`, so the library's own argument readers (`DType.parse_and_strip`,
`ExecConfig.parse_and_strip`, `parse_device`) need nothing from the CLI.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeVar

from .errors import ArgError

__all__ = ["Args", "Taken", "parse_nat", "take_flag_value_default", "take_flag_value_once",
           "take_parsed_flag_default"]

T = TypeVar("T")
Args: TypeAlias = Sequence[str]
"""An argument list; flag keys are passed without dashes (`"seed"` for `--seed`)."""
Taken: TypeAlias = tuple[T, list[str]]
"""A helper's answer: the value it took, and the arguments left (in their original order)."""


def take_flag_value_once(args: Args, key: str) -> Taken[str | None]:
    """Remove at most one `--key V` or `--key=V`; the token after `--key` is V, whatever it is.

    Returns (V or None, rest). Raises ArgError: `--key: expected a value` when `--key` is the last
    token (checked first), `--key: duplicate flag` on a second occurrence of either form.
    """
    key_tok, eq_prefix = f"--{key}", f"--{key}="
    found: str | None = None
    rest: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == key_tok or tok.startswith(eq_prefix):
            if tok == key_tok and i + 1 == len(args):
                raise ArgError(f"{key_tok}: expected a value")
            if found is not None:
                raise ArgError(f"{key_tok}: duplicate flag")
            if tok == key_tok:
                found = args[i + 1]
                i += 1
            else:
                found = tok[len(eq_prefix):]
        else:
            rest.append(tok)
        i += 1
    return found, rest


def take_flag_value_default(args: Args, key: str, default: str) -> Taken[str]:
    """`take_flag_value_once` with `default` when absent; raises ArgError as it does."""
    value, rest = take_flag_value_once(args, key)
    return (default if value is None else value), rest


def take_parsed_flag_default(
    args: Args, key: str, default: str, parse: Callable[[str], T]
) -> Taken[T]:
    """Take `--key` once, use the spelling `default` when absent, then decode it with `parse`.

    Raises ArgError: as `take_flag_value_once`, or whatever `parse` raises (default included).
    """
    raw, rest = take_flag_value_default(args, key, default)
    return parse(raw), rest


def parse_nat(s: str) -> int | None:
    """Parse a natural as Lean's `String.toNat?`: a non-empty run of ASCII digits, else None.

    Args: s: no sign, whitespace or `_`; leading zeros are fine; any size.
    """
    if not s or any(c < "0" or c > "9" for c in s):
        return None
    value = 0
    for start in range(0, len(s), 1000):  # chunks stay under Python's int-from-str digit limit
        chunk = s[start:start + 1000]
        value = value * 10 ** len(chunk) + int(chunk)
    return value
