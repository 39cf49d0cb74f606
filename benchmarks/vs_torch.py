"""tlrs against PyTorch: training-step time (forward + backward + SGD update), float32, on a fixed
number of CPU threads, for eleven models, with each framework and configuration in its own process.

    python benchmarks/vs_torch.py [--repeats 3] [--budget 1.0] [--threads 2] [--cases mlp-b1,cnn|more]
    python benchmarks/vs_torch.py --profile cnn [--kernels ref|fast]
    python benchmarks/vs_torch.py --ops      # the per-op table (benchmarks/ops_vs_torch.py)

Rows: seven of tlrs's ready-made models (MLPs, a two-conv CNN, a transformer block, ResNet-18),
and four models users bring, written from tlrs ops in benchmarks/_vs_torch_user_models.py and as
PyTorch nn.Modules, all batch 32 with int64 labels: a char-level GPT in the nanoGPT layout
(gpt2-b32, gpt4-b32: vocabulary 65, block 64, d 128, 4 heads, 2 or 4 layers, int64 token ids,
causal scaled_dot_product_attention, exact-GELU MLP 4x, untied LM head), a ViT-tiny (vit-b32:
3x32x32 images, 4x4 stride-4 conv patches, d 192, 6 layers, 3 heads, mean pooling) and an
MLP-Mixer (mixer-b32: the same images and patches, d 128, 6 blocks, token MLP 64-128-64, channel
MLP 128-512-128, mean pooling). Every row trains with plain SGD at lr LR on one fixed batch.

Table mode: one process per (framework, configuration) per round, run one after another (two
thread pools sharing the cores would slow whichever runs second), the order reversed every
other round; each number is the minimum over the rounds of the mean step time within a round.
Configurations: tlrs eager and compiled backends with reference or fast kernels, and PyTorch
(nn.Module, torch.optim.SGD, one zero_grad/forward/backward/step per step). tlrs steps run
through `Module.train_sgd` (the compiled backend runs up to 64 steps per call in one native
loop). Ratios are to PyTorch in the same run, against the goals: compiled + fast <= 1.0x
(<= 0.2x on the batch-1 MLP, <= 0.7x on the models users bring), eager + fast <= 1.1x, eager
reference <= 1.5x (<= 1.0x on the models users bring). Also printed: the
initial losses of tlrs and PyTorch (the same computation on the same parameters), and whether the
compiled backend with reference kernels leaves bit-identical parameters to eager after the
warm-up steps. Without PyTorch, the tlrs columns alone.

Profile mode: where one tlrs eager step's time goes for one model: per (op, input shapes) the
calls per step and forward time within the step, then each op's forward + backward timed in
isolation in tlrs and (in a separate process) in PyTorch, sorted by tlrs time per step, with the
share of the measured step the per-op times account for.

Nothing here asserts on times: this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _vs_torch_models import (
    CASES,
    LR,
    MORE,
    TABLE,
    USER_GOALS,
    Recorder,
    build_args,
    describe_arg,
    find_case,
    install_wrappers,
    sample,
    torch_loss,
    torch_module,
    torch_op,
)

import tlrs
from tlrs.config import Backend, Options

CONFIGS = {"eager-ref": ("eager", False), "eager-fast": ("eager", True),
           "compiled-ref": ("compiled", False), "compiled-fast": ("compiled", True)}
RUNS = [("tlrs", c) for c in CONFIGS] + [("torch", "torch")]
GOALS = {"eager-ref": 1.5, "eager-fast": 1.1, "compiled-fast": 1.0}
MARK = "@@vs_torch "
MAX_CHUNK = 64


# ---------------------------------------------------------------------------------------------
# Timing


def timed_steps(run: Callable[[int], Any], budget: float, min_steps: int) -> tuple[float, int]:
    """Seconds per step of `run(k)` (k steps per call): calls until `budget` seconds and at least
    `min_steps` steps have passed, growing k up to 64 without overshooting the budget much."""
    steps, chunk, t0 = 0, 1, time.perf_counter()
    while True:
        run(chunk)
        steps += chunk
        elapsed = time.perf_counter() - t0
        if elapsed >= budget and steps >= min_steps:
            return elapsed / steps, steps
        need = max(min_steps - steps, int((budget - elapsed) / (elapsed / steps)) + 1)
        chunk = max(1, min(MAX_CHUNK, chunk * 2, need))


def per_call(fn: Callable[[], Any], budget: float, rounds: int = 3) -> float:
    """Seconds per call of `fn`: one warm-up call, then the minimum over `rounds` of the mean over
    as many calls as fit in budget / rounds (at least 3)."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        best = min(best, timed_steps(lambda k: [fn() for _ in range(k)], budget / rounds, 3)[0])
    return best


