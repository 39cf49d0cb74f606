"""The op cases of ops_vs_torch.py and the worker that times one framework on them.

Each case names its inputs (arrays of `make_inputs`, seeded), which of them are differentiated,
and the same function written for PyTorch and for tlrs. Float inputs become leaf tensors (requiring
grad when listed in `grad`); int64 and bool inputs are constants: torch tensors for PyTorch,
int64 tensors (labels, ids) or NumPy bool arrays (masks) for tlrs. A case whose tlrs function
names an attribute tlrs lacks is reported as not in tlrs.

    python benchmarks/_ops_cases.py tlrs|torch ROUNDS KEY,KEY,... OUTDIR

writes each case's forward output and input gradients (backward seeded with ones, so the gradient of
the output's sum without timing that sum) as .npy files to
OUTDIR and prints one JSON line: per key [forward ms, forward + backward ms or null], the keys
missing in tlrs and the keys that raised.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any, NamedTuple

import numpy as np

# The modules the case functions call, bound by `worker` in the worker process.
torch: Any = None
F: Any = None
tlrs: Any = None
ops: Any = None

GROUPS = ("unary", "binary", "rowwise", "reduction", "layer")
# (rtol, atol, atol scaled) of the forward and gradient checks. Sums are left folds in index order
# in tlrs and vectorised, pairwise or blocked in PyTorch, so a result summed from many terms differs
# by more rounding the more terms it has, and by an amount set by the terms rather than the result
# (where they cancel): there atol is scaled by the array's largest |value|. Still far below a wrong
# mapping's error.
TOL = (1e-5, 1e-6, False)  # elementwise results (and softmax-like rows of 64)
ROW_TOL = (1e-4, 1e-5, True)  # sums over a row, a column or a dot product: up to 2048 terms
ALL_TOL = (1e-3, 1e-5, True)  # sums over all of [2048, 95] or [32, 64, 128]: the losses' means, *_all

SHAPES = {
    "H": (32, 64, 512), "HP": (32, 64, 512), "R": (32, 64, 128), "R2": (32, 64, 128),
    "RP": (32, 64, 128), "NEAR1": (32, 64, 128), "BIAS": (128,), "BIASP": (128,),
    "ATT": (32, 4, 64, 64), "LOGITS": (2048, 95), "LOGP": (2048, 95), "PROBS": (2048, 95),
    "TARGET": (2048, 95), "BIN_T": (2048, 95), "PROB_IN": (2048, 95), "QKV": (32, 64, 384),
    "TABLE": (95, 128),
}


def make_inputs(dtype: str = "float32") -> dict[str, np.ndarray]:
    """The cases' inputs, float32 (int64 labels and ids, bool masks), the same in every process;
    with dtype float64 the float32 ones widened (the same values)."""
    d = _inputs32()
    return d if dtype == "float32" else {n: a.astype(dtype) if a.dtype == np.float32 else a for n, a in d.items()}


def _inputs32() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)

    def normal(name: str, scale: float = 1.0, shift: float = 0.0) -> np.ndarray:
        return (rng.normal(size=SHAPES[name]) * scale + shift).astype(np.float32)

    def uniform(name: str, lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, SHAPES[name]).astype(np.float32)

    d = {n: normal(n) for n in ("H", "R", "R2", "BIAS", "ATT", "LOGITS", "TARGET", "QKV", "TABLE")}
    d["HP"], d["RP"], d["BIASP"] = uniform("HP", 0.1, 2.0), uniform("RP", 0.5, 1.5), uniform("BIASP", 0.5, 1.5)
    d["NEAR1"] = normal("NEAR1", 0.01, 1.0)  # products of 128 and of 262144 of them stay in range
    d["BIN_T"], d["PROB_IN"] = uniform("BIN_T", 0.0, 1.0), uniform("PROB_IN", 0.01, 0.99)
    z = rng.normal(size=SHAPES["LOGITS"])
    d["PROBS"] = (np.exp(z) / np.exp(z).sum(-1, keepdims=True)).astype(np.float32)
    lg = d["LOGITS"].astype(np.float64)
    d["LOGP"] = (lg - lg.max(-1, keepdims=True) - np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1, keepdims=True))
                 ).astype(np.float32)
    d["LABELS"] = rng.integers(0, 95, 2048)
    d["IDS"] = rng.integers(0, 95, (32, 64))
    d["CAUSAL"] = np.triu(np.ones((64, 64), bool), 1)[None, None]
    d["KEEP"] = ~d["CAUSAL"]
    d["MASK"] = rng.random(SHAPES["R"]) < 0.5
    d["W_LN"], d["B_LN"] = normal("BIAS", 0.1, 1.0), normal("BIAS", 0.1)
    d["W_FC"] = (rng.normal(size=(512, 128)) * 0.05).astype(np.float32)
    d["B_FC"] = (rng.normal(size=512) * 0.01).astype(np.float32)
    return d


class Case(NamedTuple):
    key: str
    group: str
    label: str
    inputs: tuple[str, ...]
    grad: tuple[int, ...]  # positions of the differentiated inputs; () times the forward only
    torch_fn: Any
    tlrs_fn: Any
    check: str = "value"  # "value": outputs and gradients allclose; "dropout", "draw": see ops_vs_torch
    tol: tuple[float, float, bool] = TOL


def _shape(name: str) -> str:
    return str(list(SHAPES[name]))


CASES: list[Case] = []


def _add(group: str, rows: list[tuple[Any, ...]], grad: tuple[int, ...] | None = None, **kw: Any) -> None:
    """Rows (key, description, torch fn, tlrs fn, inputs[, grad]); the label is the description
    followed by the first float input's shape unless the description names a shape."""
    for key, desc, tf, lf, inputs, *rest in rows:
        inputs = (inputs,) if isinstance(inputs, str) else inputs
        g = rest[0] if rest else (grad if grad is not None else tuple(range(len(inputs))))
        first = next(n for n in inputs if n in SHAPES)
        label = desc if re.search(r"\[\d+(, \d+)*\]", desc) else f"{desc} {_shape(first)}"
        CASES.append(Case(key, group, label, inputs, g, tf, lf, **kw))


