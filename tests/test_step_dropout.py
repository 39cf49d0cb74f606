"""Dropout inside training steps: each step draws a fresh counter-based mask from (the global
seed, the optimizer's step, the dropout's number in the step), so the eager and the compiled
backends train with the same masks, bit for bit (tlrs.random.training_step)."""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
from tlrs import nn, ops, optim
from tlrs.random import training_step


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(6, 16), nn.Linear(16, 2)
        self.d1, self.d2 = nn.Dropout(0.3), nn.Dropout(0.5)

    def forward(self, x):
        return self.b(self.d2(self.d1(ops.relu(self.a(x)))))


def _loss(m, x, y):
    return ops.mse_loss(m(x), y)


def test_eager_and_compiled_draw_the_same_fresh_masks_every_step():
    tlrs.manual_seed(0)
    defn = nn.to_module_def(_Net(), _loss, [[8, 6], [8, 2]])
    rng = np.random.default_rng(0)
    batch = [rng.standard_normal((8, 6)), rng.standard_normal((8, 2))]
    opt = optim.adam(0.01, 0.9, 0.999, 1e-8)
    runs = []
    for backend in ("eager", "compiled"):
        m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend=backend))
        _, losses = m.train_steps(opt, m.init_optim(opt), [batch] * 6)
        runs.append((losses, [p.numpy().tobytes() for p in m.params()]))
    assert runs[0] == runs[1]
    # One batch six times: only the masks (and the updates) change the loss from step to step.
    assert len(set(runs[0][0])) == 6


def test_masks_are_a_function_of_seed_step_and_call():
    x = tlrs.ones(4000)

    def masks(seed, step):
        tlrs.manual_seed(seed)
        with training_step(step):
            return [ops.dropout(x, 0.25).numpy().copy() for _ in range(2)]

    a, again, other_step, other_seed = masks(1, 3), masks(1, 3), masks(1, 4), masks(2, 3)
    np.testing.assert_array_equal(a[0], again[0])
    np.testing.assert_array_equal(a[1], again[1])
    assert not np.array_equal(a[0], a[1])  # the second dropout of a step has its own mask
    assert not np.array_equal(a[0], other_step[0]) and not np.array_equal(a[0], other_seed[0])
    kept = a[0] != 0
    assert set(np.unique(a[0])) <= {0.0, 1 / 0.75} and abs(kept.mean() - 0.75) < 0.03


def test_the_gradient_is_the_steps_mask():
    xa = np.random.default_rng(1).standard_normal(500)
    x = tlrs.tensor(xa, requires_grad=True)
    with training_step(7):
        y = ops.dropout(x, 0.4)
        ops.sum(y * 3.0).backward()
    scale = np.where(y.numpy() != 0, 1 / 0.6, 0.0)
    np.testing.assert_array_equal(y.numpy(), xa * scale)
    np.testing.assert_array_equal(x.grad.numpy(), 3.0 * scale)


def test_a_compiled_dropout_outside_a_training_step_is_refused_by_name():
    tlrs.manual_seed(0)
    defn = nn.to_module_def(_Net(), _loss, [[8, 6], [8, 2]])
    m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend="compiled"))
    batch = [np.zeros((8, 6)), np.zeros((8, 2))]
    with pytest.raises(ValueError, match="runs inside a training step"):
        m.forward(batch)
    with training_step(0):
        assert np.isfinite(m.forward(batch).item())
