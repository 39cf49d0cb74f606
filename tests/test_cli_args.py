"""The reference CLI helpers: values taken, tokens left in order, and the
exact error texts, including their edge cases.
"""

import math

import pytest

from tlrs.cli import args as cli
from tlrs.errors import ArgError


def message(fn, *args) -> str:
    with pytest.raises(ArgError) as info:
        fn(*args)
    return str(info.value)


# --- take_flag_value_once ---------------------------------------------------------------

def test_take_flag_value_absent():
    assert cli.take_flag_value_once(["a", "--b", "c"], "key") == (None, ["a", "--b", "c"])
    assert cli.take_flag_value_once([], "key") == (None, [])


def test_take_flag_value_both_forms():
    assert cli.take_flag_value_once(["a", "--out", "x.json", "b"], "out") == ("x.json", ["a", "b"])
    assert cli.take_flag_value_once(["a", "--out=x=y", "b"], "out") == ("x=y", ["a", "b"])
    assert cli.take_flag_value_once(["--out="], "out") == ("", [])


def test_take_flag_value_next_token_is_value_whatever_it_is():
    assert cli.take_flag_value_once(["--out", "--cuda", "z"], "out") == ("--cuda", ["z"])
    assert cli.take_flag_value_once(["--out", "--out"], "out") == ("--out", [])
    assert cli.take_flag_value_once(["--out", ""], "out") == ("", [])


def test_take_flag_value_missing_value():
    assert message(cli.take_flag_value_once, ["a", "--out"], "out") == "--out: expected a value"
    # checked before the duplicate check, even after an earlier occurrence
    assert message(cli.take_flag_value_once, ["--out=1", "--out"], "out") == (
        "--out: expected a value"
    )


@pytest.mark.parametrize(
    "args",
    [["--k", "1", "--k", "2"], ["--k=1", "--k=2"], ["--k", "1", "--k="], ["--k=", "--k", "1"]],
)
def test_take_flag_value_duplicate(args):
    assert message(cli.take_flag_value_once, args, "k") == "--k: duplicate flag"


def test_take_flag_value_exact_prefix_only():
    args = ["--keyfoo", "1", "--key-x=2", "--ke", "-key", "--KEY=3"]
    assert cli.take_flag_value_once(args, "key") == (None, args)


def test_take_flag_value_does_not_mutate_input():
    args = ["--k", "1", "x"]
    cli.take_flag_value_once(args, "k")
    assert args == ["--k", "1", "x"]


def test_flag_value_default_required_and_lookup():
    assert cli.take_flag_value_default(["x"], "out", "d.json") == ("d.json", ["x"])
    assert cli.take_flag_value_default(["--out=e"], "out", "d") == ("e", [])
    assert cli.take_required_flag_value(["--out", "p"], "out") == ("p", [])
    assert message(cli.take_required_flag_value, ["x"], "out") == "missing --out=<value>"
    assert message(cli.take_required_flag_value, [], "out", "need --out") == "need --out"
    assert cli.flag_value(["a", "--out=p", "b"], "out") == "p"
    assert cli.flag_value(["a"], "out") is None
    assert cli.require_flag_value(["--out", "p"], "out") == "p"
    assert message(cli.require_flag_value, ["a"], "out") == "missing --out=<value>"
    assert message(cli.flag_value, ["--out=1", "--out=2"], "out") == "--out: duplicate flag"


def test_take_parsed_flag_default_runs_the_default_through_the_parser():
    seen = []

    def parse(s: str) -> int:
        seen.append(s)
        if s == "bad":
            raise ArgError("bad value")
        return len(s)

    assert cli.take_parsed_flag_default(["a"], "mode", "four", parse) == (4, ["a"])
    assert cli.take_parsed_flag_default(["--mode", "xy"], "mode", "four", parse) == (2, [])
    assert seen == ["four", "xy"]
    assert message(cli.take_parsed_flag_default, [], "mode", "bad", parse) == "bad value"


def test_has_flag_value():
    assert cli.has_flag_value(["--out"], "out")
    assert cli.has_flag_value(["a", "--out=x"], "out")
    assert not cli.has_flag_value(["--outx", "--ou", "out"], "out")


