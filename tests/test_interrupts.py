"""A signal stops a long native call between two pieces of its work (rust/src/interrupt.rs): a
backward pass between two nodes, the compiled loop between two steps or two nodes of a step,
and the exception the signal's handler raised is what comes back."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import tlrs
from tlrs import ops


def _long_chain(n=1500, size=256):
    rng = np.random.default_rng(0)
    w = tlrs.tensor(rng.normal(size=(size, size)) / size ** 0.5, dtype="float32",
                    requires_grad=True)
    y = tlrs.tensor(rng.normal(size=(size, size)), dtype="float32")
    for _ in range(n):
        y = ops.tanh(y @ w)
    return w, ops.sum(y)


def _timed_chain(at_least=0.4):
    """A chain whose backward walk takes at least `at_least` seconds on this machine (longer
    chains until it does), its parameter, loss and the walk's time."""
    n = 1500
    while True:
        w, loss = _long_chain(n)
        t0 = time.perf_counter()
        tlrs.grad(loss, [w])
        whole = time.perf_counter() - t0
        if whole > at_least:
            return w, loss, whole
        n = int(n * 1.5 * at_least / max(whole, 1e-3)) + 1


def _signal_after(delay, sig=signal.SIGINT):
    sent = []

    def fire():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), sig)

    timer = threading.Timer(delay, fire)
    return timer, sent


def test_a_signal_stops_a_long_backward_pass_between_two_nodes():
    w, loss, whole = _timed_chain()  # how long the whole walk takes here
    timer, sent = _signal_after(whole / 4)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        tlrs.grad(loss, [w])
    stopped = time.perf_counter()
    timer.join()
    # Stopped long before the walk would have ended, with the graph still usable.
    assert stopped - sent[0] < whole / 2, (stopped - sent[0], whole)
    (g,) = tlrs.grad(loss, [w])
    assert g.shape == [256, 256]


def test_an_interrupted_loss_backward_leaves_grad_untouched():
    w, loss, _ = _timed_chain()
    t0 = time.perf_counter()
    loss.backward()
    whole = time.perf_counter() - t0
    first = w.grad.numpy().copy()
    timer, sent = _signal_after(whole / 4)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        loss.backward()
    stopped = time.perf_counter()
    timer.join()
    assert stopped - sent[0] < whole / 2, (stopped - sent[0], whole)
    # Gradients are added to .grad only when the walk completes: still the first pass's.
    assert w.grad.numpy().tobytes() == first.tobytes()
