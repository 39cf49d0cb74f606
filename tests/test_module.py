"""tlrs.module: a linear model with MSE checked against losses and gradients derived by hand, the
training loops' printed lines, instantiation variants, errors and checkpoints."""

import math
import os

import numpy as np
import pytest

import tlrs
from tlrs import ops, optim
from tlrs.config import Options
from tlrs.dtype import FLOAT, FLOAT32, FLOAT32_FP32
from tlrs.init import FloatInit, Plan
from tlrs.module import (
    Module,
    ModuleDef,
    format_float,
    instantiate_float_with_runtime_init_options,
    instantiate_float_with_runtime_plan_options,
    instantiate_with_options,
)

W0, B0 = [[0.5, 0.25]], [0.0]


def linear_mse(ps, xs):
    return ops.mse_loss(ops.linear(xs[0], ps[0], ps[1]), xs[1])


def linear_def(**kw):
    kw.setdefault("init_params", [W0, B0])
    return ModuleDef([[1, 2], [1]], [[2], [1]], linear_mse, **kw)


def make(dtype="float64", opts=None, **kw):
    return instantiate_with_options(linear_def(**kw), dtype, Options() if opts is None else opts)


def batch(x, y, dtype="float64"):
    return [tlrs.tensor(x, dtype=dtype), tlrs.tensor(y, dtype=dtype)]


def hand(w, b, xs, ys):
    """(loss, dW, db) of mean((w.x + b - y)^2), derived by hand."""
    n = len(xs)
    r = [w[0] * x[0] + w[1] * x[1] + b - y for x, y in zip(xs, ys)]
    loss = sum(ri * ri for ri in r) / n
    dw = [sum(2 * ri * x[j] for ri, x in zip(r, xs)) / n for j in range(2)]
    db = sum(2 * ri for ri in r) / n
    return loss, dw, db


X = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]]
Y = [1.0, 0.5, -2.0]


def test_forward_and_backward_match_the_hand_derivation():
    m = make()
    xs = batch(X, [[y] for y in Y])
    loss, dw, db = hand(W0[0], B0[0], X, Y)
    out = m.forward(xs)
    assert out.shape == [] and out.requires_grad is False
    assert out.item() == pytest.approx(loss, rel=1e-14)
    gw, gb = m.backward(xs)
    assert gw.shape == [1, 2] and gb.shape == [1]
    assert gw.tolist()[0] == pytest.approx(dw, rel=1e-14)
    assert gb.tolist() == pytest.approx([db], rel=1e-14)
    assert m.params()[0].tolist() == W0 and m.params()[1].tolist() == B0


def test_unbatched_inputs_are_accepted():
    m = make()
    loss, _, _ = hand(W0[0], B0[0], [X[0]], [Y[0]])
    assert m.forward(batch(X[0], [Y[0]])).item() == pytest.approx(loss, rel=1e-14)


def test_step_applies_sgd_to_the_gradients():
    m = make()
    xs = batch(X, [[y] for y in Y])
    gw, gb = m.backward(xs)
    m.step(0.125, xs)
    assert m.params()[0].tolist()[0] == [p - 0.125 * g for p, g in zip(W0[0], gw.tolist()[0])]
    assert m.params()[1].tolist() == [B0[0] - 0.125 * gb.tolist()[0]]


def test_frozen_parameter_gets_zero_gradient_and_never_moves():
    m = make(requires_grad=[True, False])
    xs = batch(X, [[y] for y in Y])
    _, dw, _ = hand(W0[0], B0[0], X, Y)
    gw, gb = m.backward(xs)
    assert gb.tolist() == [0.0] and gw.tolist()[0] == pytest.approx(dw, rel=1e-14)
    m.step(0.1, xs)
    st = m.step_with(optim.adam_default(0.1), m.init_optim(optim.adam_default(0.1)), xs)
    assert m.params()[1].tolist() == B0 and m.params()[0].tolist() != W0
    assert st.slots["m"][1].tolist() == [0.0]


