"""ONNX export of a module's traced forward (`Module.export_onnx`, `tlrs export onnx`).

`defn.predict(params, x)` is traced into tlrs's graph IR (`Graph.nodes()`), the IR is mapped op
by op onto standard ONNX ops (onnx_ops.py), and the model is checked (`onnx.checker`, full
check) and written atomically. With `dynamic_batch` the forward is traced at two batch sizes: a
dim equal in both traces is static, a dim of k times the batch in both is computed at run time
as k·Shape(x)[0], and anything else is refused. docs/onnx.md has the op table and the refusals.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union, cast

import numpy as np

from .. import _core
from .._core import Graph, Tensor, TraceError
from ..trainlog import temporary_name

if TYPE_CHECKING:
    import onnx

    from ..module import Module

__all__ = ["BatchDim", "Node", "OnnxExportError", "OnnxUnavailableError", "export_module"]

DEFAULT_OPSET = 18
"""The lowest opset the mapping needs (every Reduce* takes its axes as an input from 18 on)."""
TRACE_BATCHES = (2, 3)
"""The batch sizes a dynamic export traces at: coprime, so k·2 and k·3 identify k."""
MAX_PROTO_BYTES = 2**31 - 1
"""Protobuf's limit on one serialized message (the whole model, weights included)."""
DIM_ATTRS = frozenset({("slice", "start"), ("slice", "end"), ("gather", "index_shape")})
"""Attributes that are dims: batch-dependent ones are computed at run time like shapes."""
STRUCTURE = "predict's graph must have the same ops at every batch size"
"""Why traces that differ in their ops or wiring are refused."""


class OnnxExportError(ValueError):
    """The traced forward cannot be written as ONNX (an op without an ONNX form, a shape or
    attribute that depends on the batch size in a way ONNX cannot compute, a bad option)."""


class OnnxUnavailableError(ImportError):
    """The optional `onnx` package is not installed."""


@dataclass(frozen=True)
class BatchDim:
    """A dim equal to `k` times the batch size."""

    k: int

    def __str__(self) -> str:
        return "batch" if self.k == 1 else f"{self.k}*batch"


Dim = Union[int, BatchDim]


@dataclass
class Node:
    """One IR node of the merged traces (see `Graph.nodes()`): for leaves `index` (param or
    input position) or `value` (const); for ops `op`, `inputs` (node indices) and `attrs`."""

    kind: str
    shape: list[Dim]
    dtype: str
    index: int = -1
    value: np.ndarray[Any, Any] | None = None
    op: str = ""
    inputs: list[int] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)


def refuse(i: int, op: str, why: str) -> OnnxExportError:
    """The error for node %i, naming its op (or its kind, for a leaf)."""
    what = f"the {op}" if op in ("param", "input", "const") else f"op `{op}`"
    return OnnxExportError(f"export_onnx: {what} (node %{i}) {why}")


def require_onnx() -> Any:
    """The `onnx` module, or OnnxUnavailableError saying how to install it."""
    try:
        return importlib.import_module("onnx")
    except ImportError as err:
        raise OnnxUnavailableError("export_onnx needs the onnx package: install tlrs[onnx] "
                                   "(pip install 'tlrs[onnx]': onnx, and onnxruntime to run "
                                   "the exported model)") from err


