"""Adam step time against the step count: the bias correction `1/(1 - beta^t)` must cost O(1)
per step, so 2,000 compiled Adam steps take as long after 10^6 steps as at the start.

    python benchmarks/adam_step_time.py

Each row trains a small MLP (compiled backend, native loop) for 2,000 steps starting from a
state whose step count is t0 (the slots are zeros either way; only the count differs), and
reports the best of 3 runs in ms per step.
"""

from __future__ import annotations

import time

import numpy as np

import tlrs
from tlrs import models, optim


def main() -> None:
    defn, _ = models.mlp_classifier(64, 32, 10)
    m = tlrs.instantiate_with_options(defn, "float32", tlrs.Options(backend="compiled"))
    rng = np.random.default_rng(0)
    x = tlrs.tensor(rng.normal(size=(32, 64)), dtype="float32")
    y = tlrs.tensor(np.eye(10)[rng.integers(0, 10, 32)], dtype="float32")
    opt = optim.adam(1e-3, 0.9, 0.999, 1e-8)
    steps = 2000
    print(f"{'start step':>12} {'ms/step':>9}")
    for t0 in (0, 10_000, 200_000, 1_000_000):
        best = float("inf")
        for _ in range(3):
            fresh = m.init_optim(opt)
            state = optim.OptimState(fresh.kind, t0, fresh.slots)
            start = time.perf_counter()
            m.train_with(opt, state, steps, [[x, y]], log_every=0)
            best = min(best, time.perf_counter() - start)
        print(f"{t0:>12} {1e3 * best / steps:>9.4f}")


if __name__ == "__main__":
    main()