def best_of(run: Callable[[int], Any], args: argparse.Namespace, rounds: int = 3) -> float:
    """The fastest of `rounds` timings of `run` (each `args.budget` seconds): a profile's step
    times, as the table's minimum over rounds."""
    return min(timed_steps(run, args.budget, args.min_steps)[0] for _ in range(rounds))


def digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# Workers: one process per (framework, configuration); one result line per case.


def tlrs_case(key: str, config: str, args: argparse.Namespace) -> dict[str, Any]:
    case, (backend, fast) = CASES[key], CONFIGS[config]
    defn = case.build()
    xs = [tlrs.tensor(a) for a in sample(defn, case)]
    m = tlrs.instantiate_with_options(defn, "float32", Options(backend=Backend(backend), fast_kernels=fast))
    loss0 = m.forward(xs).item()
    m.train_sgd(LR, args.warmup, [xs], log_every=0)
    warm = digest([p.numpy() for p in m.params()])
    sec, steps = timed_steps(lambda k: m.train_sgd(LR, k, [xs], log_every=0), args.budget, args.min_steps)
    return {"ms": sec * 1e3, "steps": steps, "loss0": loss0, "digest": warm}


def torch_step_runner(torch: Any, key: str) -> tuple[Callable[[int], None], float]:
    """`run(k)`: k PyTorch training steps of case `key`, and the initial loss."""
    case = CASES[key]
    defn = case.build()
    x, y = (torch.from_numpy(a) for a in sample(defn, case))
    model, loss_fn = torch_module(torch, case, defn), torch_loss(torch, case)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    with torch.no_grad():
        loss0 = loss_fn(model(x), y).item()

    def run(k: int) -> None:
        for _ in range(k):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()

    return run, loss0


def torch_case(torch: Any, key: str, args: argparse.Namespace) -> dict[str, Any]:
    run, loss0 = torch_step_runner(torch, key)
    run(args.warmup)
    sec, steps = timed_steps(run, args.budget, args.min_steps)
    return {"ms": sec * 1e3, "steps": steps, "loss0": loss0, "version": torch.__version__}


def emit(payload: dict[str, Any]) -> None:
    print(MARK + json.dumps(payload), flush=True)


def import_torch(threads: int) -> Any:
    import torch

    torch.set_num_threads(threads)
    tlrs.set_num_threads(1)  # tlrs only builds the initial parameters here
    return torch


def worker_main(args: argparse.Namespace) -> None:
    keys = [find_case(k) for k in args.cases.split(",")]
    if args.worker == "torch-ops":
        return torch_ops_worker(args, keys[0])
    torch = None
    if args.worker == "torch":
        torch = import_torch(args.threads)
    else:
        tlrs.set_num_threads(args.threads)
    for key in keys:
        try:
            res = torch_case(torch, key, args) if torch is not None else tlrs_case(key, args.config, args)
        except Exception as e:  # noqa: BLE001 - a benchmark reports errors, never fails
            res = {"error": f"{type(e).__name__}: {e}"}
        emit({"case": key, **res})


# ---------------------------------------------------------------------------------------------
# Table mode