def export_module(module: Module, path: str | os.PathLike[str], example_inputs: Any, *,
                  dynamic_batch: bool = True, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """Write `module.defn.predict` as an ONNX model at `path` (atomically) and return it.

    Args: example_inputs: the model input x with a leading batch axis (a Tensor, an array, or
    `[x]`); it gives the per-sample shape and dtype (float arrays take the module's dtype; an
    int64 array or tensor, token ids say, makes `x` an int64 graph input);
    dynamic_batch: give the batch axis the symbolic size `batch` (else the example's batch is
    fixed); opset: the ONNX opset, from 18 to the newest the installed onnx knows.
    Graph input `x`, output `y`; parameters are initializers named by `module.param_names`.
    Raises: OnnxUnavailableError: no onnx package; OnnxExportError: no predict, a bad example or
    opset, or a traced op or shape ONNX cannot express (the message names the op and node);
    TraceError: predict cannot be traced; OSError: the file cannot be written (named by path).
    """
    onnx_mod = require_onnx()
    from .onnx_ops import build_model, check_exportable

    predict = module.defn.predict
    if predict is None:
        raise OnnxExportError("export_onnx: the module's ModuleDef has no `predict(params, x)` to "
                              "export (set ModuleDef(predict=...))")
    _check_opset(opset, int(onnx_mod.defs.onnx_opset_version()))
    example = _example_array(example_inputs, module.dtype)
    batches = TRACE_BATCHES if dynamic_batch else (example.shape[0],) * 2
    params = module.params()
    traces = [_trace(predict, params, _rows(example, b, params)) for b in batches]
    check_exportable(traces[0][0])
    nodes = merge_traces(traces[0][0], traces[1][0], batches)
    model = build_model(nodes, traces[0][1], list(module.param_names), [p.numpy() for p in params], opset)
    onnx_mod.checker.check_model(model, full_check=True)
    data = model.SerializeToString()
    if len(data) > MAX_PROTO_BYTES:
        raise OnnxExportError(f"export_onnx: the model is {len(data):,} bytes, more than "
                              f"protobuf's {MAX_PROTO_BYTES:,}-byte limit on one file")
    write_atomically(data, path)
    return model


def _check_opset(opset: Any, newest: int) -> None:
    if isinstance(opset, bool) or not isinstance(opset, int) or not DEFAULT_OPSET <= opset <= newest:
        raise OnnxExportError(f"export_onnx: opset must be an integer from {DEFAULT_OPSET} to "
                              f"{newest} (the installed onnx's newest), got {opset!r}")


def _example_array(example: Any, dtype: str) -> np.ndarray[Any, Any]:
    """The example input as an array with at least one (non-empty) batch axis."""
    if isinstance(example, (list, tuple)) and len(example) == 1 and isinstance(example[0], (Tensor, np.ndarray)):
        example = example[0]
    if isinstance(example, Tensor):
        arr = example.numpy()
    else:
        arr = np.asarray(example)
        arr = arr if arr.dtype == np.int64 else np.asarray(example, dtype=dtype)
    if arr.dtype not in (np.float32, np.float64, np.int64):
        raise OnnxExportError(f"export_onnx: expected a float32, float64 or int64 example input, got {arr.dtype}")
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise OnnxExportError(f"export_onnx: expected an example input with a leading, non-empty "
                              f"batch axis, got shape {list(arr.shape)}")
    return arr


def _rows(example: np.ndarray[Any, Any], batch: int, params: Sequence[Tensor]) -> Tensor:
    """`batch` rows cycled from the example, on the parameters' device."""
    x = _core.tensor_from_numpy(np.ascontiguousarray(example[np.arange(batch) % example.shape[0]]))
    device = params[0].device if params else "cpu"
    return x if device == x.device else x.to(device)


def _trace(predict: Callable[..., Any], params: Sequence[Tensor], x: Tensor) -> tuple[list[dict[str, Any]], int]:
    """predict's graph on these values: its nodes (as `Graph.nodes()` gives them) and output."""
    ps, xs = Graph.leaves(list(params)), Graph.leaves([x])
    try:
        out = predict(ps, xs[0])
    except TraceError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure while tracing is reported as one
        raise TraceError(f"export_onnx: tracing predict raised {type(err).__name__}: {err}") from err
    if not isinstance(out, Tensor):
        raise TraceError(f"export_onnx: predict must return a Tensor, got {type(out).__name__}")
    if not out.requires_grad:
        raise TraceError("export_onnx: predict's output does not depend on the parameters or the "
                         "input through tlrs ops")
    try:
        graph: Any = Graph.trace(out, ps, xs)  # Any: nodes() and output are newer than the stub
    except ValueError as err:
        raise TraceError(f"export_onnx: {str(err).removeprefix('trace: ')}") from None
    nodes: list[dict[str, Any]] = graph.nodes()
    output: int = graph.output
    return nodes, output


def merge_traces(a: list[dict[str, Any]], b: list[dict[str, Any]], batches: Sequence[int]) -> list[Node]:
    """One node list from traces at two batch sizes: dims equal in both stay, dims of k·batch
    in both become `BatchDim(k)`; any other difference is refused (OnnxExportError)."""
    if len(a) != len(b):
        raise OnnxExportError(f"export_onnx: predict's graph {_differs(batches, f'{len(a)} vs {len(b)} nodes', STRUCTURE)}")
    return [_merge_node(i, a, b, batches) for i in range(len(a))]


def _merge_node(i: int, trace_a: list[dict[str, Any]], trace_b: list[dict[str, Any]],
                batches: Sequence[int]) -> Node:
    a, b = trace_a[i], trace_b[i]
    what = a.get("op", a["kind"])
    for key in ("kind", "op", "index", "inputs", "dtype"):
        if a.get(key) != b.get(key):
            raise refuse(i, what, _differs(batches, f"{key} {a.get(key)!r} vs {b.get(key)!r}", STRUCTURE))
    shape = _merge_shape(i, what, a["shape"], b["shape"], batches)
    node = Node(kind=a["kind"], shape=shape, dtype=a["dtype"], index=a.get("index", -1),
                op=a.get("op", ""), inputs=list(a.get("inputs", [])))
    if node.kind == "const":
        node.value = _merge_const(i, a["value"].numpy(), b["value"].numpy(), shape, batches)
    if node.kind == "op":
        attrs_a, attrs_b = _compressed_arrays(a, trace_a), _compressed_arrays(b, trace_b)
        node.attrs = {name: _merge_attr(i, node, name, attrs_a[name], attrs_b[name], batches)
                      for name in attrs_a}
    return node


def _compressed_arrays(node: dict[str, Any], trace: list[dict[str, Any]]) -> dict[str, Any]:
    """The op's attrs with its mask or index as an array kept only along the axes where it
    varies: recorded at a batch-sized shape, it then usually no longer depends on the batch
    (Where broadcasts a mask back, Expand an index)."""
    attrs = dict(node["attrs"])
    if node["op"] == "masked_fill":
        attrs["mask"] = compress(np.asarray(attrs["mask"], dtype=bool).reshape(node["shape"]))
    if node["op"] == "gather":
        attrs["index"] = compress(np.asarray(attrs["index"], dtype=np.int64).reshape(attrs["index_shape"]))
    if node["op"] == "scatter_add":
        src_shape = trace[node["inputs"][1]]["shape"]
        attrs["index"] = compress(np.asarray(attrs["index"], dtype=np.int64).reshape(src_shape))
    return attrs


def _merge_shape(i: int, what: str, a: Sequence[int], b: Sequence[int], batches: Sequence[int]) -> list[Dim]:
    dims = [merge_dim(x, y, batches) for x, y in zip(a, b)]
    if len(a) != len(b) or None in dims:
        raise refuse(i, what, _differs(batches, f"shape {list(a)} vs {list(b)}",
                                       "every dim must be fixed or a multiple of the batch size"))
    return cast(list[Dim], dims)


def merge_dim(a: int, b: int, batches: Sequence[int]) -> Dim | None:
    """`a` when both agree, `BatchDim(k)` when a = k·batches[0] and b = k·batches[1], else None."""
    if a == b:
        return a
    k, rest = divmod(a, batches[0])
    return BatchDim(k) if rest == 0 and k > 0 and b == k * batches[1] else None


def _merge_const(i: int, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], shape: list[Dim],
                 batches: Sequence[int]) -> np.ndarray[Any, Any]:
    if any(isinstance(d, BatchDim) for d in shape) or not np.array_equal(a, b, equal_nan=True):
        raise refuse(i, "const", _differs(batches, "its value", "a value computed outside tlrs ops (or drawn at "
                                                                "random) is baked into the trace"))
    return a