@pytest.mark.parametrize("opt", [
    optim.sgd(0.1), optim.momentum_sgd(0.1, 0.9), optim.adagrad(0.1, 1e-10),
    optim.rmsprop(0.01, 0.99, 1e-8), optim.adam(0.01, 0.9, 0.999, 1e-8),
    optim.adamw(0.01, 0.1, 0.9, 0.999, 1e-8), optim.adadelta(0.7, 0.9, 1e-6),
], ids=lambda o: o.kind)
def test_step_with_each_optimizer_feeds_it_the_module_gradients(opt):
    m = make(requires_grad=[True, False])
    xs = batch(X, [[y] for y in Y])
    state = m.init_optim(opt)
    assert state.kind == opt.kind and state.step == 0
    for _ in range(2):
        before, grads = m.params(), m.backward(xs)
        want, want_state = opt.step(state, before, grads, [True, False])
        state = m.step_with(opt, state, xs)
        assert [p.tolist() for p in m.params()] == [p.tolist() for p in want]
        assert state.step == want_state.step
    assert m.params()[1].tolist() == B0


def test_step_with_adam_matches_plain_float_adam():
    m = make()
    xs = batch(X, [[y] for y in Y])
    gw, gb = m.backward(xs)
    g = gw.tolist()[0] + gb.tolist()
    m.step_with(optim.adam(0.01, 0.9, 0.999, 1e-8), m.init_optim(optim.adam_default()), xs)
    want = []
    for p, gi in zip(W0[0] + B0, g):
        mm, vv = (1.0 - 0.9) * gi, (1.0 - 0.999) * (gi * gi)
        m_hat, v_hat = mm * (1.0 / (1.0 - 0.9)), vv * (1.0 / (1.0 - 0.999))
        want.append(p - (0.01 / (math.sqrt(v_hat) + 1e-8)) * m_hat)
    assert m.params()[0].tolist()[0] + m.params()[1].tolist() == want


# Dyadic data: every loss below is exact, so the printed lines are known in advance.
S0 = ([1.0, 2.0], [0.0])
S1 = ([2.0, 0.0], [1.0])


def hand_sgd_losses(lr, steps, samples):
    w, b, out = list(W0[0]), B0[0], []
    for k in range(steps):
        x, y = samples[k % len(samples)]
        loss, dw, db = hand(w, b, [x], y)
        out.append(loss)
        w, b = [wi - lr * gi for wi, gi in zip(w, dw)], b - lr * db
    return out, w, b


def test_train_sgd_prints_pre_update_losses(capsys):
    m = make()
    m.train_sgd(0.125, 3, [batch(*S0)])
    assert capsys.readouterr().out == (
        "step 0: loss=1.000000\nstep 1: loss=0.250000\nstep 2: loss=0.062500\n")
    losses, w, b = hand_sgd_losses(0.125, 3, [S0])
    assert losses == [1.0, 0.25, 0.0625]
    assert m.params()[0].tolist() == [w] and m.params()[1].tolist() == [b]


def test_train_sgd_cycles_samples_and_logs_every_n(capsys):
    m = make()
    m.train_sgd(0.125, 5, [batch(*S0), batch(*S1)], log_every=2)
    losses, w, b = hand_sgd_losses(0.125, 5, [S0, S1])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"step {k}: loss={format_float(losses[k])}" for k in (0, 2, 4)]
    assert m.params()[0].tolist() == [w] and m.params()[1].tolist() == [b]


def test_log_every_zero_prints_nothing_but_trains(capsys):
    m = make()
    m.train_sgd(0.125, 2, [batch(*S0)], log_every=0)
    opt = optim.sgd(0.125)
    state = m.train_with(opt, m.init_optim(opt), 2, [batch(*S0)], log_every=0)
    assert capsys.readouterr().out == ""
    assert state.step == 2
    _, w, b = hand_sgd_losses(0.125, 4, [S0])
    assert m.params()[0].tolist() == [w] and m.params()[1].tolist() == [b]


def test_train_with_prints_and_returns_the_final_state(capsys):
    m = make()
    opt = optim.sgd(0.125)
    state = m.train_with(opt, m.init_optim(opt), 3, [batch(*S0)])
    assert capsys.readouterr().out == (
        "step 0: loss=1.000000\nstep 1: loss=0.250000\nstep 2: loss=0.062500\n")
    assert state.kind == "sgd" and state.step == 3


def test_nan_and_infinite_losses_print_as_the_reference(capsys):
    m = make()
    m.train_sgd(0.1, 1, [batch([1.0, 2.0], [math.nan])])
    assert capsys.readouterr().out == "step 0: loss=NaN\n"
    assert [format_float(v) for v in (math.inf, -math.inf, 2.5, -0.0, 1e-7, 123456789.0)] == [
        "inf", "-inf", "2.500000", "-0.000000", "0.000000", "123456789.000000"]


