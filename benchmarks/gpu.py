"""GPU speed: tlrs on CUDA against PyTorch CUDA eager (SGEMM, DGEMM, conv, training steps of the
MLPs, the CNN, the transformer block, ResNet-18 and the char GPT), for tlrs's exact, fast and
compiled kernels, measured in one run, interleaved. Prints tables of times and tlrs/torch ratios
and the goals met or missed; never fails (a case that raises prints its error in its row and the
run goes on).

    python benchmarks/gpu.py [--n 8192] [--quick] [--reps 5] [--k 10] [--budget 1.0]
                             [--time-limit 150] [--out DIR]

Configurations. exact: reference kernels (each product folded exactly in the CPU's order: the
CPU's bits; checked here on the GEMM corner only), eager; fast: cuBLAS products, eager; compiled: the compiled backend with fast
kernels (the traced graph replays on the device). Training modules are
`Options().to_device("cuda")`, `Options(fast_kernels=True).to_device("cuda")` and
`Options(backend="compiled", fast_kernels=True).to_device("cuda")`; GEMM and conv set the
calling thread's kernels (`tlrs.kernels.kernel_settings`). TF32 is off on both sides
(`tlrs.cuda.allow_tf32(False)`, `torch.backends.cuda.matmul.allow_tf32 = False`,
`torch.backends.cudnn.allow_tf32 = False`); torch runs eager.

Timing. Every runner is warmed up with one call (kernel compilation, tracing, algorithm choice);
a second timed call sets k, the calls per repetition (GEMM fast rows: --k), so that the
repetitions take about --budget seconds; the median over the repetitions of the time per call is
reported. A runner whose call takes more than --budget/--reps gets one call per repetition and
only as many repetitions as fit --budget (at least the one timed call); each row prints
"timed: reps x calls" per side. One repetition waits for its calls at the end:
`torch.cuda.synchronize()`, `tlrs.cuda.synchronize()`. After --time-limit seconds (from start)
the rows not begun print "skipped: time limit", and a running row stops adding repetitions.

GEMM: C = A @ B, n x n standard-normal operands already on the device; tlrs multiplies f32
tensors with the SGEMM setting and f64 with DGEMM, torch runs `torch.matmul`. The tlrs time
includes allocating (and freeing) each product's output. Reported: ms per product, TFLOP/s =
2n^3 / t, the tlrs/torch time ratio (> 1: tlrs is slower), for SGEMM the fraction of the GPU's
FP32 peak (a table by device name: H200 and H100 SXM 67 TFLOP/s, H100 PCIe 51; otherwise none is
printed). Correctness, once per case: max |C - C_ref| / max |C_ref| over the top-left 256 x 256
corner, of tlrs against torch and against a float64 NumPy product; for exact rows also whether
that corner has the bits of tlrs's CPU reference product of the same rows and columns.

Conv: one conv2d (3x3, stride 1, padding 1, with bias; batch 32, 64 -> 64 channels, 56 x 56: a
ResNet stage-1 layer) forward and backward to the input, weight and bias under a fixed output
gradient, f32; TFLOP/s counts 3 x 2 N Cout Cin 9 H W. diff: the largest max-relative difference
of the output and the three gradients against torch.

Training steps, f32: one step = forward, backward and a plain SGD update (lr 1e-3) of every
parameter on one fixed batch. tlrs: a `Module` calling `module.step`; torch: the same model
starting from the same parameters (benchmarks/gpu_models.py: parameter names and shapes
checked), `torch.optim.SGD`. Rows: tlrs.models.mlp_classifier 784-128-10 and the 784-512-512-10
MLP of benchmarks/train_step.py (batch 128); the two-conv CNN as `tlrs run cnn --channels 32`
builds it on 3x32x32 images (batch 64); tlrs.models.transformer_block (batch 32, 128 positions,
d_model 256, 8 heads of 32; no residual or feed-forward, MSE); tlrs.models.resnet18_model on
3x64x64 and 3x224x224 images (batch 32; torch: GroupNorm with one channel per group stands for
tlrs's per-image batch norm, the same formula); tlrs's char GPT (models/nn_transformers.py as
`tlrs run gpt` builds it: vocabulary 65, block 128, d_model 256, 8 heads, 4 layers, LM head
tied; batch 32, int64 ids). Cross-entropy losses use one-hot targets of random classes (ids for
the GPT). "loss diff" = |tlrs - torch| / |torch| of the initial loss, the largest over the row's
tlrs configurations: a check that both sides compute the same model. The fast and compiled
configurations run first, each row timing torch, fast and compiled interleaved; then every row
again with exact kernels, interleaved with torch once more.

Goals (tlrs / torch time, same GPU, same run): fast and compiled <= 1.0x on every training row;
exact <= 2.0x; fast SGEMM and DGEMM at least 0.95x cuBLAS throughput (<= 1.053x time); exact
SGEMM at least 45% of the FP32 peak (a peak counted with fused multiply-adds, which the exact
kernel may not use: its own ceiling is half the peak, so the goal asks 90% of that). The last
table says, per goal, met, MISSED or not measured.

--quick: tiny sizes (GEMM n = 1024, 128 on the emulator; conv batch 2, 8 -> 8 channels, 8 x 8;
the training models at batch 2 or 8 on 8x8 to 64x64 images, a transformer block of d_model 16,
a GPT of block 16, d_model 32: benchmarks/gpu_models.py), 2 repetitions of one call each.

Without torch, or without a CUDA device for torch, the torch columns show "-". When tlrs cannot
use CUDA, the reason is printed and the exit code is 0. With TLRS_CUDA_EMULATOR=1 tlrs runs on
its host emulator (slow; --quick then uses n = 128).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import gpu_models as gm
import numpy as np

import tlrs
import tlrs.cuda
from tlrs import ops
from tlrs.autograd import grad
from tlrs.kernels import kernel_settings

LR = 1e-3
CORNER = 256
KMAX = 1000  # most calls per repetition
# FP32 peak (TFLOP/s) by device name: the first entry whose words all occur in the name (None:
# a known card without a table entry).
PEAK_FP32: list[tuple[tuple[str, ...], float | None]] = [
    (("H200",), 67.0), (("H100", "PCIe"), 51.0), (("H100", "NVL"), None), (("H100",), 67.0)]
GEMM_GOAL, TRAIN_GOALS, EXACT_PEAK_GOAL = 1 / 0.95, {"fast": 1.0, "compiled": 1.0, "exact": 2.0}, 0.45

Run = Callable[[int], float]  # run(k): seconds for k calls, completion included


def load_torch() -> tuple[Any, str]:
    """(torch with TF32 off, or None; a one-line description)."""
    try:
        import torch
    except ImportError:
        return None, "not installed"
    except Exception as e:  # noqa: BLE001 - a broken install counts as none
        return None, f"not importable ({error_text(e)})"
    try:
        if not torch.cuda.is_available():
            return None, f"{torch.__version__}, no CUDA device for torch"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        return torch, f"{torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}"
    except Exception as e:  # noqa: BLE001
        return None, f"{torch.__version__}, CUDA unusable ({error_text(e)})"


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def fp32_peak(name: str) -> float | None:
    for words, peak in PEAK_FP32:
        if all(w in name for w in words):
            return peak
    return None


class Deadline:
    """The --time-limit, counted from the script's start."""

    def __init__(self, start: float, seconds: float) -> None:
        self.end = start + seconds

    def passed(self) -> bool:
        return time.perf_counter() >= self.end


