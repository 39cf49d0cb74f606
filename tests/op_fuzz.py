"""The op fuzzer behind tests/test_op_fuzz.py and scripts/fuzz-ops: random calls over the public
op surface with adversarial arguments (huge and zero-size shapes, negative and out-of-range
axes, NaN/inf, mixed dtypes, ragged lists, wrong types, huge and negative integers, NumPy
broadcast views), each run in a worker process, so a crash is a finding naming the call.
Four calls in ten come from the classes below `gen`: zero-size axes beside huge ones, 0-d
tensors with dim arguments, and every public function of tlrs, tlrs.ops, tlrs.init,
tlrs.random, the Tensor methods and the Module API called with arguments drawn by their names
(integers beyond 64 bits and negative among them).

Each call must give a result, or one of the documented exceptions with a message; where NumPy
defines the op exactly (IEEE elementwise arithmetic), the result must equal NumPy's bit for bit.
"""

from __future__ import annotations

import contextlib
import json
import random
import select
import subprocess
import sys
import threading
import time

SHAPES = ["[]", "[0]", "[3]", "[2, 3]", "[3, 2]", "[1, 3]", "[2, 1]", "[0, 4]", "[2, 0, 3]",
          "[4, 3, 2]", "[1, 1, 1, 1]", "[2, 3, 4, 5]", "[2**40]", "[0, 2**61]", "[2, 2**62, 2]",
          "[-1]", "[2**64]", "[3, -2]"]
DTYPES = ["'float32'", "'float64'", "'float16'", "None", "'int8'"]
FILLS = ["0.0", "1.5", "-2.0", "float('nan')", "float('inf')", "-float('inf')", "1e300", "-0.0"]
INTS = ["0", "1", "-1", "2", "-3", "5", "2**31", "2**63", "2**64", "-2**63", "True", "1.5", "None", "'x'"]
RAGGED = ["[[1,2],[3]]", "[1, None]", "'abc'", "[[[]]]", "[1e400]", "np.zeros((2, 0))"]
MASKS = ["[True]", "np.ones((2, 3), bool)", "[[1, 0, 1]]", "[]", "'x'"]
PROBS = ["0.5", "0.0", "1.0", "-0.1", "float('nan')"]
SCHEMES = ["'zeros'", "'nope'", "3"]
UNARY = ["neg", "exp", "log", "sqrt", "abs", "relu", "tanh", "sigmoid", "gelu", "softplus", "silu",
         "leaky_relu", "elu", "hardtanh", "log1p", "expm1", "rsqrt", "erf", "gelu_tanh", "trunc", "floor"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "floor_divide"]
EXACT = {"add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.divide",
         "maximum": "ieee_maximum", "minimum": "ieee_minimum", "neg": "np.negative",
         "abs": "np.abs", "sqrt": "np.sqrt", "trunc": "np.trunc", "floor": "np.floor"}


def _t(r: random.Random, small: bool = False) -> str:
    """A tensor expression: mostly small real tensors with special values, sometimes adversarial."""
    if small or r.random() < 0.8:
        shape = r.choice(["[]", "[3]", "[2, 3]", "[1, 3]", "[2, 1]", "[0, 3]", "[4, 3, 2]",
                          "[2, 3, 4, 5]", "[1, 2, 5, 5]"])
        dtype = r.choice(["'float32'", "'float64'"])
        return f"T({shape}, {dtype}, {r.randrange(1000)})"
    return r.choice([f"tlrs.zeros(*{r.choice(SHAPES)})", f"tlrs.full({r.choice(SHAPES)}, {r.choice(FILLS)})",
                     "tlrs.tensor([[1.0, 2.0], [3.0]])", "tlrs.tensor([])", "tlrs.tensor(7.0)",
                     "tlrs.from_numpy(np.broadcast_to(np.zeros(1), (2**40,)))",
                     "tlrs.from_numpy(np.arange(6.0).reshape(2, 3).T)", "np.ones(3)", "None", "3.0"])


