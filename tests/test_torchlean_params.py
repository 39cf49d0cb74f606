"""TorchLean parameter files (`torchlean_paramlist_bits_v1`, TorchLean's
NN/Runtime/Autograd/TorchLean/ParamIO.lean): byte-exact writing (a hand-laid fixture and a port of
Lean's `Json.render` + `Std.Format.pretty` as the oracle), exact-bit round trips, every reader
error, `Module.save/load` and `tlrs convert` both ways."""

from __future__ import annotations

import dataclasses
import json
import os
import random

import numpy as np
import pytest

import tlrs
from tlrs import _core
from tlrs.cli import main
from tlrs.errors import CheckpointError, ShapeError
from tlrs.interop.torchlean_params import (
    is_torchlean_file,
    read_torchlean_arrays,
    read_torchlean_params,
    render_torchlean,
    write_torchlean_params,
)
from tlrs.module import Module, ModuleDef, instantiate_with_options

# --- the fixture: what TorchLean's writeParamBits (pretty) writes, laid out by hand ---------------
# Lean's Json.render prints object keys in descending order ("params" before "format", "values"
# before "shape"); a group that does not fit in 80 columns breaks every line of its own, the
# continuation indented by the brackets' nesting; no trailing newline.

F64 = np.array([0x3FF0000000000000, 0x8000000000000000, 0x7FF0000000000000, 0x7FF8000000000123],
               dtype=np.uint64).view(np.float64).reshape(2, 2)   # 1.0, -0.0, +inf, NaN payload
SCALAR = np.array(1, dtype=np.uint64).view(np.float64).reshape(())  # smallest subnormal, 0-d
F32 = np.array([0x3F000000, 0xC0000000, 0x00000001, 0xFFC00001],
               dtype=np.uint32).view(np.float32)                  # 0.5, -2, subnormal, -NaN payload
FIXTURE_PARAMS = [F64, SCALAR, np.zeros((0,)), np.zeros((2, 0)), F32]
FIXTURE = """{"params":
 [{"values":
   [4607182418800017408,
    9223372036854775808,
    9218868437227405312,
    9221120237041090851],
   "shape": [2, 2]},
  {"values": [1], "shape": []},
  {"values": [], "shape": [0]},
  {"values": [], "shape": [2, 0]},
  {"values":
   [4602678819172646912,
    13835058055282163712,
    3936146074321813504,
    18444492274432737280],
   "shape": [4]}],
 "format": "torchlean_paramlist_bits_v1"}"""
SMALL = """{"params":
 [{"values": [4607182418800017408, 4611686018427387904], "shape": [2]}],
 "format": "torchlean_paramlist_bits_v1"}"""
EMPTY = '{"params": [], "format": "torchlean_paramlist_bits_v1"}'


def bits64(a):  # (a copy, not np.ascontiguousarray: that makes a 0-d array 1-d)
    return np.array(a, dtype=np.float64).view(np.uint64)


def bits32(a):
    return np.array(a, dtype=np.float32).view(np.uint32)


# --- a port of Lean's formatter (Init/Data/Format/Basic.lean, Lean/Data/Json/Printer.lean) --------
# Format: ("nil",) ("line",) ("text", s) ("nest", n, f) ("append", a, b) ("group", f)

NIL = ("nil",)


def _append(*fs):
    out = fs[0]
    for f in fs[1:]:
        out = ("append", out, f)
    return out


def _bracket(left, f, right):
    return ("group", ("nest", len(left), _append(("text", left), f, ("text", right))))


def _join_sep(fs, sep):
    if not fs:
        return NIL
    if len(fs) == 1:
        return fs[0]
    return _append(fs[0], sep, _join_sep(fs[1:], sep))


def lean_render(j):
    """Json.render: numbers and strings as text, arrays and objects as brackets, object keys in
    the order `kvs.foldl (fun acc k j => renderKV k j :: acc) []` gives (descending)."""
    sep = _append(("text", ","), ("line",))
    if isinstance(j, int):
        return ("text", str(j))
    if isinstance(j, str):
        return ("text", json.dumps(j))
    if isinstance(j, list):
        return _bracket("[", _join_sep([lean_render(e) for e in j], sep), "]")
    kvs = [("group", _append(("text", json.dumps(k)), ("text", ":"), ("line",), lean_render(v)))
           for k, v in sorted(j.items())][::-1]
    return _bracket("{", _join_sep(kvs, sep), "}")


def _merge(w, col, r1, r2):
    if col + r1[1] > w or r1[0]:
        return r1
    found, space = r2(col + r1[1])
    return found, r1[1] + space


