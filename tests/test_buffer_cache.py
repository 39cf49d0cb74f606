"""Freed large host buffers are kept for reuse (rust/src/buffer_cache.rs): the count is visible,
releasing returns them, and a reused buffer never leaks its old values into a new result."""

from __future__ import annotations

import numpy as np

import tlrs
from tlrs import ops


def test_a_freed_large_tensor_is_kept_then_released():
    tlrs.release_cached_memory()
    assert tlrs.cached_memory() == 0
    t = tlrs.zeros(1024, 1024, dtype="float32")  # 4 MiB
    del t
    kept = tlrs.cached_memory()
    assert kept >= 4 << 20
    assert tlrs.release_cached_memory() == kept
    assert tlrs.cached_memory() == 0


def test_small_tensors_are_not_kept():
    tlrs.release_cached_memory()
    t = tlrs.zeros(16, 16, dtype="float32")
    del t
    assert tlrs.cached_memory() == 0


def test_reused_buffers_give_fresh_results():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(700, 512)).astype(np.float32)
    for _ in range(3):
        dirty = ops.exp(tlrs.tensor(a * 50, dtype="float32"))  # inf and huge values
        del dirty
        x = rng.normal(size=(700, 512)).astype(np.float32)
        np.testing.assert_array_equal(ops.relu(tlrs.tensor(x, dtype="float32")).numpy(), np.maximum(x, 0))
        z = tlrs.zeros(700, 512, dtype="float32").numpy()
        assert not z.any()