def test_empty_datasets_raise_the_reference_messages():
    m = make()
    with pytest.raises(ValueError, match="^trainCycleSGD: empty dataset$"):
        m.train_sgd(0.1, 0, [])
    with pytest.raises(ValueError, match="^trainCycleOptim: empty dataset$"):
        m.train_with(optim.sgd(0.1), m.init_optim(optim.sgd(0.1)), 3, [])
    with pytest.raises(ValueError, match="^meanLoss: empty dataset$"):
        m.mean_loss([])


def test_mean_loss_is_a_left_fold_divided_by_the_count():
    m = make()
    samples = [batch(X[i], [Y[i]]) for i in range(3)]
    losses = [hand(W0[0], B0[0], [X[i]], [Y[i]])[0] for i in range(3)]
    got = m.mean_loss(samples)
    assert got.shape == []
    assert got.item() == pytest.approx(((0.0 + losses[0]) + losses[1] + losses[2]) / 3, rel=1e-14)
    each = [m.forward(s).item() for s in samples]
    assert got.item() == (((0.0 + each[0]) + each[1]) + each[2]) / 3.0


def test_params_and_set_params():
    m = make()
    w = tlrs.tensor([[1.0, -1.0]], requires_grad=True)
    m.set_params([w, tlrs.tensor([2.0])])
    assert m.params()[0].tolist() == [[1.0, -1.0]] and m.params()[0].requires_grad is False
    with pytest.raises(ValueError, match="expected 2 tensors, got 1"):
        m.set_params([w])
    with pytest.raises(ValueError, match=r"parameter 0 has shape \[2, 1\], expected \[1, 2\]"):
        m.set_params([tlrs.zeros(2, 1), tlrs.zeros(1)])
    with pytest.raises(tlrs.DTypeError, match="parameter 1 has dtype float32, expected float64"):
        m.set_params([tlrs.zeros(1, 2), tlrs.zeros(1, dtype="float32")])
    with pytest.raises(TypeError, match="must be a Tensor"):
        m.set_params([[[1.0, 2.0]], tlrs.zeros(1)])


def test_inputs_are_checked_against_the_input_shapes():
    m = make()
    with pytest.raises(ValueError, match=r"expected 2 inputs with shapes \[\[2\], \[1\]\], got 1"):
        m.forward([tlrs.zeros(2)])
    with pytest.raises(ValueError, match=r"input 0 has shape \[3\], expected \[2\]"):
        m.forward([tlrs.zeros(3), tlrs.zeros(1)])
    with pytest.raises(ValueError, match=r"input 0 has shape \[4, 5, 2\], expected \[2\]"):
        m.backward([tlrs.zeros(4, 5, 2), tlrs.zeros(4, 1)])
    with pytest.raises(tlrs.DTypeError, match="input 1 has dtype float32, expected float64"):
        m.step(0.1, [tlrs.zeros(2), tlrs.zeros(1, dtype="float32")])
    assert m.forward([np.array([1.0, 2.0]), [0.0]]).item() == 1.0  # array-likes are converted


def test_loss_must_be_a_scalar():
    d = ModuleDef([[2]], [[2]], lambda ps, xs: ps[0] * xs[0])
    m = instantiate_with_options(d, "float64", Options())
    with pytest.raises(ValueError, match=r"scalar Tensor \(shape \[\]\), got \[2\]"):
        m.forward([tlrs.ones(2)])


def test_definition_checks_flags_and_initial_values():
    with pytest.raises(ValueError, match="^torch: requiresGrad list longer than parameter list$"):
        linear_def(requires_grad=[True, True, False])
    with pytest.raises(ValueError, match="^torch: requiresGrad list shorter than parameter list$"):
        linear_def(requires_grad=[True])
    with pytest.raises(ValueError, match=r"initial parameter 0 has shape \[2\], expected \[1, 2\]"):
        linear_def(init_params=[[0.5, 0.25], [0.0]])
    with pytest.raises(ValueError, match="expected 2 initial parameters .* got 1"):
        linear_def(init_params=[W0])
    zero = ModuleDef([[1, 2], [1]], [[2], [1]], linear_mse)
    assert [p.tolist() for p in zero.initial_params()] == [[[0.0, 0.0]], [0.0]]
    assert zero.requires_grad == (True, True) and zero.param_names == ("param.0", "param.1")