def _space(w, f, flatten, col):
    """spaceUptoLine (no hard newlines in JSON text): (found a line, space up to it)."""
    kind = f[0]
    if kind == "nil":
        return False, 0
    if kind == "line":
        return (False, 1) if flatten else (True, 0)
    if kind == "text":
        return False, len(f[1])
    if kind == "append":
        return _merge(w, col, _space(w, f[1], flatten, col), lambda c: _space(w, f[2], flatten, c))
    if kind == "nest":
        return _space(w, f[2], flatten, col)
    return _space(w, f[1], True, col)  # group: measured flattened


def _space_groups(w, gs, col):
    if not gs:
        return False, 0
    flatten, items = gs[0]
    if not items:
        return _space_groups(w, gs[1:], col)
    rest = [(flatten, items[1:]), *gs[1:]]
    return _merge(w, col, _space(w, items[0][0], flatten, col), lambda c: _space_groups(w, rest, c))


def _push_group(w, items, gs, col):
    r = _space_groups(w, [(True, items)], col)
    r2 = _merge(w, col, r, lambda c: _space_groups(w, gs, c))
    return [(col + r2[1] <= w, items), *gs]


def lean_pretty(f, w=80):
    """Format.pretty: the `be` loop over work groups (flatten flag, [(format, indent)])."""
    out, col, gs = [], 0, [(False, [(f, 0)])]
    while gs:
        flatten, items = gs[0]
        if not items:
            gs = gs[1:]
            continue
        (g, indent), rest = items[0], items[1:]
        after = [(flatten, rest), *gs[1:]]
        kind = g[0]
        if kind == "append":
            gs = [(flatten, [(g[1], indent), (g[2], indent), *rest]), *gs[1:]]
        elif kind == "nest":
            gs = [(flatten, [(g[2], indent + g[1]), *rest]), *gs[1:]]
        elif kind == "text":
            out.append(g[1])
            col += len(g[1])
            gs = after
        elif kind == "line":
            out.append(" " if flatten else "\n" + " " * indent)
            col = col + 1 if flatten else indent
            gs = after
        elif kind == "group":
            if flatten:
                gs = [(flatten, [(g[1], indent), *rest]), *gs[1:]]
            else:
                gs = _push_group(w, [(g[1], indent)], after, col)
        else:
            gs = after
    return "".join(out)


def lean_file(params):
    """What writeParamBits writes for `params` (arrays of binary64 values), by the port."""
    entries = [{"shape": list(np.shape(p)), "values": [int(b) for b in bits64(p).reshape(-1)]}
               for p in params]
    return lean_pretty(lean_render({"format": "torchlean_paramlist_bits_v1", "params": entries}))


# --- writing --------------------------------------------------------------------------------------

def test_fixture_byte_for_byte(tmp_path):
    path = tmp_path / "p.json"
    write_torchlean_params(FIXTURE_PARAMS, path)
    assert path.read_bytes() == FIXTURE.encode()
    widened = [*FIXTURE_PARAMS[:4], np.frombuffer(
        np.array([4602678819172646912, 13835058055282163712, 3936146074321813504,
                  18444492274432737280], dtype=np.uint64).tobytes(), dtype=np.float64)]
    assert lean_file(widened) == FIXTURE  # the port of Lean's printer agrees with the hand layout
    assert sorted(os.listdir(tmp_path)) == ["p.json"]


@pytest.mark.parametrize("params, text", [
    ([np.array([1.0, 2.0])], SMALL), ([], EMPTY)])
def test_small_fixtures(params, text):
    assert render_torchlean(params) == text == lean_file(params)


def _random_params(rnd):
    """Shapes and bit patterns of every width: small naturals, short and 20-digit ones."""
    out = []
    for _ in range(rnd.randrange(5)):
        shape = tuple(rnd.randrange(4) for _ in range(rnd.randrange(4)))
        bits = [rnd.randrange(10 ** rnd.randrange(1, 21)) % 2**64 for _ in range(int(np.prod(shape)))]
        out.append(np.array(bits, dtype=np.uint64).view(np.float64).reshape(shape))
    return out


def test_matches_lean_printer_port():
    rnd = random.Random(7)
    for _ in range(400):
        params = _random_params(rnd)
        assert render_torchlean(params) == lean_file(params)


def test_tensors_and_write_is_atomic(tmp_path):
    t = tlrs.tensor(np.arange(6.0).reshape(2, 3))
    path = tmp_path / "t.json"
    path.write_text("old")
    with pytest.raises(CheckpointError, match="float32 or float64"):
        write_torchlean_params([t, np.arange(3)], path)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["t.json"]
    write_torchlean_params([t], path)
    assert path.read_text() == lean_file([np.arange(6.0).reshape(2, 3)])
    with pytest.raises(FileNotFoundError):
        write_torchlean_params([t], tmp_path / "no" / "dir.json")
    assert sorted(os.listdir(tmp_path)) == ["t.json"]


