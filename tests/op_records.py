"""One test record per recorded op: a small forward that records the op, which the generic tests
in tests/test_op_records.py run through every path (gradient against central differences,
compiled against eager, ONNX through onnxruntime, CUDA against the CPU).

A record is `Case(predict, param_shapes, features)`: `predict(p, x)` maps parameters `p` and an
input `x` of shape [batch, features] to a tensor, recording the op on the way. Inputs are drawn
uniform in [-1, 1], parameters likewise; `positive(u)` moves a value into [0.5, 2.5] for ops
defined on positive numbers. Indices and masks are row-independent, so a forward traced at one
batch size exports for any. Each op name `tlrs._core._recorded_ops()` gives has a record here
or a reason in NO_FORWARD (tests/test_op_records.py fails otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import tlrs
from tlrs import ops


@dataclass(frozen=True)
class Case:
    predict: Callable[[list[Any], Any], Any]
    param_shapes: list[list[int]]
    features: int = 4
    # Whether the ONNX export maps the op (False: it must refuse, naming the op).
    onnx: bool = True
    # Central differences' step and relative tolerance.
    fd: tuple[float, float] = (1e-6, 1e-5)


# Recorded ops no forward records, with why (each is tested where it says).
NO_FORWARD = {
    "to_device": "a copy records only between two devices; tests/test_cuda_parity.py runs it, eager and compiled",
    "pow_slope_base": "recorded only by tensor_pow's gradient rule",
    "pow_slope_exponent": "recorded only by tensor_pow's gradient rule",
    "atan2_slope": "recorded only by atan2's gradient rule",
    "sum_to_shape": "recorded only by gradient rules (a broadcast operand's gradient)",
    "broadcast_to": "recorded only by gradient rules (a reduction's gradient)",
    "dropout": "random: a mask per training step; tests/test_step_dropout.py checks eager == compiled and its gradient",
    "conv2d_relu": "made by the compiled backend's fusion pass; tests/test_compiled_fusion.py",
    "fused_chain": "made by the compiled backend's fusion pass; tests/test_compiled_fusion.py",
}


def _gated(mask, m):
    # A comparison's mask lives on the host (docs/integer-tensors.md): moved to m's device.
    return mask.to(m.dtype).to(m.device) * m + m


def positive(u):
    return u * 0.5 + 1.5


def _mixed(p, x):
    return x * p[0] + p[1]


# Table ops whose Python function is not `ops.<name>(x)`.
_UNARY_CALLS = {
    "gelu_tanh": lambda u: ops.gelu(u, approximate="tanh"),
    "leaky_relu": lambda u: ops.leaky_relu(u, 0.2),
    "elu": lambda u: ops.elu(u, 1.5),
    "hardtanh": lambda u: ops.hardtanh(u, -0.4, 0.6),
    "softplus": lambda u: ops.softplus(u, 2.0, 1.5),
    "smooth_l1": lambda u: ops.smooth_l1(u, 0.5),
    "huber": lambda u: ops.huber(u, 0.3),
}
_ON_POSITIVES = {"log", "sqrt", "rsqrt", "log1p"}


def _unary_case(name: str) -> Case:
    call = _UNARY_CALLS.get(name) or getattr(ops, name)

    def predict(p, x):
        u = _mixed(p, x)
        return call(positive(u) if name in _ON_POSITIVES else u)

    return Case(predict, [[4], [4]])


_BINARY_CALLS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / positive(b),
    "maximum": ops.maximum,
    "minimum": ops.minimum,
    "tensor_pow": lambda a, b: positive(a) ** b,
    "floor_divide": lambda a, b: ops.floor_divide(a * 5.0, positive(b)),
    "div_trunc": lambda a, b: ops.div_trunc(a * 5.0, positive(b)),
    "atan2": ops.atan2,
}
_BINARY_WITHOUT_ONNX = {"atan2"}  # ONNX has no atan2 operator


def _binary_case(name: str) -> Case:
    call = _BINARY_CALLS[name]
    # The second operand [4] broadcasts over the batch: its gradient is summed back.
    return Case(lambda p, x: call(_mixed(p, x), p[2]), [[4], [4], [4]], onnx=name not in _BINARY_WITHOUT_ONNX)


def _cast(p, x):
    y = _mixed(p, x)
    other = "float32" if y.dtype == "float64" else "float64"
    return y.to(other).to(y.dtype)


def _image(p, x):
    return ops.reshape(_mixed(p, x), [x.shape[0], 1, 4, 4])


def _flat(y, x):
    return ops.reshape(y, [x.shape[0], -1])


def _attention(p, x):
    # Causal and unmasked attention over 4 positions of 2 features (scores [batch, 4, 4]).
    q, k, v = (ops.reshape(t, [x.shape[0], 4, 2]) for t in (_mixed(p, x), x * p[2] - p[1], x + p[0]))
    causal = ops.scaled_dot_product_attention(q, k, v, is_causal=True)
    return _flat(causal + ops.scaled_dot_product_attention(k, q, v, scale=-0.6), x)


def _cross_entropy(p, x):
    labels = [i % 4 for i in range(x.shape[0])]
    return ops.cross_entropy(_mixed(p, x), labels)


def _cross_entropy_probs(p, x):
    # The targets depend on the parameters too, so their gradient is checked as well.
    return ops.cross_entropy(_mixed(p, x), ops.softmax(x * p[0], 1))


def _mse_loss(p, x):
    # The target depends on the parameters too, so its gradient is checked as well.
    return ops.mse_loss(_mixed(p, x), x * p[1])


def _nll_loss(p, x):
    labels = tlrs.tensor(np.array([i % 4 for i in range(x.shape[0])]))
    return ops.nll_loss(ops.log_softmax(_mixed(p, x), 1), labels)


def _gather(p, x):
    return ops.gather(_mixed(p, x), 1, np.tile([[3, 0, 0]], (x.shape[0], 1)))


def _scatter_add(p, x):
    u = _mixed(p, x)
    src = ops.slice(u * p[0], 1, 0, 2)
    return ops.scatter_add(u, 1, np.tile([[1, 1]], (x.shape[0], 1)), src)


CASES: dict[str, Case] = {
    # Through float32 and back: a wide step, since float32 rounding is noise to a narrow one
    # (the loss is quadratic in the cast's output, so the wide step has no truncation error).
    "cast": Case(_cast, [[4], [4]], fd=(1e-2, 1e-4)),
    "pow": Case(lambda p, x: ops.pow(positive(_mixed(p, x)), 1.5), [[4], [4]]),
    "clamp": Case(lambda p, x: ops.clamp(_mixed(p, x), -0.3, 0.4), [[4], [4]]),
    "sum": Case(lambda p, x: ops.sum(_mixed(p, x), 1, True) + ops.sum(_mixed(p, x)), [[4], [4]]),
    "mean": Case(lambda p, x: ops.mean(_mixed(p, x), 1, True) + ops.mean(_mixed(p, x)), [[4], [4]]),
    "max": Case(lambda p, x: ops.max(_mixed(p, x), 1, True) + ops.max(_mixed(p, x)), [[4], [4]]),
    # A comparison's bool mask, cast back to the values' dtype, gates them (the mask itself has
    # no gradient; compiled replays the comparison on each step's values).
    **{name: Case(lambda p, x, name=name: _gated(getattr(_mixed(p, x), f"__{name}__")(0.1), _mixed(p, x)),
                  [[4], [4]])
       for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    "cumsum": Case(lambda p, x: ops.cumsum(_mixed(p, x), 1) + ops.cumsum(_mixed(p, x), 0), [[4], [4]]),
    "reshape": Case(lambda p, x: ops.reshape(_mixed(p, x), [x.shape[0], 2, 2]), [[4], [4]]),
    "permute": Case(lambda p, x: ops.permute(ops.reshape(_mixed(p, x), [x.shape[0], 2, 2]), [0, 2, 1]),
                    [[4], [4]]),
    "concat": Case(lambda p, x: ops.concat([_mixed(p, x), x * 2.0], 1), [[4], [4]]),
    "slice": Case(lambda p, x: ops.slice(_mixed(p, x), 1, 1, 3), [[4], [4]]),
    "index_select": Case(lambda p, x: ops.index_select(_mixed(p, x), 1, [3, 0, 0]), [[4], [4]]),
    "matmul": Case(lambda p, x: ops.matmul(_mixed(p, x), p[2]), [[4], [4], [4, 3]]),
    "softmax": Case(lambda p, x: ops.softmax(_mixed(p, x), 1), [[4], [4]]),
    "log_softmax": Case(lambda p, x: ops.log_softmax(_mixed(p, x), 1), [[4], [4]]),
    "prod": Case(lambda p, x: ops.unsqueeze(ops.prod(_mixed(p, x), 1), 1) + ops.prod(_mixed(p, x)), [[4], [4]]),
    "var": Case(lambda p, x: ops.unsqueeze(ops.var(_mixed(p, x), 1), 1) + ops.var(_mixed(p, x), 0, keepdim=True, correction=0)
                + ops.var(_mixed(p, x)), [[4], [4]]),
    "logsumexp": Case(lambda p, x: ops.unsqueeze(ops.logsumexp(_mixed(p, x), 1), 1) + ops.logsumexp(_mixed(p, x), 0, True)
                      + ops.logsumexp(_mixed(p, x), None), [[4], [4]]),
    "cross_entropy": Case(_cross_entropy, [[4], [4]], onnx=False),
    "nll_loss": Case(_nll_loss, [[4], [4]], onnx=False),
    "cross_entropy_probs": Case(_cross_entropy_probs, [[4], [4]]),
    "mse_loss": Case(_mse_loss, [[4], [4]]),
    "smooth_l1_loss": Case(lambda p, x: ops.smooth_l1_loss(_mixed(p, x), x * p[1], beta=0.3), [[4], [4]]),
    "binary_cross_entropy_with_logits": Case(
        lambda p, x: ops.binary_cross_entropy_with_logits(_mixed(p, x), ops.sigmoid(x * p[1])), [[4], [4]]),
    "l1_loss": Case(lambda p, x: ops.l1_loss(_mixed(p, x), x * p[1]), [[4], [4]]),
    "huber_loss": Case(lambda p, x: ops.huber_loss(_mixed(p, x), x * p[1], delta=0.4), [[4], [4]]),
    "conv2d": Case(lambda p, x: _flat(ops.conv2d(_image(p, x), p[2], p[3], 1, 1), x),
                   [[16], [16], [2, 1, 3, 3], [2]], features=16),
    "max_pool2d": Case(lambda p, x: _flat(ops.max_pool2d(_image(p, x), 2, 1, 1), x), [[16], [16]], features=16),
    "avg_pool2d": Case(lambda p, x: _flat(ops.avg_pool2d(_image(p, x), 2, 2, 0), x), [[16], [16]], features=16),
    "gather": Case(_gather, [[4], [4]]),
    "scatter_add": Case(_scatter_add, [[4], [4]]),
    "masked_fill": Case(lambda p, x: ops.masked_fill(_mixed(p, x), np.array([True, False, False, True]), -2.0),
                        [[4], [4]]),
    "batch_norm_per_image": Case(lambda p, x: _flat(ops.batch_norm_per_image(_image(p, x), p[2], p[3]), x),
                                 [[16], [16], [1], [1]], features=16),
    "attention_softmax": Case(_attention, [[8], [8], [8]], features=8),
}
for _name, _kind, *_ in tlrs._core._elementwise_table():
    if _name in NO_FORWARD:
        continue
    CASES[_name] = _unary_case(_name) if _kind == "unary" else _binary_case(_name)
