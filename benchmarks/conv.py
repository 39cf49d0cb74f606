"""conv2d speed: forward and forward+backward GFLOP/s of tlrs reference and fast kernels, f32 and
f64, on 1 and 2 threads, against PyTorch CPU (torch.nn.functional.conv2d with autograd) when
`import torch` works. All numbers come from this one run. Each kind (tlrs reference, tlrs fast,
PyTorch) is timed in a process of its own (a thread pool that spins after its work would slow
whatever runs next in the same process), the processes taking turns round by round, so slow
drift of the machine reaches every kind alike. Never fails: a case that errors prints its error.

    python benchmarks/conv.py [--threads 1,2] [--repeat 3] [--min-time 0.2] [--shapes NAME,...]

Flops: forward 2*N*OC*OH*OW*C*KH*KW; backward (input and weight gradients) twice that, so
forward+backward counts three times the forward. The "% peak" columns are forward+backward
against this machine's measured f32 FMA ceiling on the same threads (`tlrs._core.fma_peak_gflops`:
vector FMA loops on every thread, best of three), the figure the issue's goals are stated in.
Also printed: the ceiling of the reference kernels' arithmetic, the same loops with a separate
multiply and add (`tlrs._core.mul_add_peak_gflops`), as a share of the FMA peak: where the CPU
runs multiplies and adds on the FMA ports, about half, which bounds the reference column.
The backward is seeded with a fixed random output gradient r (the same for every kind), so f+b
times the convolution alone (a loss such as sum(y * r) would add three elementwise passes over
y to both sides).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

# name: (N, C, OC, H=W, K, stride, padding)
SHAPES = {
    "c3-32 32x32 k3": (8, 3, 32, 32, 3, 1, 1),
    "c32-64 16x16 k3": (8, 32, 64, 16, 3, 1, 1),
    "c64-64 8x8 k3 n32": (32, 64, 64, 8, 3, 1, 1),
    "resnet stem k7 s2": (8, 3, 64, 32, 7, 2, 3),
    "c64-64 16x16 k3": (8, 64, 64, 16, 3, 1, 1),
    "c128-128 8x8 k3": (8, 128, 128, 8, 3, 1, 1),
    # ResNet-18's last two stages at 64x64 inputs: small maps, many weights.
    "c256-256 4x4 k3": (8, 256, 256, 4, 3, 1, 1),
    "c512-512 2x2 k3": (8, 512, 512, 2, 3, 1, 1),
}


def try_torch():
    try:
        import torch

        return torch
    except Exception:  # noqa: BLE001 - torch is optional; any import failure means "absent"
        return None


def timed(fn, min_time: float) -> float:
    """Per-call time of one round: as many calls as fit in `min_time` (at least one)."""
    calls, t0 = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / calls


def tlrs_cases(tlrs, x, w, b, r, s, p):
    from tlrs import ops

    tx, tw, tb = (tlrs.tensor(a, requires_grad=True) for a in (x, w, b))
    tr = tlrs.tensor(r)

    def fwd():
        with tlrs.no_grad():
            ops.conv2d(tx, tw, tb, s, p)

    def fwd_bwd():
        y = ops.conv2d(tx, tw, tb, s, p)
        tlrs.grad(y, [tx, tw, tb], grad_outputs=tr)

    return fwd, fwd_bwd


def torch_cases(torch, x, w, b, r, s, p):
    F = torch.nn.functional
    tx, tw, tb = (torch.from_numpy(a.copy()).requires_grad_(True) for a in (x, w, b))
    tr = torch.from_numpy(r.copy())

    def fwd():
        with torch.no_grad():
            F.conv2d(tx, tw, tb, s, p)

    def fwd_bwd():
        y = F.conv2d(tx, tw, tb, s, p)
        torch.autograd.grad(y, (tx, tw, tb), grad_outputs=tr)

    return fwd, fwd_bwd


def worker(kind: str, threads: int, dtypes: list[str], names: list[str], min_time: float) -> None:
    """One process, one kind: prints {"dtype|shape|part": seconds per call} as JSON, each case
    warmed up once first."""
    import tlrs

    tlrs.set_num_threads(threads)
    torch = try_torch() if kind == "torch" else None
    if kind == "torch":
        if torch is None:
            print(json.dumps({}))
            return
        torch.set_num_threads(threads)
    else:
        tlrs.set_fast_kernels(kind == "fast")
    out: dict[str, float | str] = {}
    for dtype in dtypes:
        for name in names:
            n, c, oc, hw, k, s, p = SHAPES[name]
            o = (hw + 2 * p - k) // s + 1
            rng = np.random.default_rng(0)
            x = rng.uniform(-1, 1, (n, c, hw, hw)).astype(dtype)
            w = rng.uniform(-0.1, 0.1, (oc, c, k, k)).astype(dtype)
            b = rng.uniform(-0.1, 0.1, (oc,)).astype(dtype)
            r = rng.uniform(-1, 1, (n, oc, o, o)).astype(dtype)
            try:
                fns = (torch_cases(torch, x, w, b, r, s, p) if torch is not None
                       else tlrs_cases(tlrs, x, w, b, r, s, p))
                for part, fn in enumerate(fns):
                    timed(fn, min_time / 4)  # warm-up
                    out[f"{dtype}|{name}|{part}"] = timed(fn, min_time)
            except Exception as e:  # noqa: BLE001 - a benchmark reports, never fails
                out[f"{dtype}|{name}|error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out))


def run_worker(kind: str, threads: int, dtypes: list[str], names: list[str],
               min_time: float) -> dict[str, float | str]:
    cmd = [sys.executable, __file__, "--worker", kind, "--threads", str(threads),
           "--dtypes", ",".join(dtypes), "--shapes", ",".join(names), "--min-time", str(min_time)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # NumPy's pool would poll beside the timed one
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return {"|worker|error": f"{kind} worker exit {p.returncode}: {p.stderr.strip()[-300:]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(v):
    return f"{v:7.2f}" if v is not None else f"{'-':>7}"


def ratio(a, b):
    return f"{a / b:6.2f}" if a is not None and b is not None else f"{'-':>6}"


def pct(a, peak):
    return f"{100 * a / peak:5.0f}" if a is not None and peak else f"{'-':>5}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated names from: " + ", ".join(SHAPES))
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--worker", choices=("ref", "fast", "torch"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    names, dtypes = args.shapes.split(","), args.dtypes.split(",")
    if args.worker:
        worker(args.worker, int(args.threads), dtypes, names, args.min_time)
        return
    import tlrs

    torch = try_torch()
    if torch is None:
        print("torch not installed: comparing tlrs reference and fast kernels only")
    else:
        print(f"torch {torch.__version__}")
    kinds = ["ref", "fast"] + (["torch"] if torch is not None else [])
    rows, peaks = [], {}
    for t in (int(v) for v in args.threads.split(",")):
        tlrs.set_num_threads(t)
        peaks[t] = max((tlrs._core.fma_peak_gflops(20_000_000) or 0.0) for _ in range(3)) or None
        mul_add = max((tlrs._core.mul_add_peak_gflops(20_000_000) or 0.0) for _ in range(3)) or None
        print(f"{t} thread(s): measured f32 FMA peak {fmt(peaks[t])} GFLOP/s; multiply-then-add "
              f"(the reference fold's arithmetic) {fmt(mul_add)} GFLOP/s = {pct(mul_add, peaks[t]).strip()}% of it")
        best: dict[tuple[str, str], float] = {}
        worst: dict[tuple[str, str], float] = {}
        for _ in range(args.repeat):
            for kind in kinds:
                for key, v in run_worker(kind, t, dtypes, names, args.min_time).items():
                    if isinstance(v, str):
                        print(f"{t} {kind} {key}: error: {v}")
                    else:
                        best[kind, key] = min(best.get((kind, key), float("inf")), v)
                        worst[kind, key] = max(worst.get((kind, key), 0.0), v)
        after = max((tlrs._core.fma_peak_gflops(20_000_000) or 0.0) for _ in range(3)) or None
        # How much the machine moved while measuring: the FMA peak after the rounds, and each
        # kind's slowest round against its fastest (f+b), so a reader can tell noise from change.
        spread = {kind: max((worst[k] / best[k] - 1 for k in best if k[0] == kind and k[1].endswith("|1")),
                            default=0.0) for kind in kinds}
        print(f"{t} thread(s): FMA peak after the rounds {fmt(after)} GFLOP/s; largest spread of a "
              f"shape's f+b time over the rounds: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in spread.items()))
        for dtype in dtypes:
            for name in names:
                n, c, oc, hw, k, s, p = SHAPES[name]
                o = (hw + 2 * p - k) // s + 1
                flops = 2.0 * n * oc * o * o * c * k * k
                row: dict = dict(threads=t, dtype=dtype, shape=name)
                for kind in kinds:
                    for part in (0, 1):
                        sec = best.get((kind, f"{dtype}|{name}|{part}"))
                        if sec is not None:
                            row[f"{kind}_{'fb' if part else 'f'}"] = (3 * flops if part else flops) / sec / 1e9
                # The peak is f32's; f64 vectors hold half the lanes.
                row["peak"] = peaks[t] and (peaks[t] if dtype == "float32" else peaks[t] / 2)
                rows.append(row)
    print("\nGFLOP/s; f = forward, f+b = forward + input/weight/bias gradients (3x forward flops)")
    head = (f"{'thr':>3} {'dtype':>7} {'shape':<18} | {'ref f':>7} {'fast f':>7} {'torch f':>7} | "
            f"{'ref f+b':>7} {'fast f+b':>8} {'torch f+b':>9} | {'fast/ref':>8} {'ref/tch':>7} {'fast/tch':>8} (f+b) | "
            f"% peak: {'ref':>5} {'fast':>5} {'torch':>5}")
    print(head)
    print("-" * len(head))
    for r in rows:
        g = r.get
        print(f"{r['threads']:>3} {r['dtype']:>7} {r['shape']:<18} | {fmt(g('ref_f'))} {fmt(g('fast_f'))} "
              f"{fmt(g('torch_f'))} | {fmt(g('ref_fb'))} {fmt(g('fast_fb')):>8} {fmt(g('torch_fb')):>9} | "
              f"{ratio(g('fast_fb'), g('ref_fb')):>8} {ratio(g('ref_fb'), g('torch_fb')):>7} "
              f"{ratio(g('fast_fb'), g('torch_fb')):>8}       | "
              f"        {pct(g('ref_fb'), g('peak'))} {pct(g('fast_fb'), g('peak'))} {pct(g('torch_fb'), g('peak'))}")


if __name__ == "__main__":
    main()
