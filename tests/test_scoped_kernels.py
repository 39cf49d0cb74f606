"""Kernel settings belong to a thread: `fast_kernels()` in one thread never changes another
thread's numbers, and a Module always runs with its own Options whatever the ambient setting."""

import threading

import numpy as np
import pytest

import tlrs
from tlrs import Options, models, optim


def _data(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(16, 48)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 16)]
    return [[tlrs.tensor(x, dtype="float32"), tlrs.tensor(y, dtype="float32")]]


def _train(opts, steps, samples):
    defn, _ = models.mlp_classifier(48, 64, 10)
    m = tlrs.instantiate_with_options(defn, "float32", opts)
    opt = optim.adam(1e-3, 0.9, 0.999, 1e-8)
    state = m.init_optim(opt)
    for i in range(steps):
        state = m.step_with(opt, state, samples[i % len(samples)])
    return [p.numpy().tobytes() for p in m.params()]


def _run_threads(*jobs):
    out, errors = [None] * len(jobs), []

    def work(i, job):
        try:
            out[i] = job()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, j)) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return out


def test_two_modules_with_different_options_in_two_threads_equal_their_solo_runs():
    samples = _data(0)
    ref_opts, fast_opts = Options(), Options(fast_kernels=True)
    solo_ref = _train(ref_opts, 1000, samples)
    solo_fast = _train(fast_opts, 1000, samples)
    # The two kinds really differ on this model, so a leak would show.
    assert solo_ref != solo_fast
    both = _run_threads(lambda: _train(ref_opts, 1000, samples),
                        lambda: _train(fast_opts, 1000, samples))
    assert both[0] == solo_ref
    assert both[1] == solo_fast


def test_a_module_ignores_the_ambient_setting():
    samples = _data(1)
    solo_ref = _train(Options(), 20, samples)
    with tlrs.fast_kernels():
        assert _train(Options(), 20, samples) == solo_ref
        assert tlrs.get_fast_kernels()  # restored to the block's setting after each call
    assert not tlrs.get_fast_kernels()


def test_fast_kernels_in_one_thread_leave_other_threads_on_reference_kernels():
    rng = np.random.default_rng(2)
    a = tlrs.tensor(rng.normal(size=(64, 200)).astype(np.float32), dtype="float32")
    b = tlrs.tensor(rng.normal(size=(200, 64)).astype(np.float32), dtype="float32")
    exact = (a @ b).numpy().tobytes()
    with tlrs.fast_kernels():
        fast = (a @ b).numpy().tobytes()
    assert fast != exact  # FMA + blocking change the bits here
    start = threading.Barrier(2)

    def fast_thread():
        start.wait()
        with tlrs.fast_kernels():
            return [(a @ b).numpy().tobytes() for _ in range(200)]

    def reference_thread():
        start.wait()
        return [(a @ b).numpy().tobytes() for _ in range(200)]

    fasts, refs = _run_threads(fast_thread, reference_thread)
    assert set(refs) == {exact}
    assert set(fasts) == {fast}


def test_a_new_thread_starts_on_reference_kernels():
    tlrs.set_fast_kernels(True)
    try:
        seen = _run_threads(tlrs.get_fast_kernels)
        assert seen == [False]
        assert tlrs.get_fast_kernels()
    finally:
        tlrs.set_fast_kernels(False)


def test_gpu_precision_and_tf32_are_per_thread():
    tlrs.cuda.allow_tf32(True)
    tlrs.cuda.set_matmul_precision("fp64")
    try:
        assert tlrs.cuda.tf32_allowed()
        assert _run_threads(tlrs.cuda.tf32_allowed) == [False]
        assert _run_threads(lambda: tlrs._core.get_kernel_settings()) == [(False, False, False)]
        assert tlrs._core.get_kernel_settings() == (False, True, True)
    finally:
        tlrs.cuda.allow_tf32(False)
        tlrs.cuda.set_matmul_precision("fp32")


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_a_module_sets_its_gpu_precision_only_for_its_calls(precision):
    seen = []
    defn = tlrs.ModuleDef([[2]], [[2]], lambda ps, xs: (
        seen.append(tlrs._core.get_kernel_settings()) or tlrs.ops.sum(ps[0] * xs[0])))
    m = tlrs.instantiate_with_options(
        defn, "float64", Options(fast_gpu_matmul_precision=precision, tf32=True))
    m.forward([tlrs.ones(2)])
    assert seen == [(False, precision == "fp64", True)]
    assert tlrs._core.get_kernel_settings() == (False, False, False)