def test_instantiate_with_options_casts():
    m32 = make("float32")
    assert m32.dtype == "float32" and all(p.dtype == "float32" for p in m32.params())
    s0 = batch(*S0, dtype="float32")
    assert m32.forward(s0).dtype == "float32" and m32.forward(s0).item() == 1.0
    doubled = instantiate_with_options(linear_def(), lambda t: t * 2.0, Options())
    assert doubled.params()[0].tolist() == [[1.0, 0.5]]
    with pytest.raises(tlrs.DTypeError, match="int8"):
        make("int8")
    assert make(FLOAT32).dtype == "float32" and make(FLOAT).dtype == "float64"
    with pytest.raises(tlrs.ArgError, match="proof-only"):
        make(FLOAT32_FP32)
    with pytest.raises(tlrs.DTypeError, match="mixed"):
        instantiate_with_options(
            linear_def(), lambda t: t.to("float32") if t.ndim == 1 else t, Options())


def test_options_are_followed():
    assert make(opts=Options(backend="compiled"))._compiled is not None  # traced at creation
    with pytest.raises(tlrs.CudaUnavailableError):
        make(opts=Options(use_gpu=True))
    seen = []

    def spy(ps, xs):
        seen.append(tlrs.get_fast_kernels())
        return linear_mse(ps, xs)

    spied = ModuleDef([[1, 2], [1]], [[2], [1]], spy)
    m = instantiate_with_options(spied, "float64", Options(fast_kernels=True))
    m.forward(batch(*S0))
    m.step(0.1, batch(*S0))
    assert seen == [True, True] and tlrs.get_fast_kernels() is False


def test_runtime_plan_variant_ignores_init_params():
    plan = Plan([[1, 2], [1]], [FloatInit.flat([3.0, -4.0]), FloatInit.ones()])
    m = instantiate_float_with_runtime_plan_options(linear_def(), Options(), plan)
    assert m.dtype == "float64"
    assert [p.tolist() for p in m.params()] == [[[3.0, -4.0]], [1.0]]
    with pytest.raises(ValueError, match=r"built for parameter shapes \[\[2, 1\], \[1\]\]"):
        instantiate_float_with_runtime_plan_options(
            linear_def(), Options(), Plan([[2, 1], [1]], [FloatInit.zeros(), FloatInit.zeros()]))
    via_def = ModuleDef([[1, 2], [1]], [[2], [1]], linear_mse, init_plan=plan)
    assert instantiate_with_options(via_def, "float64", None).params()[0].tolist() == [[3.0, -4.0]]


def test_runtime_init_variant_checks_the_list():
    inits = [FloatInit.uniform(-1.0, 1.0, 3), FloatInit.zeros()]
    m = instantiate_float_with_runtime_init_options(linear_def(), Options(), inits)
    assert m.params()[0].tolist() == FloatInit.uniform(-1.0, 1.0, 3).values([1, 2]).tolist()
    assert m.params()[1].tolist() == [0.0]
    longer = "^torch.runtimeInit: initializer list longer than parameter list$"
    shorter = "^torch.runtimeInit: initializer list shorter than parameter list$"
    with pytest.raises(ValueError, match=longer):
        instantiate_float_with_runtime_init_options(linear_def(), None, [*inits, FloatInit.ones()])
    with pytest.raises(ValueError, match=shorter):
        instantiate_float_with_runtime_init_options(linear_def(), Options(), inits[:1])
    with pytest.raises(ValueError, match=r"flat initializer length mismatch \(expected 2, got 3\)"):
        instantiate_float_with_runtime_init_options(
            linear_def(), Options(), [FloatInit.flat([1.0, 2.0, 3.0]), FloatInit.zeros()])


# ------------------------------------------------------------------------------- checkpoints

