"""The reference's command-line helpers (`NN.API.CLI`) in snake case: each takes an argument list
and returns `(value, rest)`, unconsumed tokens in their original order, or raises `ArgError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

# The token-level primitives live below the CLI (library types read their flags with them); the
# CLI helpers are built on them and re-export them under their old names.
from .._flag_tokens import Args as Args
from .._flag_tokens import Taken as Taken
from .._flag_tokens import parse_nat as parse_nat
from .._flag_tokens import take_flag_value_default as take_flag_value_default
from .._flag_tokens import take_flag_value_once as take_flag_value_once
from .._flag_tokens import take_parsed_flag_default as take_parsed_flag_default
from ..errors import ArgError
from ..errors import format_bytes as format_bytes

T = TypeVar("T")

# JSON number syntax (what Lean.Json.parse accepts), JSON whitespace allowed around it.
_JSON_NUMBER = re.compile(
    r"[ \t\n\r]*-?(?P<int>0|[1-9][0-9]*)(?:\.(?P<frac>[0-9]+))?"
    r"(?:[eE](?P<esign>[+-]?)(?P<exp>[0-9]+))?[ \t\n\r]*"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_USIZE_SIZE = 2**64  # Lean's `USize.size`: the reference rejects larger positive exponents


def take_required_flag_value(args: Args, key: str, missing: str | None = None) -> Taken[str]:
    """`take_flag_value_once` for a flag that must be present.

    Args: missing: message replacing the default one. Raises ArgError: as `take_flag_value_once`,
    or `missing --key=<value>` (or `missing`) when absent.
    """
    value, rest = take_flag_value_once(args, key)
    if value is None:
        raise ArgError(missing if missing is not None else f"missing --{key}=<value>")
    return value, rest


def flag_value(args: Args, key: str) -> str | None:
    """The value `take_flag_value_once` would take, or None; raises ArgError as it does."""
    return take_flag_value_once(args, key)[0]


def require_flag_value(args: Args, key: str) -> str:
    """`flag_value` for a required flag; ArgError as it, or `missing --key=<value>` when absent."""
    value = flag_value(args, key)
    if value is None:
        raise ArgError(f"missing --{key}=<value>")
    return value


def has_flag_value(args: Args, key: str) -> bool:
    """True iff some token is `--key` or starts with `--key=`; removes nothing."""
    return any(a == f"--{key}" or a.startswith(f"--{key}=") for a in args)


def strip_flag_values(args: Args, keys: Sequence[str]) -> list[str]:
    """Remove every `--key V` and `--key=V` for each of `keys`, without duplicate checks.

    Args: keys: flag names without dashes. A bare `--key` as the last token is dropped too.
    """
    rest: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if any(tok.startswith(f"--{k}=") for k in keys):
            i += 1
        elif any(tok == f"--{k}" for k in keys):
            i += 2
        else:
            rest.append(tok)
            i += 1
    return rest


def take_bool_flag_once(args: Args, key: str) -> Taken[bool]:
    """Remove the exact token `--key` once, saying if it was there; ArgError on a duplicate."""
    seen = False
    rest: list[str] = []
    for tok in args:
        if tok != f"--{key}":
            rest.append(tok)
        elif seen:
            raise ArgError(f"--{key}: duplicate flag")
        else:
            seen = True
    return seen, rest


def drop_dash_dash(args: Args) -> list[str]:
    """Drop the first token if it is exactly `--`; later tokens are not examined."""
    return list(args[1:]) if args and args[0] == "--" else list(args)


def has_help(args: Args) -> bool:
    """True iff `--help` or `-h` appears anywhere."""
    return "--help" in args or "-h" in args


def shorten(text: str, limit: int = 120) -> str:
    """`text` for a message: cut in the middle (`abc...xyz (N characters)`) when over `limit`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-limit // 3:]} ({len(text):,} characters)"


def require_no_args(args: Args) -> None:
    """Fail if any argument is left: ArgError `unexpected arguments: [a, b]` (Lean's rendering;
    over-long arguments are shortened)."""
    if args:
        raise ArgError(f"unexpected arguments: [{', '.join(shorten(a) for a in args)}]")


def take_positional_once(args: Args) -> Taken[str | None]:
    """Take at most one positional (a token not starting with `--`); flags stay in `rest`.

    Raises ArgError: `unexpected positional argument: <a>` for a second positional.
    """
    found: str | None = None
    rest: list[str] = []
    for tok in args:
        if tok.startswith("--"):
            rest.append(tok)
        elif found is not None:
            raise ArgError(f"unexpected positional argument: {tok}")
        else:
            found = tok
    return found, rest