# --- round trips ------------------------------------------------------------------------------------

SPECIAL64 = [0x7FF8000000000123, 0x7FF0000000000001, 0xFFF0000000000ABC, 0x8000000000000000, 0,
             0x7FF0000000000000, 0xFFF0000000000000, 1, 0x000FFFFFFFFFFFFF, 0x3FF0000000000001,
             2**64 - 1]
SPECIAL32 = [0x7FC00123, 0x7F800001, 0xFFA00000, 0x80000000, 0, 0x7F800000, 0xFF800000, 1,
             0x007FFFFF, 0x3F800001, 0xFFFFFFFF]


def test_round_trip_float64_bits(tmp_path):
    a = np.array(SPECIAL64, dtype=np.uint64).view(np.float64)
    path = tmp_path / "a.json"
    write_torchlean_params([a.reshape(11, 1), _core.tensor_from_numpy(a[:1].reshape(())), np.zeros((3, 0))], path)
    got = read_torchlean_params(path)
    assert [t.dtype for t in got] == ["float64"] * 3
    assert [list(t.shape) for t in got] == [[11, 1], [], [3, 0]]
    assert bits64(got[0].numpy()).reshape(-1).tolist() == SPECIAL64
    assert bits64(got[1].numpy()).tolist() == SPECIAL64[0]


def test_round_trip_float32_bits(tmp_path):
    a = np.array(SPECIAL32, dtype=np.uint32).view(np.float32)
    path = tmp_path / "a.json"
    write_torchlean_params([tlrs.tensor(a, dtype="float32")], path)
    for exact in (False, True):
        (got,) = read_torchlean_params(path, "float32", exact=exact)
        assert got.dtype == "float32" and bits32(got.numpy()).tolist() == SPECIAL32
    (wide,) = read_torchlean_arrays(path)  # widened exactly: the values, NaN payloads shifted up
    finite = ~np.isnan(a)
    assert np.array_equal(wide[finite], a[finite].astype(np.float64))
    assert bits64(wide)[0] == 0x7FF8000000000000 | (0x123 << 29)


def test_float32_rounding_as_torchlean(tmp_path):
    vals = [0x3FF0000000000001,  # 1 + 2^-52: rounds to 1
            0x3FF0000010000000,  # exactly halfway between two float32: ties to even (down)
            0x47F0000000000000,  # 2^128: overflows to +inf
            0x7FF8000000000123,  # NaN whose payload binary32 cannot hold: canonical NaN
            0xFFF8000020000000]  # NaN that fits: kept
    path = tmp_path / "r.json"
    write_torchlean_params([np.array(vals, dtype=np.uint64).view(np.float64)], path)
    (got,) = read_torchlean_params(path, "float32")
    assert bits32(got.numpy()).tolist() == [0x3F800000, 0x3F800000, 0x7F800000, 0x7FC00000,
                                            0xFFC00001]
    with pytest.raises(CheckpointError, match=r"parameter 0: value 0 \(bits 4607182418800017409\) "
                                              r"is not exactly a float32"):
        read_torchlean_params(path, "float32", exact=True)
    with pytest.raises(CheckpointError, match="dtype must be float64 or float32"):
        read_torchlean_params(path, "float16")


# --- reader errors --------------------------------------------------------------------------------

def _entry(shape, values):
    return {"shape": shape, "values": values}