def _merge_attr(i: int, node: Node, name: str, a: Any, b: Any, batches: Sequence[int]) -> Any:
    if (node.op, name) in DIM_ATTRS:
        pair = (a, b) if isinstance(a, list) else ([a], [b])
        dims = [merge_dim(x, y, batches) for x, y in zip(*pair)]
        if len(pair[0]) == len(pair[1]) and None not in dims:
            return dims if isinstance(a, list) else dims[0]
    elif _same(a, b):
        return a
    raise refuse(i, node.op, _differs(batches, f"attribute {name} {_brief(a)} vs {_brief(b)}",
                                      "it depends on the batch size (export with dynamic_batch=False to fix it)"))


def _differs(batches: Sequence[int], detail: str, why: str) -> str:
    """Why a difference between the two traces is refused."""
    if batches[0] == batches[1]:
        return f"differs between two traces at batch {batches[0]} ({detail}): predict is not deterministic"
    return f"differs between the traces at batch {batches[0]} and {batches[1]} ({detail}): {why}"


def compress(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The array kept at size 1 along every axis where it does not vary."""
    for axis in range(values.ndim):
        if values.shape[axis] > 1 and (values == values.take([0], axis=axis)).all():
            values = values.take([0], axis=axis)
    return values


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))  # as the core compares: NaN equals NaN
    return bool(a == b)


def _brief(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"of shape {list(v.shape)}"
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def write_atomically(data: bytes, path: str | os.PathLike[str]) -> None:
    """Write `data` to a temporary file beside `path` (named as trainlog's atomic writes name
    theirs, with the usual permissions), then rename it over `path`: a failure leaves `path` as
    it was and no temporary file behind. OSErrors name `path`."""
    target = os.path.abspath(os.fspath(path))
    tmp = os.path.join(os.path.dirname(target), temporary_name(os.path.basename(target)))
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.errno is not None:
            raise type(err)(err.errno, err.strerror, os.fspath(path)) from err
        raise
