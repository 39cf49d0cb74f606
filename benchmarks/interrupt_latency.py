"""Time from a signal to the exit of `tlrs run`: N runs far too long to finish, each sent SIGINT
(and N more SIGTERM) at a random moment of training, on the compiled backend (the signal lands
in the native loop) and on the eager one; prints each time, the maximum and the median, and
checks the exit code (130 / 143) and that the checkpoint written on the way out loads.

    python benchmarks/interrupt_latency.py [N] [MODEL]      # default 20 runs of cnn
"""

from __future__ import annotations

import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(model: str, backend: str, sig: signal.Signals, folder: Path) -> float:
    saved = folder / "ck.safetensors"
    saved.unlink(missing_ok=True)
    p = subprocess.Popen([sys.executable, "-m", "tlrs", "run", model, "--backend", backend,
                          "--steps", "10000000", "--save", str(saved)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    for line in p.stdout:
        if line.startswith("mean_loss(train(before))"):
            break
    time.sleep(random.uniform(0.2, 1.5))
    t0 = time.perf_counter()
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    waited = time.perf_counter() - t0
    want = 128 + int(sig)
    if p.returncode != want:
        raise SystemExit(f"exit {p.returncode}, expected {want}: {err}")
    from tlrs import _core

    names, _, _ = _core.load_safetensors(str(saved))  # raises if not a whole checkpoint
    if "__train__/losses" not in names:
        raise SystemExit("the checkpoint has no training progress")
    return waited


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    model = sys.argv[2] if len(sys.argv) > 2 else "cnn"
    with tempfile.TemporaryDirectory() as d:
        for backend in ("compiled", "eager"):
            for sig in (signal.SIGINT, signal.SIGTERM):
                times = [one(model, backend, sig, Path(d)) for _ in range(n)]
                print(f"{model} {backend:8} {sig.name:7} n={n}: max {max(times) * 1e3:.1f} ms, "
                      f"median {statistics.median(times) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