BAD = [
    ("{", "JSON parse error"),
    ('{"format": "torchlean_paramlist_bits_v1", "params": [NaN]}', "JSON parse error"),
    (b"\xff\xfe", "JSON parse error"),
    ("[]", "expected a JSON object, got list"),
    (json.dumps({"params": []}), "expected format 'torchlean_paramlist_bits_v1', got no format"),
    (json.dumps({"format": 3, "params": []}), "got no format string"),
    (json.dumps({"format": "other_v2", "params": []}), "got format 'other_v2'"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1"}), "missing key 'params'"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": {}}),
     "expected params to be a list, got dict"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [7]}),
     "parameter 0: expected an object with shape and values, got int"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [{"values": []}]}),
     "parameter 0: missing key 'shape'"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry(2, [0, 0])]}),
     "parameter 0: expected shape to be a list of naturals, got 2"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([-1], [])]}),
     "expected shape to be a list of naturals, got [-1]"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([1.0], [0])]}),
     "expected shape to be a list of naturals"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [{"shape": [1]}]}),
     "parameter 0: missing key 'values'"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([1], 5)]}),
     "expected values to be a list, got int"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1",
                 "params": [_entry([1], [0]), _entry([2, 3], [1, 2])]}),
     "parameter 1: expected 6 scalars for shape [2, 3], got 2"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([], [])]}),
     "parameter 0: expected 1 scalar, got 0"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([2], [1, 2**64])]}),
     "parameter 0: value 1: float bits out of range (expected < 2^64, got 18446744073709551616)"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([2], [-1, 0])]}),
     "value 0: float bits out of range (expected a natural number, got -1)"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([1], [1.5])]}),
     "expected a natural number, got 1.5"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([1], [True])]}),
     "expected a natural number, got true"),
    (json.dumps({"format": "torchlean_paramlist_bits_v1", "params": [_entry([1], ["1"])]}),
     'expected a natural number, got "1"'),
]