def worker_command(framework: str, config: str, keys: list[str], args: argparse.Namespace) -> list[str]:
    return [sys.executable, os.path.abspath(__file__), "--worker", framework, "--config", config,
            "--cases", ",".join(keys), "--budget", str(args.budget), "--warmup", str(args.warmup),
            "--min-steps", str(args.min_steps), "--threads", str(args.threads)]


def parse_results(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line[len(MARK):]) for line in stdout.splitlines() if line.startswith(MARK)]


def spawn(cmd: list[str], timeout: float) -> tuple[list[dict[str, Any]], str | None]:
    """The result lines of one worker process, and an error text when it did not finish."""
    # NumPy's OpenBLAS pool (which neither framework computes with) would otherwise keep
    # threads polling beside the measured ones: 1-3% of a tlrs step's samples under perf.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return parse_results(out), f"timed out after {timeout:.0f} s"
    err = None
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        err = f"worker exited with status {p.returncode}: {tail}"
    return parse_results(p.stdout), err


def run_rounds(keys: list[str], runs: list[tuple[str, str]], args: argparse.Namespace) -> dict:
    """{(config, case): [result per round]}, each (framework, configuration) in its own process."""
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rnd in range(args.repeats):
        for framework, config in runs if rnd % 2 == 0 else runs[::-1]:
            t0 = time.perf_counter()
            rows, err = spawn(worker_command(framework, config, keys, args), args.timeout)
            done = {r["case"] for r in rows}
            rows += [{"case": k, "error": err or "no result"} for k in keys if k not in done]
            for r in rows:
                results.setdefault((config, r["case"]), []).append(r)
            print(f"  round {rnd + 1}/{args.repeats}: {config:<13} {time.perf_counter() - t0:6.1f} s"
                  + (f"  ({err})" if err else ""), file=sys.stderr, flush=True)
    return results


def best(results: dict, config: str, key: str) -> dict[str, Any] | None:
    """The fastest round's result, or None when every round failed."""
    ok = [r for r in results.get((config, key), []) if "ms" in r]
    return min(ok, key=lambda r: r["ms"]) if ok else None


def goal_for(config: str, key: str) -> float | None:
    """The case's own goal for `config` (the batch-1 MLP, the models users bring), else GOALS's."""
    return CASES[key].goals.get(config, GOALS.get(config))


def ratio_cell(ms: float | None, torch_ms: float | None, goal: float | None) -> tuple[str, bool | None]:
    """'0.82x ok' / '1.62x MISS' / '0.50x' (no goal), and whether the goal is met."""
    if ms is None or torch_ms is None:
        return "-", None
    r = ms / torch_ms
    if goal is None:
        return f"{r:.2f}x", None
    return f"{r:.2f}x {'ok' if r <= goal else 'MISS'}", r <= goal


TABLE_COLS = [("eager ref", "eager-ref"), ("eager fast", "eager-fast"), ("comp ref", "compiled-ref"),
              ("comp fast", "compiled-fast"), ("PyTorch", "torch")]
RATIO_COLS = [("eager ref/PT", "eager-ref"), ("eager fast/PT", "eager-fast"),
              ("comp fast/PT", "compiled-fast"), ("comp ref/PT", "compiled-ref")]


def print_table(keys: list[str], results: dict, have_torch: bool) -> None:
    head = f"{'model':<34}" + "".join(f"{h:>11}" for h, _ in TABLE_COLS) + " |"
    head += "".join(f"{h:>15}" for h, _ in RATIO_COLS) if have_torch else ""
    print(head)
    print("-" * len(head))
    met, total = 0, 0
    for key in keys:
        row = {cfg: best(results, cfg, key) for _, cfg in TABLE_COLS}
        ms = {cfg: (r["ms"] if r else None) for cfg, r in row.items()}
        errs = {cfg: bool(results.get((cfg, key))) for cfg in ms}
        cells = [f"{v:11.3f}" if v is not None else f"{'err' if errs[c] else '-':>11}" for c, v in ms.items()]
        line = f"{CASES[key].title:<34}" + "".join(cells) + " |"
        for _, cfg in RATIO_COLS if have_torch else []:
            text, ok = ratio_cell(ms[cfg], ms["torch"], goal_for(cfg, key))
            line += f"{text:>15}"
            met, total = met + bool(ok), total + (ok is not None)
        print(line)
    if have_torch:
        goals = f"{'goal (ratio to PyTorch)':<34}" + " " * 11 * len(TABLE_COLS) + " |"
        goals += "".join(f"{t:>15}" for t in ("<= 1.5x+", "<= 1.1x", "<= 1.0x*+", "(none)"))
        print(goals + "\n* <= 0.2x on the batch-1 MLP; + the models users bring (GPT, ViT, Mixer): eager ref "
              f"<= {USER_GOALS['eager-ref']:.1f}x, comp fast <= {USER_GOALS['compiled-fast']:.1f}x")
        print(f"goals met: {met} of {total}")