def test_strip_flag_values_removes_every_occurrence():
    args = ["a", "--x", "1", "--y=2", "b", "--x=3", "--z", "4", "--y"]
    assert cli.strip_flag_values(args, ["x", "y"]) == ["a", "b", "--z", "4"]


# --- bool flags and `--` ---------------------------------------------------------------------

def test_take_bool_flag_once():
    assert cli.take_bool_flag_once(["a", "--v", "b"], "v") == (True, ["a", "b"])
    assert cli.take_bool_flag_once(["a", "--v=1"], "v") == (False, ["a", "--v=1"])
    assert message(cli.take_bool_flag_once, ["--v", "--v"], "v") == "--v: duplicate flag"


@pytest.mark.parametrize(
    "args,expected",
    [(["--", "a"], ["a"]), (["--", "--", "a"], ["--", "a"]), (["a", "--"], ["a", "--"]),
     ([], []), (["---"], ["---"])],
)
def test_drop_dash_dash(args, expected):
    assert cli.drop_dash_dash(args) == expected


def test_has_help():
    assert cli.has_help(["a", "-h"]) and cli.has_help(["--help", "x"])
    assert not cli.has_help(["--helpme", "-H", "help"])


def test_require_no_args():
    cli.require_no_args([])
    assert message(cli.require_no_args, ["a", "b"]) == "unexpected arguments: [a, b]"
    assert message(cli.require_no_args, ["--x"]) == "unexpected arguments: [--x]"


def test_take_positional_once():
    assert cli.take_positional_once(["--x", "a", "--y"]) == ("a", ["--x", "--y"])
    assert cli.take_positional_once(["--x"]) == (None, ["--x"])
    assert cli.take_positional_once(["-h"]) == ("-h", [])
    assert message(cli.take_positional_once, ["a", "--x", "b"]) == (
        "unexpected positional argument: b"
    )


@pytest.mark.parametrize(
    "text,value",
    [("0", 0), ("7", 7), ("007", 7), ("1234567890", 1234567890),
     ("18446744073709551616", 2**64)],
)
def test_parse_nat_accepts_ascii_digits(text, value):
    assert cli.parse_nat(text) == value


def test_parse_nat_has_no_size_limit():
    assert cli.parse_nat("9" * 5000) == 10**5000 - 1
    assert cli.parse_nat("1" + "0" * 4400) == 10**4400


@pytest.mark.parametrize(
    "text",
    ["", "-1", "+1", " 1", "1 ", "0x10", "1_000", "1.0", "1e3", "١٢", "²", "１", "abc", "-0"],
)
def test_parse_nat_rejects(text):
    assert cli.parse_nat(text) is None


def test_take_nat_flag_once():
    assert cli.take_nat_flag_once(["--n", "12", "x"], "n") == (12, ["x"])
    assert cli.take_nat_flag_once(["x"], "n") == (None, ["x"])
    assert message(cli.take_nat_flag_once, ["--n", "1.5"], "n") == (
        "--n: expected a natural number, got `1.5`"
    )


def test_take_seed():
    assert cli.take_seed([]) == (0, [])
    assert cli.take_seed(["a"], 42) == (42, ["a"])
    assert cli.take_seed(["--seed", "7", "a"]) == (7, ["a"])
    assert cli.take_seed(["a", "--seed=7"]) == (7, ["a"])
    assert cli.take_seed(["--seed=0007"]) == (7, [])
    assert message(cli.take_seed, ["--seed", "-1"]) == "--seed: expected a natural number, got `-1`"
    assert message(cli.take_seed, ["--seed=abc"]) == "--seed: expected a natural number, got `abc`"
    assert message(cli.take_seed, ["--seed="]) == "--seed: expected a natural number, got ``"
    assert message(cli.take_seed, ["--seed", "1", "--seed=2"]) == "--seed: duplicate flag"
    assert message(cli.take_seed, ["--seed"]) == "--seed: expected a value"


