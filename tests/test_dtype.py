"""DType: every reference spelling, the parse rules, the default policy,
the executability checks and the exact log lines with `[tlrs]`.
"""

import pytest

from tlrs.dtype import (
    COMPLEX,
    COMPLEX_FP32,
    FLOAT,
    FLOAT32,
    FLOAT32_FP32,
    REAL,
    DType,
    DTypeKind,
    Float32Mode,
)
from tlrs.errors import ArgError

UNKNOWN_DTYPE = (
    "unknown --dtype {} (supported: float | real | complex | fp32 | ieee754exec"
    " | f32:<mode> | c32:<mode>)"
)
UNKNOWN_MODE = "unknown float32 mode {} (supported: fp32 | ieee754exec)"
EXEC_LINE = (
    "[tlrs] Float32 mode: ieee754exec: executable IEEE-754 binary32 kernel"
    " (bit-level; includes NaN/Inf)"
)
FP32_LINE = "[tlrs] Float32 mode: fp32: proof semantics (round-on-ℝ), finite-only; no NaN/Inf"


def message(fn, *args) -> str:
    with pytest.raises(ArgError) as info:
        fn(*args)
    return str(info.value)


# (spelling, kind, mode) of the reference's dtype table, plus float64/f64/double (docs/numerics.md).
SPELLINGS = [
    ("float", "float", None),
    ("float64", "float", None),
    ("f64", "float", None),
    ("double", "float", None),
    ("float32", "float32", "ieee754exec"),
    ("f32", "float32", "ieee754exec"),
    ("complex", "complex", "ieee754exec"),
    ("complex32", "complex", "ieee754exec"),
    ("cfloat32", "complex", "ieee754exec"),
    ("c32", "complex", "ieee754exec"),
    ("real", "real", None),
    ("reals", "real", None),
    ("ℝ", "real", None),
    ("fp32", "float32", "fp32"),
    ("ieee32", "float32", "ieee754exec"),
    ("ieee754", "float32", "ieee754exec"),
    ("ieee32exec", "float32", "ieee754exec"),
    ("ieee754exec", "float32", "ieee754exec"),
    ("float32:fp32", "float32", "fp32"),
    ("float32:ieee32", "float32", "ieee754exec"),
    ("float32:ieee754", "float32", "ieee754exec"),
    ("float32:ieee32exec", "float32", "ieee754exec"),
    ("float32:ieee754exec", "float32", "ieee754exec"),
    ("f32:fp32", "float32", "fp32"),
    ("f32:ieee754exec", "float32", "ieee754exec"),
    ("complex:fp32", "complex", "fp32"),
    ("complex:ieee32", "complex", "ieee754exec"),
    ("c32:fp32", "complex", "fp32"),
    ("c32:ieee754exec", "complex", "ieee754exec"),
]


@pytest.mark.parametrize("spelling,kind,mode", SPELLINGS)
def test_every_dtype_spelling(spelling, kind, mode):
    dt = DType.parse(spelling)
    assert (dt.kind, dt.mode) == (kind, mode)
    assert DType.parse_and_strip(["--dtype", spelling]) == (dt, [])
    assert DType.parse_and_strip([f"--dtype={spelling}"]) == (dt, [])


@pytest.mark.parametrize(
    "spelling",
    ["Float", "FLOAT32", "F32", "float16", "bfloat16", "int", "", " float", "float ",
     "complex32:fp32", "cfloat32:fp32", "real:fp32", "float64:fp32", "Real", "fp64"],
)
def test_unknown_dtype_message(spelling):
    assert message(DType.parse, spelling) == UNKNOWN_DTYPE.format(spelling)


@pytest.mark.parametrize(
    "spelling,mode",
    [("float32:", ""), ("f32:", ""), ("complex:", ""), ("c32:", ""), ("float32:FP32", "FP32"),
     ("f32:ieee754Exec", "ieee754Exec"), ("c32:fp64", "fp64"), ("float32:float32", "float32")],
)
def test_bad_mode_inside_dtype(spelling, mode):
    assert message(DType.parse, spelling) == UNKNOWN_MODE.format(mode)


def test_empty_mode_message_has_two_spaces():
    assert message(DType.parse, "float32:") == (
        "unknown float32 mode  (supported: fp32 | ieee754exec)"
    )


@pytest.mark.parametrize(
    "value,mode",
    [("fp32", "fp32"), ("ieee32", "ieee754exec"), ("ieee754", "ieee754exec"),
     ("ieee32exec", "ieee754exec"), ("ieee754exec", "ieee754exec")],
)
def test_float32_mode_flag_selects_float32_never_complex(value, mode):
    for args in (["--float32-mode", value], [f"--float32-mode={value}"]):
        dt, rest = DType.parse_and_strip(args)
        assert (dt.kind, dt.mode, rest) == ("float32", mode, [])


@pytest.mark.parametrize("value", ["FP32", "float32", "exec", "", "fp64", "ieee"])
def test_float32_mode_flag_unknown(value):
    assert message(DType.parse_and_strip, ["--float32-mode", value]) == UNKNOWN_MODE.format(value)


def test_flags_removed_and_other_tokens_keep_order():
    args = ["a", "--dtype", "float", "b", "--x", "c"]
    assert DType.parse_and_strip(args) == (FLOAT, ["a", "b", "--x", "c"])
    assert args == ["a", "--dtype", "float", "b", "--x", "c"]  # input untouched


def test_token_after_dtype_is_its_value_even_if_a_flag():
    assert message(DType.parse_and_strip, ["--dtype", "--cuda"]) == UNKNOWN_DTYPE.format("--cuda")


