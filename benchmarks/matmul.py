"""GEMM speed: tlrs reference and fast kernels against NumPy, f32 and f64, n = 64 ... 2048, on 1
and 2 threads. Prints GFLOP/s and ratios, all measured in this one run; never fails.

    python benchmarks/matmul.py [--sizes 64,128,...] [--threads 1,2] [--repeat 3]

NumPy's BLAS thread count is set with threadpoolctl when it is installed, else through the
OPENBLAS_NUM_THREADS variable of a fresh process per thread count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def best_time(fn, repeat: int, min_time: float = 0.2) -> float:
    """The best per-call time over `repeat` rounds of enough calls to last `min_time`."""
    fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time / 4:
        fn()
        calls += 1
    calls = max(1, calls)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def measure(threads: int, sizes: list[int], repeat: int) -> list[dict]:
    import tlrs

    tlrs.set_num_threads(threads)
    rows = []
    rng = np.random.default_rng(0)
    for dtype in ("float32", "float64"):
        for n in sizes:
            a = rng.standard_normal((n, n)).astype(dtype)
            b = rng.standard_normal((n, n)).astype(dtype)
            ta, tb = tlrs.from_numpy(a), tlrs.from_numpy(b)
            flops = 2.0 * n**3
            t_np = best_time(lambda: a @ b, repeat)
            tlrs.set_fast_kernels(False)
            t_ref = best_time(lambda: ta @ tb, repeat)
            tlrs.set_fast_kernels(True)
            t_fast = best_time(lambda: ta @ tb, repeat)
            tlrs.set_fast_kernels(False)
            rows.append(
                dict(threads=threads, dtype=dtype, n=n, numpy=flops / t_np / 1e9,
                     reference=flops / t_ref / 1e9, fast=flops / t_fast / 1e9)
            )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="64,128,256,512,1024,2048")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child is not None:
        print(json.dumps(measure(args.child, sizes, args.repeat)))
        return
    rows = []
    for t in (int(s) for s in args.threads.split(",")):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        # A throttled OpenBLAS core type would understate NumPy; let it detect the CPU itself.
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(t), "--sizes", args.sizes, "--repeat", str(args.repeat)],
            env=env, capture_output=True, text=True, check=False,
        )
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            continue
        rows += json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{'thr':>3} {'dtype':>7} {'n':>5} | {'numpy':>8} {'ref':>8} {'fast':>8} | {'ref/np':>6} {'fast/np':>7}  (GFLOP/s)")
    for r in rows:
        print(
            f"{r['threads']:>3} {r['dtype']:>7} {r['n']:>5} | {r['numpy']:8.1f} {r['reference']:8.1f} "
            f"{r['fast']:8.1f} | {r['reference'] / r['numpy']:6.2f} {r['fast'] / r['numpy']:7.2f}"
        )


if __name__ == "__main__":
    main()