def measure(runners: dict[str, Run], reps: int, budget: float, fixed_k: int | None,
            deadline: Deadline) -> dict[str, Any]:
    """Median seconds per call of each runner, the runners interleaved in every repetition (see
    the module docstring). Returns {"medians", "errors", "skipped" (runners not begun before the
    deadline), "timed" ("reps x k" per runner)}."""
    ks: dict[str, int] = {}
    counts: dict[str, int] = {}
    samples: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    skipped: list[str] = []
    for name, run in runners.items():
        if deadline.passed():
            skipped.append(name)
            continue
        try:
            run(1)
            samples[name] = []
            if fixed_k is not None:
                ks[name], counts[name] = fixed_k, reps
                continue
            t1 = run(1)
            k = 1 if budget <= 0 else max(1, min(KMAX, int(budget / reps / max(t1, 1e-7))))
            ks[name] = k
            counts[name] = reps if k > 1 or budget <= 0 else max(1, min(reps, int(budget / t1)))
            if k == 1:
                samples[name].append(t1)  # a timed call after the warm-up: the first repetition
        except Exception as e:  # noqa: BLE001 - reported in the table
            errors[name] = error_text(e)
    for _ in range(reps):
        for name, k in ks.items():
            done = samples[name]
            if name in errors or len(done) >= counts[name] or (done and deadline.passed()):
                continue
            try:
                done.append(runners[name](k) / k)
            except Exception as e:  # noqa: BLE001
                errors[name] = error_text(e)
    return {"medians": {n: statistics.median(v) for n, v in samples.items() if v and n not in errors},
            "errors": errors, "skipped": skipped,
            "timed": {n: f"{len(v)}x{ks[n]}" for n, v in samples.items() if v and n not in errors}}