def _axis(r: random.Random) -> str:
    return r.choice(["None", "0", "1", "-1", "-2", "2", "3", "5", "-7", "2**63", "1.5"])


def gen(r: random.Random) -> tuple[str, str | None]:
    """One call as Python source, and the NumPy expression it must equal (or None)."""
    kind = r.randrange(16)
    if kind == 0:
        return r.choice([f"tlrs.zeros(*{r.choice(SHAPES)})", f"tlrs.ones({r.choice(SHAPES)}, dtype={r.choice(DTYPES)})",
                         f"tlrs.full({r.choice(SHAPES)}, {r.choice(FILLS)})", f"tlrs.rand(*{r.choice(SHAPES)})",
                         f"tlrs.randn({r.choice(SHAPES)}, dtype={r.choice(DTYPES)})",
                         "tlrs.tensor(" + r.choice(RAGGED) + ")",
                         f"tlrs.arange({r.choice(INTS)})"]), None
    if kind == 1:
        op = r.choice(UNARY)
        x = _t(r)
        ref = f"{EXACT[op]}(X0)" if op in EXACT else None
        return f"ops.{op}({x})", ref
    if kind == 2:
        op = r.choice(BINARY)
        a, b = _t(r), r.choice([_t(r), r.choice(FILLS), "2", "True"])
        ref = f"{EXACT[op]}(X0, X1)" if op in EXACT else None
        return f"ops.{op}({a}, {b})", ref
    if kind == 3:
        return f"ops.{r.choice(['sum', 'mean', 'max'])}({_t(r)}, {_axis(r)}, {r.choice(['False', 'True'])})", None
    if kind == 4:
        return r.choice([f"ops.reshape({_t(r)}, {r.choice(SHAPES)})", f"ops.permute({_t(r)}, {r.choice(['[1, 0]', '[0]', '[2, 0, 1]', '[0, 0]', '[-1, 0]'])})",
                         f"ops.transpose({_t(r)}, {_axis(r)}, {_axis(r)})", f"ops.flatten({_t(r)}, {_axis(r)}, {_axis(r)})",
                         f"ops.concat([{_t(r)}, {_t(r)}], {_axis(r)})", "ops.concat([], 0)",
                         f"ops.slice({_t(r)}, {_axis(r)}, {r.choice(INTS)}, {r.choice(INTS)})",
                         f"ops.index_select({_t(r)}, {_axis(r)}, {r.choice(['[0]', '[5]', '[-1]', '[]', '[2**63]', 'np.array([0, 1])', '[0.5]'])})"]), None
    if kind == 5:
        return f"ops.matmul({_t(r)}, {_t(r)})", None
    if kind == 6:
        return r.choice([f"tlrs.zeros(3, 0) @ tlrs.zeros(0, {r.choice(['2', '2**50', '0'])})",
                         f"tlrs.zeros({r.choice(['2**20', '0', '5'])}, 3) @ tlrs.zeros(3, {r.choice(['2**20', '0', '4'])})"]), None
    if kind == 7:
        return r.choice([f"ops.softmax({_t(r)}, {_axis(r)})", f"ops.log_softmax({_t(r)}, {_axis(r)})",
                         f"ops.cross_entropy({_t(r)}, {r.choice(['[0, 1]', '[5]', '[-1]', '[]', '[0]', _t(r)])})",
                         f"ops.mse_loss({_t(r)}, {_t(r)})"]), None
    if kind == 8:
        return r.choice([f"ops.conv2d({_t(r)}, {_t(r)}, None, {r.choice(INTS)}, {r.choice(INTS)})",
                         f"ops.max_pool2d({_t(r)}, {r.choice(INTS)}, {r.choice(INTS)}, {r.choice(INTS)})",
                         f"ops.avg_pool2d({_t(r)}, {r.choice(INTS)})", f"ops.global_avg_pool2d({_t(r)})",
                         f"ops.conv2d(tlrs.zeros(1, 1, 3, 3), tlrs.zeros(1, 1, 1, 1), padding={r.choice(INTS)})"]), None
    if kind == 9:
        return r.choice([f"ops.masked_fill({_t(r)}, {r.choice(MASKS)}, {r.choice(FILLS)})",
                         f"ops.gather({_t(r)}, {_axis(r)}, {r.choice(['[[0]]', '[[9]]', 'np.zeros((2, 1), int)', '[[-1]]', '[]'])})",
                         f"ops.scatter_add({_t(r)}, {_axis(r)}, {r.choice(['[[0]]', '[[9]]', 'np.zeros((2, 1), int)'])}, {_t(r)})",
                         f"ops.embedding({r.choice(['[0, 1]', '[9]', '[-1]', '[]', '[[0], [1]]'])}, {_t(r)})",
                         f"ops.dropout({_t(r)}, {r.choice(PROBS)})"]), None
    if kind == 10:
        x = _t(r) if r.random() < 0.3 else _t(r, small=True)
        x = x if x.startswith(("T(", "tlrs.")) else "T([2, 3], 'float64', 1)"
        return r.choice([f"{x}.numpy()", f"{x}.tolist()", f"{x}.item()", f"repr({x})", f"float({x})",
                         f"len({x})", f"{x}.to({r.choice(DTYPES + [repr('cuda'), repr('cpu')])})",
                         f"{x}.detach()", f"{x}.sum()", f"{x}.reshape({r.choice(SHAPES)})"]), None
    if kind == 11:
        x = _t(r, small=True)
        e = r.choice(["2", "0.5", "-1", "0", "3.0", "float('nan')"])
        return r.choice([f"{x} ** {e}", f"pow({x}, {e}, 5)", f"ops.pow({x}, {e})",
                         f"ops.clamp({x}, {r.choice(FILLS + ['None'])}, {r.choice(FILLS + ['None'])})"]), None
    if kind == 12:
        return r.choice([f"tlrs.random.lcg_units({r.choice(INTS)}, {r.choice(INTS + ['2**40'])})",
                         f"tlrs.random.shuffle_permutation({r.choice(INTS)}, {r.choice(INTS + ['2**40'])})",
                         f"tlrs.init.layer_init('uniform', {r.choice(SHAPES)})",
                         f"tlrs.init.layer_init({r.choice(SCHEMES)}, [2])",
                         f"tlrs.manual_seed({r.choice(INTS)})"]), None
    if kind == 13:
        a, b = _t(r), _t(r)
        op = r.choice(["+", "-", "*", "/"])
        return f"{a} {op} {b}", None
    if kind == 14:
        return f"tlrs.grad(ops.sum({_t(r)}), [{_t(r)}])", None
    return f"ops.linear({_t(r)}, {_t(r)}, {r.choice(['None', _t(r)])})", None


