"""The op mapping of the ONNX export: one emitter per tlrs IR op, writing standard ONNX nodes
that compute what tlrs's kernels compute (the formulas of rust/src/op_table, PyTorch's
convolution and pooling conventions). Shape operands with batch-dependent dims are computed at
run time from Shape(x)[0]. docs/onnx.md has the table.

Names: graph input `x`, output `y`, parameters by their module names; every other tensor is
`%<node>` (the IR's node number, as in error messages) or `%<hint>.<n>`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from .._core import __version__
from .onnx_emitter import ELEM_TYPES, Emit, Emitter
from .onnx_export import BatchDim, Dim, Node, OnnxExportError, refuse

# Ops that tlrs records but ONNX cannot express, with why.
REFUSED = {
    **dict.fromkeys(("cross_entropy", "nll_loss"),
                    "has no ONNX form: it is a loss with the trace's targets baked in (export the "
                    "forward that feeds it)"),
    "atan2": "has no ONNX operator (ONNX has Atan of one operand only)",
    "atan2_slope": "has no ONNX form: it is atan2's gradient, which only a backward pass records",
    **dict.fromkeys(("pow_slope_base", "pow_slope_exponent"),
                    "has no ONNX form: it is pow's gradient, which only a backward pass records"),
    # Made by the compiled backend's fusion passes, after tracing; the export reads the traced
    # graph, where these are still their separate ops.
    "dropout": "is training-time randomness (a fresh mask each step); export the model in eval mode",
    **dict.fromkeys(("conv2d_relu", "fused_chain"),
                    "is a fused form the export never sees (it reads the graph as traced)"),
}


def _plain(op_type: str) -> Emit:
    return lambda em, n, ins, out: em.add(op_type, ins, out)


def _positive_else(em: Emitter, x: str, otherwise: str, out: str, dtype: str) -> str:
    """x where x > 0, else `otherwise` (NaN takes `otherwise`, as in tlrs's `x > 0` test)."""
    return em.add("Where", [em.add("Greater", [x, em.scalar(0.0, dtype)]), x, otherwise], out)


def _gelu(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # (0.5 x)(1 + erf(x · 1/sqrt 2)), term for term as tlrs computes it.
    x, dt = ins[0], n.dtype
    erf = em.add("Erf", [em.add("Mul", [x, em.scalar(math.sqrt(0.5), dt)])])
    return em.add("Mul", [em.add("Mul", [em.scalar(0.5, dt), x]), em.add("Add", [em.scalar(1.0, dt), erf])], out)


def _gelu_tanh(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # (0.5 x)(1 + tanh(k (x + 0.044715 ((x x) x)))), k = M_SQRT2 · M_2_SQRTPI · 0.5 in f64
    # (op_table/unary.rs GELU_TANH_BETA), rounded once to the dtype.
    x, dt = ins[0], n.dtype
    cube = em.add("Mul", [em.add("Mul", [x, x]), x])
    inner = em.add("Add", [x, em.add("Mul", [em.scalar(0.044715, dt), cube])])
    tanh = em.add("Tanh", [em.add("Mul", [em.scalar(0.7978845608028654, dt), inner])])
    return em.add("Mul", [em.add("Mul", [em.scalar(0.5, dt), x]), em.add("Add", [em.scalar(1.0, dt), tanh])], out)


def _softplus(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # x where x·beta > threshold, else Softplus(x·beta) / beta (ONNX Softplus alone would
    # overflow to inf); with beta = 1 the product and the quotient are left out (exact in tlrs).
    x, dt, beta = ins[0], n.dtype, n.attrs["beta"]
    scaled = x if beta == 1.0 else em.add("Mul", [x, em.scalar(beta, dt)])
    soft = em.add("Softplus", [scaled])
    soft = soft if beta == 1.0 else em.add("Div", [soft, em.scalar(beta, dt)])
    above = em.add("Greater", [scaled, em.scalar(n.attrs["threshold"], dt)])
    return em.add("Where", [above, x, soft], out)


# onnxruntime's Where (1.32, CPU) turns a -0 taken from its second input (the "true" side) into
# +0, while its third input keeps it; so where a result may be -0, it comes from the third.


def _trunc(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # ONNX has no Trunc: Floor above zero, Ceil elsewhere (exact; -0.5 and -0 give -0, NaN
    # stays NaN). Only the Ceil side can be -0 (see above).
    x = ins[0]
    above = em.add("Greater", [x, em.scalar(0.0, n.dtype)])
    return em.add("Where", [above, em.add("Floor", [x]), em.add("Ceil", [x])], out)


def _div_trunc(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    """trunc(a / b): one IEEE division, then the exact rounding of `_trunc`."""
    return _trunc(em, n, [em.add("Div", ins)], out)


def _floor_divide(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    """PyTorch's floor division (c10::div_floor_floating) step for step, as tlrs computes it:
    every step is exact or one IEEE division, so the bits are tlrs's."""
    a, b = ins
    zero, one = em.scalar(0.0, n.dtype), em.scalar(1.0, n.dtype)
    quotient = em.add("Div", [a, b])
    rem = em.add("Mod", [a, b], fmod=1)
    div = em.add("Div", [em.add("Sub", [a, rem]), b])
    signs_differ = em.add("Xor", [em.add("Less", [b, zero]), em.add("Less", [rem, zero])])
    fix = em.add("And", [em.add("Not", [em.add("Equal", [rem, zero])]), signs_differ])
    div = em.add("Where", [fix, em.add("Sub", [div, one]), div])
    floor = em.add("Floor", [div])
    up = em.add("Greater", [em.add("Sub", [div, floor]), em.scalar(0.5, n.dtype)])
    floor = em.add("Where", [up, em.add("Add", [floor, one]), floor])
    # Where div is 0, |a| < |b| (or b is infinite), so a / b is finite and quotient·0 is
    # copysign(0, a / b). Every value that can be -0 is on Where's third side (see above).
    # (|div| > 0 rather than Not(div == 0): onnxruntime fuses Not into Where by swapping its
    # sides. NaN takes the third side, where NaN·0 is NaN as well.)
    nonzero = em.add("Greater", [em.add("Abs", [div]), zero])
    rounded = em.add("Where", [nonzero, floor, em.add("Mul", [quotient, zero])])
    return em.add("Where", [em.add("Equal", [b, zero]), quotient, rounded], out)


def _silu(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    x = ins[0]
    return em.add("Div", [x, em.add("Add", [em.scalar(1.0, n.dtype), em.add("Exp", [em.add("Neg", [x])])])], out)


def _leaky_relu(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # Where rather than LeakyRelu: its alpha attribute is a float32 even in a float64 model.
    scaled = em.add("Mul", [ins[0], em.scalar(n.attrs["negative_slope"], n.dtype)])
    return _positive_else(em, ins[0], scaled, out, n.dtype)


def _elu(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    expm1 = em.add("Sub", [em.add("Exp", ins), em.scalar(1.0, n.dtype)])
    return _positive_else(em, ins[0], em.add("Mul", [em.scalar(n.attrs["alpha"], n.dtype), expm1]), out, n.dtype)


def _clip(em: Emitter, n: Node, x: str, lo: float | None, hi: float | None, out: str) -> str:
    bounds = ["" if v is None else em.scalar(v, n.dtype) for v in (lo, hi)]
    while bounds and not bounds[-1]:
        bounds.pop()
    return em.add("Clip", [x, *bounds], out)


def _hardtanh(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return _clip(em, n, ins[0], n.attrs["min_val"], n.attrs["max_val"], out)


def _clamp(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return _clip(em, n, ins[0], n.attrs["min"], n.attrs["max"], out)


def _quadratic_near_zero(em: Emitter, n: Node, x: str, bound: float, quad: str, out: str,
                         linear: str) -> str:
    """Where(|x| < bound, quad, linear): the smooth L1 and Huber terms' two sides."""
    inside = em.add("Less", [em.add("Abs", [x]), em.scalar(bound, n.dtype)])
    return em.add("Where", [inside, quad, linear], out)


def _smooth_l1(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    beta, half = em.scalar(n.attrs["beta"], n.dtype), em.scalar(0.5, n.dtype)
    z = em.add("Abs", ins)
    quad = em.add("Div", [em.add("Mul", [em.add("Mul", [half, z]), z]), beta])
    linear = em.add("Sub", [z, em.add("Mul", [half, beta])])
    return _quadratic_near_zero(em, n, ins[0], n.attrs["beta"], quad, out, linear)


def _huber(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    delta, half = em.scalar(n.attrs["delta"], n.dtype), em.scalar(0.5, n.dtype)
    z = em.add("Abs", ins)
    quad = em.add("Mul", [em.add("Mul", [half, z]), z])
    linear = em.add("Mul", [delta, em.add("Sub", [z, em.add("Mul", [half, delta])])])
    return _quadratic_near_zero(em, n, ins[0], n.attrs["delta"], quad, out, linear)


def _logsigmoid(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # min(x, 0) - log(1 + exp(-|x|)) (ONNX has no log1p: within rounding of tlrs's).
    x, zero = ins[0], em.scalar(0.0, n.dtype)
    tail = _log1p(em, n, [em.add("Exp", [em.add("Neg", [em.add("Abs", [x])])])], "")
    return em.add("Sub", [em.add("Min", [x, zero]), tail], out)


def _log1p(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Log", [em.add("Add", [ins[0], em.scalar(1.0, n.dtype)])], out)


def _expm1(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Sub", [em.add("Exp", ins), em.scalar(1.0, n.dtype)], out)


def _rsqrt(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Div", [em.scalar(1.0, n.dtype), em.add("Sqrt", ins)], out)


def _pow(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Pow", [ins[0], em.scalar(n.attrs["exponent"], n.dtype)], out)


def _cast(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Cast", ins, out, to=ELEM_TYPES[n.attrs["dtype"]])


def _reduce(op_type: str) -> Emit:
    def emit(em: Emitter, n: Node, ins: list[str], out: str) -> str:
        axis = n.attrs["axis"]  # None: every axis, which ONNX does when the axes input is absent
        axes = [] if axis is None else [em.ints([axis])]
        return em.add(op_type, [ins[0], *axes], out, keepdims=int(n.attrs["keepdim"]))

    return emit


def _sum_to_shape(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # Undo NumPy broadcasting: sum away the leading axes, then (keeping them) the stretched ones.
    src = em.ir[n.inputs[0]].shape
    lead = len(src) - len(n.shape)
    stretched = [a for a, (d, s) in enumerate(zip(n.shape, src[lead:])) if d == 1 and s != 1]
    steps = ([(list(range(lead)), 0)] if lead else []) + ([(stretched, 1)] if stretched else [])
    x = ins[0]
    for j, (axes, keep) in enumerate(steps):
        x = em.add("ReduceSum", [x, em.ints(axes)], out if j == len(steps) - 1 else None, keepdims=keep)
    return x if steps else em.add("Identity", [x], out)


def _broadcast_to(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Expand", [ins[0], em.dims(n.shape)], out)


def _reshape(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # allowzero: a 0 in the target is an empty axis, not "copy the input's dim".
    zero = {"allowzero": 1} if 0 in n.shape else {}
    return em.add("Reshape", [ins[0], em.dims(n.shape)], out, **zero)


def _permute(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Transpose", ins, out, perm=list(n.attrs["dims"]))


def _concat(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Concat", ins, out, axis=n.attrs["axis"])


def _slice(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    a = n.attrs
    return em.add("Slice", [ins[0], em.dims([a["start"]]), em.dims([a["end"]]), em.ints([a["axis"]])], out)


def _index_select(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # The positions: an int64 tensor of the graph (token ids) or the trace's constant list.
    index = ins[1] if len(ins) == 2 else em.ints(n.attrs["index"])
    return em.add("Gather", [ins[0], index], out, axis=n.attrs["axis"])


_COMPARISONS = {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual"}


def _comparison(name: str) -> Emit:
    """A comparison to a bool tensor (ne: Not(Equal), true at NaN as IEEE's !=). float32 against
    float64 compares in float64, as tlrs does (exactly); the only mix a trace holds, since an
    int64 tensor meets a Python float as an int64 constant."""
    def emit(em: Emitter, n: Node, ins: list[str], out: str) -> str:
        dtypes = [em.ir[j].dtype for j in n.inputs]
        if dtypes[0] != dtypes[1]:
            ins = [em.add("Cast", [i], to=TensorProto.DOUBLE) if d == "float32" else i
                   for i, d in zip(ins, dtypes, strict=True)]
        if name == "ne":
            return em.add("Not", [em.add("Equal", ins)], out)
        return em.add(_COMPARISONS[name], ins, out)
    return emit


def _swap_last_two(em: Emitter, x: str, rank: int) -> str:
    perm = list(range(rank))
    perm[-2:] = perm[-1], perm[-2]
    return em.add("Transpose", [x], perm=perm)


def _matmul(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # Both operands have rank >= 2 and batch axes that are equal or absent on one side, which
    # ONNX MatMul broadcasts the same way.
    flags = (n.attrs["transpose_a"], n.attrs["transpose_b"])
    a, b = (_swap_last_two(em, x, em.rank(i)) if t else x for x, i, t in zip(ins, n.inputs, flags))
    return em.add("MatMul", [a, b], out)


def _softmax(op_type: str) -> Emit:
    return lambda em, n, ins, out: em.add(op_type, ins, out, axis=n.attrs["axis"])


def _logsumexp(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    """m + Log(ReduceSum(Exp(x - m))), m the axes' maximum clipped to the finite range, as
    tlrs computes it (the sum's order is the runtime's)."""
    axis, big = em.ints(n.attrs["axes"]), float(np.finfo(n.dtype).max)
    m = _clip(em, n, em.add("ReduceMax", [ins[0], axis], keepdims=1), -big, big, "")
    s = em.add("ReduceSum", [em.add("Exp", [em.add("Sub", [ins[0], m])]), axis], keepdims=1)
    y = em.add("Add", [em.add("Log", [s]), m])
    return em.add("Identity", [y], out) if n.attrs["keepdim"] else em.add("Squeeze", [y, axis], out)


def _var(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    """mean = ReduceSum / N, then ReduceSum((x - mean)²) / max(0, N - correction) along the
    axes, as tlrs computes it (the sums' order is the runtime's). N, the product of the axes'
    sizes, is read from the input's shape at run time (the batch axis is symbolic)."""
    x, axes = ins[0], em.ints(n.attrs["axes"])
    sizes = em.add("Gather", [em.add("Shape", [x]), axes])
    count = em.add("Cast", [em.add("ReduceProd", [sizes], keepdims=1)], to=ELEM_TYPES[n.dtype])
    total = em.add("ReduceSum", [x, axes], keepdims=1)
    d = em.add("Sub", [x, em.add("Div", [total, count])])
    ss = em.add("ReduceSum", [em.add("Mul", [d, d]), axes], keepdims=int(n.attrs["keepdim"]))
    dof = em.add("Max", [em.add("Sub", [count, em.scalar(n.attrs["correction"], n.dtype)]), em.scalar(0.0, n.dtype)])
    return em.add("Div", [ss, dof], out)


def _cross_entropy_probs(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    """-mean over rows of ReduceSum(p * LogSoftmax(x)) along the class axis (the last)."""
    x, p = ins
    logp = em.add("LogSoftmax", [x], axis=-1)
    per_row = em.add("ReduceSum", [em.add("Mul", [p, logp]), em.ints([-1])], keepdims=0)
    return em.add("Neg", [em.add("ReduceMean", [per_row], keepdims=0)], out)


def _mean_all(em: Emitter, x: str, out: str) -> str:
    """ReduceMean over all elements: a loss's terms averaged."""
    return em.add("ReduceMean", [x], out, keepdims=0)


def _mse_loss(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    d = em.add("Sub", ins)
    return _mean_all(em, em.add("Mul", [d, d]), out)


def _l1_loss(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return _mean_all(em, em.add("Abs", [em.add("Sub", ins)]), out)


def _smooth_l1_loss(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # The smooth_l1 term at x - t (the node has its beta).
    return _mean_all(em, _smooth_l1(em, n, [em.add("Sub", ins)], ""), out)


def _huber_loss(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # The huber term at x - t (the node has its delta).
    return _mean_all(em, _huber(em, n, [em.add("Sub", ins)], ""), out)


def _bce_with_logits(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # (1 - t) * x - logsigmoid(x)
    x, t = ins
    kept = em.add("Mul", [em.add("Sub", [em.scalar(1.0, n.dtype), t]), x])
    return _mean_all(em, em.add("Sub", [kept, _logsigmoid(em, n, [x], "")]), out)


def _cumsum(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    axis = n.attrs["axis"]  # None: a 0-d tensor, its own running sum
    if axis is None:
        return em.add("Identity", ins, out)
    return em.add("CumSum", [ins[0], em.ints([axis])], out, reverse=int(n.attrs["reverse"]))


def _window(n: Node) -> dict[str, Any]:
    a = n.attrs
    return {"kernel_shape": [a["kernel_h"], a["kernel_w"]], "strides": [a["stride"]] * 2, "pads": [a["padding"]] * 4}


def _conv2d(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    return em.add("Conv", ins, out, **_window(n))


def _pool_window(n: Node) -> dict[str, Any]:
    a = n.attrs
    (ph, pw) = a["padding"]
    return {"kernel_shape": list(a["kernel"]), "strides": list(a["stride"]), "pads": [ph, pw, ph, pw],
            "dilations": list(a["dilation"]), "ceil_mode": int(a["ceil_mode"])}


def _max_pool2d(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # Padding cells never win in tlrs; ONNX pads MaxPool with -inf: the same windows.
    return em.add("MaxPool", ins, out, **_pool_window(n))


def _avg_pool2d(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    if n.attrs["divisor_override"] is not None:
        raise OnnxExportError("export_onnx: avg_pool2d with divisor_override has no ONNX form")
    # Dilations need opset 19 in AveragePool; tlrs's average pooling has none.
    window = _pool_window(n)
    del window["dilations"]
    return em.add("AveragePool", ins, out, count_include_pad=int(n.attrs["count_include_pad"]), **window)


def _index_tensor(em: Emitter, index: np.ndarray[Any, Any], shape: Sequence[Dim]) -> str:
    """The index at `shape`, stored kept to the axes where it varies and expanded back (at run
    time where `shape` depends on the batch)."""
    stored = em.const(index, "index")
    return stored if list(index.shape) == list(shape) else em.add("Expand", [stored, em.dims(shape)])


def _gather(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    # PyTorch's gather is GatherElements (the index may be smaller than x off the axis).
    index = _index_tensor(em, n.attrs["index"], n.attrs["index_shape"])
    return em.add("GatherElements", [ins[0], index], out, axis=n.attrs["axis"])


def _scatter_add(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    index = _index_tensor(em, n.attrs["index"], em.ir[n.inputs[1]].shape)
    return em.add("ScatterElements", [ins[0], index, ins[1]], out, axis=n.attrs["axis"], reduction="add")


def _masked_fill(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    mask = em.const(np.asarray(n.attrs["mask"], dtype=bool), "mask")
    return em.add("Where", [mask, em.scalar(n.attrs["value"], n.dtype), ins[0]], out)


def _batch_norm_per_image(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    """The chain the op fuses: per image and channel, mean and biased variance over H x W,
    `(x - mean) / sqrt(var + eps) * weight + bias`."""
    rank = len(n.shape)
    axes = em.ints([rank - 2, rank - 1])
    mean = em.add("ReduceMean", [ins[0], axes], keepdims=1)
    centred = em.add("Sub", [ins[0], mean])
    var = em.add("ReduceMean", [em.add("Mul", [centred, centred]), axes], keepdims=1)
    y = em.add("Div", [centred, em.add("Sqrt", [em.add("Add", [var, em.scalar(n.attrs["eps"], n.dtype)])])])
    # One weight and bias per channel, or (layer norm's rows as planes) per position.
    per_position = n.attrs.get("per_position", False)
    param_shape = em.dims(list(n.shape[rank - 2:]) if per_position else [n.shape[rank - 3], 1, 1])
    rest = ins[1:]
    for flag, op_type in (("weight", "Mul"), ("bias", "Add")):
        if n.attrs[flag]:
            y = em.add(op_type, [y, em.add("Reshape", [rest.pop(0), param_shape])])
    return em.add("Identity", [y], out)


def _attention_softmax(em: Emitter, n: Node, ins: list[str], out: str) -> str:
    """The chain the op fuses: scores times the scale, later keys hidden from each query
    (causal), softmax over the keys."""
    y = em.add("Mul", [ins[0], em.scalar(n.attrs["scale"], n.dtype)])
    if n.attrs["causal"]:
        queries, keys = n.shape[-2], n.shape[-1]
        if not isinstance(queries, int) or not isinstance(keys, int):
            raise OnnxExportError("export_onnx: a causal mask over a sequence axis that grows with the batch "
                                  "has no fixed ONNX constant; export with a static batch")
        hidden = np.arange(keys)[None, :] > np.arange(queries)[:, None]
        y = em.add("Where", [em.const(hidden, "causal"), em.scalar(-np.inf, n.dtype), y])
    return em.add("Softmax", [y], out, axis=-1)


EMITTERS: dict[str, Emit] = {
    "to_device": _plain("Identity"),
    "cast": _cast,
    "neg": _plain("Neg"),
    "exp": _plain("Exp"),
    "log": _plain("Log"),
    "sqrt": _plain("Sqrt"),
    "abs": _plain("Abs"),
    "relu": _plain("Relu"),
    "tanh": _plain("Tanh"),
    "sigmoid": _plain("Sigmoid"),
    "erf": _plain("Erf"),
    "sin": _plain("Sin"),
    "cos": _plain("Cos"),
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "softplus": _softplus,
    "silu": _silu,
    "leaky_relu": _leaky_relu,
    "elu": _elu,
    "hardtanh": _hardtanh,
    "smooth_l1": _smooth_l1,
    "huber": _huber,
    "log1p": _log1p,
    "logsigmoid": _logsigmoid,
    "expm1": _expm1,
    "rsqrt": _rsqrt,
    "trunc": _trunc,
    "floor": _plain("Floor"),
    "pow": _pow,
    "clamp": _clamp,
    "add": _plain("Add"),
    "sub": _plain("Sub"),
    "mul": _plain("Mul"),
    "div": _plain("Div"),
    "maximum": _plain("Max"),
    "minimum": _plain("Min"),
    "tensor_pow": _plain("Pow"),
    "floor_divide": _floor_divide,
    "div_trunc": _div_trunc,
    "sum": _reduce("ReduceSum"),
    "mean": _reduce("ReduceMean"),
    "max": _reduce("ReduceMax"),
    "cumsum": _cumsum,
    "logsumexp": _logsumexp,
    "var": _var,
    "cross_entropy_probs": _cross_entropy_probs,
    "mse_loss": _mse_loss,
    "l1_loss": _l1_loss,
    "smooth_l1_loss": _smooth_l1_loss,
    "huber_loss": _huber_loss,
    "binary_cross_entropy_with_logits": _bce_with_logits,
    "prod": _reduce("ReduceProd"),
    "sum_to_shape": _sum_to_shape,
    "broadcast_to": _broadcast_to,
    "reshape": _reshape,
    "permute": _permute,
    "concat": _concat,
    "slice": _slice,
    "index_select": _index_select,
    **{name: _comparison(name) for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    "matmul": _matmul,
    "softmax": _softmax("Softmax"),
    "log_softmax": _softmax("LogSoftmax"),
    "conv2d": _conv2d,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "gather": _gather,
    "scatter_add": _scatter_add,
    "masked_fill": _masked_fill,
    "batch_norm_per_image": _batch_norm_per_image,
    "attention_softmax": _attention_softmax,
}
"""Each exportable IR op (the name `Graph.nodes()` gives) and its emitter."""


def _value_info(name: str, node: Node) -> onnx.ValueInfoProto:
    dims = [str(d) if isinstance(d, BatchDim) else d for d in node.shape]
    return helper.make_tensor_value_info(name, ELEM_TYPES[node.dtype], dims)


def _check_names(param_names: Sequence[str]) -> None:
    for name in param_names:
        if name in ("x", "y") or name.startswith("%"):
            raise OnnxExportError(f"export_onnx: parameter name {name!r} clashes with the exporter's "
                                  f"names (`x`, `y`, `%...`)")


def _emit(em: Emitter, i: int, node: Node, params: Sequence[np.ndarray[Any, Any]]) -> None:
    if node.kind == "param":
        em.initializer(params[node.index], em.name(i))
    elif node.kind == "const":
        assert node.value is not None
        em.initializer(node.value, em.name(i))
    elif node.kind == "op":
        EMITTERS[node.op](em, node, [em.name(j) for j in node.inputs], em.name(i))


def check_exportable(trace: Sequence[dict[str, Any]]) -> None:
    """Refuse the first op (of a trace, as `Graph.nodes()` gives it) without an ONNX form."""
    for i, node in enumerate(trace):
        if node["kind"] == "op" and node["op"] not in EMITTERS:
            raise refuse(i, node["op"], REFUSED.get(node["op"], "has no ONNX form"))


def build_model(ir: list[Node], output: int, param_names: Sequence[str],
                params: Sequence[np.ndarray[Any, Any]], opset: int) -> onnx.ModelProto:
    """The ONNX model computing node `output` of `ir` (every op in `EMITTERS`) from the graph
    input `x`; `params` are the parameter values by index."""
    _check_names(param_names)
    inputs = [n for n in ir if n.kind == "input"]
    if not inputs:
        raise OnnxExportError("export_onnx: predict's output does not depend on its input x")
    em = Emitter(ir, output, param_names)
    for i, node in enumerate(ir):
        _emit(em, i, node, params)
    if ir[output].kind != "op":
        em.add("Identity", [em.name(output)], "y")
    graph = helper.make_graph(em.nodes, "tlrs_predict", [_value_info("x", inputs[0])],
                              [_value_info("y", ir[output])], em.initializers)
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="tlrs", producer_version=__version__,
                             ir_version=helper.find_min_ir_version_for(opsets))
