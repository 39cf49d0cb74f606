"""Per-op time against PyTorch CPU on the shapes of a char-level GPT (nanoGPT layout: batch 32,
4 heads, block 64, d_model 128, MLP 512, vocabulary 95), f32, 2 threads, forward and forward +
backward (the gradient of the output's sum, the backward seeded with a tensor of ones made
before timing: a sum of the whole output would time the sum too, a left fold in tlrs's reference
order and a vector reduction in PyTorch, which outweighed the op under test on the elementwise
rows); each framework runs in its own process, the best of ROUNDS rounds is kept, ratios are tlrs
/ torch.

    python benchmarks/ops_vs_torch.py [ROUNDS] [--ops gelu,softmax,linear] [--group unary|binary|rowwise|reduction|layer]
        [--dtype float32|float64]

Every elementwise (unary, binary), row-wise and reduction op of tlrs, grouped: unary ops on
activations [32, 64, 512], binary ones on the residual stream [32, 64, 128] (two tensors, a [128]
bias broadcast, a number), row-wise ones on attention scores [32, 4, 64, 64] and logits
[2048, 95] (softmax, norms, losses, masks, dropout, top-k), reductions over the last axis and
over all of [32, 64, 128], and the GPT's layer ops (linear, q @ k^T, embedding). The cases live
in benchmarks/_ops_cases.py. Ops without a gradient show '-' for forward + backward.

Each row is checked: tlrs's forward output and input gradients must match PyTorch's on the same
inputs (np.isclose, rtol 1e-5, atol 1e-6 for elementwise results; where a result sums up to 2048
terms / all elements, whose summation orders differ, rtol 1e-4 / 1e-3 and atol 1e-5 times the
largest |value|), else the row says MISMATCH and its worst element (with the input there) is
printed below the table.
Dropout and multinomial draw different random numbers in each framework: each side's output is
checked on its own (kept values scaled by 1 / (1 - p) and about 1 - p of them kept; draws in
range), marked 'ok (rng)'. PyTorch ops that tlrs lacks are listed at the end as not in tlrs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np
from _ops_cases import BY_KEY, CASES, GROUPS, Case, make_inputs

HERE = os.path.dirname(os.path.abspath(__file__))


def side(name: str, rounds: int, keys: list[str], outdir: str, dtype: str) -> dict[str, Any]:
    """One framework's worker: times and missing / failing keys; outputs and gradients in outdir."""
    os.makedirs(outdir, exist_ok=True)
    r = subprocess.run([sys.executable, os.path.join(HERE, "_ops_cases.py"), name, str(rounds), ",".join(keys),
                        outdir, dtype], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"the {name} worker failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _load(d: str, name: str) -> np.ndarray | None:
    path = os.path.join(d, name)
    return np.load(path) if os.path.exists(path) else None


def _num(v: Any) -> str:
    return repr(v.item()) if isinstance(v, np.generic) else repr(v)


def _where(case: Case, data: dict[str, np.ndarray], i: tuple[int, ...], shape: tuple[int, ...]) -> str:
    """The case's float inputs of `shape` at index i (what an elementwise op read there)."""
    vals = [f"{n}{list(i)} = {_num(data[n][i])}" for n in case.inputs
            if data[n].dtype in (np.float32, np.float64) and data[n].shape == shape]
    return f" (input {', '.join(vals)})" if vals else ""


def _diff(ours: np.ndarray | None, theirs: np.ndarray | None, tol: tuple[float, float, bool]
          ) -> tuple[str, tuple[int, ...] | None] | None:
    """None when the arrays agree within tol (rtol, atol, whether atol is scaled by the largest
    |torch value|), else what differs and the worst index."""
    if ours is None or theirs is None:
        return f"missing output (tlrs {ours is not None}, torch {theirs is not None})", None
    if ours.shape != theirs.shape:
        return f"shape tlrs {list(ours.shape)}, torch {list(theirs.shape)}", None
    if ours.dtype.kind in "biu" or theirs.dtype.kind in "biu":
        bad = ours != theirs
        err = bad.astype(np.float64)
    else:
        a, b = ours.astype(np.float64), theirs.astype(np.float64)
        finite = np.abs(b[np.isfinite(b)])
        atol = tol[1] * max(1.0, float(finite.max()) if tol[2] and finite.size else 1.0)
        bad = ~np.isclose(a, b, rtol=tol[0], atol=atol, equal_nan=True)
        with np.errstate(invalid="ignore"):  # inf - inf: equal infinities are close already
            err = np.where(np.isnan(a) | np.isnan(b), np.inf, np.abs(a - b))
    if not bad.any():
        return None
    i = tuple(int(v) for v in np.unravel_index(int(np.argmax(np.where(bad, err, -1.0))), ours.shape))
    return f"{int(bad.sum())} of {ours.size} differ; worst at {list(i)}: tlrs {_num(ours[i])}, torch {_num(theirs[i])}", i


def _own_check(case: Case, y: np.ndarray | None, g: np.ndarray | None, data: dict[str, np.ndarray]) -> str | None:
    """One side's random op on its own: None when its output has the right structure."""
    if y is None:
        return "no output"
    if case.check == "draw":
        classes = data[case.inputs[0]].shape[-1]
        want = (data[case.inputs[0]].shape[0], 1)
        if y.shape != want or y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= classes:
            return f"draws of shape {list(y.shape)}, dtype {y.dtype}, range [{y.min()}, {y.max()}]"
        return None
    p = 0.1  # dropout: kept values x / (1 - p), about 1 - p of them; gradient 1 / (1 - p) where kept
    x = data[case.inputs[0]]
    kept = y != 0
    frac = kept.mean()
    if y.shape != x.shape or abs(frac - (1 - p)) > 0.01:
        return f"shape {list(y.shape)}, kept fraction {frac:.4f} (want {1 - p})"
    if not np.allclose(y[kept], x[kept] / np.float32(1 - p), rtol=1e-5, atol=1e-6):
        return "kept values are not x / (1 - p)"
    if g is not None and not np.allclose(g, kept / np.float32(1 - p), rtol=1e-5, atol=1e-6):
        return "the gradient is not 1 / (1 - p) where kept and 0 elsewhere"
    return None


def check(case: Case, dirs: tuple[str, str], data: dict[str, np.ndarray]) -> tuple[str, list[str]]:
    """The row's mark ('ok', 'ok (rng)', 'MISMATCH ...') and lines describing each difference."""
    ours, theirs = dirs
    notes = []
    if case.check != "value":
        for name, d in (("tlrs", ours), ("torch", theirs)):
            why = _own_check(case, _load(d, f"{case.key}.npy"), _load(d, f"{case.key}.g0.npy"), data)
            if why:
                notes.append(f"{case.key}: {name} {case.check} check: {why}")
        return ("MISMATCH (own check)" if notes else "ok (rng)"), notes
    parts = []
    fwd = _diff(_load(ours, f"{case.key}.npy"), _load(theirs, f"{case.key}.npy"), case.tol)
    if fwd:
        parts.append("fwd")
        msg, idx = fwd
        y = _load(ours, f"{case.key}.npy")
        at = _where(case, data, idx, y.shape) if idx is not None and y is not None else ""
        notes.append(f"{case.key}: forward: {msg}{at}")
    for j, pos in enumerate(case.grad):
        name = case.inputs[pos]
        gd = _diff(_load(ours, f"{case.key}.g{j}.npy"), _load(theirs, f"{case.key}.g{j}.npy"), case.tol)
        if gd:
            if "grad" not in parts:
                parts.append("grad")
            msg, idx = gd
            at = f" (input {name}{list(idx)} = {_num(data[name][idx])})" if idx is not None else ""
            notes.append(f"{case.key}: gradient of sum(output) for {name}: {msg}{at}")
    return ("MISMATCH " + "+".join(parts) if parts else "ok"), notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rounds", nargs="?", type=int, default=20, help="timed rounds per op (best kept)")
    ap.add_argument("--ops", help=f"comma-separated subset of: {', '.join(BY_KEY)}")
    ap.add_argument("--group", choices=GROUPS, help="only the ops of this group")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                    help="the floating inputs' dtype (float64: the same values widened)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"rounds must be at least 1, got {args.rounds}")
    keys = [c.key for c in CASES if args.group is None or c.group == args.group]
    if args.ops:
        wanted = [k for k in args.ops.split(",") if k]
        unknown = [k for k in wanted if k not in BY_KEY]
        if unknown:
            ap.error(f"unknown ops: {', '.join(unknown)} (known: {', '.join(BY_KEY)})")
        keys = [k for k in keys if k in wanted]
        if not keys:
            ap.error(f"none of --ops {args.ops} is in --group {args.group}")
    data = make_inputs(args.dtype)
    with tempfile.TemporaryDirectory(prefix="ops_vs_torch.") as tmp:
        dirs = (os.path.join(tmp, "tlrs"), os.path.join(tmp, "torch"))
        ours = side("tlrs", args.rounds, keys, dirs[0], args.dtype)
        present = [k for k in keys if k not in ours["missing"]]
        theirs = side("torch", args.rounds, present, dirs[1], args.dtype) if present else {"times": {}, "errors": {}}
        rows = [BY_KEY[k] for k in present]
        width = max([len(c.label) for c in rows] + [2])
        kind = "f32" if args.dtype == "float32" else "f64"
        print(f"tlrs / torch, {kind}, 2 threads, best of {args.rounds} rounds; ms and ratio (tlrs / torch)")
        print(f"{'op':{width}} {'fwd ms':>15} {'ratio':>6} {'fwd+bwd ms':>17} {'ratio':>6}  check")
        notes: list[str] = []
        fast_bwd = n_bwd = fast_fwd = n_fwd = ok = bad = 0
        for group in GROUPS:
            in_group = [c for c in rows if c.group == group]
            if in_group:
                print(f"-- {group} ({len(in_group)})")
            for c in in_group:
                err = {n: r["errors"][c.key] for n, r in (("tlrs", ours), ("torch", theirs)) if c.key in r["errors"]}
                if err:
                    bad += 1
                    print(f"{c.label:{width}} ERROR in {', '.join(err)}")
                    notes += [f"{c.key}: {n} raised {e}" for n, e in err.items()]
                    continue
                (f1, b1), (f2, b2) = ours["times"][c.key], theirs["times"][c.key]
                mark, why = check(c, dirs, data)
                notes += why
                ok, bad = (ok + 1, bad) if mark.startswith("ok") else (ok, bad + 1)
                line = f"{c.label:{width}} {f1:7.3f}/{f2:7.3f} {f1 / f2:6.2f} "
                if b1 is None or b2 is None:
                    n_fwd += 1
                    fast_fwd += f1 <= f2
                    line += f"{'-':>17} {'-':>6}"
                else:
                    n_bwd += 1
                    fast_bwd += b1 <= b2
                    line += f"{b1:8.3f}/{b2:8.3f} {b1 / b2:6.2f}"
                print(f"{line}  {mark}")
    print(f"summary: {fast_bwd} of {n_bwd} ops at most 1.0x torch forward+backward; of the {n_fwd} without a "
          f"gradient {fast_fwd} at most 1.0x forward; checks: {ok} ok, {bad} MISMATCH or ERROR")
    for n in notes:
        print(f"  {n}")
    missing = [k for k in keys if k in ours["missing"]]
    if missing:
        print(f"not in tlrs ({len(missing)}): {', '.join(missing)}")


if __name__ == "__main__":
    main()