# ---- unary elementwise, activations [32, 64, 512] (HP: in [0.1, 2)) ----
_add("unary", [
    ("neg", "neg", lambda x: torch.neg(x), lambda x: ops.neg(x), "H"),
    ("exp", "exp", lambda x: torch.exp(x), lambda x: ops.exp(x), "H"),
    ("log", "log (x in [0.1, 2))", lambda x: torch.log(x), lambda x: ops.log(x), "HP"),
    ("sqrt", "sqrt (x in [0.1, 2))", lambda x: torch.sqrt(x), lambda x: ops.sqrt(x), "HP"),
    ("rsqrt", "rsqrt (x in [0.1, 2))", lambda x: torch.rsqrt(x), lambda x: ops.rsqrt(x), "HP"),
    ("abs", "abs", lambda x: torch.abs(x), lambda x: ops.abs(x), "H"),
    ("relu", "relu", lambda x: torch.relu(x), lambda x: ops.relu(x), "H"),
    ("tanh", "tanh", lambda x: torch.tanh(x), lambda x: ops.tanh(x), "H"),
    ("sigmoid", "sigmoid", lambda x: torch.sigmoid(x), lambda x: ops.sigmoid(x), "H"),
    ("gelu", "gelu", lambda x: F.gelu(x), lambda x: ops.gelu(x), "H"),
    ("gelu_tanh", "gelu(approximate='tanh')", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: ops.gelu(x, approximate="tanh"), "H"),
    ("softplus", "softplus", lambda x: F.softplus(x), lambda x: ops.softplus(x), "H"),
    ("silu", "silu", lambda x: F.silu(x), lambda x: ops.silu(x), "H"),
    ("leaky_relu", "leaky_relu(0.01)", lambda x: F.leaky_relu(x, 0.01), lambda x: ops.leaky_relu(x, 0.01), "H"),
    ("elu", "elu", lambda x: F.elu(x), lambda x: ops.elu(x), "H"),
    ("hardtanh", "hardtanh", lambda x: F.hardtanh(x), lambda x: ops.hardtanh(x), "H"),
    ("clamp", "clamp(-1, 1)", lambda x: torch.clamp(x, -1.0, 1.0), lambda x: ops.clamp(x, -1.0, 1.0), "H"),
    ("clamp_min", "clamp(min=0)", lambda x: torch.clamp(x, min=0.0), lambda x: ops.clamp(x, min=0.0), "H"),
    ("log1p", "log1p (x in [0.1, 2))", lambda x: torch.log1p(x), lambda x: ops.log1p(x), "HP"),
    ("expm1", "expm1", lambda x: torch.expm1(x), lambda x: ops.expm1(x), "H"),
    ("erf", "erf", lambda x: torch.erf(x), lambda x: ops.erf(x), "H"),
    ("sin", "sin", lambda x: torch.sin(x), lambda x: ops.sin(x), "H"),
    ("cos", "cos", lambda x: torch.cos(x), lambda x: ops.cos(x), "H"),
    ("trunc", "trunc", lambda x: torch.trunc(x), lambda x: ops.trunc(x), "H"),
    ("floor", "floor", lambda x: torch.floor(x), lambda x: ops.floor(x), "H"),
    ("pow2", "pow(x, 2)", lambda x: torch.pow(x, 2.0), lambda x: ops.pow(x, 2.0), "H"),
    ("pow3", "pow(x, 3)", lambda x: torch.pow(x, 3.0), lambda x: ops.pow(x, 3.0), "H"),
    ("pow_half", "pow(x, 0.5) (x in [0.1, 2))", lambda x: torch.pow(x, 0.5), lambda x: ops.pow(x, 0.5), "HP"),
    ("pow_m1", "pow(x, -1) (x in [0.1, 2))", lambda x: torch.pow(x, -1.0), lambda x: ops.pow(x, -1.0), "HP"),
    # PyTorch ops a tlrs of today lacks (reported as not in tlrs until it has them)
    ("square", "square", lambda x: torch.square(x), lambda x: ops.square(x), "H"),
    ("reciprocal", "reciprocal (x in [0.1, 2))", lambda x: torch.reciprocal(x), lambda x: ops.reciprocal(x), "HP"),
    ("sign", "sign", lambda x: torch.sign(x), lambda x: ops.sign(x), "H"),
    ("ceil", "ceil", lambda x: torch.ceil(x), lambda x: ops.ceil(x), "H"),
    ("round", "round", lambda x: torch.round(x), lambda x: ops.round(x), "H"),
    ("tan", "tan", lambda x: torch.tan(x), lambda x: ops.tan(x), "H"),
    ("atan", "atan", lambda x: torch.atan(x), lambda x: ops.atan(x), "H"),
    ("log2", "log2 (x in [0.1, 2))", lambda x: torch.log2(x), lambda x: ops.log2(x), "HP"),
    ("exp2", "exp2", lambda x: torch.exp2(x), lambda x: ops.exp2(x), "H"),
    ("hardswish", "hardswish", lambda x: F.hardswish(x), lambda x: ops.hardswish(x), "H"),
    ("hardsigmoid", "hardsigmoid", lambda x: F.hardsigmoid(x), lambda x: ops.hardsigmoid(x), "H"),
    ("mish", "mish", lambda x: F.mish(x), lambda x: ops.mish(x), "H"),
    ("selu", "selu", lambda x: F.selu(x), lambda x: ops.selu(x), "H"),
    ("logsigmoid", "logsigmoid", lambda x: F.logsigmoid(x), lambda x: ops.logsigmoid(x), "H"),
])