def store(row: dict[str, Any], timing: dict[str, Any]) -> None:
    """The measurement's times (ms), errors, skips and counts into the row."""
    for side, t in timing["medians"].items():
        row[f"{side}_ms"] = t * 1e3
    row.setdefault("errors", {}).update(timing["errors"])
    row["skipped"] = row.get("skipped", []) + timing["skipped"]
    row["timed"] = timing["timed"]


def rel_diff(x: np.ndarray, ref: np.ndarray) -> float:
    """max |x - ref| / max |ref| (in float64)."""
    x, ref = np.asarray(x, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(x - ref))) / scale


def timed_torch(torch: Any, body: Callable[[], Any]) -> Run:
    def run(k: int) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(k):
            body()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    return run


def timed_tlrs(body: Callable[[], Any], settings: tuple[bool, bool] | None = None) -> Run:
    """run(k) of `body` under kernel settings (fast, gpu_fp64) when given, TF32 off."""
    def run(k: int) -> float:
        t0 = time.perf_counter()
        if settings is None:
            for _ in range(k):
                body()
        else:
            with kernel_settings(settings[0], settings[1], False):
                for _ in range(k):
                    body()
        tlrs.cuda.synchronize()
        return time.perf_counter() - t0

    return run


# ---------------------------------------------------------------------------------------------
# GEMM and conv