@pytest.mark.parametrize("text, message", BAD)
def test_reader_errors(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(CheckpointError) as err:
        read_torchlean_params(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value), str(err.value)


def test_reader_accepts_compressed_and_max_bits(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"format":"torchlean_paramlist_bits_v1","params":[{"shape":[1],'
                    '"values":[18446744073709551615]}]}')
    (t,) = read_torchlean_params(path)
    assert bits64(t.numpy()).tolist() == [2**64 - 1]
    with pytest.raises(FileNotFoundError):
        read_torchlean_params(tmp_path / "missing.json")


def test_detection(tmp_path):
    js, st = tmp_path / "a.json", tmp_path / "a.safetensors"
    js.write_text(" \n" + EMPTY)
    _core.save_safetensors(str(st), ["x"], [tlrs.tensor(np.zeros(2))], {})
    assert is_torchlean_file(js) and not is_torchlean_file(st)
    assert not is_torchlean_file(tmp_path / "missing")
    fake = tmp_path / "fake"  # a safetensors header length whose low byte is `{`
    fake.write_bytes((123).to_bytes(8, "little") + b"{}" + b" " * 121)
    assert not is_torchlean_file(fake)


# --- Module -------------------------------------------------------------------------------------

def _defn():
    def loss(ps, xs):
        w, b = ps
        return ((xs[0] @ w + b) ** 2.0).sum()

    return ModuleDef(loss=loss, param_shapes=[[3, 2], [2]], input_shapes=[[3]],
                     init_params=[np.arange(6.0).reshape(3, 2) / 7, np.array([0.5, -0.0])],
                     param_names=["w", "b"])


def test_module_save_load_torchlean(tmp_path):
    defn = _defn()
    m = instantiate_with_options(defn, "float64", None)
    path = tmp_path / "m.json"
    m.save(str(path), format="torchlean")
    assert path.read_text() == lean_file([p.numpy() for p in m.params()])
    back = Module.load(str(path), defn)
    assert back.dtype == "float64" and back.param_names == ("w", "b")
    for a, b in zip(m.params(), back.params()):
        assert np.array_equal(bits64(a.numpy()), bits64(b.numpy()))
    x = [np.ones(3)]
    assert float(back.forward(x).numpy()) == float(m.forward(x).numpy())
    m32 = Module.load(str(path), defn, dtype="float32")
    assert m32.dtype == "float32"
    assert np.array_equal(m32.params()[0].numpy(), (np.arange(6.0).reshape(3, 2) / 7).astype(np.float32))
    module, state, progress = Module.load_training(str(path), defn)
    assert state is None and progress is None


def test_module_float32_round_trip(tmp_path):
    defn = _defn()
    m = instantiate_with_options(defn, "float32", None)
    path = tmp_path / "m32.json"
    m.save(str(path), format="torchlean")
    back = Module.load(str(path), defn, dtype="float32")
    for a, b in zip(m.params(), back.params()):
        assert np.array_equal(bits32(a.numpy()), bits32(b.numpy()))


def test_module_load_errors(tmp_path):
    defn = _defn()
    path = tmp_path / "m.json"
    write_torchlean_params([np.zeros((2, 3)), np.zeros(2)], path)
    with pytest.raises(ShapeError, match=r"parameter 0: the TorchLean file has shape \[2, 3\], "
                                         r"the model expects \[3, 2\]"):
        Module.load(str(path), defn)
    write_torchlean_params([np.zeros((3, 2))], path)
    with pytest.raises(CheckpointError, match="holds 1 parameters, the model has 2"):
        Module.load(str(path), defn)
    m = instantiate_with_options(defn, "float64", None)
    with pytest.raises(ValueError, match="parameters only"):
        m.save(str(tmp_path / "x.json"), optim_state=tlrs.optim.OptimState("sgd", 1, {}),
               format="torchlean")
    with pytest.raises(ValueError, match="format must be"):
        m.save(str(tmp_path / "x.json"), format="onnx")
    st = tmp_path / "m.safetensors"
    m.save(str(st))
    assert Module.load(str(st), defn).dtype == "float64"  # safetensors checkpoints unchanged
    with pytest.raises(CheckpointError, match="holds float64 parameters, not float32"):
        Module.load(str(st), defn, dtype="float32")
    assert not (tmp_path / "x.json").exists()


# --- tlrs convert ---------------------------------------------------------------------------------

def _cli(capsys, *args):
    code = main(["convert", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_convert_both_ways(tmp_path, capsys):
    src = tmp_path / "p.json"
    src.write_text(FIXTURE)
    st, back = tmp_path / "p.safetensors", tmp_path / "back.json"
    code, out, err = _cli(capsys, str(src), str(st))
    assert (code, err) == (0, "") and out == f"wrote {st}: 5 parameters (safetensors)\n"
    names, tensors, meta = _core.load_safetensors(str(st))
    assert sorted(names) == [f"param.{i}" for i in range(5)]
    assert all(t.dtype == "float64" for t in tensors)
    assert meta == {"converted_from": "torchlean_paramlist_bits_v1"}
    code, out, err = _cli(capsys, str(st), str(back))
    assert (code, err) == (0, "") and "5 parameters (TorchLean" in out
    assert back.read_bytes() == FIXTURE.encode()


def test_convert_module_checkpoint(tmp_path, capsys):
    defn = _defn()
    m = instantiate_with_options(defn, "float32", None)
    st, js = tmp_path / "m.safetensors", tmp_path / "m.json"
    m.save(str(st))
    assert _cli(capsys, str(st), str(js))[0] == 0
    assert js.read_text() == render_torchlean(m.params())
    loaded = Module.load(str(js), dataclasses.replace(defn), dtype="float32")
    assert all(np.array_equal(bits32(a.numpy()), bits32(b.numpy()))
               for a, b in zip(m.params(), loaded.params()))


def test_convert_errors(tmp_path, capsys):
    js = tmp_path / "p.json"
    js.write_text(SMALL)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "x", "params": []}')
    other = tmp_path / "o.safetensors"
    _core.save_safetensors(str(other), ["w"], [tlrs.tensor(np.zeros(2))], {})
    cases = [
        ([str(tmp_path / "none.json"), str(tmp_path / "o")], "no such file"),
        ([str(js), str(tmp_path / "out.json")], "converts to safetensors, but OUT ends with .json"),
        ([str(other), str(tmp_path / "x.safetensors")], "but OUT ends with .safetensors"),
        ([str(bad), str(tmp_path / "o2.safetensors")], "expected format 'torchlean_paramlist_bits_v1'"),
        ([str(other), str(tmp_path / "o.json")], "tensors named param.0 ... param.N-1, got w"),
        ([str(js), str(tmp_path / "no" / "dir.safetensors")], ""),
    ]
    for args, message in cases:
        code, out, err = _cli(capsys, *args)
        lines = err.splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("tlrs: error: "), err
        assert message in lines[0] and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["bad.json", "o.safetensors", "p.json"]


def test_run_init_from_a_torchlean_file_starts_from_its_values(tmp_path, capsys):
    from tlrs.cli import main

    first = tmp_path / "first.safetensors"
    assert main(["run", "mlp", "--steps", "5", "--save", str(first)]) == 0
    capsys.readouterr()
    # the trained parameters as TorchLean would write them, then a run starting there
    lean = tmp_path / "params.json"
    assert main(["convert", str(first), str(lean)]) == 0
    capsys.readouterr()
    assert main(["run", "mlp", "--steps", "1", "--init-from", str(lean)]) == 0
    resumed_before = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("mean_loss(train(before))")]
    assert main(["run", "mlp", "--steps", "5"]) == 0
    trained_after = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("mean_loss(train(after))")]
    assert resumed_before[0].split("=")[1] == trained_after[0].split("=")[1]


def test_run_init_from_refuses_a_file_of_another_model(tmp_path, capsys):
    from tlrs.cli import main

    lean = tmp_path / "p.json"
    write_torchlean_params([np.zeros((2, 2))], lean)
    assert main(["run", "mlp", "--steps", "1", "--init-from", str(lean)]) == 2
    assert "p.json" in capsys.readouterr().err