# ---- binary elementwise, residual stream [32, 64, 128]: two tensors, a [128] bias, a number ----
_add("binary", [
    ("add", "add (residual) [32, 64, 128]", lambda a, b: a + b, lambda a, b: a + b, ("R", "R2")),
    ("sub", "sub", lambda a, b: a - b, lambda a, b: a - b, ("R", "R2")),
    ("mul", "mul", lambda a, b: a * b, lambda a, b: a * b, ("R", "R2")),
    ("div", "div (divisor in [0.5, 1.5))", lambda a, b: a / b, lambda a, b: a / b, ("R", "RP")),
    ("maximum", "maximum", lambda a, b: torch.maximum(a, b), lambda a, b: ops.maximum(a, b), ("R", "R2")),
    ("minimum", "minimum", lambda a, b: torch.minimum(a, b), lambda a, b: ops.minimum(a, b), ("R", "R2")),
    ("pow", "pow(a, b) (a in [0.5, 1.5))", lambda a, b: torch.pow(a, b), lambda a, b: ops.pow(a, b), ("RP", "R")),
    ("floor_divide", "floor divide (divisor in [0.5, 1.5))", lambda a, b: torch.div(a, b, rounding_mode="floor"),
     lambda a, b: ops.floor_divide(a, b), ("R", "RP")),
    ("div_trunc", "div trunc (divisor in [0.5, 1.5))",
     lambda a, b: torch.div(a, b, rounding_mode="trunc"), lambda a, b: ops.div(a, b, rounding_mode="trunc"),
     ("R", "RP")),
    ("add_scalar", "x + 1.0", lambda x: x + 1.0, lambda x: x + 1.0, "R"),
    ("rsub_scalar", "1.0 - x", lambda x: 1.0 - x, lambda x: 1.0 - x, "R"),
    ("mul_scalar", "x * 0.5", lambda x: x * 0.5, lambda x: x * 0.5, "R"),
    ("div_scalar", "x / 3.0", lambda x: x / 3.0, lambda x: x / 3.0, "R"),
    ("rdiv_scalar", "1.0 / x (x in [0.5, 1.5))", lambda x: 1.0 / x, lambda x: 1.0 / x, "RP"),
    ("rpow_scalar", "2.0 ** x", lambda x: 2.0 ** x, lambda x: 2.0 ** x, "R"),
    ("gt", "a > b (bool, no gradient)", lambda a, b: a > b, lambda a, b: a > b, ("R", "R2"), ()),
    ("lt", "a < b (bool, no gradient)", lambda a, b: a < b, lambda a, b: a < b, ("R", "R2"), ()),
    ("ge", "a >= b (bool, no gradient)", lambda a, b: a >= b, lambda a, b: a >= b, ("R", "R2"), ()),
    ("le", "a <= b (bool, no gradient)", lambda a, b: a <= b, lambda a, b: a <= b, ("R", "R2"), ()),
    ("eq", "a == b (bool, no gradient)", lambda a, b: a == b, lambda a, b: a == b, ("R", "R2"), ()),
    ("ne", "a != b (bool, no gradient)", lambda a, b: a != b, lambda a, b: a != b, ("R", "R2"), ()),
    ("gt_scalar", "x > 0 (bool, no gradient)", lambda x: x > 0.0, lambda x: x > 0.0, "R", ()),
    ("atan2", "atan2", lambda a, b: torch.atan2(a, b), lambda a, b: ops.atan2(a, b), ("R", "R2")),
    ("fmod", "fmod (divisor in [0.5, 1.5))", lambda a, b: torch.fmod(a, b), lambda a, b: ops.fmod(a, b), ("R", "RP")),
    ("remainder", "remainder (divisor in [0.5, 1.5))", lambda a, b: torch.remainder(a, b),
     lambda a, b: ops.remainder(a, b), ("R", "RP")),
    ("hypot", "hypot", lambda a, b: torch.hypot(a, b), lambda a, b: ops.hypot(a, b), ("R", "R2")),
    ("lerp", "lerp(a, b, 0.3)", lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: ops.lerp(a, b, 0.3), ("R", "R2")),
])
_add("binary", [  # the bias's gradient sums 2048 rows
    ("add_bias", "add + bias [128] over [32, 64, 128]", lambda a, b: a + b, lambda a, b: a + b, ("R", "BIAS")),
    ("sub_bias", "sub - bias [128] over [32, 64, 128]", lambda a, b: a - b, lambda a, b: a - b, ("R", "BIAS")),
    ("mul_bias", "mul * scale [128] over [32, 64, 128]", lambda a, b: a * b, lambda a, b: a * b, ("R", "BIAS")),
    ("div_bias", "div / [128] in [0.5, 1.5) over [32, 64, 128]", lambda a, b: a / b, lambda a, b: a / b,
     ("R", "BIASP")),
    ("maximum_bias", "maximum with [128] over [32, 64, 128]", lambda a, b: torch.maximum(a, b),
     lambda a, b: ops.maximum(a, b), ("R", "BIAS")),
    ("minimum_bias", "minimum with [128] over [32, 64, 128]", lambda a, b: torch.minimum(a, b),
     lambda a, b: ops.minimum(a, b), ("R", "BIAS")),
    ("pow_bias", "pow(a in [0.5, 1.5), [128]) over [32, 64, 128]", lambda a, b: torch.pow(a, b),
     lambda a, b: ops.pow(a, b), ("RP", "BIAS")),
    ("clamp_bias", "clamp(x, min [128], max [128]) over [32, 64, 128]", lambda x, lo, hi: torch.clamp(x, lo, hi),
     lambda x, lo, hi: ops.clamp(x, lo, hi), ("R", "BIAS", "BIASP")),
], tol=ROW_TOL)