@functools.cache
def operands(n: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The GEMM operands (standard normal, seed 0), drawn once for the fast and exact rows."""
    rng = np.random.default_rng(0)
    return (rng.standard_normal((n, n), dtype=np.dtype(dtype).type),
            rng.standard_normal((n, n), dtype=np.dtype(dtype).type))


def gemm_case(torch: Any, n: int, dtype: str, config: str, k: int, reps: int, budget: float,
              deadline: Deadline) -> dict[str, Any]:
    fast, fp64 = config == "fast", dtype == "float64"
    row: dict[str, Any] = {"case": f"{'d' if fp64 else 's'}gemm n={n} {config}", "dtype": dtype, "n": n,
                           "config": config, "errors": {}}
    a_np, b_np = operands(n, dtype)
    c = min(CORNER, n)
    ref = a_np[:c].astype(np.float64) @ b_np[:, :c].astype(np.float64)
    a, b = tlrs.tensor(a_np, dtype=dtype, device="cuda"), tlrs.tensor(b_np, dtype=dtype, device="cuda")
    last: dict[str, Any] = {}  # the last timed product, checked below (an exact DGEMM can take seconds)

    def product() -> None:
        last["y"] = ops.matmul(a, b)

    runners: dict[str, Run] = {"tlrs": timed_tlrs(product, (fast, fp64))}
    got: dict[str, np.ndarray] = {}
    if torch is not None:
        ta, tb = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
        runners["torch"] = timed_torch(torch, lambda: torch.matmul(ta, tb))
    store(row, measure(runners, reps, budget, k if fast else None, deadline))
    for side in runners:
        if f"{side}_ms" in row:
            row[f"{side}_tflops"] = 2.0 * n**3 / (row[f"{side}_ms"] * 1e-3) / 1e12
    try:
        if "y" not in last:
            with kernel_settings(fast, fp64, False):
                product()
        got["tlrs"] = ops.slice(ops.slice(last.pop("y"), 0, 0, c), 1, 0, c).numpy()
        if not fast:  # the CPU's reference product of the corner's rows and columns
            with kernel_settings(False, fp64, False):
                cpu = ops.matmul(tlrs.tensor(a_np[:c], dtype=dtype), tlrs.tensor(b_np[:, :c], dtype=dtype)).numpy()
            bits = np.dtype(f"u{cpu.itemsize}")
            differ = int(np.sum(got["tlrs"].view(bits) != cpu.view(bits)))
            row["cpu_bits"] = "same" if differ == 0 else f"{differ} differ"
    except Exception as e:  # noqa: BLE001
        row["errors"]["tlrs check"] = error_text(e)
    if torch is not None and "torch" not in row["errors"]:
        try:
            got["torch"] = torch.matmul(ta, tb)[:c, :c].cpu().numpy()
        except Exception as e:  # noqa: BLE001
            row["errors"]["torch"] = error_text(e)
    row["diff_torch"] = rel_diff(got["tlrs"], got["torch"]) if {"tlrs", "torch"} <= set(got) else None
    row["diff_f64"] = rel_diff(got["tlrs"], ref) if "tlrs" in got else None
    return row


def conv_case(torch: Any, shape: tuple[int, int, int, int], config: str, reps: int, budget: float,
              deadline: Deadline) -> dict[str, Any]:
    batch, cin, cout, hw = shape
    row: dict[str, Any] = {"case": f"conv b{batch} {cin}->{cout} {hw}x{hw} 3x3 {config}", "config": config,
                           "errors": {}}
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s, dtype=np.float32) for s in
              ([batch, cin, hw, hw], [cout, cin, 3, 3], [cout], [batch, cout, hw, hw])]
    arrays[1] /= np.float32(3 * np.sqrt(cin))
    x, w, b, gy = (tlrs.tensor(a, dtype="float32", device="cuda") for a in arrays)
    for t in (x, w, b):
        t.requires_grad = True
    settings = (config == "fast", False)

    def tlrs_step() -> list[Any]:
        y = ops.conv2d(x, w, b, 1, 1)
        return [y, *grad([y], [x, w, b], [gy])]

    runners: dict[str, Run] = {"tlrs": timed_tlrs(tlrs_step, settings)}
    if torch is not None:
        F = torch.nn.functional
        tx, tw, tb = (torch.from_numpy(a).cuda().requires_grad_() for a in arrays[:3])
        tgy = torch.from_numpy(arrays[3]).cuda()

        def torch_step() -> list[Any]:
            y = F.conv2d(tx, tw, tb, 1, 1)
            return [y, *torch.autograd.grad([y], [tx, tw, tb], [tgy])]

        runners["torch"] = timed_torch(torch, torch_step)
    store(row, measure(runners, reps, budget, None, deadline))
    for side in runners:
        if f"{side}_ms" in row:
            row[f"{side}_tflops"] = 3 * 2.0 * batch * cout * cin * 9 * hw * hw / (row[f"{side}_ms"] * 1e-3) / 1e12
    row["diff_torch"] = None
    if "tlrs_ms" in row and "torch_ms" in row:
        try:
            with kernel_settings(settings[0], settings[1], False):
                mine = [t.detach().numpy() for t in tlrs_step()]
            theirs = [t.detach().cpu().numpy() for t in torch_step()]
            row["diff_torch"] = max(rel_diff(m, t) for m, t in zip(mine, theirs))
        except Exception as e:  # noqa: BLE001
            row["errors"]["check"] = error_text(e)
    return row


# ---------------------------------------------------------------------------------------------
# Training steps


def train_case(torch: Any, case: gm.Case, configs: list[str], reps: int, budget: float,
               deadline: Deadline) -> dict[str, Any]:
    row: dict[str, Any] = {"case": case.name, "dtype": "float32", "configs": configs, "errors": {},
                           "skipped": []}
    defn = case.build()
    x, y = gm.sample(defn, case)
    xs = gm.tlrs_inputs(x, y)
    runners: dict[str, Run] = {}
    losses: dict[str, float] = {}
    if torch is not None:
        try:
            model = gm.torch_module(torch, case, defn, "cuda")
            loss_fn = gm.torch_loss(torch, case)
            tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=LR)
            with torch.no_grad():
                losses["torch"] = loss_fn(model, tx, ty).item()

            def torch_step() -> None:
                opt.zero_grad(set_to_none=True)
                loss_fn(model, tx, ty).backward()
                opt.step()

            runners["torch"] = timed_torch(torch, torch_step)
        except Exception as e:  # noqa: BLE001
            row["errors"]["torch"] = error_text(e)
    for config in configs:
        if deadline.passed():
            row["skipped"].append(config)
            continue
        try:
            m = tlrs.instantiate_with_options(defn, "float32", gm.CONFIGS[config])
            losses[config] = m.forward(xs).item()
            runners[config] = timed_tlrs(functools.partial(m.step, LR, xs))
        except Exception as e:  # noqa: BLE001
            row["errors"][config] = error_text(e)
    store(row, measure(runners, reps, budget, None, deadline))
    row["loss0"] = losses
    row["loss_diff"] = {c: abs(losses[c] - losses["torch"]) / max(abs(losses["torch"]), 1e-30)
                        for c in configs if c in losses and "torch" in losses}
    return row


# ---------------------------------------------------------------------------------------------
# Output


def fmt(v: float | None, width: int, spec: str) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:{width}{spec}}"


def ratio(row: dict[str, Any], side: str = "tlrs") -> float | None:
    t, r = row.get(f"{side}_ms"), row.get("torch_ms")
    return t / r if t is not None and r else None


def fmt_ratio(v: float | None, width: int) -> str:
    return f"{fmt(v, width - 1, '.2f')}{'x' if v is not None else ' '}"


def print_notes(row: dict[str, Any]) -> None:
    if row.get("timed"):
        print("    timed: " + ", ".join(f"{side} {t}" for side, t in row["timed"].items()) + " (reps x calls)")
    if row.get("skipped"):
        print(f"    skipped (time limit): {', '.join(row['skipped'])}")
    for side, msg in row.get("errors", {}).items():
        print(f"    {side} error: {msg}")


def write_json(out_dir: str | None, doc: dict[str, Any]) -> None:
    if not out_dir:
        return
    try:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "gpu.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(path + ".tmp", path)
    except OSError as e:
        print(f"cannot write {out_dir}/gpu.json: {e}", file=sys.stderr)


def summarize(doc: dict[str, Any]) -> None:
    """The document's lists of failures (all, tlrs's) and of rows the time limit cut."""
    rows = doc["gemm"] + doc["conv"] + doc["train"] + doc["train_exact"]
    failed = [(r["case"], side, msg) for r in rows for side, msg in r.get("errors", {}).items()]
    doc["errors"] = [f"{case}: {side}: {msg}" for case, side, msg in failed]
    doc["tlrs_errors"] = [f"{case}: {side}: {msg}" for case, side, msg in failed if side != "torch"]
    doc["skipped"] = [f"{r['case']}: {', '.join(r['skipped'])}" for r in rows if r.get("skipped")]


def run_rows(doc: dict[str, Any], key: str, out: str | None, deadline: Deadline, torch: Any,
             jobs: Sequence[tuple[str, Callable[[], dict[str, Any]]]], line: Callable[[dict[str, Any]], str]) -> None:
    """Each job's row (or its setup error, or "skipped: time limit"), printed and saved (with
    the summary so far) as it ends."""
    for name, job in jobs:
        if deadline.passed():
            row: dict[str, Any] = {"case": name, "skipped": ["all"]}
            print(f"{name:<30} | skipped: time limit")
        else:
            try:
                row = job()
            except Exception as e:  # noqa: BLE001 - e.g. out of memory while setting up
                row = {"case": name, "errors": {"setup": error_text(e)}}
            print(f"{name:<30} | {line(row)}")
            print_notes(row)
            gc.collect()
            if torch is not None:
                torch.cuda.empty_cache()
        doc[key].append(row)
        summarize(doc)
        write_json(out, doc)


def goals(doc: dict[str, Any], peak: float | None) -> list[dict[str, Any]]:
    """Each goal with its value and whether it was met (None: not measured)."""
    out: list[dict[str, Any]] = []

    def add(what: str, value: float | None, limit: float, at_most: bool, unit: str) -> None:
        met = None if value is None else (value <= limit if at_most else value >= limit)
        out.append({"goal": what, "value": value, "unit": unit, "met": met})

    for row in doc["gemm"]:  # the case names the configuration (skipped and failed rows too)
        if row["case"].endswith(" fast"):
            add(f"{row['case']}: tlrs/torch <= {GEMM_GOAL:.3f}x", ratio(row), GEMM_GOAL, True, "x")
        elif row["case"].startswith("sgemm") and row["case"].endswith(" exact"):
            frac = row["tlrs_tflops"] / peak if peak and row.get("tlrs_tflops") is not None else None
            add(f"{row['case']}: >= {EXACT_PEAK_GOAL:.0%} of FP32 peak", frac, EXACT_PEAK_GOAL, False, "of peak")
    for key, configs in (("train", ["fast", "compiled"]), ("train_exact", ["exact"])):
        for row, config in ((r, c) for r in doc[key] for c in configs):
            add(f"{row['case']} {config}: <= {TRAIN_GOALS[config]:.1f}x", ratio(row, config),
                TRAIN_GOALS[config], True, "x")
    return out


def main() -> None:
    start = time.perf_counter()
    p = argparse.ArgumentParser(description=" ".join((__doc__ or "").split("\n\n")[0].split()))
    p.add_argument("--n", type=int, default=None, help="GEMM size (default 8192; --quick: 1024, emulator 128)")
    p.add_argument("--quick", action="store_true", help="tiny sizes and few repetitions (smoke test)")
    p.add_argument("--reps", type=int, default=None, help="repetitions, median taken (default 5; --quick: 2)")
    p.add_argument("--k", type=int, default=None, help="fast GEMM products per repetition (default 10; --quick: 2)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds of calls per side and row (default 1.0; --quick: 0 = 1 call per repetition)")
    p.add_argument("--time-limit", type=float, default=150.0,
                   help="seconds from start after which the remaining rows are skipped (default 150)")
    p.add_argument("--out", default=None, help="also write the tables as DIR/gpu.json")
    args = p.parse_args()

    if not tlrs.cuda.is_available():
        print("tlrs cannot use CUDA here, nothing to measure:")
        print(tlrs.cuda.unavailable_reason())
        write_json(args.out, {"available": False, "reason": tlrs.cuda.unavailable_reason()})
        return
    diag = tlrs.cuda.diagnostics()
    emulated = "emulator" in diag and diag["emulator"].startswith("on")
    n = args.n or ((128 if emulated else 1024) if args.quick else 8192)
    reps = max(1, args.reps or (2 if args.quick else 5))
    k = max(1, args.k or (2 if args.quick else 10))
    budget = args.budget if args.budget is not None else (0.0 if args.quick else 1.0)
    conv_shape = (2, 8, 8, 8) if args.quick else (32, 64, 64, 56)
    deadline = Deadline(start, args.time_limit)
    tlrs.cuda.allow_tf32(False)
    torch, torch_desc = load_torch()
    device = "emulator (TLRS_CUDA_EMULATOR=1, host CPU)" if emulated else diag.get("device 0", "?")
    name = torch.cuda.get_device_name(0) if torch is not None else ("" if emulated else device)
    peak = fp32_peak(name)
    print(f"tlrs {tlrs.__version__} on {device}, driver {diag.get('driver version', '?')}; TF32 off")
    print(f"torch: {torch_desc}")
    print(f"FP32 peak: {f'{peak:g} TFLOP/s ({name})' if peak else f'not in the table ({name or device})'}")
    doc: dict[str, Any] = {"available": True, "tlrs": tlrs.__version__, "device": device,
                           "diagnostics": diag, "torch": torch_desc, "fp32_peak_tflops": peak, "n": n,
                           "reps": reps, "k": k, "budget_s": budget, "time_limit_s": args.time_limit,
                           "quick": args.quick, "gemm": [], "conv": [], "train": [], "train_exact": []}

    print(f"\nGEMM n={n}: median of {reps} repetitions (fast: {k} products each); diff = max|C-ref|/max|ref| "
          f"on the {min(CORNER, n)}x{min(CORNER, n)} corner; cpu bits: exact against tlrs's CPU product")
    print(f"{'case':<30} | {'tlrs ms':>9} {'torch ms':>9} | {'tlrs TF/s':>9} {'torch TF/s':>10} {'peak':>5} | "
          f"{'tlrs/torch':>10} | {'vs torch':>8} {'vs f64':>8} | cpu bits")

    def gemm_line(r: dict[str, Any]) -> str:
        frac = r["tlrs_tflops"] / peak if peak and r.get("dtype") == "float32" and r.get("tlrs_tflops") else None
        return (f"{fmt(r.get('tlrs_ms'), 9, '.3f')} {fmt(r.get('torch_ms'), 9, '.3f')} | "
                f"{fmt(r.get('tlrs_tflops'), 9, '.2f')} {fmt(r.get('torch_tflops'), 10, '.2f')} "
                f"{fmt(None if frac is None else frac * 100, 4, '.0f')}{'%' if frac is not None else ' '} | "
                f"{fmt_ratio(ratio(r), 10)} | {fmt(r.get('diff_torch'), 8, '.1e')} {fmt(r.get('diff_f64'), 8, '.1e')} | "
                f"{r.get('cpu_bits', '-')}")

    gemm_jobs = [(f"{'d' if dt == 'float64' else 's'}gemm n={n} {cfg}",
                  functools.partial(gemm_case, torch, n, dt, cfg, k, reps, budget, deadline))
                 for cfg in ("fast", "exact") for dt in ("float32", "float64")]
    run_rows(doc, "gemm", args.out, deadline, torch, gemm_jobs, gemm_line)

    print(f"\nConv forward + backward, float32, median of {reps}; diff = largest max-relative difference of "
          "y, dx, dw, db against torch")
    print(f"{'case':<30} | {'tlrs ms':>9} {'torch ms':>9} | {'tlrs TF/s':>9} {'torch TF/s':>10} | "
          f"{'tlrs/torch':>10} | {'diff':>8}")
    conv_jobs = [(f"conv b{conv_shape[0]} {conv_shape[1]}->{conv_shape[2]} {conv_shape[3]}x{conv_shape[3]} 3x3 {cfg}",
                  functools.partial(conv_case, torch, conv_shape, cfg, reps, budget, deadline))
                 for cfg in ("fast", "exact")]
    run_rows(doc, "conv", args.out, deadline, torch, conv_jobs, lambda r: (
        f"{fmt(r.get('tlrs_ms'), 9, '.3f')} {fmt(r.get('torch_ms'), 9, '.3f')} | "
        f"{fmt(r.get('tlrs_tflops'), 9, '.2f')} {fmt(r.get('torch_tflops'), 10, '.2f')} | "
        f"{fmt_ratio(ratio(r), 10)} | {fmt(r.get('diff_torch'), 8, '.1e')}"))

    def diff_of(r: dict[str, Any]) -> float | None:
        return max(r["loss_diff"].values()) if r.get("loss_diff") else None

    cases = gm.cases(args.quick)
    print(f"\nTraining steps, float32 (forward + backward + SGD), ms per step, median of {reps}; loss diff = "
          "largest |tlrs - torch| / |torch| of the initial loss")
    print(f"{'case':<30} | {'torch ms':>9} | {'fast ms':>9} {'comp. ms':>9} | {'fast/torch':>10} "
          f"{'comp/torch':>10} | {'loss diff':>9}")
    run_rows(doc, "train", args.out, deadline, torch,
             [(c.name, functools.partial(train_case, torch, c, ["fast", "compiled"], reps, budget, deadline))
              for c in cases],
             lambda r: (f"{fmt(r.get('torch_ms'), 9, '.3f')} | {fmt(r.get('fast_ms'), 9, '.3f')} "
                        f"{fmt(r.get('compiled_ms'), 9, '.3f')} | {fmt_ratio(ratio(r, 'fast'), 10)} "
                        f"{fmt_ratio(ratio(r, 'compiled'), 10)} | {fmt(diff_of(r), 9, '.1e')}"))
    print(f"\nTraining steps with exact kernels (reference kernels, eager: the CPU's bits), median of {reps}")
    print(f"{'case':<30} | {'torch ms':>9} | {'exact ms':>9} | {'exact/torch':>11} | {'loss diff':>9}")
    run_rows(doc, "train_exact", args.out, deadline, torch,
             [(c.name, functools.partial(train_case, torch, c, ["exact"], reps, budget, deadline)) for c in cases],
             lambda r: (f"{fmt(r.get('torch_ms'), 9, '.3f')} | {fmt(r.get('exact_ms'), 9, '.3f')} | "
                        f"{fmt_ratio(ratio(r, 'exact'), 11)} | {fmt(diff_of(r), 9, '.1e')}"))

    doc["goals"] = goals(doc, peak)
    print("\nGoals (tlrs / torch time unless said otherwise)")
    for g in doc["goals"]:
        value = "-" if g["value"] is None else (f"{g['value']:.0%}" if g["unit"] == "of peak" else f"{g['value']:.2f}x")
        verdict = "not measured" if g["met"] is None else ("met" if g["met"] else "MISSED")
        print(f"  {g['goal']:<58} {value:>8}  {verdict}")
    summarize(doc)
    doc["wall_s"] = time.perf_counter() - start
    write_json(args.out, doc)
    print(f"\n{doc['wall_s']:.1f} s; {len(doc['skipped'])} row(s) cut by the time limit")
    if doc["errors"]:
        print(f"{len(doc['errors'])} measurement(s) failed (see the rows above)")


if __name__ == "__main__":
    main()