@pytest.mark.parametrize(
    "text,value",
    [("1", 1.0), ("-0.5", -0.5), ("1e-3", 0.001), ("2E+4", 20000.0), ("0", 0.0), ("0.0", 0.0),
     ("1.5e2", 150.0), ("1e05", 100000.0), ("-12.25", -12.25), ("123456789", 123456789.0),
     (" 1 ", 1.0), ("\t2.5\n", 2.5), ("\r\n3", 3.0), ("1e400", math.inf), ("-1e400", -math.inf),
     ("1e-400", 0.0), ("0.1", 0.1), ("1E18446744073709551616", math.inf)],
)
def test_parse_float_lit_accepts_json_numbers(text, value):
    assert cli.parse_float_lit(text) == value


def test_parse_float_lit_zero_signs():
    # the reference's JSON mantissa is an integer: -0 has no sign; an underflow keeps it
    assert math.copysign(1.0, cli.parse_float_lit("-0")) == 1.0
    assert math.copysign(1.0, cli.parse_float_lit("-0.000e5")) == 1.0
    assert math.copysign(1.0, cli.parse_float_lit("-1e-400")) == -1.0


@pytest.mark.parametrize(
    "text",
    [".5", "1.", "+1", "01", "-01", "inf", "-inf", "nan", "NaN", "Infinity", "1_0", "", "-",
     "1e", "1e+", "1e-", "e5", "0x1", "1.0.0", "1,5", "\f1", "\v1", "\u00a01", "1 2", "1e5.0",
     "--1", "١", "1E18446744073709551617", "1e99999999999999999999"],
)
def test_parse_float_lit_rejects(text):
    assert cli.parse_float_lit(text) is None


def test_take_float_flag_once():
    assert cli.take_float_flag_once(["--lr", "0.01", "x"], "lr") == (0.01, ["x"])
    assert cli.take_float_flag_once(["x"], "lr") == (None, ["x"])
    assert message(cli.take_float_flag_once, ["--lr", ".5"], "lr") == (
        "--lr: expected a JSON-style float literal, got `.5`"
    )
    assert message(cli.take_float_flag_once, ["--lr=1."], "lr") == (
        "--lr: expected a JSON-style float literal, got `1.`"
    )


def test_take_path_flag_once_is_verbatim():
    assert cli.take_path_flag_once(["--csv", "a//b/./"], "csv") == ("a//b/./", [])
    assert cli.take_path_flag_once(["--csv="], "csv") == ("", [])


def test_take_epoch_batch():
    eb, rest = cli.take_epoch_batch(["--batch", "8", "x", "--epochs=3"], 1, 5)
    assert (eb.epochs, eb.batch, rest) == (3, 8, ["x"])
    eb, rest = cli.take_epoch_batch([], 2, 5)
    assert (eb.epochs, eb.batch, rest) == (2, 5, [])
    # --epochs is parsed first
    assert message(cli.take_epoch_batch, ["--batch", "x", "--epochs", "y"], 1, 1) == (
        "--epochs: expected a natural number, got `y`"
    )


def test_take_positive_epoch_batch():
    eb, _ = cli.take_positive_epoch_batch(["--epochs", "2"], "cnn", 1, 4)
    assert (eb.epochs, eb.batch) == (2, 4)
    args = ["--epochs", "0", "--batch", "0"]
    assert message(cli.take_positive_epoch_batch, args, "cnn", 1, 1) == "cnn: --epochs must be > 0"
    args = ["--batch", "0"]
    assert message(cli.take_positive_epoch_batch, args, "cnn", 1, 1) == "cnn: --batch must be > 0"


def test_take_steps_or_epochs():
    assert cli.take_steps_or_epochs(["x"], 10) == (10, ["x"])
    assert cli.take_steps_or_epochs(["--steps", "5", "x"], 10) == (5, ["x"])
    assert cli.take_steps_or_epochs(["--epochs=6"], 10) == (6, [])
    assert cli.take_steps_or_epochs(["--steps", "0"], 10) == (0, [])
    text = "--steps and --epochs are mutually exclusive (pick one)"
    assert message(cli.take_steps_or_epochs, ["--steps", "1", "--epochs", "2"], 10) == text
    # value and duplicate errors come before the exclusion check, --steps first
    assert message(cli.take_steps_or_epochs, ["--epochs", "1", "--steps", "x"], 10) == (
        "--steps: expected a natural number, got `x`"
    )
    assert message(cli.take_steps_or_epochs, ["--steps", "1", "--epochs", "-2"], 10) == (
        "--epochs: expected a natural number, got `-2`"
    )
    args = ["--steps", "1", "--epochs", "1", "--epochs", "2"]
    assert message(cli.take_steps_or_epochs, args, 10) == "--epochs: duplicate flag"