# ---- row-wise: attention scores [32, 4, 64, 64], the residual stream, logits [2048, 95] ----
_add("rowwise", [
    ("masked_fill", "masked_fill (causal mask [1, 1, 64, 64] over [32, 4, 64, 64])",
     lambda x, m: x.masked_fill(m, float("-inf")), lambda x, m: ops.masked_fill(x, m, float("-inf")),
     ("ATT", "CAUSAL"), (0,)),
    ("where", "where(causal keep [1, 1, 64, 64], x, -1e9) over [32, 4, 64, 64]",
     lambda m, x: torch.where(m, x, -1e9), lambda m, x: ops.where(m, x, -1e9), ("KEEP", "ATT"), (1,)),
    ("where_xy", "where(mask, a, b) [32, 64, 128]", lambda m, a, b: torch.where(m, a, b),
     lambda m, a, b: ops.where(m, a, b), ("MASK", "R", "R2"), (1, 2)),
    ("softmax", "softmax [32, 4, 64, 64]", lambda x: torch.softmax(x, -1), lambda x: ops.softmax(x, -1), "ATT"),
    ("log_softmax", "log_softmax", lambda x: torch.log_softmax(x, -1), lambda x: ops.log_softmax(x, -1), "ATT"),
    ("logsumexp", "logsumexp over the last axis", lambda x: torch.logsumexp(x, -1),
     lambda x: ops.logsumexp(x, -1), "ATT"),
    ("layer_norm", "layer_norm [32, 64, 128] (weight, bias)",
     lambda x, w, b: F.layer_norm(x, [128], w, b), lambda x, w, b: ops.layer_norm(x, [128], w, b),
     ("R", "W_LN", "B_LN"), (0,)),
    ("topk", "topk(k=5) values over the last axis", lambda x: torch.topk(x, 5)[0], lambda x: ops.topk(x, 5)[0],
     "LOGITS"),
    ("sort", "sort values over the last axis", lambda x: torch.sort(x)[0], lambda x: ops.sort(x)[0], "LOGITS"),
    ("rms_norm", "rms_norm [32, 64, 128]", lambda x: F.rms_norm(x, [128]), lambda x: ops.rms_norm(x, [128]), "R"),
    ("softmin", "softmin", lambda x: F.softmin(x, -1), lambda x: ops.softmin(x, -1), "ATT"),
    ("normalize", "normalize (L2, last axis)", lambda x: F.normalize(x, dim=-1), lambda x: ops.normalize(x, dim=-1),
     "R"),
    ("glu", "glu over the last axis", lambda x: F.glu(x, -1), lambda x: ops.glu(x, -1), "H"),
    ("kl_div", "kl_div(log-probabilities, probabilities)", lambda x, t: F.kl_div(x, t, reduction="batchmean"),
     lambda x, t: ops.kl_div(x, t, reduction="batchmean"), ("LOGP", "PROBS"), (0,)),
])
_add("rowwise", [
    ("dropout", "dropout(p=0.1), a fixed key in tlrs", lambda x: F.dropout(x, 0.1),
     lambda x: ops.dropout(x, 0.1, key=1234), "H"),
], check="dropout")
_add("rowwise", [
    ("multinomial", "multinomial(1 draw) over probabilities [2048, 95]", lambda p: torch.multinomial(p, 1),
     lambda p: ops.multinomial(p, 1), "PROBS", ()),
], check="draw")
_add("rowwise", [  # losses: means over all elements
    ("cross_entropy", "cross_entropy [2048, 95]", lambda x, t: F.cross_entropy(x, t),
     lambda x, t: ops.cross_entropy(x, t), ("LOGITS", "LABELS"), (0,)),
    ("cross_entropy_probs", "cross_entropy, probability targets", lambda x, t: F.cross_entropy(x, t),
     lambda x, t: ops.cross_entropy(x, t), ("LOGITS", "PROBS"), (0,)),
    ("cross_entropy_ls", "cross_entropy(label_smoothing=0.1)", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
     lambda x, t: ops.cross_entropy(x, t, label_smoothing=0.1), ("LOGITS", "LABELS"), (0,)),
    ("nll_loss", "nll_loss (log-probabilities)", lambda x, t: F.nll_loss(x, t), lambda x, t: ops.nll_loss(x, t),
     ("LOGP", "LABELS"), (0,)),
    ("mse_loss", "mse_loss", lambda x, t: F.mse_loss(x, t), lambda x, t: ops.mse_loss(x, t), ("LOGITS", "TARGET"),
     (0,)),
    ("l1_loss", "l1_loss", lambda x, t: F.l1_loss(x, t), lambda x, t: ops.l1_loss(x, t), ("LOGITS", "TARGET"), (0,)),
    ("smooth_l1_loss", "smooth_l1_loss", lambda x, t: F.smooth_l1_loss(x, t), lambda x, t: ops.smooth_l1_loss(x, t),
     ("LOGITS", "TARGET"), (0,)),
    ("huber_loss", "huber_loss", lambda x, t: F.huber_loss(x, t), lambda x, t: ops.huber_loss(x, t),
     ("LOGITS", "TARGET"), (0,)),
    ("bce_with_logits", "binary_cross_entropy_with_logits", lambda x, t: F.binary_cross_entropy_with_logits(x, t),
     lambda x, t: ops.binary_cross_entropy_with_logits(x, t), ("LOGITS", "BIN_T"), (0,)),
    ("bce", "binary_cross_entropy (x in [0.01, 0.99))", lambda x, t: F.binary_cross_entropy(x, t),
     lambda x, t: ops.binary_cross_entropy(x, t), ("PROB_IN", "BIN_T"), (0,)),
], tol=ALL_TOL)

