"""The compiled backend's Python side: trace a definition's loss once per input-shape signature
(twice, to catch data-dependent control flow), then replay it natively."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._core import Graph, Tensor, TraceError
from .random import training_step

__all__ = ["CompiledLoss", "TraceError"]


class CompiledLoss:
    """A definition's loss traced into native graphs, one per input-shape signature.

    Args: loss: the definition's loss(params, inputs); param_shapes, input_shapes: its shapes
    (inputs without a batch axis); dtype: the module's dtype; device: where the module lives
    (the loss is traced there, so device copies and constants it names replay as they ran).
    Raises: TraceError: the loss cannot be traced (it raised, used data-dependent Python
    control flow, or read tensor values in Python).
    """

    def __init__(self, loss: Any, param_shapes: Sequence[Sequence[int]],
                 input_shapes: Sequence[Sequence[int]], dtype: str,
                 input_dtypes: Sequence[str | None] | None = None, device: str = "cpu") -> None:
        self.loss, self.dtype, self.device = loss, dtype, device
        self.input_dtypes = list(input_dtypes or [None] * len(input_shapes))
        self.param_shapes = [tuple(s) for s in param_shapes]
        self._graphs: dict[tuple[tuple[int, ...], ...], Graph] = {}
        self.graph_for([tuple(s) for s in input_shapes])  # fail now, not at step 1000

    def graph_for(self, input_shapes: Sequence[Sequence[int]]) -> Graph:
        """The graph for inputs of these shapes (traced on first use)."""
        key = tuple(tuple(int(d) for d in s) for s in input_shapes)
        graph = self._graphs.get(key)
        if graph is None:
            first, second = self._trace(key, 1), self._trace(key, 2)
            diff = first.first_difference(second)
            if diff is not None:
                raise TraceError(f"cannot compile the loss: {diff}")
            graph = self._graphs[key] = first
        return graph

    def _trace(self, input_shapes: tuple[tuple[int, ...], ...], seed: int) -> Graph:
        rng = np.random.default_rng(seed)
        # The two traces see values of opposite signs, so a Python branch on a value differs.
        lo, hi = (0.1, 1.0) if seed == 1 else (-1.0, -0.1)

        def values(shape: Sequence[int]) -> Tensor:
            arr = np.asarray(rng.uniform(lo, hi, size=shape), dtype=self.dtype)
            return _core.tensor_from_numpy(arr).to(self.device)

        def ints(shape: Sequence[int]) -> Tensor:
            # Index 0 is valid for every table; Python cannot read a traced value, and the ops
            # that take index tensors keep them as inputs, so the value cannot be baked in.
            return _core.tensor_from_numpy(np.zeros(shape, dtype=np.int64)).to(self.device)

        params = Graph.leaves([values(s) for s in self.param_shapes])
        inputs = Graph.leaves([ints(s) if kind == "int64" else values(s)
                               for s, kind in zip(input_shapes, self.input_dtypes, strict=True)])
        try:
            # In a step scope: dropout records its mask's number in the step, which each
            # replayed step draws afresh (tlrs.random.training_step).
            with training_step(0):
                root = self.loss(params, inputs)
        except TraceError:
            raise
        except Exception as err:  # noqa: BLE001 - any failure while tracing is reported as one
            raise TraceError(f"cannot compile the loss: tracing it raised {type(err).__name__}: {err}") from err
        if not isinstance(root, Tensor) or list(root.shape) != []:
            raise TraceError("cannot compile the loss: it must return a scalar Tensor")
        if not root.requires_grad:
            raise TraceError("cannot compile the loss: its value does not depend on the parameters "
                             "or inputs through tlrs ops")
        try:
            return Graph.trace(root, params, inputs)
        except ValueError as err:
            raise TraceError(str(err).removeprefix("trace: ")) from None

    def step_memory(self, params: Sequence[Tensor], input_shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """Memory of one forward + backward of the graph for `input_shapes`, at `params`, on
        inputs drawn as for tracing, measured on two consecutive runs: `peak_bytes` (the second
        run's most bytes held at once above what was live before it), `large_buffers` (its
        buffers of 256 KiB or more), `fresh_first` and `fresh_next` (how many of those each run
        had to take from the system rather than reuse)."""
        graph = self.graph_for(input_shapes)
        rng = np.random.default_rng(0)
        xs = [_core.tensor_from_numpy(np.zeros(tuple(s), dtype=np.int64)) if kind == "int64" else
              _core.tensor_from_numpy(np.asarray(rng.uniform(0.1, 1.0, size=tuple(s)), dtype=self.dtype))
              for s, kind in zip(input_shapes, self.input_dtypes, strict=True)]
        flags = [True] * len(params)
        first = graph.step_memory(list(params), flags, xs)
        nxt = graph.step_memory(list(params), flags, xs)
        return {"peak_bytes": int(nxt["peak_bytes"]), "large_buffers": int(nxt["large_buffers"]),
                "fresh_first": int(first["fresh_large_buffers"]),
                "fresh_next": int(nxt["fresh_large_buffers"])}

    def describe(self) -> str:
        """Every traced graph: node count, op count (traced, and run after fusion), activation
        memory and the listing of the plan that runs."""
        parts = []
        for shapes, g in self._graphs.items():
            parts.append(f"inputs {[list(s) for s in shapes]}: {g.node_count} traced nodes, {g.op_count} ops "
                         f"({g.plan_op_count} after fusion), "
                         f"{g.activation_bytes} bytes of activations\n{g.describe()}")
        return "\n\n".join(parts)


def slots_to_native(state: Any, n: int, slot_names: Sequence[str]) -> list[list[Tensor]]:
    """An OptimState's slots (name -> per-parameter list) as per-parameter lists in slot order."""
    return [[state.slots[name][i] for name in slot_names] for i in range(n)]


def slots_from_native(slots: list[list[Tensor]], slot_names: Sequence[str]) -> dict[str, list[Tensor]]:
    """The inverse of `slots_to_native`."""
    return {name: [per_param[k] for per_param in slots] for k, name in enumerate(slot_names)}