def test_dtype_as_last_token():
    assert message(DType.parse_and_strip, ["x", "--dtype"]) == "--dtype: expected a value"
    assert message(DType.parse_and_strip, ["--float32-mode"]) == "--float32-mode: expected a value"


@pytest.mark.parametrize(
    "args",
    [["--dtype", "float", "--dtype", "float"], ["--dtype=float", "--dtype", "f32"],
     ["--dtype", "float", "--dtype=float32"], ["--dtype=", "--dtype="]],
)
def test_duplicate_dtype(args):
    assert message(DType.parse_and_strip, args) == "--dtype: duplicate flag"


def test_mutual_exclusion():
    text = "--dtype and --float32-mode are mutually exclusive (pick one)"
    assert message(DType.parse_and_strip, ["--dtype", "float", "--float32-mode", "fp32"]) == text
    assert message(DType.parse_and_strip, ["--float32-mode=fp32", "--dtype=f32"]) == text


def test_error_order_duplicate_then_exclusion_then_value():
    # duplicate --dtype is found while extracting --dtype, before --float32-mode is looked at
    args = ["--float32-mode", "bad", "--dtype", "x", "--dtype", "y"]
    assert message(DType.parse_and_strip, args) == "--dtype: duplicate flag"
    # duplicate --float32-mode comes before the exclusion check
    args = ["--dtype", "float", "--float32-mode", "a", "--float32-mode", "b"]
    assert message(DType.parse_and_strip, args) == "--float32-mode: duplicate flag"
    # the exclusion check comes before either value is parsed
    args = ["--dtype", "bogus", "--float32-mode", "bogus"]
    assert message(DType.parse_and_strip, args) == (
        "--dtype and --float32-mode are mutually exclusive (pick one)"
    )


def test_default_policy_standalone_and_explicit():
    assert DType.parse_and_strip([]) == (FLOAT32, [])
    assert DType.parse_and_strip(["--cuda"]) == (FLOAT32, ["--cuda"])
    assert DType.parse_and_strip_with_default(["a"], FLOAT) == (FLOAT, ["a"])
    assert DType.parse_and_strip_with_default(["--dtype", "f32"], FLOAT) == (FLOAT32, [])


def test_constants_and_names():
    table = [
        (FLOAT, "float", None, "float"),
        (FLOAT32, "float32", "ieee754exec", "float32"),
        (FLOAT32_FP32, "float32", "fp32", "float32:fp32"),
        (COMPLEX, "complex", "ieee754exec", "complex"),
        (COMPLEX_FP32, "complex", "fp32", "complex:fp32"),
        (REAL, "real", None, "real"),
    ]
    for dt, kind, mode, name in table:
        assert (dt.kind, dt.mode, dt.name, str(dt)) == (kind, mode, name, name)
        assert DType.parse(name) == dt


def test_constructor():
    assert DType("float32") == FLOAT32  # mode defaults to ieee754exec
    assert DType(DTypeKind.COMPLEX, Float32Mode.FP32) == COMPLEX_FP32
    with pytest.raises(ValueError):
        DType("float", "fp32")
    with pytest.raises(ValueError):
        DType("float16")
    assert hash(DType("float32")) == hash(FLOAT32)


def test_is_executable_matches_reference():
    assert [d.is_executable for d in (FLOAT, FLOAT32, COMPLEX)] == [True, True, True]
    assert [d.is_executable for d in (REAL, FLOAT32_FP32, COMPLEX_FP32)] == [False, False, False]
    assert [d.is_supported for d in (FLOAT, FLOAT32, COMPLEX)] == [True, True, True]
    assert [d.is_supported for d in (REAL, FLOAT32_FP32, COMPLEX_FP32)] == [False, False, False]


def test_numpy_names():
    assert (FLOAT.numpy_name, FLOAT32.numpy_name, REAL.numpy_name) == ("float64", "float32", None)


def test_runnable_dtypes_pass():
    FLOAT.check_runnable()
    FLOAT32.check_runnable()
    COMPLEX.check_runnable()
    assert COMPLEX.numpy_name == "complex64"


@pytest.mark.parametrize(
    "dt,reference_text",
    [
        (REAL, "dtype=real is proof-only (noncomputable); use it in theorems, not in executables"),
        (FLOAT32_FP32, "float32-mode=fp32 is proof-only (noncomputable); use it in theorems/"
                       "verification proofs"),
        (COMPLEX_FP32, "dtype=complex:fp32 is proof-only (noncomputable); use it in theorems/"
                       "verification proofs"),
    ],
)
def test_proof_only_dtypes_fail_and_suggest_float32(dt, reference_text):
    text = message(dt.check_runnable)
    assert text.startswith(reference_text)
    assert "proof-only" in text and "--dtype float32" in text


def test_fp32_spelling_fails_with_helpful_message():
    text = message(DType.parse("fp32").check_runnable)
    assert "proof-only" in text and "--dtype float32" in text


@pytest.mark.parametrize(
    "dt,lines",
    [
        (FLOAT, ["[tlrs] dtype: float (IEEE-754 binary64)"]),
        (REAL, ["[tlrs] dtype: real (proof-only; not executable)"]),
        (FLOAT32, [EXEC_LINE]),
        (FLOAT32_FP32, [FP32_LINE]),
        (COMPLEX, ["[tlrs] dtype: complex (complex over float32)", EXEC_LINE]),
        (COMPLEX_FP32, ["[tlrs] dtype: complex (complex over float32)", FP32_LINE]),
    ],
)
def test_log_lines(dt, lines, capsys):
    dt.log()
    captured = capsys.readouterr()
    assert captured.out == "".join(line + "\n" for line in lines)
    assert captured.err == ""
