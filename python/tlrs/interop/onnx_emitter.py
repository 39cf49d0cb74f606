"""The writer the ONNX export's emitters share (onnx_ops.py): the nodes and initializers of one
export, names for the IR's tensors, shared constants made once, and shapes with a batch axis
read at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .onnx_export import BatchDim, Dim, Node

ELEM_TYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "int64": TensorProto.INT64,
              "bool": TensorProto.BOOL}


class Emitter:
    """The ONNX nodes and initializers of one export, with shared constants made once."""

    def __init__(self, ir: list[Node], output: int, param_names: Sequence[str]) -> None:
        self.ir, self.output, self.param_names = ir, output, param_names
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}
        self._dims: dict[tuple[Dim, ...], str] = {}
        self._batch_multiples: dict[int, str] = {}
        self._count = 0

    def name(self, i: int) -> str:
        """The ONNX tensor holding node i's value."""
        node = self.ir[i]
        if node.kind == "param":
            return self.param_names[node.index]
        if node.kind == "input":
            return "x"
        return "y" if i == self.output and node.kind == "op" else f"%{i}"

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"%{hint}.{self._count}"

    def add(self, op_type: str, inputs: Sequence[str], out: str | None = None, **attrs: Any) -> str:
        """Append one node; returns its output's name (a fresh one unless `out` is given)."""
        out = out or self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def initializer(self, value: np.ndarray[Any, Any], name: str) -> None:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))

    def const(self, value: np.ndarray[Any, Any], hint: str) -> str:
        key = (value.dtype.str, value.shape, value.tobytes())
        if key not in self._consts:
            self._consts[key] = self.fresh(hint)
            self.initializer(value, self._consts[key])
        return self._consts[key]

    def scalar(self, value: float, dtype: str) -> str:
        """A rank-0 constant, rounded to `dtype` as tlrs rounds op parameters."""
        return self.const(np.array(value, dtype=dtype), "scalar")

    def ints(self, values: Sequence[int]) -> str:
        return self.const(np.array(list(values), dtype=np.int64).reshape(len(values)), "ints")

    def dims(self, dims: Sequence[Dim]) -> str:
        """A 1-D int64 tensor of these dims: a constant, or (with batch-dependent dims) a Concat
        of constants and k·Shape(x)[0] computed at run time."""
        if not any(isinstance(d, BatchDim) for d in dims):
            return self.ints([d for d in dims if isinstance(d, int)])
        key = tuple(dims)
        if key not in self._dims:
            pieces: list[str] = []
            static: list[int] = []
            for d in dims:
                if isinstance(d, BatchDim):
                    pieces += [self.ints(static)] if static else []
                    pieces.append(self.batch_multiple(d.k))
                    static = []
                else:
                    static.append(d)
            pieces += [self.ints(static)] if static else []
            self._dims[key] = self.add("Concat", pieces, self.fresh("shape"), axis=0)
        return self._dims[key]

    def batch_multiple(self, k: int) -> str:
        """[k·batch] as a 1-D int64 tensor, batch read from the input at run time."""
        if 1 not in self._batch_multiples:
            self._batch_multiples[1] = self.add("Shape", ["x"], "%batch", start=0, end=1)
        if k not in self._batch_multiples:
            self._batch_multiples[k] = self.add("Mul", [self._batch_multiples[1], self.ints([k])], f"%batch_x{k}")
        return self._batch_multiples[k]

    def rank(self, i: int) -> int:
        return len(self.ir[i].shape)


Emit = Callable[[Emitter, Node, list[str], str], str]
