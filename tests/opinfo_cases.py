"""PyTorch's own OpInfo samples run against tlrs: which samples of each op tlrs serves, and how.

`CASES` maps an OpInfo of `torch.testing._internal.common_methods_invocations.op_db` (its
`name`, and `name:variant_test_name` for a variant) to the tlrs function of the same meaning.
For float32 and float64, every sample of `op.reference_inputs` (or `op.sample_inputs` where the
reference inputs cannot be made with requires_grad=True) is run through torch and through tlrs
with the same positional arguments and the same keyword NAMES. The adapter only translates
representation: float32/float64 tensors become tlrs tensors, other tensors (indices, masks,
integer targets) NumPy arrays, torch dtypes their names. It never drops an option: an option
tlrs does not take makes its call raise, so the sample counts as unsupported until tlrs takes it.

Each sample is one of:
- pass: the values match torch (`torch.testing.assert_close` with the dtype's default
  tolerances, NaN where torch has NaN; bit for bit for ops that only move or select values) and,
  for a differentiable float output, so do the gradients of every float input that requires grad
  after backpropagating the same fixed random cotangent through both. A float32 value or gradient
  that misses torch's still passes when it is no farther from torch's float64 result than
  torch's float32 result is (`_no_farther`: PyTorch's own rule for its references);
- wrong_value / wrong_grad: they do not;
- unsupported: tlrs refused with a documented exception and a message (TypeError, ValueError,
  NotImplementedError, IndexError and the tlrs errors under them, AutogradError), or gives no
  gradient for an input torch differentiates; `reason` is the message with numbers replaced by
  `#`, to rank the gaps;
- crash: anything else (a pyo3 PanicException, SystemError, OverflowError, another exception, a
  dead worker or a sample that runs past the time limit).
Samples on which torch itself raises are skipped and not counted. Not compared: what an op
writes into its arguments (batch_norm's running statistics).

Samples run in a worker process (`opinfo_runner.Runner`), so a crash or a hang costs one sample,
not the run; `run_in_process` runs one op here.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

import tlrs
from tlrs import ops


@dataclass(frozen=True)
class Case:
    fn: Callable[..., Any]  # the tlrs function, called with the sample's arguments as torch gets them
    exact: bool = False  # the op only moves or selects values: any correct result is bit for bit torch's
    torch_out: Callable[[Any], Any] | None = None  # the part of torch's result the tlrs function returns
    reference: Callable[..., Any] | None = None  # replaces torch's op where torch's result is random
    ints: bool = False  # the op takes int64 tensors too: its int64 samples run as well


def _values(out: Any) -> Any:
    return out[0]


def _dropout_reference(sample: Any, tlrs_out: Any) -> torch.Tensor:
    """torch's dropout formula with tlrs's mask (its own random draw cannot match tlrs's): kept
    elements (non-zero outputs; zero inputs count as kept) times 1 / (1 - p)."""
    p, training = sample.kwargs.get("p", 0.5), sample.kwargs.get("training", True)
    x = sample.input
    if not training or p == 0:
        return torch.nn.functional.dropout(x, p, training)
    if p == 1:
        return x * 0
    kept = torch.from_numpy(np.array(tlrs_out.numpy()) != 0) | (x.detach() == 0)
    return x * kept / (1 - p)


_SDPA_SEED = 20261205  # tlrs's seed before an attention with dropout, and before its reference's mask


def _sdpa(q: Any, k: Any, v: Any, *args: Any, **kwargs: Any) -> Any:
    """ops.scaled_dot_product_attention, with the global seed stream reset first when it drops
    weights (no key: the stream's next draw), so that the reference can draw the same mask."""
    if kwargs.get("dropout_p", args[1] if len(args) > 1 else 0.0) > 0:
        tlrs.manual_seed(_SDPA_SEED)
    return ops.scaled_dot_product_attention(q, k, v, *args, **kwargs)


def _sdpa_reference(sample: Any, tlrs_out: Any) -> torch.Tensor:
    """torch's SDPA where nothing is dropped; with dropout_p > 0, PyTorch's documented math
    (scores, causal or given mask, softmax, inverted dropout, product) with tlrs's mask, drawn
    again from the same seed with ops.dropout over the weights' shape."""
    q, (k, v, *rest), kw = sample.input, sample.args, dict(sample.kwargs)
    names = ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
    kw.update(zip(names, rest, strict=False))
    p = kw.get("dropout_p", 0.0)
    if p == 0:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    if kw.get("enable_gqa"):
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    scale = kw.get("scale") or 1 / float(q.size(-1)) ** 0.5
    scores = q @ k.transpose(-2, -1) * scale
    L, S = q.size(-2), k.size(-2)
    if kw.get("is_causal"):
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    mask = kw.get("attn_mask")
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    weights = torch.softmax(scores, -1)
    tlrs.manual_seed(_SDPA_SEED)
    ones = tlrs.ones(list(weights.shape), dtype=str(q.dtype).removeprefix("torch."))
    kept = torch.from_numpy(np.array(ops.dropout(ones, p).numpy()) != 0)
    return (weights * kept / (1 - p)) @ v


# One entry per OpInfo whose op tlrs has. OpInfos left out: the softmax backward and complex
# variants, batch_norm:without_cudnn (the same samples on the CPU).
CASES: dict[str, Case] = {
    # elementwise
    "abs": Case(ops.abs, exact=True),
    "neg": Case(ops.neg, exact=True),
    "exp": Case(ops.exp),
    "expm1": Case(ops.expm1),
    "log": Case(ops.log),
    "log1p": Case(ops.log1p),
    "sqrt": Case(ops.sqrt),
    "rsqrt": Case(ops.rsqrt),
    "tanh": Case(ops.tanh),
    "sigmoid": Case(ops.sigmoid),
    "erf": Case(ops.erf),
    "sin": Case(ops.sin),
    "cos": Case(ops.cos),
    "trunc": Case(ops.trunc, exact=True),
    "floor": Case(ops.floor, exact=True),
    "floor_divide": Case(ops.floor_divide, exact=True),
    "atan2": Case(ops.atan2),
    "nn.functional.relu": Case(ops.relu, exact=True),
    "nn.functional.gelu": Case(ops.gelu),
    "nn.functional.softplus": Case(ops.softplus),
    "nn.functional.silu": Case(ops.silu),
    "nn.functional.logsigmoid": Case(ops.logsigmoid),
    "nn.functional.leaky_relu": Case(ops.leaky_relu),
    "nn.functional.elu": Case(ops.elu),
    "nn.functional.hardtanh": Case(ops.hardtanh, exact=True),
    "clamp": Case(ops.clamp, exact=True),
    "add": Case(ops.add),
    "sub": Case(ops.sub),
    "mul": Case(ops.mul),
    "div:no_rounding_mode": Case(ops.div),
    "div:trunc_rounding": Case(ops.div),
    "div:floor_rounding": Case(ops.div),
    "pow": Case(ops.pow),
    "maximum": Case(ops.maximum, exact=True),
    "minimum": Case(ops.minimum, exact=True),
    # reductions; torch.max(x, dim) also returns the indices, tlrs only the values
    "sum": Case(ops.sum),
    "mean": Case(ops.mean),
    "max:reduction_no_dim": Case(ops.max, exact=True),
    "cumsum": Case(ops.cumsum),
    "max:reduction_with_dim": Case(ops.max, exact=True, torch_out=_values),
    # torch.max(a, b) is the elementwise maximum; tlrs's max takes no second tensor: unsupported
    "max:binary": Case(ops.max, exact=True),
    # amax's gradient splits evenly between tied maxima, tlrs's goes to the first (its samples have no ties)
    "amax": Case(ops.max, exact=True),
    # shapes and indexing
    "reshape": Case(ops.reshape, exact=True, ints=True),
    "flatten": Case(ops.flatten, exact=True),
    "permute": Case(ops.permute, exact=True, ints=True),
    "transpose": Case(ops.transpose, exact=True),
    "cat": Case(ops.cat, exact=True, ints=True),
    "slice": Case(ops.slice, exact=True),
    "index_select": Case(ops.index_select, exact=True, ints=True),
    "gather": Case(ops.gather, exact=True),
    "scatter_add": Case(ops.scatter_add),
    "masked_fill": Case(ops.masked_fill, exact=True),
    # the OpInfo's op is `lambda weight, idx, **kw: embedding(idx, weight, **kw)`: the same order here
    "nn.functional.embedding": Case(lambda weight, idx, **kw: ops.embedding(idx, weight, **kw), exact=True),
    # matrix products
    "matmul": Case(ops.matmul),
    "mm": Case(ops.matmul),
    "bmm": Case(ops.matmul),
    "nn.functional.linear": Case(ops.linear),
    # layers and losses
    "softmax": Case(ops.softmax),
    "softmax:with_dtype": Case(ops.softmax),
    "log_softmax": Case(ops.log_softmax),
    "log_softmax:with_dtype": Case(ops.log_softmax),
    "nn.functional.cross_entropy": Case(ops.cross_entropy),
    "nn.functional.mse_loss": Case(ops.mse_loss),
    "nn.functional.conv2d": Case(ops.conv2d),
    "nn.functional.max_pool2d": Case(ops.max_pool2d, exact=True),
    "nn.functional.avg_pool2d": Case(ops.avg_pool2d),
    "nn.functional.batch_norm": Case(ops.batch_norm),
    "nn.functional.layer_norm": Case(ops.layer_norm),
    "nn.functional.dropout": Case(ops.dropout, reference=_dropout_reference),
    # composites (python/tlrs/loss_ops.py, reduce_ops.py, spatial_ops.py)
    "nn.functional.nll_loss": Case(ops.nll_loss),
    "nn.functional.binary_cross_entropy": Case(ops.binary_cross_entropy),
    "nn.functional.binary_cross_entropy_with_logits": Case(ops.binary_cross_entropy_with_logits),
    "nn.functional.l1_loss": Case(ops.l1_loss),
    "nn.functional.smooth_l1_loss": Case(ops.smooth_l1_loss),
    "nn.functional.huber_loss": Case(ops.huber_loss),
    "logsumexp": Case(ops.logsumexp),
    "var": Case(ops.var),
    "var:unbiased": Case(ops.var),
    "std": Case(ops.std),
    "std:unbiased": Case(ops.std),
    "amin": Case(ops.amin, exact=True),
    "min:reduction_no_dim": Case(ops.min, exact=True),
    "min:reduction_with_dim": Case(ops.min, exact=True, torch_out=_values),
    "min:binary": Case(ops.min, exact=True),
    "prod": Case(ops.prod),
    "nn.functional.conv1d": Case(ops.conv1d),
    "nn.functional.conv_transpose2d": Case(ops.conv_transpose2d),
    "nn.functional.pad:constant": Case(ops.pad, exact=True),
    "nn.functional.pad:reflect": Case(ops.pad, exact=True),
    "nn.functional.pad:replicate": Case(ops.pad, exact=True),
    "nn.functional.pad:replicate_negative": Case(ops.pad, exact=True),
    "nn.functional.pad:circular": Case(ops.pad, exact=True),
    "nn.functional.interpolate:nearest": Case(ops.interpolate, exact=True),
    "nn.functional.interpolate:nearest-exact": Case(ops.interpolate, exact=True),
    "nn.functional.interpolate:linear": Case(ops.interpolate),
    "nn.functional.interpolate:bilinear": Case(ops.interpolate),
    "nn.functional.interpolate:trilinear": Case(ops.interpolate),
    "nn.functional.adaptive_avg_pool2d": Case(ops.adaptive_avg_pool2d),
    "nn.functional.group_norm": Case(ops.group_norm),
    "nn.functional.scaled_dot_product_attention": Case(_sdpa, reference=_sdpa_reference),
    # torch's shape functions (tlrs.shape_ops) and Tensor methods (tlrs.tensor_methods)
    "unsqueeze": Case(ops.unsqueeze, exact=True, ints=True),
    "squeeze": Case(ops.squeeze, exact=True, ints=True),
    "squeeze:multiple": Case(ops.squeeze, exact=True, ints=True),
    "stack": Case(ops.stack, exact=True, ints=True),
    "split": Case(ops.split, exact=True, ints=True),
    "split:list_args": Case(ops.split, exact=True),
    "unsafe_split": Case(ops.split, exact=True),
    "split_with_sizes": Case(ops.split_with_sizes, exact=True),
    "chunk": Case(ops.chunk, exact=True, ints=True),
    "unsafe_chunk": Case(ops.chunk, exact=True),
    "unbind": Case(ops.unbind, exact=True),
    "narrow": Case(ops.narrow, exact=True, ints=True),
    "flip": Case(ops.flip, exact=True, ints=True),
    "roll": Case(ops.roll, exact=True, ints=True),
    "tril": Case(ops.tril, exact=True),
    "triu": Case(ops.triu, exact=True),
    # the OpInfo's op is `lambda self, condition, other: torch.where(condition, self, other)`
    "where": Case(lambda self, condition, other: ops.where(condition, self, other), exact=True),
    "expand": Case(ops.expand, exact=True, ints=True),
    "repeat": Case(ops.repeat, exact=True, ints=True),
    "movedim": Case(ops.movedim, exact=True, ints=True),
    "view": Case(lambda x, shape: x.view(shape), exact=True),
    "__getitem__": Case(lambda x, key: x[key], exact=True),
    # positions (indices come back as NumPy int64 arrays)
    **{name: Case(getattr(ops, name), exact=True, ints=True) for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    "argmax": Case(ops.argmax, exact=True, ints=True),
    "argmin": Case(ops.argmin, exact=True, ints=True),
    # int64 samples left out: their ties are many, and torch leaves topk's order among ties open.
    "topk": Case(ops.topk, exact=True),
    "sort": Case(ops.sort, exact=True, ints=True),
}

DTYPES = (torch.float32, torch.float64)
STATUSES = ("pass", "unsupported", "wrong_value", "wrong_grad", "crash")
# What tlrs raises, by its docs, for a call it does not serve (its own errors derive from these).
REFUSALS = (TypeError, ValueError, NotImplementedError, IndexError, tlrs.AutogradError)
TIMEOUT_S = 60.0  # one sample; the largest (a million elements, with gradients) takes well under 1 s
SETUP_S = 300.0  # starting a worker, or making one op's samples


def opinfo(key: str) -> Any:
    from torch.testing._internal.common_methods_invocations import op_db

    name, _, variant = key.partition(":")
    return next(op for op in op_db if op.name == name and op.variant_test_name == variant)


def dtypes_of(key: str) -> tuple[torch.dtype, ...]:
    """The dtypes `key`'s samples run in: float32 and float64, and int64 where tlrs takes it."""
    return DTYPES + ((torch.int64,) if CASES[key].ints else ())


def samples(op: Any, dtype: torch.dtype) -> tuple[str, list[Any]]:
    """The samples (and where they came from), the same on every call: the generators draw from
    torch's global RNG, seeded here. Some reference generators cannot make grad-requiring inputs
    (integer tensors with requires_grad=True): those ops take their plain samples."""
    grad = dtype.is_floating_point
    try:
        torch.manual_seed(0)
        return "reference_inputs", list(op.reference_inputs("cpu", dtype, requires_grad=grad))
    except Exception:
        torch.manual_seed(0)
        return "sample_inputs", list(op.sample_inputs("cpu", dtype, requires_grad=grad))


def _to_tlrs(x: Any) -> Any:
    """One argument as tlrs takes it: float32/float64 tensors as tlrs tensors, int64 and bool
    tensors (indices, masks, labels) as tlrs tensors of theirs, other tensors as NumPy arrays,
    torch dtypes and devices as their names."""
    if isinstance(x, torch.Tensor):
        arr = x.detach().numpy()
        if x.dtype in (torch.int64, torch.bool):
            return tlrs.tensor(arr)
        return tlrs.tensor(arr, requires_grad=x.requires_grad) if x.dtype in DTYPES else arr.copy()
    if isinstance(x, (torch.dtype, torch.device)):
        return str(x).removeprefix("torch.")
    return x


def _fresh_leaf(x: Any) -> Any:
    """Some reference inputs are expanded or transposed views whose gradient torch's own autograd
    does not report ("appears to not have been used in the graph"): torch gets fresh leaves."""
    return x.detach().clone().requires_grad_() if isinstance(x, torch.Tensor) and x.requires_grad else x


def _double(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.dtype == torch.float32:
        return x.detach().double().requires_grad_(x.requires_grad)
    return x


def _map(sample: Any, f: Callable[[Any], Any]) -> tuple[Any, dict[int, tuple[Any, Any]]]:
    """The sample with `f` applied to every argument inside lists, tuples (torch.Size too) and
    dicts, and {id(tensor): (tensor, f(tensor))}. A tensor given twice maps to one result, so its
    gradient sums as in torch."""
    made: dict[int, tuple[Any, Any]] = {}

    def tree(x: Any) -> Any:
        if isinstance(x, list):
            return [tree(v) for v in x]
        if isinstance(x, tuple):
            return tuple(tree(v) for v in x)
        if isinstance(x, dict):
            return {k: tree(v) for k, v in x.items()}
        if not isinstance(x, torch.Tensor):
            return f(x)
        if id(x) not in made:
            made[id(x)] = (x, f(x))
        return made[id(x)][1]

    return SimpleNamespace(input=tree(sample.input), args=tree(tuple(sample.args)),
                           kwargs=tree(dict(sample.kwargs))), made


def _flat(out: Any) -> list[Any]:
    return [v for o in out for v in _flat(o)] if isinstance(out, (tuple, list)) else [out]


def _as_torch(x: Any) -> Any:
    if isinstance(x, tlrs.Tensor):
        return torch.from_numpy(np.array(x.numpy()))
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x.copy())
    return x


def _mismatch(actual: Any, expected: Any, exact: bool) -> str | None:
    """assert_close's message when the values differ, else None."""
    tol = {"rtol": 0.0, "atol": 0.0} if exact else {}
    try:
        torch.testing.assert_close(_as_torch(actual), expected, equal_nan=True, **tol)
    except (AssertionError, TypeError, ValueError) as e:  # values, or shapes and types that cannot compare
        return " ".join(str(e).split())[:300]
    return None


def _no_farther(actual: Any, expected: Any, precise: Any) -> bool:
    """Whether a float32 result that misses torch's float32 result is still as good: every element
    no farther from the float64 result than torch's element is, give or take the default float32
    tolerance. PyTorch judges its references so (test_python_ref in test/test_ops.py, which sums
    the distances): a dot product or a sum with cancellation misses the plain tolerance whenever
    the two fold in different orders (matmul, layer_norm's gradient over one element)."""
    a = _as_torch(actual)
    if not (isinstance(a, torch.Tensor) and isinstance(expected, torch.Tensor) and isinstance(precise, torch.Tensor)
            and a.shape == expected.shape == precise.shape and a.dtype == expected.dtype == torch.float32):
        return False
    e, p = expected.detach().double(), precise.detach()
    if not torch.equal(a.isnan(), e.isnan()):
        return False
    slack = 1e-5 + 1.3e-6 * p.abs()  # assert_close's float32 atol and rtol
    finite = ~(a.isnan() | (a.double() == e))
    mine, theirs = (a.double() - p).abs()[finite], (e - p).abs()[finite]
    # Element by element, or (as test_python_ref does) summed over the tensor: a gradient summed
    # over a broadcast axis can cancel, and then which of two fold orders lands nearer the
    # float64 result varies by element.
    return bool((mine <= theirs + slack[finite]).all()) or bool(mine.sum() <= theirs.sum() + slack[finite].sum())


def reason_key(e: BaseException) -> str:
    """The exception's type and first line with every number replaced by #, to group the gaps."""
    msg = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: " + re.sub(r"(?<![A-Za-z_])-?\d+(\.\d+)?(e[-+]?\d+)?", "#", msg)[:160]


def describe(sample: Any) -> str:
    """A short description of the sample's arguments, to write a reproducer from."""
    def d(x: Any) -> str:
        if isinstance(x, torch.Tensor):
            return f"T{list(x.shape)}:{str(x.dtype).removeprefix('torch.')}"
        if isinstance(x, list):
            return "[" + ", ".join(map(d, x)) + "]"
        if isinstance(x, tuple):
            return "(" + ", ".join(map(d, x)) + (",)" if len(x) == 1 else ")")
        return repr(x)
    return ", ".join([d(sample.input), *map(d, sample.args), *(f"{k}={d(v)}" for k, v in sample.kwargs.items())])


def _has_nan(sample: Any) -> bool:
    return any(isinstance(t, torch.Tensor) and t.is_floating_point() and bool(t.isnan().any())
               for t in _flat([sample.input, list(sample.args), list(sample.kwargs.values())]))


def _torch_run(case: Case, op: Any, sample: Any, t_out: Any) -> Any:
    if case.reference is not None and t_out is not None:
        out = case.reference(sample, t_out)
    else:
        out = op(sample.input, *sample.args, **sample.kwargs)
    return out if case.torch_out is None else case.torch_out(out)


def run_sample(case: Case, op: Any, sample: Any, seed: int) -> dict[str, Any] | None:
    """One sample's record ({"status", "reason" or "detail", ...}), or None where torch raises."""
    sample, _ = _map(sample, _fresh_leaf)
    t_sample, made = _map(sample, _to_tlrs)
    rec: dict[str, Any] = {"nan_input": _has_nan(sample), "sample": describe(sample)}
    try:  # tlrs first: torch may update arguments in place (batch_norm's running statistics)
        t_out = case.fn(t_sample.input, *t_sample.args, **t_sample.kwargs)
    except KeyboardInterrupt:
        raise
    except REFUSALS as e:
        status = "unsupported" if str(e).strip() else "crash"
        t_out, rec = None, {**rec, "status": status, "reason": reason_key(e)}
    except BaseException as e:  # noqa: B036 - pyo3's PanicException is a BaseException
        t_out, rec = None, {**rec, "status": "crash", "reason": reason_key(e)}
    try:
        expected = _torch_run(case, op, sample, t_out)
    except Exception:
        return None  # torch refuses the sample itself: not counted
    if t_out is None:
        return rec
    got, want = _flat(t_out), _flat(expected)
    if len(got) != len(want):
        return {**rec, "status": "wrong_value", "detail": f"{len(got)} outputs, torch gives {len(want)}"}

    precise: list[Any] = []  # torch in float64 on the same values: (outputs, {id: (tensor, f64 leaf)})

    def in_f64() -> tuple[list[Any], dict[int, tuple[Any, Any]]]:
        if not precise:
            s64, up = _map(sample, _double)
            try:
                precise.append((_flat(_torch_run(case, op, s64, t_out)), up))
            except Exception:  # no float64 result: the float32 mismatch stands
                precise.append(([None] * len(want), up))
        return precise[0]

    for i, (g, w) in enumerate(zip(got, want)):
        if (bad := _mismatch(g, w, case.exact)) is not None:
            if case.exact or not isinstance(w, torch.Tensor) or w.dtype != torch.float32 \
                    or not _no_farther(g, w, in_f64()[0][i]):
                return {**rec, "status": "wrong_value", "detail": bad}
    pairs = [(x, t) for x, t in made.values() if isinstance(t, tlrs.Tensor) and x.requires_grad]
    return {**rec, **_check_grads(pairs, got, want, seed, in_f64)}


def _check_grads(pairs: list[tuple[torch.Tensor, Any]], got: list[Any], want: list[Any], seed: int,
                 in_f64: Callable[[], tuple[list[Any], dict[int, tuple[Any, Any]]]]) -> dict[str, Any]:
    """Backpropagates one fixed random cotangent per differentiable float output through both and
    compares the gradients of every input that requires grad."""
    outs = [i for i, w in enumerate(want) if isinstance(w, torch.Tensor) and w.is_floating_point() and w.requires_grad]
    if not outs or not pairs:
        return {"status": "pass"}
    gen = torch.Generator().manual_seed(seed)
    cots = [torch.randn(want[i].shape, dtype=want[i].dtype, generator=gen) for i in outs]
    try:
        want_g = torch.autograd.grad([want[i] for i in outs], [x for x, _ in pairs], cots, allow_unused=True)
    except Exception:
        return {"status": "pass", "detail": "torch gives no gradient"}
    try:
        if not all(isinstance(got[i], tlrs.Tensor) and got[i].requires_grad for i in outs):
            raise tlrs.AutogradError("the output does not require grad")
        got_g = tlrs.grad([got[i] for i in outs], [t for _, t in pairs], [tlrs.tensor(c.numpy()) for c in cots],
                          allow_unused=True)
    except KeyboardInterrupt:
        raise
    except REFUSALS as e:
        return {"status": "unsupported", "reason": "grad: " + reason_key(e)}
    except BaseException as e:  # noqa: B036
        return {"status": "crash", "reason": "grad: " + reason_key(e)}
    f64_g: list[Any] = []
    for k, ((x, _), g, w) in enumerate(zip(pairs, got_g, want_g)):
        w = torch.zeros_like(x) if w is None else w
        if g is None:  # tlrs's graph does not reach this input
            if bool((w != 0).any()):
                return {"status": "unsupported", "reason": "grad: tlrs gives no gradient for a differentiable input"}
            continue
        if (bad := _mismatch(g, w, False)) is None:
            continue
        if w.dtype == torch.float32 and not f64_g:
            outs64, up = in_f64()
            try:
                f64_g[:] = torch.autograd.grad([outs64[i] for i in outs], [up[id(x)][1] for x, _ in pairs],
                                               [c.double() for c in cots], allow_unused=True)
            except Exception:  # no float64 gradient: the float32 mismatch stands
                f64_g[:] = [None] * len(pairs)
        p = f64_g[k] if f64_g else None
        if p is None or not _no_farther(g, w, p):
            return {"status": "wrong_grad", "detail": f"input {k}: {bad}"}
    return {"status": "pass"}


def iter_records(key: str, dtype: torch.dtype, start: int = 0,
                 on_begin: Callable[[dict[str, Any]], None] | None = None) -> Iterator[dict[str, Any]]:
    """The records of one op's samples in one dtype, from sample `start` on; `on_begin` hears of
    each sample before it runs (the worker tells the runner, which names it if it never ends)."""
    case, op = CASES[key], opinfo(key)
    source, items = samples(op, dtype)
    for i in range(start, len(items)):
        if on_begin is not None:
            on_begin({"begin": i, "sample": describe(items[i]), "nan_input": _has_nan(items[i])})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rec = run_sample(case, op, items[i], seed=i)
        base = {"op": key, "dtype": str(dtype).removeprefix("torch."), "index": i, "source": source}
        yield {**base, **(rec or {"status": "skipped"})}


def run_in_process(key: str, dtypes: tuple[torch.dtype, ...] | None = None) -> list[dict[str, Any]]:
    """One op's records, in this process (no guard: for debugging)."""
    return [r for dt in (dtypes or dtypes_of(key)) for r in iter_records(key, dt) if r["status"] != "skipped"]


def summarize(records: list[dict[str, Any]]) -> dict[str, int]:
    counts = {s: 0 for s in STATUSES}
    for r in records:
        counts[r["status"]] += 1
    return {"samples": len(records), **counts}