# The new classes (zero-size axes beside huge ones, integers beyond 64 bits and negative, 0-d
# tensors with dim arguments) and a sweep over the whole public surface, driven by signatures.
HUGE_EMPTY = ["tlrs.zeros(0, 2**40)", "tlrs.zeros(2**40, 0)", "tlrs.zeros(0, 2**40, 3)",
              "tlrs.zeros(3, 0, 2**40)", "tlrs.zeros(2**62, 0)", "tlrs.zeros(1, 1, 0, 2**40)"]
WIDE_INTS = ["2**64", "2**70", "-2**70", "-1", "-2**63 - 1", "2**63", "2**200", "-5"]
DIM_OPS = ["sum", "mean", "max", "softmax", "log_softmax", "flatten", "transpose", "slice",
           "index_select", "gather", "concat"]
SKIP = {"run", "with_module", "with_module_runtime", "with_runtime", "set_num_threads",
        "save", "export_onnx", "load", "load_checkpoint", "load_training", "from_dlpack"}
TENSOR_NAMES = {"input", "x", "t", "weight", "other", "target", "bias", "src", "a", "b",
                "wq", "wk", "wv", "wo", "running_mean", "running_var", "mask", "outputs",
                "inputs", "tensors", "params", "value", "data"}
INT_NAMES = {"seed", "key", "n", "steps", "fan_in", "fan_out", "out_dim", "in_dim",
             "kernel_size", "stride", "padding", "num_heads", "counter", "index", "start", "end",
             "log_every", "count", "bound"}