# ---- reductions over the residual stream [32, 64, 128]: the last axis and all elements ----
_add("reduction", [
    ("sum_last", "sum over the last axis", lambda x: torch.sum(x, -1), lambda x: ops.sum(x, -1), "R"),
    ("mean_last", "mean over the last axis", lambda x: torch.mean(x, -1), lambda x: ops.mean(x, -1), "R"),
    ("max_last", "max over the last axis (values)", lambda x: torch.amax(x, -1), lambda x: ops.max(x, -1), "R"),
    ("min_last", "min over the last axis (values)", lambda x: torch.amin(x, -1), lambda x: ops.min(x, -1), "R"),
    ("amin_last", "amin over the last axis", lambda x: torch.amin(x, -1), lambda x: ops.amin(x, -1), "R"),
    ("var_last", "var over the last axis", lambda x: torch.var(x, -1), lambda x: ops.var(x, -1), "R"),
    ("std_last", "std over the last axis", lambda x: torch.std(x, -1), lambda x: ops.std(x, -1), "R"),
    ("prod_last", "prod over the last axis (x near 1)", lambda x: torch.prod(x, -1), lambda x: ops.prod(x, -1),
     "NEAR1"),
    ("argmax_last", "argmax over the last axis (no gradient)", lambda x: torch.argmax(x, -1),
     lambda x: ops.argmax(x, -1), "R", ()),
    ("argmin_last", "argmin over the last axis (no gradient)", lambda x: torch.argmin(x, -1),
     lambda x: ops.argmin(x, -1), "R", ()),
    ("max_all", "max over all", lambda x: torch.max(x), lambda x: ops.max(x), "R"),
    ("min_all", "min over all", lambda x: torch.min(x), lambda x: ops.min(x), "R"),
    ("argmax_all", "argmax over all (no gradient)", lambda x: torch.argmax(x), lambda x: ops.argmax(x), "R", ()),
    ("argmin_all", "argmin over all (no gradient)", lambda x: torch.argmin(x), lambda x: ops.argmin(x), "R", ()),
    ("cumsum_last", "cumsum over the last axis", lambda x: torch.cumsum(x, -1), lambda x: ops.cumsum(x, -1), "R"),
    ("amax_last", "amax over the last axis", lambda x: torch.amax(x, -1), lambda x: ops.amax(x, -1), "R"),
    ("norm_last", "vector 2-norm over the last axis", lambda x: torch.linalg.vector_norm(x, dim=-1),
     lambda x: ops.norm(x, dim=-1), "R"),
    ("cumprod_last", "cumprod over the last axis (x near 1)", lambda x: torch.cumprod(x, -1),
     lambda x: ops.cumprod(x, -1), "NEAR1"),
    ("logcumsumexp_last", "logcumsumexp over the last axis", lambda x: torch.logcumsumexp(x, -1),
     lambda x: ops.logcumsumexp(x, -1), "R"),
], tol=ROW_TOL)
_add("reduction", [
    ("sum_all", "sum over all", lambda x: torch.sum(x), lambda x: ops.sum(x), "R"),
    ("mean_all", "mean over all", lambda x: torch.mean(x), lambda x: ops.mean(x), "R"),
    ("var_all", "var over all", lambda x: torch.var(x), lambda x: ops.var(x), "R"),
    ("std_all", "std over all", lambda x: torch.std(x), lambda x: ops.std(x), "R"),
    ("prod_all", "prod over all (x near 1)", lambda x: torch.prod(x), lambda x: ops.prod(x), "NEAR1"),
    ("logsumexp_all", "logsumexp over all", lambda x: torch.logsumexp(x, (0, 1, 2)),
     lambda x: ops.logsumexp(x, None), "R"),
], tol=ALL_TOL)