def format_nat(n: int) -> str:
    """A natural for messages and logs: its digits, or, past a few thousand digits (which Python
    will not convert to text), `<B-bit number, N mod 2^64>` (the reference reduces seeds mod
    2^64)."""
    if n.bit_length() <= 10_000:
        return str(n)
    return f"<{n.bit_length()}-bit number, {n % 2**64} mod 2^64>"


def take_nat_flag_once(args: Args, key: str) -> Taken[int | None]:
    """`take_flag_value_once`, then `parse_nat`.

    Raises ArgError: as `take_flag_value_once`, or ``--key: expected a natural number, got `v` ``.
    """
    return take_value_flag_once(args, key, NAT)


def take_nat_flag_default(args: Args, key: str, default: int) -> Taken[int]:
    """`take_nat_flag_once` with `default` when absent; raises ArgError as it does."""
    n, rest = take_nat_flag_once(args, key)
    return (default if n is None else n), rest


def take_positive_nat_flag_default(args: Args, exe_name: str, key: str, default: int) -> Taken[int]:
    """`take_nat_flag_default`, then require a value > 0.

    Raises ArgError: as `take_nat_flag_once`, or `<exe_name>: --key must be > 0`.
    """
    n, rest = take_nat_flag_default(args, key, default)
    if n == 0:
        raise ArgError(f"{exe_name}: --{key} must be > 0")
    return n, rest


def parse_float_lit(s: str) -> float | None:
    """Parse a JSON number (`1`, `-0.5`, `1e-3`, `2E+4`) to binary64; None for anything else.

    Args: s: `.5`, `1.`, `+1`, `01`, `inf`, `nan`, `1_0` are rejected; as in the reference, JSON
    whitespace may surround the number, `-0` gives +0.0 and a positive exponent above 2**64 fails.
    """
    m = _JSON_NUMBER.fullmatch(s)
    if m is None:
        return None
    if m["exp"] is not None and m["esign"] != "-":
        digits = m["exp"].lstrip("0")
        if len(digits) > 20 or (digits and int(digits) > _USIZE_SIZE):
            return None  # the reference's "exp too large"
    if not (m["int"] + (m["frac"] or "")).strip("0"):
        return 0.0  # the reference's mantissa is an integer, so `-0` has no sign
    return float(s.strip(" \t\n\r"))


def take_float_flag_once(args: Args, key: str) -> Taken[float | None]:
    """`take_flag_value_once`, then `parse_float_lit`.

    Raises ArgError: as `take_flag_value_once`, or
    ``--key: expected a JSON-style float literal, got `v` ``.
    """
    return take_value_flag_once(args, key, FLOAT)


def take_float_flag_default(args: Args, key: str, default: float) -> Taken[float]:
    """`take_float_flag_once` with `default` when absent; raises ArgError as it does."""
    x, rest = take_float_flag_once(args, key)
    return (default if x is None else x), rest


def take_required_float_flag(args: Args, key: str, missing: str | None = None) -> Taken[float]:
    """`take_float_flag_once` for a flag that must be present.

    Args: missing: message replacing the default one. Raises ArgError: as `take_float_flag_once`,
    or `missing --key=<float>` (or `missing`) when absent.
    """
    x, rest = take_float_flag_once(args, key)
    if x is None:
        raise ArgError(missing if missing is not None else f"missing --{key}=<float>")
    return x, rest


def take_positive_float_flag_default(
    args: Args, exe_name: str, key: str, default: float
) -> Taken[float]:
    """`take_float_flag_default`, then require a value > 0.

    Raises ArgError: as `take_float_flag_once`, or `<exe_name>: --key must be > 0`.
    """
    x, rest = take_float_flag_default(args, key, default)
    if x <= 0.0:
        raise ArgError(f"{exe_name}: --{key} must be > 0")
    return x, rest


def take_nonnegative_float_flag_default(
    args: Args, exe_name: str, key: str, default: float
) -> Taken[float]:
    """`take_float_flag_default`, then require a value >= 0.

    Raises ArgError: as `take_float_flag_once`, or `<exe_name>: --key must be >= 0`.
    """
    x, rest = take_float_flag_default(args, key, default)
    if x < 0.0:
        raise ArgError(f"{exe_name}: --{key} must be >= 0")
    return x, rest


def parse_bool_lit(s: str) -> bool | None:
    """Parse `true`/`1` or `false`/`0`, ASCII letters in any case; None for anything else."""
    return {"true": True, "1": True, "false": False, "0": False}.get(s.translate(_ASCII_LOWER))


@dataclass(frozen=True)
class ValueKind(Generic[T]):
    """How a flag's value is read: its parser (None: not a value of this kind) and the message
    naming what was expected (`{}` is the value given, shortened when long)."""

    parse: Callable[[str], T | None]
    expected: str


