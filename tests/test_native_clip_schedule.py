"""Gradient clipping and learning-rate schedules in `Module.train_steps`: the eager loop against
PyTorch (`clip_grad_norm_` and the same per-step learning rates), and the compiled backend's
native loop against the eager loop, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import nn, ops, optim

torch = pytest.importorskip("torch")


def _data(steps: int):
    rng = np.random.default_rng(0)
    return [[rng.standard_normal((16, 5)) * 3, rng.standard_normal((16, 3)) * 3] for _ in range(steps)]


def _model():
    tlrs.manual_seed(4)
    return nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 3))


def _loss(m, x, y):
    return ops.mse_loss(m(x), y)


LRS = [0.02 * (i + 1) / 4 if i < 4 else 0.02 * 0.5 ** (i - 4) for i in range(10)]  # warmup, then decay


@pytest.mark.parametrize("clip, lrs", [(0.5, None), (None, LRS), (0.5, LRS)])
def test_eager_clip_and_schedule_match_torch(clip, lrs):
    model = _model()
    tm = torch.nn.Sequential(torch.nn.Linear(5, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3)).double()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    topt = torch.optim.AdamW(tm.parameters(), lr=0.02, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-8)
    batches = _data(10)
    want = []
    for i, (x, y) in enumerate(batches):
        if lrs is not None:
            for g in topt.param_groups:
                g["lr"] = lrs[i]
        loss = torch.nn.functional.mse_loss(tm(torch.tensor(x)), torch.tensor(y))
        topt.zero_grad()
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(tm.parameters(), clip)
        topt.step()
        want.append(loss.item())
    defn = nn.to_module_def(model, _loss, [[16, 5], [16, 3]])
    m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
    opt = optim.adamw(0.02, 0.01, 0.9, 0.999, 1e-8)
    _, got = m.train_steps(opt, m.init_optim(opt), batches, clip=clip, lrs=lrs)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    for p, q in zip(m.params(), tm.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_native_loop_clips_and_schedules_with_the_eager_bits(dtype):
    defn = nn.to_module_def(_model(), _loss, [[16, 5], [16, 3]])
    batches = _data(10)
    runs = []
    for backend in ("eager", "compiled"):
        m = tlrs.instantiate_with_options(defn, dtype, tlrs.Options(backend=backend))
        opt = optim.adam(0.02, 0.9, 0.999, 1e-8)
        st, losses = m.train_steps(opt, m.init_optim(opt), batches, clip=0.3, lrs=LRS)
        runs.append((losses, st.step, [p.numpy().tobytes() for p in m.params()]))
    assert runs[0] == runs[1]


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_native_loop_on_cuda_clips_schedules_and_accumulates_with_the_cpu_bits(dtype):
    """The compiled graph's native loop on CUDA (AdamW, a clip, a schedule, three micro-batches
    per step) against the eager loop on the CPU, bit for bit (reference kernels)."""
    defn = nn.to_module_def(_model(), _loss, [[16, 5], [16, 3]])
    batches = _data(12)
    runs = []
    for backend, device in (("eager", "cpu"), ("compiled", "cuda")):
        m = tlrs.instantiate_with_options(defn, dtype, tlrs.Options(backend=backend).to_device(device))
        opt = optim.adamw(0.02, 0.01, 0.9, 0.999, 1e-8)
        st, losses = m.train_steps(opt, m.init_optim(opt), batches, clip=0.3, lrs=LRS[:4], accumulate=3)
        assert all(p.device == ("cpu" if device == "cpu" else "cuda:0") for p in m.params())
        runs.append((losses, st.step, [p.numpy().tobytes() for p in m.params()],
                     [t.numpy().tobytes() for slot in st.slots.values() for t in slot]))
    assert runs[0] == runs[1] and runs[0][1] == 4


def test_bad_options_are_refused_by_name():
    defn = nn.to_module_def(_model(), _loss, [[16, 5], [16, 3]])
    m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend="compiled"))
    opt = optim.adam(0.02, 0.9, 0.999, 1e-8)
    with pytest.raises(ValueError, match="clip must be a positive max norm"):
        m.train_steps(opt, m.init_optim(opt), _data(2), clip=0.0)
    with pytest.raises(ValueError, match="a learning rate per step"):
        m.train_steps(opt, m.init_optim(opt), _data(3), lrs=[0.1])


def test_accumulation_averages_micro_batches_and_the_native_loop_agrees():
    defn = nn.to_module_def(_model(), _loss, [[16, 5], [16, 3]])
    batches = _data(12)
    runs = []
    for backend in ("eager", "compiled"):
        m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend=backend))
        opt = optim.sgd(0.05)
        st, losses = m.train_steps(opt, m.init_optim(opt), batches, accumulate=3, clip=1.0)
        runs.append((losses, st.step, [p.numpy().tobytes() for p in m.params()]))
    assert runs[0] == runs[1] and runs[0][1] == 4 and len(runs[0][0]) == 4
    # The oracle: torch, each step the mean of three micro-batches' gradients, clipped.
    model = _model()
    tm = torch.nn.Sequential(torch.nn.Linear(5, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3)).double()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    topt = torch.optim.SGD(tm.parameters(), lr=0.05)
    want = []
    for s in range(4):
        topt.zero_grad()
        total = 0.0
        for x, y in batches[3 * s:3 * s + 3]:
            loss = torch.nn.functional.mse_loss(tm(torch.tensor(x)), torch.tensor(y)) / 3
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(tm.parameters(), 1.0)
        topt.step()
        want.append(total)
    np.testing.assert_allclose(runs[0][0], want, rtol=1e-12)
    with pytest.raises(ValueError, match="whole steps of 5"):
        m.train_steps(opt, m.init_optim(opt), batches, accumulate=5)