def _scores(x: Any, split: Any, matmul: Any) -> Any:
    q, k = (split(x, j) for j in (0, 1))
    return matmul(q, k)


# ---- the layer ops of the char-level GPT ----
_add("layer", [
    ("linear", "linear [32, 64, 128] -> 512 (bias)", lambda x, w, b: F.linear(x, w, b),
     lambda x, w, b: ops.linear(x, w, b), ("R", "W_FC", "B_FC"), (0,)),
    ("scores", "attention q @ k^T, heads split from [32, 64, 384]",
     lambda x: _scores(x, lambda x, j: x[:, :, j * 128:(j + 1) * 128].reshape(32, 64, 4, 32).transpose(1, 2),
                       lambda q, k: q @ k.transpose(-2, -1)),
     lambda x: _scores(x, lambda x, j: ops.transpose(ops.reshape(ops.slice(x, 2, j * 128, (j + 1) * 128),
                                                                 [32, 64, 4, 32]), 1, 2),
                       lambda q, k: ops.matmul(q, ops.transpose(k, -2, -1))), "QKV"),
    ("embedding", "embedding 95 x 128 at [32, 64] ids", lambda w, i: F.embedding(i, w),
     lambda w, i: ops.embedding(i, w), ("TABLE", "IDS"), (0,)),
], tol=ROW_TOL)

