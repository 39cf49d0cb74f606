"""What a compiled training step allocates (`Graph.step_memory`, measured in the crate's
allocator): the peak against bounds derived by hand, and that after a first step every large
buffer is reused rather than taken from the system again."""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
from tlrs import ops
from tlrs.compiled import CompiledLoss

MIB = 1 << 20


def matmul_relu() -> tuple[CompiledLoss, list[tlrs.Tensor], list[tlrs.Tensor]]:
    """sum(relu(x @ w)), x [256, 512], w [512, 512] in float32: activations of 512 KiB each."""
    def loss(p, x):
        return ops.sum(ops.relu(ops.matmul(x[0], p[0])))

    rng = np.random.default_rng(0)
    w = rng.normal(size=(512, 512)).astype("float32")
    x = rng.normal(size=(256, 512)).astype("float32")
    return CompiledLoss(loss, [w.shape], [x.shape], "float32"), [tlrs.tensor(w)], [tlrs.tensor(x)]


def test_peak_bytes_lie_between_hand_derived_bounds():
    compiled, ps, xs = matmul_relu()
    graph = compiled.graph_for([list(xs[0].shape)])
    graph.step_memory(ps, [True], xs)
    m = graph.step_memory(ps, [True], xs)
    # While dW = x^T g (1 MiB) is written, its upstream g (the relu gradient, 512 KiB) is held.
    assert m["peak_bytes"] >= MIB + MIB // 2, m
    # Every buffer the step makes, none reused: x@w, relu, the ones of sum's gradient, the relu
    # gradient (512 KiB each) and dW (1 MiB) = 3 MiB; twice that covers GEMM packing and the rest.
    assert m["peak_bytes"] <= 6 * MIB, m
    assert m["large_buffers"] >= 5, m


def test_after_the_first_step_no_large_buffer_comes_from_the_system():
    compiled, ps, xs = matmul_relu()
    mem = compiled.step_memory(ps, [list(xs[0].shape)])
    assert mem["large_buffers"] >= 5 and mem["fresh_next"] == 0, mem


def test_a_failed_step_reports_its_error_and_ends_the_measurement():
    compiled, ps, xs = matmul_relu()
    graph = compiled.graph_for([list(xs[0].shape)])
    with pytest.raises(ValueError, match="expected 1 parameters and 1 inputs, got 2 and 1"):
        graph.step_memory(ps + ps, [True, True], xs)
    # Nothing counted outside a measurement, and the next one starts from zero.
    m = graph.step_memory(ps, [True], xs)
    assert MIB + MIB // 2 <= m["peak_bytes"] <= 6 * MIB, m


def test_tlrs_graph_prints_the_measured_step(capsys):
    from tlrs import cli

    assert cli.main(["graph", "cnn", "--batch", "32", "--dtype", "float32"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("one training step (forward + backward, measured): peak ")
    assert last.endswith(", 0 on the next")
