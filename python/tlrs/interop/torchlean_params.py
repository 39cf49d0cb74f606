"""TorchLean's parameter checkpoints (`torchlean_paramlist_bits_v1`), read and written byte for byte.

The format comes from TorchLean's `NN/Runtime/Autograd/TorchLean/ParamIO.lean` (repository
wadkisson/TorchLean, commit c2be276, Lean toolchain v4.32.0):

    def formatTag : String := "torchlean_paramlist_bits_v1"
    def floatToJsonBits (x : Float) : Lean.Json := jsonNat x.toBits.toNat
    def tensorToJsonBits (s : Shape) (t : Tensor Float s) : Lean.Json := ...
      Lean.Json.mkObj [("shape", dims), ("values", values)]
    def writeParamBits ... (pretty : Bool := true) : IO Unit := do
      let top := Lean.Json.mkObj [("format", Lean.Json.str formatTag), ("params", tListToJsonBits ps)]
      let s := if pretty then top.pretty else top.compress
      IO.FS.writeFile path s

So a file is one JSON object; each parameter, by position (no names, no optimizer state), is
`{"shape": [d, ...], "values": [bits, ...]}` with every value the binary64 bit pattern
(`Float.toBits`) as a JSON natural, row-major. A 0-d tensor has shape `[]` and one value; a
dimension may be 0 (no values). The bytes are Lean's `Json.pretty` (width 80, no trailing
newline): `Json.render` lists an object's keys in *descending* order (it conses onto a list while
folding the key-sorted map in ascending order), so "params" precedes "format" and "values"
precedes "shape"; arrays and objects are `Format.bracket` groups (nest by the bracket's width),
`,` + `Format.line` between items, `"key":` + `Format.line` + value in a group of its own. A group
is printed on one line when it, plus the text up to the next line break of the enclosing groups,
fits in 80 columns (Std.Format's `pushGroup`); otherwise each of its lines breaks. `_render`
reproduces exactly that for this tree (tests/test_torchlean_params.py checks it against a port of
Lean's formatter).

TorchLean's `Float` is binary64. Its float32 runs save by widening each value to `Float`
(`paramsToFloatIO`, exact) and load by rounding to nearest-even (`castParamBits` with
`IEEE32Exec.ofFloat`, where every NaN becomes the canonical 0x7fc00000). tlrs writes float32
parameters widened exactly, keeping NaN payloads (TorchLean's own widening makes NaNs canonical),
so a float32 tensor round-trips bit for bit. Reading into float32 rounds as TorchLean does, except
that a NaN whose payload fits in binary32 keeps it; `exact=True` refuses any value binary32 cannot
hold exactly instead.

Reading follows `readParamBits`: a JSON parse error, a non-object, a `format` that is not a string
or not the tag, a shape that is not a list of naturals, a value that is not a natural below 2^64,
a values count that is not the shape's product are errors (CheckpointError naming the file, the
parameter and what was expected). Stricter than TorchLean: missing `shape`/`values`/`params` keys
are errors rather than defaults, and `Module.load` refuses extra parameters (TorchLean ignores
what follows the model's parameters).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _core
from .._core import Tensor
from ..errors import CheckpointError
from .onnx_export import write_atomically

__all__ = ["FORMAT_TAG", "PARAM_PREFIX", "is_torchlean_file", "read_torchlean_arrays",
           "read_torchlean_bits", "read_torchlean_params", "render_torchlean",
           "safetensors_to_torchlean", "torchlean_to_safetensors", "write_torchlean_params"]

FORMAT_TAG = "torchlean_paramlist_bits_v1"
WIDTH = 80  # Lean's `Json.pretty` default line width
_U64_MAX = 2**64 - 1
_F64_NAN_EXP = np.uint64(0x7FF0000000000000)
_F64_FRAC = np.uint64(0x000FFFFFFFFFFFFF)
_CANONICAL_NAN32 = np.uint32(0x7FC00000)  # TorchLean's IEEE32Exec.canonicalNaN

Arrays = list[np.ndarray[Any, Any]]


# --- bits ---------------------------------------------------------------------------------------

def _widen_f32(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """binary32 -> binary64 bit patterns, exact; a NaN keeps its sign and payload (shifted into the
    top of the binary64 fraction, as the hardware widening does, but without quieting it)."""
    b32 = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    with np.errstate(invalid="ignore"):  # signalling NaNs: replaced below
        out = a.astype(np.float64).view(np.uint64).copy()
    nan = np.isnan(a)
    if nan.any():
        b = b32[nan]
        out[nan] = ((b >> np.uint64(31)) << np.uint64(63)) | _F64_NAN_EXP | (
            (b & np.uint64(0x7FFFFF)) << np.uint64(29))
    return out


def _narrow_nan(bits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """binary64 NaN bit patterns -> binary32 ones: the payload's top 23 bits with the sign, or the
    canonical NaN where those bits would lose part of the payload or read as an infinity."""
    frac = bits & _F64_FRAC
    top = (frac >> np.uint64(29)).astype(np.uint32)
    keep = ((frac & np.uint64((1 << 29) - 1)) == 0) & (top != 0)
    sign = ((bits >> np.uint64(63)).astype(np.uint32)) << np.uint32(31)
    return np.where(keep, sign | np.uint32(0x7F800000) | top, _CANONICAL_NAN32).astype(np.uint32)


def _narrow_f64_bits(bits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """binary64 bit patterns -> float32 values, rounded to nearest-even (TorchLean's
    `IEEE32Exec.ofFloat`; overflow gives an infinity, NaNs as `_narrow_nan`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = bits.view(np.float64).astype(np.float32)
    nan = (bits & _F64_NAN_EXP) == _F64_NAN_EXP
    nan &= (bits & _F64_FRAC) != 0
    if nan.any():
        out.view(np.uint32)[nan] = _narrow_nan(bits[nan])
    return out


def _bits_of(t: Any) -> tuple[list[int], np.ndarray[Any, Any]]:
    """(shape, flat binary64 bit patterns) of a float32/float64 tensor or array."""
    a = np.asarray(t.numpy() if isinstance(t, Tensor) else t)
    if a.dtype == np.float64:
        return list(a.shape), np.ascontiguousarray(a).reshape(-1).view(np.uint64)
    if a.dtype == np.float32:
        return list(a.shape), _widen_f32(np.ascontiguousarray(a).reshape(-1))
    raise CheckpointError(f"TorchLean parameters must be float32 or float64, got {a.dtype}")


# --- writing: Lean's Json.pretty, specialised ----------------------------------------------------

# The tree `_render` prints: ("n", text) for a number or string, ("a", items), ("o", [(key, v)]),
# with object keys already in Lean's printing order.
Node = tuple[str, Any]


def _flat_len(node: Node) -> int:
    """The width of `node` printed on one line (every `Format.line` a space)."""
    kind, body = node
    if kind == "n":
        return len(body)
    if kind == "a":
        return 2 + sum(_flat_len(e) for e in body) + 2 * max(len(body) - 1, 0)
    return 2 + sum(len(k) + 4 + _flat_len(v) for k, v in body) + 2 * max(len(body) - 1, 0)


def _flat(node: Node, out: list[str]) -> None:
    kind, body = node
    if kind == "n":
        out.append(body)
    elif kind == "a":
        out.append("[" + ", ".join(_flat_text(e) for e in body) + "]")
    else:
        out.append("{" + ", ".join(f'"{k}": {_flat_text(v)}' for k, v in body) + "}")


def _flat_text(node: Node) -> str:
    out: list[str] = []
    _flat(node, out)
    return "".join(out)


def _render(node: Node, indent: int, trail: int, out: list[str]) -> None:
    """Print the group `node` starting at column `indent` (where every group of this tree starts
    when its parent broke), `trail` columns of closing text following it before the next break.
    Flat when it fits, else broken as Lean breaks a `Format.bracket` of `allOrNone` lines."""
    kind, body = node
    if kind == "n" or indent + _flat_len(node) + trail <= WIDTH:
        _flat(node, out)
        return
    inner, last = indent + 1, len(body) - 1
    out.append("[" if kind == "a" else "{")
    for i, item in enumerate(body):
        after = trail + 1 if i == last else 1  # the closing bracket, or the separator's comma
        if i:
            out.append(",\n" + " " * inner)
        if kind == "a":
            _render(item, inner, after, out)
        else:
            _render_kv(item, inner, after, out)
    out.append("]" if kind == "a" else "}")


def _render_kv(kv: tuple[str, Node], indent: int, trail: int, out: list[str]) -> None:
    """`group ("key": line value)`: on one line if it fits, else the value on the next line."""
    key, value = kv
    head = f'"{key}":'
    if indent + len(head) + 1 + _flat_len(value) + trail <= WIDTH:
        out.append(head + " ")
        _flat(value, out)
        return
    out.append(head + "\n" + " " * indent)
    _render(value, indent, trail, out)


def _tree(params: Sequence[tuple[list[int], np.ndarray[Any, Any]]]) -> Node:
    entries: list[Node] = [
        ("o", [("values", ("a", [("n", str(v)) for v in bits.tolist()])),
               ("shape", ("a", [("n", str(d)) for d in shape]))])
        for shape, bits in params]
    return ("o", [("params", ("a", entries)), ("format", ("n", json.dumps(FORMAT_TAG)))])


def render_torchlean(params: Sequence[Any]) -> str:
    """The text TorchLean's `writeParamBits` (pretty, the default) writes for `params` (tensors or
    float32/float64 arrays, in order)."""
    out: list[str] = []
    _render(_tree([_bits_of(p) for p in params]), 0, 0, out)
    return "".join(out)


def write_torchlean_params(params: Sequence[Any], path: str | os.PathLike[str]) -> None:
    """Write `params` as TorchLean's `writeParamBits` does, atomically (a temporary file renamed
    over `path`: a failure leaves `path` as it was and no temporary file behind).

    Raises: CheckpointError: a parameter that is not float32/float64; OSError naming `path`.
    """
    write_atomically(render_torchlean(params).encode("utf-8"), path)


# --- reading ------------------------------------------------------------------------------------

def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Lean's parser has no NaN/Infinity literals


def _load_json(path: str) -> Any:
    try:
        with open(path, "rb") as f:
            raw = f.read()
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as e:  # json.JSONDecodeError is a ValueError
        raise CheckpointError(f"{path}: not a TorchLean parameter file: JSON parse error: {e}") from None


def _get(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise CheckpointError(f"{where}: missing key {key!r}")
    return obj[key]


def _is_nat(v: Any) -> bool:
    return type(v) is int and v >= 0


def _shape(entry: Any, where: str) -> list[int]:
    if not isinstance(entry, dict):
        raise CheckpointError(f"{where}: expected an object with shape and values, got "
                              f"{type(entry).__name__}")
    dims = _get(entry, "shape", where)
    if not isinstance(dims, list) or not all(_is_nat(d) for d in dims):
        raise CheckpointError(f"{where}: expected shape to be a list of naturals, got "
                              f"{json.dumps(dims)[:80]}")
    return dims


def _values(entry: dict[str, Any], dims: list[int], where: str) -> np.ndarray[Any, Any]:
    vals = _get(entry, "values", where)
    if not isinstance(vals, list):
        raise CheckpointError(f"{where}: expected values to be a list, got {type(vals).__name__}")
    want = math.prod(dims)
    if len(vals) != want:
        scalars = "1 scalar" if not dims else f"{want} scalars for shape {dims}"
        raise CheckpointError(f"{where}: expected {scalars}, got {len(vals)}")
    bad = next((i for i, v in enumerate(vals) if not _is_nat(v) or v > _U64_MAX), None)
    if bad is not None:
        v = vals[bad]
        what = "expected < 2^64" if _is_nat(v) else "expected a natural number"
        raise CheckpointError(f"{where}: value {bad}: float bits out of range ({what}, got "
                              f"{json.dumps(v)[:80]})")
    return np.array(vals, dtype=np.uint64).reshape(dims)


def read_torchlean_bits(path: str | os.PathLike[str]) -> list[np.ndarray[Any, Any]]:
    """The parameters of a TorchLean file as arrays of binary64 bit patterns (uint64), shaped.

    Raises: CheckpointError as the module docstring lists; OSError for an unreadable file.
    """
    path = os.fspath(path)
    top = _load_json(path)
    if not isinstance(top, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(top).__name__}")
    fmt = top.get("format")
    if fmt != FORMAT_TAG:
        got = "no format string" if not isinstance(fmt, str) else f"format {fmt!r}"
        raise CheckpointError(f"{path}: expected format {FORMAT_TAG!r}, got {got}")
    params = _get(top, "params", path)
    if not isinstance(params, list):
        raise CheckpointError(f"{path}: expected params to be a list, got {type(params).__name__}")
    out = []
    for i, entry in enumerate(params):
        where = f"{path}: parameter {i}"
        out.append(_values(entry, _shape(entry, where), where))
    return out


def _from_bits(bits: np.ndarray[Any, Any], dtype: str, exact: bool, where: str) -> np.ndarray[Any, Any]:
    if dtype == "float64":
        return bits.view(np.float64)
    flat = bits.reshape(-1)
    out = _narrow_f64_bits(flat)
    if exact:
        back = _widen_f32(out)
        wrong = np.flatnonzero(back != flat)
        if wrong.size:
            j = int(wrong[0])
            raise CheckpointError(f"{where}: value {j} (bits {int(flat[j])}) is not exactly a "
                                  f"float32 (exact=True)")
    return out.reshape(bits.shape)


def read_torchlean_arrays(path: str | os.PathLike[str], dtype: str | None = None, *,
                          exact: bool = False) -> Arrays:
    """As `read_torchlean_params`, NumPy arrays."""
    dtype = "float64" if dtype is None else str(getattr(dtype, "name", dtype))
    if dtype not in ("float64", "float32"):
        raise CheckpointError(f"read_torchlean_params: dtype must be float64 or float32, got {dtype!r}")
    return [_from_bits(b, dtype, exact, f"{os.fspath(path)}: parameter {i}")
            for i, b in enumerate(read_torchlean_bits(path))]


def read_torchlean_params(path: str | os.PathLike[str], dtype: str | None = None, *,
                          exact: bool = False) -> list[Tensor]:
    """The parameters of a TorchLean file, in order, as tlrs tensors.

    Args: dtype: float64 (default, TorchLean's `Float`: the bits as they are) or float32 (rounded
    to nearest-even as TorchLean's float32 runs load, NaN payloads kept where they fit);
    exact: with float32, refuse a value binary32 cannot hold exactly instead of rounding it.
    Raises: CheckpointError: a malformed file (named, with what was expected and what came);
    OSError: an unreadable one.
    """
    # (not np.ascontiguousarray: it turns a 0-d array into shape [1])
    return [_core.tensor_from_numpy(a if a.flags.c_contiguous else a.copy())
            for a in read_torchlean_arrays(path, dtype, exact=exact)]


def is_torchlean_file(path: str | os.PathLike[str]) -> bool:
    """True iff the file starts (after blanks) with `{` and has no NUL byte in its first eight:
    JSON text, not safetensors, whose first eight bytes are a little-endian header length (its
    low byte may be `{`, its high bytes are zero). Content, not the name, decides."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return head.lstrip(b" \t\r\n").startswith(b"{") and b"\0" not in head[:8]


# --- conversion to and from safetensors (`tlrs convert`) -------------------------------------------

PARAM_PREFIX = "param."
"""Names of a TorchLean file's parameters in safetensors: `param.0`, `param.1`, ... (the file
has positions, not names)."""


def _safetensors_params(path: str) -> list[Tensor]:
    """The parameters of a safetensors file in order: a tlrs module checkpoint's (its recorded
    order; checksum checked), or tensors named exactly `param.0` ... `param.N-1`."""
    from ..module_checkpoint import load_checkpoint

    names, tensors, metadata = _core.load_safetensors(path)
    if "checksum" in metadata and "param_names" in metadata:
        return list(load_checkpoint(path).params)
    by_name = dict(zip(names, tensors, strict=True))
    want = [f"{PARAM_PREFIX}{i}" for i in range(len(names))]
    if sorted(by_name) != sorted(want):
        shown = ", ".join(sorted(by_name)[:4]) + (", ..." if len(by_name) > 4 else "")
        raise CheckpointError(f"{path}: expected a tlrs module checkpoint or tensors named "
                              f"param.0 ... param.N-1, got {shown or 'no tensors'}")
    return [by_name[n] for n in want]


def torchlean_to_safetensors(src: str, dst: str) -> int:
    """Write the TorchLean file `src` as safetensors `dst` (binary64, `param.i`, atomically);
    returns the parameter count."""
    params = read_torchlean_params(src)
    names = [f"{PARAM_PREFIX}{i}" for i in range(len(params))]
    _core.save_safetensors(dst, names, params, {"converted_from": FORMAT_TAG})
    return len(params)


def safetensors_to_torchlean(src: str, dst: str) -> int:
    """Write the safetensors file `src` (see `_safetensors_params`) as a TorchLean file `dst`;
    returns the parameter count."""
    params = _safetensors_params(src)
    write_torchlean_params(params, dst)
    return len(params)