def _surface() -> list[tuple[str, list[tuple[str, bool]]]]:
    """(callable expression, [(parameter name, required)]) for every public function of tlrs,
    tlrs.ops, tlrs.init, tlrs.random, the Tensor methods and the Module API."""
    import inspect

    import tlrs
    from tlrs import init, ops
    from tlrs import random as trandom

    found = []
    groups = [("tlrs", tlrs), ("ops", ops), ("tlrs.init", init), ("tlrs.random", trandom),
              ("tlrs.init.FloatInit", init.FloatInit)]
    for prefix, mod in groups:
        names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
        for name in names:
            fn = getattr(mod, name, None)
            if name in SKIP or not callable(fn) or (isinstance(fn, type) and issubclass(
                    fn, BaseException)):
                continue
            try:
                params = list(inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                continue
            found.append((f"{prefix}.{name}", [
                (p.name, p.default is inspect.Parameter.empty) for p in params
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]))
    for owner, expr in [(tlrs.Tensor, "T([2, 3], 'float64', 1)"), (tlrs.Module, "M()")]:
        for name in dir(owner):
            fn = getattr(owner, name)
            if name.startswith("_") or name in SKIP or not callable(fn):
                continue
            try:
                params = list(inspect.signature(fn).parameters.values())[1:]
            except (TypeError, ValueError):
                continue
            found.append((f"{expr}.{name}", [
                (p.name, p.default is inspect.Parameter.empty) for p in params
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]))
    return found


_SURFACE: list[tuple[str, list[tuple[str, bool]]]] = []


def _arg(r: random.Random, name: str) -> str:
    if name in TENSOR_NAMES:
        return r.choice([_t(r), "tlrs.tensor(2.0)", r.choice(HUGE_EMPTY), "[T([2, 3], 'float64', 1)]"])
    if "dim" in name or "axis" in name:
        return r.choice([_axis(r), r.choice(WIDE_INTS)])
    if name in INT_NAMES:
        return r.choice(INTS + WIDE_INTS)
    if "shape" in name or name == "dims":
        return r.choice(SHAPES + ["[[2, 2**64]]", "[[-1]]", "[2**70]"])
    return r.choice(INTS + WIDE_INTS + FILLS + ["'float32'", "None", "[]", "[2**64]",
                                                 "tlrs.tensor(2.0)", _t(r)])


def gen_new(r: random.Random) -> str:
    kind = r.randrange(3)
    if kind == 0:  # zero-size axes beside huge ones
        x = r.choice(HUGE_EMPTY)
        return r.choice([f"ops.{r.choice(['sum', 'mean', 'max', 'softmax', 'log_softmax'])}({x}, {r.choice(['0', '1', '-1', '2'])})",
                         f"{x}.sum({r.choice(['0', '1', '-1'])}, keepdim={r.choice(['True', 'False'])})",
                         f"ops.matmul({x}, {r.choice(HUGE_EMPTY)})", f"ops.transpose({x}, 0, 1)",
                         f"ops.concat([{x}, {r.choice(HUGE_EMPTY)}], {r.choice(['0', '1'])})",
                         f"ops.reshape({x}, {r.choice(['[-1]', '[2**40, 0]', '[0, -1]'])})",
                         f"ops.index_select({x}, {r.choice(['0', '1'])}, [])",
                         f"ops.layer_norm({x}, {r.choice(['2**40', '0', '[3]'])})",
                         f"ops.linear({x}, {r.choice(HUGE_EMPTY)})", f"ops.mse_loss({x}, {x})",
                         f"ops.cross_entropy({x}, [])", f"{x} + tlrs.zeros(1)",
                         f"ops.embedding([], {x})", f"ops.gather({x}, 0, np.zeros((0, 1), int))",
                         f"tlrs.grad(ops.sum({x}), [{x}])", f"ops.flatten({x})",
                         f"ops.max_pool2d({x}, 2)", f"ops.global_avg_pool2d({x})"])
    if kind == 1:  # 0-d tensors with dim arguments
        op, d = r.choice(DIM_OPS), r.choice(["0", "-1", "1", "-2", "2**64"])
        t0 = r.choice(["tlrs.tensor(2.0)", "tlrs.tensor(float('nan'), dtype='float32')"])
        return {"flatten": f"ops.flatten({t0}, {d}, {d})", "transpose": f"ops.transpose({t0}, {d}, 0)",
                "slice": f"ops.slice({t0}, {d}, 0, 1)", "index_select": f"ops.index_select({t0}, {d}, [0])",
                "gather": f"ops.gather({t0}, {d}, [0])", "concat": f"ops.concat([{t0}, {t0}], {d})",
                }.get(op, f"ops.{op}({t0}, {d})")
    if not _SURFACE:
        _SURFACE.extend(_surface())
    fn, params = r.choice(_SURFACE)
    args = [_arg(r, name) for name, required in params if required or r.random() < 0.3]
    return f"{fn}({', '.join(args)})"


def cases(seed: int, n: int) -> list[tuple[str, str | None]]:
    r = random.Random(seed)
    return [gen(r) if r.random() < 0.6 else (gen_new(r), None) for _ in range(n)]


WORKER = r'''
import json, math, sys
import numpy as np
import tlrs
from tlrs import ops

def M():
    defn, _ = tlrs.models.mlp(3, 4, 1)
    return tlrs.instantiate_with_options(defn, "float64", None)

def T(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape) * 3
    flat = a.reshape(-1)
    if flat.size:
        for i, v in enumerate([np.nan, np.inf, -np.inf, 0.0, -0.0]):
            if rng.random() < 0.3:
                flat[rng.integers(flat.size)] = v
    return tlrs.tensor(a, dtype=dtype)

ALLOWED = (ValueError, TypeError, IndexError, MemoryError, tlrs.AutogradError,
           tlrs.CudaUnavailableError, tlrs.DeviceError)
BAD = (OverflowError, SystemError)

def ieee_minimum(a, b):
    # IEEE 754-2019 minimum: as np.minimum, but of two zeros -0 whatever their order (NumPy
    # returns its second operand on ties).
    m = np.minimum(a, b)
    return np.where(np.asarray(a == b), np.where(np.signbit(a), a, b), m).astype(m.dtype)

def ieee_maximum(a, b):
    m = np.maximum(a, b)
    return np.where(np.asarray(a == b), np.where(np.signbit(a), b, a), m).astype(m.dtype)

def same_bits(got, want):
    want = np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"NumPy gives {want.dtype}{list(want.shape)}, tlrs {got.dtype}{list(got.shape)}"
    nan = np.isnan(got)
    if not np.array_equal(nan, np.isnan(want)):
        return "NaN positions differ from NumPy"
    if got[~nan].tobytes() != want[~nan].tobytes():
        return "values differ from NumPy"
    return None

np.seterr(all="ignore")
for line in sys.stdin:
    i, src, ref = json.loads(line)
    print(i, file=sys.stderr, flush=True)
    out = {"i": i}
    try:
        X = []
        env = {"tlrs": tlrs, "ops": ops, "np": np, "T": T, "M": M, "ieee_minimum": ieee_minimum,
               "ieee_maximum": ieee_maximum}
        value = eval(src, env)
        out["outcome"] = "result"
        if ref is not None and isinstance(value, tlrs.Tensor):
            # Re-evaluate the operand expressions to get the inputs as NumPy arrays.
            call = src[src.index("(") + 1:-1]
            args = eval("[" + call + "]", env)
            xs = [a.numpy() if isinstance(a, tlrs.Tensor) else a for a in args]
            if all(isinstance(a, np.ndarray) for a in xs):
                dt = value.numpy().dtype
                if all(a.dtype == dt for a in xs):
                    env.update({f"X{k}": a for k, a in enumerate(xs)})
                    why = same_bits(value.numpy(), eval(ref, env))
                    if why:
                        out["outcome"], out["why"] = "wrong", why
    except BAD as e:
        out["outcome"], out["why"] = "bad", f"{type(e).__name__}: {e}"
    except ALLOWED as e:
        msg = str(e)
        bad = not msg or "internal error" in msg or type(e).__name__ == "RuntimeError"
        out["outcome"] = "bad" if bad else "error"
        out["why"] = f"{type(e).__name__}: {msg}"
    except BaseException as e:  # PanicException, RuntimeError, AttributeError, ...
        out["outcome"], out["why"] = "bad", f"{type(e).__name__}: {e}"
    print(json.dumps(out), flush=True)
'''


PER_CASE_S = 120.0
"""A call that takes longer than this is a finding (a hang, or work a size check should refuse);
long enough for a legitimate 16 GiB fill (`tlrs.ones(1, 2**31)` took over 30 s here)."""


def _worker(feed: str) -> tuple[list[dict], int | None, str]:
    """Runs the cases of `feed` in one worker process; returns the outcomes of those it
    finished, its exit code (None: killed after a case ran past PER_CASE_S) and its stderr."""
    proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    def feed_all() -> None:
        with contextlib.suppress(BrokenPipeError):  # the worker died part way: reported below
            proc.stdin.write(feed)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]

    threading.Thread(target=feed_all, daemon=True).start()
    err: list[str] = []
    threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True).start()  # type: ignore[union-attr]
    done: list[dict] = []
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], PER_CASE_S)
        if not ready:
            proc.kill()
            proc.wait()
            return done, None, ""
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("{"):
            done.append(json.loads(line))
    code = proc.wait()
    time.sleep(0.05)
    return done, code, "".join(err)