# The one table of flag value kinds: every helper here and in tlrs.cli.commands reads values with it.
NAT: ValueKind[int] = ValueKind(parse_nat, "expected a natural number, got `{}`")
FLOAT: ValueKind[float] = ValueKind(parse_float_lit, "expected a JSON-style float literal, got `{}`")
BOOL: ValueKind[bool] = ValueKind(parse_bool_lit, "expected true, false, 1, or 0; got `{}`")


def take_value_flag_once(args: Args, key: str, kind: ValueKind[T]) -> Taken[T | None]:
    """`take_flag_value_once`, then `kind.parse`.

    Raises ArgError: as `take_flag_value_once`, or `--key: <kind.expected>` naming the value.
    """
    value, rest = take_flag_value_once(args, key)
    if value is None:
        return None, rest
    parsed = kind.parse(value)
    if parsed is None:
        raise ArgError(f"--{key}: " + kind.expected.format(shorten(value)))
    return parsed, rest


def take_bool_value_flag_once(args: Args, key: str) -> Taken[bool | None]:
    """`take_flag_value_once`, then `parse_bool_lit`.

    Raises ArgError: as `take_flag_value_once`, or
    ``--key: expected true, false, 1, or 0; got `v` ``.
    """
    return take_value_flag_once(args, key, BOOL)


def take_bool_value_flag_default(args: Args, key: str, default: bool) -> Taken[bool]:
    """`take_bool_value_flag_once` with `default` when absent; raises ArgError as it does."""
    b, rest = take_bool_value_flag_once(args, key)
    return (default if b is None else b), rest




def take_path_flag_once(args: Args, key: str) -> Taken[str | None]:
    """`take_flag_value_once` for a path, kept verbatim; raises ArgError as it does."""
    return take_flag_value_once(args, key)




def take_paired_path_flags(
    args: Args, key1: str, key2: str
) -> Taken[tuple[str | None, str | None]]:
    """Take two path flags (`key1` first) that must appear together or not at all.

    Raises ArgError: as `take_flag_value_once`, `--key1 requires --key2`, `--key2 requires --key1`.
    """
    p1, rest = take_path_flag_once(args, key1)
    p2, rest = take_path_flag_once(rest, key2)
    if p1 is not None and p2 is None:
        raise ArgError(f"--{key1} requires --{key2}")
    if p1 is None and p2 is not None:
        raise ArgError(f"--{key2} requires --{key1}")
    return (p1, p2), rest


@dataclass(frozen=True)
class EpochBatch:
    """Epoch count and batch size from `--epochs` and `--batch`."""

    epochs: int
    batch: int


def take_epoch_batch(args: Args, default_epochs: int, default_batch: int) -> Taken[EpochBatch]:
    """Take `--epochs` then `--batch` (naturals, once each), with defaults; ArgError as naturals."""
    epochs, rest = take_nat_flag_default(args, "epochs", default_epochs)
    batch, rest = take_nat_flag_default(rest, "batch", default_batch)
    return EpochBatch(epochs, batch), rest


def take_positive_epoch_batch(
    args: Args, exe_name: str, default_epochs: int, default_batch: int
) -> Taken[EpochBatch]:
    """`take_epoch_batch`, then require both values > 0 (epochs checked first).

    Raises ArgError: as `take_nat_flag_once`, `<exe_name>: --epochs must be > 0`,
    `<exe_name>: --batch must be > 0`.
    """
    eb, rest = take_epoch_batch(args, default_epochs, default_batch)
    for name, value in (("epochs", eb.epochs), ("batch", eb.batch)):
        if value == 0:
            raise ArgError(f"{exe_name}: --{name} must be > 0")
    return eb, rest


def take_steps_or_epochs(args: Args, default: int) -> Taken[int]:
    """Take `--steps` then `--epochs` (synonym naturals; zero allowed), with `default`.

    Raises ArgError: as `take_nat_flag_once` (steps first), then
    `--steps and --epochs are mutually exclusive (pick one)`.
    """
    steps, rest = take_nat_flag_once(args, "steps")
    epochs, rest = take_nat_flag_once(rest, "epochs")
    if steps is not None and epochs is not None:
        raise ArgError("--steps and --epochs are mutually exclusive (pick one)")
    if steps is not None:
        return steps, rest
    return (default if epochs is None else epochs), rest


def take_steps_flag_default(args: Args, default: int) -> Taken[int]:
    """Take `--steps` (a natural, at most once) with `default`; ArgError as `take_nat_flag_once`."""
    return take_nat_flag_default(args, "steps", default)


def take_seed(args: Args, default: int = 0) -> Taken[int]:
    """Take `--seed N` or `--seed=N` (a natural, once), with `default`; ArgError as naturals."""
    return take_nat_flag_default(args, "seed", default)