def test_take_steps_flag_default():
    assert cli.take_steps_flag_default(["--steps=9"], 3) == (9, [])
    assert cli.take_steps_flag_default(["--epochs=9"], 3) == (3, ["--epochs=9"])


# --- typed values (naturals, floats) ---------------------------------------------------------

def test_nat_defaults_and_positive():
    assert cli.take_nat_flag_default(["--n", "4"], "n", 1) == (4, [])
    assert cli.take_nat_flag_default([], "n", 1) == (1, [])
    assert cli.take_positive_nat_flag_default([], "mlp", "steps", 3) == (3, [])
    assert message(cli.take_positive_nat_flag_default, ["--steps=0"], "mlp", "steps", 3) == (
        "mlp: --steps must be > 0"
    )
    assert message(cli.take_positive_nat_flag_default, [], "mlp", "steps", 0) == (
        "mlp: --steps must be > 0"
    )


def test_float_defaults_required_positive_nonnegative():
    assert cli.take_float_flag_default([], "lr", 0.5) == (0.5, [])
    assert cli.take_float_flag_default(["--lr=2"], "lr", 0.5) == (2.0, [])
    assert cli.take_required_float_flag(["--lr", "1e-2"], "lr") == (0.01, [])
    assert message(cli.take_required_float_flag, [], "lr") == "missing --lr=<float>"
    assert message(cli.take_required_float_flag, [], "lr", "give --lr") == "give --lr"
    assert cli.take_positive_float_flag_default(["--lr", "0.1"], "mlp", "lr", 1.0) == (0.1, [])
    assert message(cli.take_positive_float_flag_default, ["--lr", "0"], "mlp", "lr", 1.0) == (
        "mlp: --lr must be > 0"
    )
    assert message(cli.take_positive_float_flag_default, ["--lr=-1"], "mlp", "lr", 1.0) == (
        "mlp: --lr must be > 0"
    )
    assert cli.take_nonnegative_float_flag_default(["--wd=0"], "mlp", "wd", 1.0) == (0.0, [])
    assert message(cli.take_nonnegative_float_flag_default, ["--wd=-0.5"], "mlp", "wd", 1.0) == (
        "mlp: --wd must be >= 0"
    )


@pytest.mark.parametrize(
    "text,value",
    [("true", True), ("TRUE", True), ("True", True), ("1", True), ("false", False),
     ("FaLsE", False), ("0", False)],
)
def test_parse_bool_lit_accepts(text, value):
    assert cli.parse_bool_lit(text) is value


@pytest.mark.parametrize("text", ["yes", "no", "", "2", " true", "true ", "t", "01", "ＴＲＵＥ"])
def test_parse_bool_lit_rejects(text):
    assert cli.parse_bool_lit(text) is None


def test_bool_value_flags():
    assert cli.take_bool_value_flag_once(["--log", "false", "x"], "log") == (False, ["x"])
    assert cli.take_bool_value_flag_once(["x"], "log") == (None, ["x"])
    assert cli.take_bool_value_flag_default([], "log", True) == (True, [])
    assert cli.take_bool_value_flag_default(["--log=0"], "log", True) == (False, [])
    assert message(cli.take_bool_value_flag_once, ["--log", "out.json"], "log") == (
        "--log: expected true, false, 1, or 0; got `out.json`"
    )


def test_take_paired_path_flags():
    args = ["--merges", "m.txt", "x", "--vocab=v.json"]
    assert cli.take_paired_path_flags(args, "vocab", "merges") == (("v.json", "m.txt"), ["x"])
    assert cli.take_paired_path_flags(["x"], "vocab", "merges") == ((None, None), ["x"])
    assert message(cli.take_paired_path_flags, ["--vocab=v"], "vocab", "merges") == (
        "--vocab requires --merges"
    )
    assert message(cli.take_paired_path_flags, ["--merges=m"], "vocab", "merges") == (
        "--merges requires --vocab"
    )


def test_arg_error_is_a_value_error():
    with pytest.raises(ValueError):
        cli.take_seed(["--seed", "x"])