def print_checks(keys: list[str], results: dict, warmup: int) -> None:
    """Initial losses tlrs vs PyTorch, and compiled-ref vs eager-ref parameter bits."""
    print(f"\nchecks (initial loss; parameters after {warmup} warm-up SGD steps):")
    for key in keys:
        ref, comp, pt = (best(results, c, key) for c in ("eager-ref", "compiled-ref", "torch"))
        parts = []
        if ref:
            parts.append(f"tlrs loss {ref['loss0']:.6f}")
        if ref and pt:
            diff = abs(ref["loss0"] - pt["loss0"]) / max(abs(pt["loss0"]), 1e-30)
            parts.append(f"PyTorch {pt['loss0']:.6f} (rel diff {diff:.1e})")
        if ref and comp:
            same = "bit-identical" if ref["digest"] == comp["digest"] else "DIFFERENT"
            parts.append(f"compiled-ref vs eager-ref params: {same}")
        print(f"  {CASES[key].title:<34} " + ("; ".join(parts) or "no results"))
    versions = {r["version"] for (c, _), rs in results.items() for r in rs if c == "torch" and "version" in r}
    if versions:
        print(f"  PyTorch version: {', '.join(sorted(versions))}")
    errors = [(k, c, r["error"]) for (c, k), rs in results.items() for r in rs if "error" in r]
    for key, config, text in dict.fromkeys(errors):
        print(f"  error: {key} {config}: {text}")


def table_main(args: argparse.Namespace) -> None:
    if args.cases in ("", "all"):
        keys = TABLE
    elif args.cases == "more":
        keys = MORE
    else:
        keys = [find_case(k) for k in args.cases.split(",")]
    have_torch = importlib.util.find_spec("torch") is not None
    runs = RUNS if have_torch else RUNS[:-1]
    print(f"tlrs {tlrs.__version__} vs PyTorch: training step (forward + backward + SGD update), float32, "
          f"{args.threads} threads, ms per step")
    print(f"min over {args.repeats} rounds of >= {args.budget:g} s and >= {args.min_steps} steps per case, after "
          f"{args.warmup} warm-up steps; each (framework, configuration) in its own process, order alternating")
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}")
    print(f"tlrs: Module.train_sgd (the compiled backend runs up to {MAX_CHUNK} steps per call natively); "
          "PyTorch: nn.Module, torch.optim.SGD, zero_grad / forward / backward / step each step")
    if not have_torch:
        print("PyTorch is not installed: tlrs columns only, no ratios or goals")
    sys.stdout.flush()
    results = run_rounds(keys, runs, args)
    print()
    print_table(keys, results, have_torch)
    print_checks(keys, results, args.warmup)


# ---------------------------------------------------------------------------------------------
# Profile mode