def run(seed: int, n: int, batch: int = 2000) -> dict:
    """Runs `n` cases; returns the counts and the findings (crashes, hangs, bad errors, wrong
    values)."""
    all_cases = cases(seed, n)
    counts = {"cases": n, "result": 0, "error": 0, "crash": 0, "hang": 0, "bad": 0, "wrong": 0}
    findings: list[str] = []
    start = 0
    while start < n:
        chunk = all_cases[start:start + batch]
        feed = "".join(json.dumps([start + k, src, ref]) + "\n" for k, (src, ref) in enumerate(chunk))
        done, code, stderr = _worker(feed)
        for d in done:
            counts[d["outcome"]] += 1
            if d["outcome"] in ("bad", "wrong"):
                findings.append(f"{d['outcome']}: {all_cases[d['i']][0]} -> {d.get('why')}")
        start += len(done)
        if code is None:
            counts["hang"] += 1
            findings.append(f"hang (over {PER_CASE_S:.0f} s) at case {start}: {all_cases[start][0]}")
            start += 1
        elif code != 0 or len(done) < len(chunk):
            counts["crash"] += 1
            findings.append(f"crash ({code}): {all_cases[start][0]}: {stderr[-300:]}")
            start += 1
    return {"counts": counts, "findings": findings}


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    report = run(seed, n)
    for f in report["findings"]:
        print(f)
    print(json.dumps(report["counts"]))
    sys.exit(0 if not report["findings"] else 1)