BY_KEY = {c.key: c for c in CASES}


def worker(side: str, rounds: int, keys: list[str], outdir: str, dtype: str) -> None:
    global torch, F, tlrs, ops
    data = make_inputs(dtype)
    if side == "torch":
        import torch
        F = torch.nn.functional
        torch.set_num_threads(2)

        def leaf(a: np.ndarray, g: bool) -> Any:
            return torch.tensor(a, requires_grad=g)

        def const(a: np.ndarray) -> Any:
            return torch.from_numpy(a)

        def grad(y: Any, xs: list[Any], seed: Any) -> Any:
            return torch.autograd.grad(y, xs, grad_outputs=seed)

        def ones(y: Any) -> Any:
            return torch.ones_like(y)

        def to_np(t: Any) -> np.ndarray:
            return t.detach().numpy()
    else:
        import tlrs
        from tlrs import ops
        tlrs.set_num_threads(2)

        def leaf(a: np.ndarray, g: bool) -> Any:
            t = tlrs.tensor(a)
            t.requires_grad = g
            return t

        def const(a: np.ndarray) -> Any:
            return a if a.dtype == np.bool_ else tlrs.tensor(a)

        def grad(y: Any, xs: list[Any], seed: Any) -> Any:
            return tlrs.grad(y, xs, grad_outputs=seed)

        def ones(y: Any) -> Any:
            return tlrs.tensor(np.ones(y.shape, dtype))

        def to_np(t: Any) -> np.ndarray:
            return np.asarray(t.numpy())

    def best(f: Any) -> float:
        ts = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return min(ts) * 1e3

    times: dict[str, list[float | None]] = {}
    missing: dict[str, str] = {}
    errors: dict[str, str] = {}
    for key in keys:
        case = BY_KEY[key]
        fn = case.torch_fn if side == "torch" else case.tlrs_fn
        xs = [leaf(data[n], i in case.grad) if data[n].dtype == dtype else const(data[n])
              for i, n in enumerate(case.inputs)]
        wrt = [xs[i] for i in case.grad]
        try:
            y = fn(*xs)
            np.save(os.path.join(outdir, f"{key}.npy"), to_np(y))
            seed = ones(y) if wrt else None
            if wrt:
                for j, g in enumerate(grad(y, wrt, seed)):
                    np.save(os.path.join(outdir, f"{key}.g{j}.npy"), to_np(g))
            for _ in range(2):  # warm up
                grad(fn(*xs), wrt, seed) if wrt else fn(*xs)
            fwd = best(lambda: fn(*xs))
            times[key] = [fwd, best(lambda: grad(fn(*xs), wrt, seed)) if wrt else None]
        except AttributeError as e:
            owner = getattr(e, "obj", None)
            if side == "tlrs" and (owner is ops or owner is tlrs or isinstance(owner, tlrs.Tensor)):
                missing[key] = str(e)
            else:
                errors[key] = f"{type(e).__name__}: {e}"
        except Exception as e:  # a failing op is reported in its row, the others still run
            errors[key] = f"{type(e).__name__}: {e}"
    print(json.dumps({"times": times, "missing": missing, "errors": errors}))


if __name__ == "__main__":
    worker(sys.argv[1], int(sys.argv[2]), [k for k in sys.argv[3].split(",") if k], sys.argv[4], sys.argv[5])