def eager_step(defn: tlrs.ModuleDef, params: list[Any], xs: list[Any], rec: Recorder) -> tuple[list[Any], list[float]]:
    """One eager step as `Module.train_sgd` runs it (fresh leaves, loss, tlrs.grad, p - lr*g),
    recording ops during the forward; returns the new parameters and the phase seconds."""
    leaves = [p.detach() for p in params]
    for leaf in leaves:
        leaf.requires_grad = True
    t0 = time.perf_counter()
    rec.active = True
    try:
        loss = defn.loss(leaves, xs)
    finally:
        rec.active = False
    t1 = time.perf_counter()
    grads = tlrs.grad(loss, leaves)
    t2 = time.perf_counter()
    with tlrs.no_grad():
        new = [p - g * LR for p, g in zip(params, grads)]
    return new, [t1 - t0, t2 - t1, time.perf_counter() - t2]


def profiled_steps(key: str, xs: list[Any], budget: float) -> tuple[Recorder, list[float], int]:
    """Wrapped eager steps for about `budget` seconds (at least 3): the recorder and the mean
    forward, backward and update seconds per step. The definition is built once the wrappers are
    in place, so ops it holds as values (the MLP's activation) are wrapped too."""
    rec = Recorder()
    restore = install_wrappers(rec)
    phases, steps = [0.0, 0.0, 0.0], 0
    try:
        defn = CASES[key].build()
        params = tlrs.instantiate_with_options(defn, "float32", None).params()
        params, _ = eager_step(defn, params, xs, Recorder())  # warm-up, unrecorded
        t0 = time.perf_counter()
        while steps < 3 or time.perf_counter() - t0 < budget:
            params, dt = eager_step(defn, params, xs, rec)
            phases, steps = [a + b for a, b in zip(phases, dt)], steps + 1
    finally:
        restore()
    return rec, [p / steps for p in phases], steps