def trained(tmp_path, dtype="float64"):
    m = instantiate_with_options(
        linear_def(param_names=["fc.weight", "fc.bias"], requires_grad=[True, False]), dtype,
        Options(fast_kernels=True, seed=7))
    opt = optim.adam(0.01, 0.9, 0.999, 1e-8)
    state = m.train_with(opt, m.init_optim(opt), 3, [batch(*S0, dtype=dtype)], log_every=0)
    path = tmp_path / "model.safetensors"
    m.save(str(path), state)
    return m, opt, state, path


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_save_load_round_trip(tmp_path, dtype):
    m, opt, state, path = trained(tmp_path, dtype)
    names, tensors, _ = tlrs._core.load_safetensors(str(path))
    stored = dict(zip(names, tensors))
    assert stored["fc.weight"].tolist() == m.params()[0].tolist()
    assert stored["fc.bias"].tolist() == m.params()[1].tolist()
    assert Module.load(str(path), linear_def()).params()[0].tolist() == m.params()[0].tolist()
    loaded, st = Module.load_checkpoint(str(path), linear_def())
    assert loaded.dtype == dtype and loaded.param_names == ("fc.weight", "fc.bias")
    assert loaded.requires_grad == (True, False)
    assert loaded.opts == Options(fast_kernels=True, seed=7)
    assert [p.tolist() for p in loaded.params()] == [p.tolist() for p in m.params()]
    assert st.kind == "adam" and st.step == 3
    for slot in ("m", "v"):
        assert [t.tolist() for t in st.slots[slot]] == [t.tolist() for t in state.slots[slot]]
    # training on from the checkpoint continues exactly where the original would
    st_a = m.step_with(opt, state, batch(*S1, dtype=dtype))
    st_b = loaded.step_with(opt, st, batch(*S1, dtype=dtype))
    assert [p.tolist() for p in loaded.params()] == [p.tolist() for p in m.params()]
    assert st_a.step == st_b.step == 4


def test_save_without_optimizer_state(tmp_path):
    m = make()
    m.save(str(tmp_path / "a.st"))
    loaded, st = Module.load_checkpoint(str(tmp_path / "a.st"), linear_def(), Options(seed=3))
    assert st is None and loaded.opts.seed == 3 and loaded.param_names == ("param.0", "param.1")


def test_truncated_checkpoint_raises(tmp_path):
    _, _, _, path = trained(tmp_path)
    data = path.read_bytes()
    for n in sorted({0, 1, 7, 8, 9, len(data) // 2, len(data) - 8, len(data) - 1}):
        path.write_bytes(data[:n])
        with pytest.raises(tlrs.CheckpointError):
            Module.load(str(path), linear_def())


def test_every_flipped_byte_is_detected(tmp_path):
    _, _, _, path = trained(tmp_path)
    data = path.read_bytes()
    for i in range(len(data)):
        corrupt = bytearray(data)
        corrupt[i] ^= 0x10
        path.write_bytes(bytes(corrupt))
        with pytest.raises(tlrs.CheckpointError):
            Module.load_checkpoint(str(path), linear_def())


def test_foreign_or_mismatched_checkpoints(tmp_path):
    foreign = tmp_path / "foreign.st"
    tlrs._core.save_safetensors(str(foreign), ["w"], [tlrs.zeros(2)], {})
    with pytest.raises(tlrs.CheckpointError, match="not a valid tlrs module checkpoint"):
        Module.load(str(foreign), linear_def())
    with pytest.raises(tlrs.CheckpointError):
        Module.load(str(tmp_path / "missing.st"), linear_def())
    _, _, _, path = trained(tmp_path)
    other = ModuleDef([[2, 1], [1]], [[2], [1]], linear_mse)
    with pytest.raises(ValueError, match=r"checkpoint parameter shapes \[\[1, 2\], \[1\]\]"):
        Module.load(str(path), other)


def test_save_is_atomic(tmp_path):
    m = make()
    with pytest.raises(tlrs.CheckpointError):
        m.save(str(tmp_path / "missing" / "a.st"))
    assert os.listdir(tmp_path) == []
    target = tmp_path / "a.st"
    m.save(str(target))
    assert os.listdir(tmp_path) == ["a.st"]
    before = target.read_bytes()
    bad_state = optim.OptimState("adam", 1, {"m": [tlrs.zeros(1, 2)]})
    m.set_params([tlrs.ones(1, 2), tlrs.ones(1)])
    with pytest.raises(ValueError, match="slots must hold 2 tensors"):
        m.save(str(target), bad_state)
    assert target.read_bytes() == before
    blocked = tmp_path / "dir.st"
    blocked.mkdir()
    with pytest.raises(tlrs.CheckpointError):
        m.save(str(blocked))
    assert sorted(os.listdir(tmp_path)) == ["a.st", "dir.st"] and blocked.is_dir()
