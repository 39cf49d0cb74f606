"""Kernels split across the calling thread and the pool (parallel.rs's team_for / for_chunks):
outputs far above the threading threshold, odd sizes that leave a short last chunk, short rows
claimed in groups, against NumPy for 1, 2 and 4 threads."""

import numpy as np
import pytest

import tlrs
from tlrs import ops


@pytest.fixture
def restore_threads():
    before = tlrs.get_num_threads()
    yield
    tlrs.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_large_elementwise_broadcast_and_pooling_equal_numpy(threads, restore_threads):
    tlrs.set_num_threads(threads)
    rng = np.random.default_rng(11)
    a = rng.normal(size=300_007).astype(np.float32)
    b = rng.normal(size=300_007).astype(np.float32)
    np.testing.assert_array_equal(ops.relu(tlrs.tensor(a)).numpy(), np.maximum(a, 0))
    np.testing.assert_array_equal(ops.add(tlrs.tensor(a), tlrs.tensor(b)).numpy(), a + b)
    # Rows of 7 (many short chunks, claimed in groups) broadcast against one row.
    m = rng.normal(size=(50_001, 7))
    r = rng.normal(size=(7,))
    np.testing.assert_array_equal(ops.mul(tlrs.tensor(m), tlrs.tensor(r)).numpy(), m * r)
    # Row sums (left folds from 0): one output element per chunk.
    np.testing.assert_array_equal(ops.sum(tlrs.tensor(m), 1).numpy(), np.array([sum(row.tolist()) for row in m]))
    x = rng.normal(size=(33, 5, 30, 30)).astype(np.float32)
    pooled = ops.max_pool2d(tlrs.tensor(x), 2).numpy()
    np.testing.assert_array_equal(pooled, x.reshape(33, 5, 15, 2, 15, 2).max(axis=(3, 5)))


def test_callers_on_several_threads_and_a_resize_meanwhile_keep_every_result(restore_threads):
    # One caller at a time owns the helper team; the others run their items themselves, and a
    # resize replaces the team under running jobs. None of it may change a bit.
    import threading

    tlrs.set_num_threads(2)
    rng = np.random.default_rng(12)
    a = rng.normal(size=(300, 400)).astype(np.float32)
    b = rng.normal(size=(400, 200)).astype(np.float32)
    x = rng.normal(size=(200_003,)).astype(np.float32)
    want_mm = (tlrs.tensor(a) @ tlrs.tensor(b)).numpy()
    want_relu = np.maximum(x, 0)
    failures = []

    def work(seed):
        for _ in range(15):
            if not np.array_equal((tlrs.tensor(a) @ tlrs.tensor(b)).numpy(), want_mm):
                failures.append(f"matmul on thread {seed}")
            if not np.array_equal(ops.relu(tlrs.tensor(x)).numpy(), want_relu):
                failures.append(f"relu on thread {seed}")

    def resize():
        for n in [3, 1, 2, 4, 2] * 3:
            tlrs.set_num_threads(n)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    threads.append(threading.Thread(target=resize))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