def outputs(out: Any) -> list[Any]:
    """An op's outputs as a list: `split` gives a tuple, most ops one tensor."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def isolated_time(fn: Callable[..., Any], a: list[Any], k: dict[str, Any], leaves: list[Any],
                  backward: Callable[[Any, list[Any]], Any], leaf_like: Callable[[Any], Any], budget: float) -> float:
    """Seconds per call of `fn(*a, **k)` then `backward(out, leaves)` (the gradient of the sum of
    each output), less the same harness on bare leaves of the outputs' shapes (sums, their
    backward, one grad call); the forward alone when nothing needs a gradient."""
    out = outputs(fn(*a, **k))
    if not (leaves and any(o.requires_grad for o in out)):
        return per_call(lambda: fn(*a, **k), budget)
    full = per_call(lambda: backward(fn(*a, **k), leaves), budget)
    probe = [leaf_like(o) for o in out]
    return max(0.0, full - per_call(lambda: backward(probe, probe), budget))


def tlrs_op_time(call: tuple, budget: float) -> float:
    """Seconds per isolated forward + backward of a recorded call in tlrs."""
    a, k, leaves = build_args(call, lambda t: tlrs.tensor(t.values, requires_grad=t.requires_grad))
    return isolated_time(call[1], a, k, leaves,
                         lambda out, ls: tlrs.grad([tlrs.ops.sum(o) for o in outputs(out)], ls, allow_unused=True),
                         lambda out: tlrs.zeros(out.shape, dtype=out.dtype, requires_grad=True), budget)


def torch_ops_worker(args: argparse.Namespace, key: str) -> None:
    """The PyTorch side of a profile: the whole step of case `key`, then each recorded op."""
    torch = import_torch(args.threads)
    run, _ = torch_step_runner(torch, key)
    run(args.warmup)
    emit({"step_ms": best_of(run, args) * 1e3})
    with open(args.ops_file, "rb") as f:
        calls = pickle.load(f)
    for call in calls:
        fn = torch_op(torch, call[0])
        if fn is None:
            emit({"ms": None, "why": "no PyTorch equivalent"})
            continue
        a, k, leaves = build_args(call, lambda t: torch.from_numpy(t.values.copy()).requires_grad_(t.requires_grad))
        try:
            sec = isolated_time(fn, a, k, leaves,
                                lambda out, ls: torch.autograd.grad([o.sum() for o in outputs(out)], ls, allow_unused=True),
                                lambda out: torch.zeros_like(out, requires_grad=True), args.op_budget)
            emit({"ms": sec * 1e3})
        except Exception as e:  # noqa: BLE001
            emit({"ms": None, "why": f"{type(e).__name__}: {e}"})


def torch_profile_side(key: str, calls: list[tuple], args: argparse.Namespace) -> tuple[float | None, list, str]:
    """(PyTorch step ms, per-op ms list, note) from a separate PyTorch process."""
    if importlib.util.find_spec("torch") is None:
        return None, [None] * len(calls), "PyTorch is not installed: tlrs times only"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ops.pkl")
        with open(path, "wb") as f:
            pickle.dump([(c[0], None, c[2], c[3]) for c in calls], f)
        cmd = worker_command("torch-ops", "torch", [key], args) + ["--ops-file", path, "--op-budget", str(args.op_budget)]
        rows, err = spawn(cmd, args.timeout)
    step = rows[0].get("step_ms") if rows else None
    ops_ms = [r.get("ms") for r in rows[1:]] + [None] * (len(calls) - len(rows[1:]))
    return step, ops_ms, f"PyTorch process: {err}" if err else ""


def print_profile(key: str, args: argparse.Namespace, step_ms: float, phases: list[float],
                  steps: int, op_rows: list[dict[str, Any]], torch_step: float | None, note: str) -> None:
    kernels = "fast" if args.kernels == "fast" else "reference"
    fwd, bwd, upd = (p * 1e3 for p in phases)
    op_fwd = sum(r["fwd_ms"] * r["n"] for r in op_rows)
    n_calls = sum(r["n"] for r in op_rows)
    print(f"profile of one tlrs eager training step: {CASES[key].title} ({key}), {kernels} kernels, float32, "
          f"{args.threads} threads")
    print(f"{'measured step (Module.train_sgd, eager, nothing wrapped, best of 3):':<70} {step_ms:10.3f} ms")
    if torch_step is not None:
        print(f"{'PyTorch step (same model, own process, best of 3):':<70} {torch_step:10.3f} ms   "
              f"(tlrs / PyTorch {step_ms / torch_step:.2f}x)")
    print(f"profiled step (ops wrapped, mean of {steps}): forward {fwd:.3f} ms ({n_calls:g} op calls {op_fwd:.3f} ms, "
          f"the rest Python between ops and the wrappers), backward (tlrs.grad) {bwd:.3f} ms, update {upd:.3f} ms; "
          f"sum {fwd + bwd + upd:.3f} ms")
    if note:
        print(note)
    print("\nper (op, inputs): calls per step, forward ms per call within the step, then forward + backward of the"
          " op alone (ms per call) in tlrs and PyTorch, and the tlrs time per step (calls x isolated)")
    head = (f"{'op':<28} {'inputs':<40} {'n/step':>6} {'fwd':>8} | {'tlrs':>8} {'PyTorch':>8} {'tlrs/PT':>8} |"
            f" {'ms/step':>8} {'share':>6}")
    print(head)
    print("-" * len(head))
    for r in sorted(op_rows, key=lambda r: -r["total_ms"]):
        pt = f"{r['torch_ms']:8.3f}" if r["torch_ms"] is not None else f"{'-':>8}"
        ratio = f"{r['tlrs_ms'] / r['torch_ms']:7.2f}x" if r["torch_ms"] else f"{'-':>8}"
        print(f"{r['op']:<28} {r['inputs'][:40]:<40} {r['n']:6g} {r['fwd_ms']:8.3f} | {r['tlrs_ms']:8.3f} {pt} {ratio} |"
              f" {r['total_ms']:8.3f} {r['total_ms'] / step_ms:6.1%}")
    total = sum(r["total_ms"] for r in op_rows if r["total_ms"] == r["total_ms"])  # NaN: failed
    print(f"\nper-op isolated forward+backward, summed over the step: {total:.3f} ms = {total / step_ms:.1%} of the "
          f"measured step ({step_ms:.3f} ms); not attributed to ops: {step_ms - total:.3f} ms")
    print("(isolated times are net of the harness: a sum of the output, its backward and one grad call, timed on a "
          "bare tensor of the output's shape; the unattributed rest is the autograd walk and bookkeeping between ops, "
          "the SGD update and Python glue, or negative where ops cost more alone than in the step)")


def profile_main(args: argparse.Namespace) -> None:
    key = find_case(args.profile)
    case = CASES[key]
    tlrs.set_num_threads(args.threads)
    tlrs.set_fast_kernels(args.kernels == "fast")
    defn = case.build()
    xs = [tlrs.tensor(a) for a in sample(defn, case)]
    m = tlrs.instantiate_with_options(defn, "float32", Options(fast_kernels=args.kernels == "fast"))
    m.train_sgd(LR, args.warmup, [xs], log_every=0)
    step_ms = best_of(lambda k: m.train_sgd(LR, k, [xs], log_every=0), args) * 1e3
    rec, phases, steps = profiled_steps(key, xs, args.budget)
    keys = list(rec.calls)
    rows = []
    for k in keys:
        count, fwd_s = rec.stats[k]
        label, _, a, kw = rec.calls[k]
        try:
            tl = tlrs_op_time(rec.calls[k], args.op_budget) * 1e3
        except Exception as e:  # noqa: BLE001 - reported, not raised
            print(f"{label}: isolated timing failed: {type(e).__name__}: {e}")
            tl = float("nan")
        inputs = ", ".join([describe_arg(x) for x in a] + [f"{n}={describe_arg(v)}" for n, v in kw.items()])
        rows.append({"op": label, "inputs": inputs, "n": count / steps, "fwd_ms": fwd_s / count * 1e3,
                     "tlrs_ms": tl, "total_ms": tl * count / steps, "torch_ms": None})
    torch_step, torch_ms, note = torch_profile_side(key, [rec.calls[k] for k in keys], args)
    for r, t in zip(rows, torch_ms):
        r["torch_ms"] = t
    print_profile(key, args, step_ms, phases, steps, rows, torch_step, note)


# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    cases = "\n".join(f"  {k:<15} {c.title}" for k, c in CASES.items())
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=f"cases (a unique prefix also works: cnn, resnet, transformer, vit, mixer):\n{cases}")
    p.add_argument("--repeats", type=int, default=3, help="rounds of the whole table; the minimum is kept (default 3)")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timed steps per case and round (default 1.0)")
    p.add_argument("--min-steps", type=int, default=3, help="at least this many timed steps per case (default 3)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps before timing (default 2)")
    p.add_argument("--threads", type=int, default=2, help="CPU threads for both frameworks (default 2)")
    p.add_argument("--cases", "--case", default="",
                   help="comma-separated cases, or 'more' for the four beyond the table (default: the table's eleven)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds before a worker process is stopped")
    p.add_argument("--profile", metavar="MODEL", help="profile one tlrs eager step of MODEL instead of the table")
    p.add_argument("--kernels", choices=("ref", "fast"), default="ref", help="kernels for --profile (default ref)")
    p.add_argument("--op-budget", type=float, default=0.1, help="seconds per op for --profile (default 0.1)")
    p.add_argument("--ops", action="store_true",
                   help="the per-op table instead (benchmarks/ops_vs_torch.py: every elementwise, row-wise and "
                        "reduction op at a transformer's shapes, forward and forward + backward against PyTorch)")
    p.add_argument("--worker", choices=("tlrs", "torch", "torch-ops"), help=argparse.SUPPRESS)
    p.add_argument("--config", default="eager-ref", choices=[*CONFIGS, "torch"], help=argparse.SUPPRESS)
    p.add_argument("--ops-file", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.worker:
        worker_main(args)
    elif args.ops:
        ops_table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops_vs_torch.py")
        sys.exit(subprocess.run([sys.executable, ops_table]).returncode)
    elif args.profile:
        profile_main(args)
    else:
        table_main(args)


if __name__ == "__main__":
    main()
