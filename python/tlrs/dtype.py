"""Scalar-type selection (the reference's `DType`): spellings, `--dtype`/`--float32-mode` parsing,
the default-dtype policy, the proof-only/unsupported checks and the `[tlrs] ...` log lines.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from . import _core
from ._flag_tokens import take_flag_value_once
from .errors import ArgError

LOG_PREFIX = "[tlrs]"

_EXEC_MODE_SPELLINGS = frozenset({"ieee32", "ieee754", "ieee32exec", "ieee754exec"})
# The tensor dtype spellings are the core's one table (rust/src/dtype.rs `SPELLINGS`): spelling
# -> canonical name ("float32" or "float64"). tensor.py and cast.py read it from here.
TENSOR_DTYPE_SPELLINGS: dict[str, str] = dict(_core.dtype_spellings())
_BINARY64_SPELLINGS = frozenset(s for s, d in TENSOR_DTYPE_SPELLINGS.items() if d == "float64")
_FLOAT32_SPELLINGS = frozenset(s for s, d in TENSOR_DTYPE_SPELLINGS.items() if d == "float32")
_COMPLEX_SPELLINGS = frozenset({"complex", "complex32", "cfloat32", "c32"})
_REAL_SPELLINGS = frozenset({"real", "reals", "ℝ"})
# (prefix, kind) pairs for `float32:<mode>`-style values, checked in the reference's order.
_MODE_PREFIXES = (
    ("float32:", "float32"), ("f32:", "float32"), ("complex:", "complex"), ("c32:", "complex")
)

_SUGGEST_FLOAT32 = "for executable binary32 use --dtype float32 (or --dtype float for binary64)"


class Float32Mode(enum.StrEnum):
    """How binary32 values behave: executable IEEE-754 or the proof-only round-on-reals model."""

    IEEE754_EXEC = "ieee754exec"
    FP32 = "fp32"

    @classmethod
    def parse(cls, value: str) -> Float32Mode:
        """Parse a `--float32-mode` value: `fp32`, or `ieee32`/`ieee754`/`ieee32exec`/`ieee754exec`.

        Args: value: the exact, case-sensitive spelling.
        Raises: ArgError: `unknown float32 mode <v> (supported: fp32 | ieee754exec)`.
        """
        if value == "fp32":
            return cls.FP32
        if value in _EXEC_MODE_SPELLINGS:
            return cls.IEEE754_EXEC
        raise ArgError(f"unknown float32 mode {value} (supported: fp32 | ieee754exec)")

    @property
    def summary(self) -> str:
        """The text the `Float32 mode:` log line shows for this mode."""
        if self is Float32Mode.FP32:
            return "fp32: proof semantics (round-on-ℝ), finite-only; no NaN/Inf"
        return "ieee754exec: executable IEEE-754 binary32 kernel (bit-level; includes NaN/Inf)"


class DTypeKind(enum.StrEnum):
    """The four reference dtype variants."""

    FLOAT = "float"
    FLOAT32 = "float32"
    COMPLEX = "complex"
    REAL = "real"


_MODED_KINDS = (DTypeKind.FLOAT32, DTypeKind.COMPLEX)


@dataclass(frozen=True)
class DType:
    """A scalar type choice: `float` (binary64), `float32 <mode>`, `complex <mode>` or `real`.

    Args: kind: the variant (a `DTypeKind` or its name); mode: the binary32 mode, only for
    `float32`/`complex` (default `ieee754exec`).
    Raises: ValueError: unknown kind, or a mode given for `float`/`real`.
    """

    kind: DTypeKind
    mode: Float32Mode | None = None

    def __post_init__(self) -> None:
        kind = DTypeKind(self.kind)
        object.__setattr__(self, "kind", kind)
        if kind in _MODED_KINDS:
            mode = Float32Mode.IEEE754_EXEC if self.mode is None else Float32Mode(self.mode)
            object.__setattr__(self, "mode", mode)
        elif self.mode is not None:
            raise ValueError(f"dtype {kind} takes no float32 mode, got {self.mode!r}")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DType({self.name!r})"

    @property
    def name(self) -> str:
        """Canonical spelling, accepted by `DType.parse`: `float`, `float32`, `float32:fp32`, ..."""
        if self.mode is Float32Mode.FP32:
            return f"{self.kind}:fp32"
        return str(self.kind)

    @property
    def is_executable(self) -> bool:
        """True where the reference can execute it: `float`, `float32`/`complex` in ieee754exec."""
        return self.kind is DTypeKind.FLOAT or (
            self.kind in _MODED_KINDS and self.mode is Float32Mode.IEEE754_EXEC
        )

    @property
    def is_supported(self) -> bool:
        """True where tlrs can run it: `float` (binary64), executable `float32` and `complex`
        (complex64: `tlrs.complex`)."""
        return self.is_executable

    @property
    def numpy_name(self) -> str | None:
        """The NumPy dtype name of the tensors this choice computes with, or None for `real`."""
        return {
            DTypeKind.FLOAT: "float64",
            DTypeKind.FLOAT32: "float32",
            DTypeKind.COMPLEX: "complex64",
        }.get(self.kind)

    def check_runnable(self) -> None:
        """Fail unless tlrs can execute this dtype (the reference's `DType.withRuntime` check).

        Raises: ArgError: proof-only choices (reference text, then a `--dtype float32` suggestion).
        """
        if self.kind is DTypeKind.REAL:
            raise ArgError(
                "dtype=real is proof-only (noncomputable); use it in theorems, not in executables; "
                + _SUGGEST_FLOAT32
            )
        if self.mode is Float32Mode.FP32:
            what = "float32-mode=fp32" if self.kind is DTypeKind.FLOAT32 else "dtype=complex:fp32"
            raise ArgError(
                f"{what} is proof-only (noncomputable); use it in theorems/verification proofs; "
                + _SUGGEST_FLOAT32
            )

    def log_lines(self) -> list[str]:
        """The lines `log` prints, in order (one, or two for `complex`)."""
        mode_line = f"{LOG_PREFIX} Float32 mode: {self.mode.summary}" if self.mode else ""
        if self.kind is DTypeKind.FLOAT:
            return [f"{LOG_PREFIX} dtype: float (IEEE-754 binary64)"]
        if self.kind is DTypeKind.REAL:
            return [f"{LOG_PREFIX} dtype: real (proof-only; not executable)"]
        if self.kind is DTypeKind.FLOAT32:
            # The reference prints no `dtype:` line for float32, only the mode line.
            return [mode_line]
        return [f"{LOG_PREFIX} dtype: complex (complex over float32)", mode_line]

    def log(self) -> None:
        """Print the dtype description to stdout, as the reference's `DType.log`."""
        for line in self.log_lines():
            print(line)

    @classmethod
    def parse(cls, value: str) -> DType:
        """Parse a `--dtype` value (exact, case-sensitive; the reference's order of checks).

        Args: value: e.g. `float`, `float64`, `f32`, `ieee754exec`, `float32:fp32`, `c32:ieee32`.
        Raises: ArgError: the reference's `unknown --dtype ...` or `unknown float32 mode ...` text.
        """
        if value in _BINARY64_SPELLINGS:
            return FLOAT
        if value in _FLOAT32_SPELLINGS:
            return FLOAT32
        if value in _COMPLEX_SPELLINGS:
            return COMPLEX
        if value in _REAL_SPELLINGS:
            return REAL
        if value == "fp32" or value in _EXEC_MODE_SPELLINGS:
            return cls(DTypeKind.FLOAT32, Float32Mode.parse(value))
        for prefix, kind in _MODE_PREFIXES:
            if value.startswith(prefix):
                return cls(DTypeKind(kind), Float32Mode.parse(value[len(prefix):]))
        raise ArgError(
            f"unknown --dtype {value} (supported: float | real | complex | fp32 | ieee754exec"
            " | f32:<mode> | c32:<mode>)"
        )

    @classmethod
    def parse_and_strip_with_default(
        cls, args: Sequence[str], default: DType
    ) -> tuple[DType, list[str]]:
        """Take `--dtype` then `--float32-mode` out of `args`; `default` when neither is given.

        Args: args: argument list (other tokens keep their order); default: the dtype if absent.
        Raises: ArgError: flag errors of `take_flag_value_once` (for `--dtype` first), then
        `--dtype and --float32-mode are mutually exclusive (pick one)`, then a value error.
        """
        dtype_value, rest = take_flag_value_once(args, "dtype")
        mode_value, rest = take_flag_value_once(rest, "float32-mode")
        if dtype_value is not None and mode_value is not None:
            raise ArgError("--dtype and --float32-mode are mutually exclusive (pick one)")
        if dtype_value is not None:
            return cls.parse(dtype_value), rest
        if mode_value is not None:
            return cls(DTypeKind.FLOAT32, Float32Mode.parse(mode_value)), rest
        return default, rest

    @classmethod
    def parse_and_strip(cls, args: Sequence[str]) -> tuple[DType, list[str]]:
        """`parse_and_strip_with_default` with the standalone default, executable `float32`.

        Args: args: argument list. Raises: ArgError: as `parse_and_strip_with_default`.
        """
        return cls.parse_and_strip_with_default(args, FLOAT32)


FLOAT = DType(DTypeKind.FLOAT)
"""IEEE-754 binary64 (the reference's Lean `Float`)."""
FLOAT32 = DType(DTypeKind.FLOAT32, Float32Mode.IEEE754_EXEC)
"""Executable IEEE-754 binary32."""
FLOAT32_FP32 = DType(DTypeKind.FLOAT32, Float32Mode.FP32)
"""Proof-only binary32 (round-on-reals); not executable."""
COMPLEX = DType(DTypeKind.COMPLEX, Float32Mode.IEEE754_EXEC)
"""Complex over executable binary32: complex64 tensors (`tlrs.complex`)."""
COMPLEX_FP32 = DType(DTypeKind.COMPLEX, Float32Mode.FP32)
"""Complex over proof-only binary32; not executable."""
REAL = DType(DTypeKind.REAL)
"""Mathematical reals; proof-only."""
