"""The compiled backend: losses, gradients and parameters after 10 training steps equal the eager
backend bit for bit with reference kernels, for every model and every optimizer; untraceable
losses fail at instantiation naming the reason."""

import numpy as np
import pytest

import tlrs
from tlrs import models, ops, optim
from tlrs.config import Backend, Options

OPTIMIZERS = {
    "sgd": lambda: optim.sgd(0.05),
    "momentum_sgd": lambda: optim.momentum_sgd(0.05, 0.9),
    "adagrad": lambda: optim.adagrad(0.05, 1e-10),
    "rmsprop": lambda: optim.rmsprop(0.01, 0.9, 1e-8),
    "adam": lambda: optim.adam(0.01, 0.9, 0.999, 1e-8),
    "adamw": lambda: optim.adamw(0.01, 0.01, 0.9, 0.999, 1e-8),
    "adadelta": lambda: optim.adadelta(1.0, 0.9, 1e-6),
}

# Small instances of every model, with their (input, target) shapes without a batch axis.
MODELS = {
    "mlp": lambda dt: models.mlp(6, 8, 2, dtype=dt),
    "mlp_classifier": lambda dt: models.mlp_classifier(6, 8, 3, dtype=dt),
    "softmax_regression": lambda dt: models.softmax_regression(6, 3, dtype=dt),
    "autoencoder": lambda dt: models.autoencoder(6, 3, dtype=dt),
    "two_conv_cnn": lambda dt: models.two_conv_cnn(1, 2, 3, 4, 8, 8, 3, 3, padding1=1, padding2=1, dtype=dt),
    "transformer_block": lambda dt: models.transformer_block(2, 3, 4, 2, 2, dtype=dt),
    "resnet18": lambda dt: models.resnet18_model(1, 8, 8, 3, width=2, dtype=dt),
}


def samples(defn, dtype, batch, count=3, seed=0):
    rng = np.random.default_rng(seed)
    x_shape, y_shape = defn.input_shapes
    out = []
    for _ in range(count):
        x = rng.normal(size=([batch] if batch else []) + list(x_shape))
        y = rng.normal(size=([batch] if batch else []) + list(y_shape))
        out.append([tlrs.tensor(x, dtype=dtype), tlrs.tensor(y, dtype=dtype)])
    return out


def bits(ts):
    return [t.numpy().view(np.uint64 if t.dtype == "float64" else np.uint32).copy() for t in ts]


def train(defn, backend, opt, data, steps=10):
    m = tlrs.instantiate_with_options(defn, defn.initial_params()[0].dtype, Options(backend=Backend(backend)))
    state = m.train_with(opt, m.init_optim(opt), steps, data, log_every=0)
    return m, state


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_every_model_and_optimizer_after_10_steps(model, opt_name):
    """Losses, parameters and optimizer state after 10 steps: compiled == eager, bit for bit."""
    defn, _ = MODELS[model]("float64")
    data = samples(defn, "float64", batch=2)
    m_e, s_e = train(defn, "eager", OPTIMIZERS[opt_name](), data)
    m_c, s_c = train(defn, "compiled", OPTIMIZERS[opt_name](), data)
    assert all(np.array_equal(a, b) for a, b in zip(bits(m_e.params()), bits(m_c.params())))
    assert np.array_equal(*bits([m_e.mean_loss(data), m_c.mean_loss(data)]))
    for name in s_e.slots:
        assert all(np.array_equal(a, b) for a, b in zip(bits(s_e.slots[name]), bits(s_c.slots[name])))


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_model_matches_eager_bit_for_bit(model, dtype):
    defn, _ = MODELS[model](dtype)
    data = samples(defn, dtype, batch=2)
    eager = tlrs.instantiate_with_options(defn, dtype, Options())
    comp = tlrs.instantiate_with_options(defn, dtype, Options(backend=Backend("compiled")))
    assert np.array_equal(*bits([eager.forward(data[0]), comp.forward(data[0])]))
    assert all(np.array_equal(a, b) for a, b in zip(bits(eager.backward(data[1])), bits(comp.backward(data[1]))))
    opt = optim.adam(0.01, 0.9, 0.999, 1e-8)
    m_e, s_e = train(defn, "eager", opt, data)
    m_c, s_c = train(defn, "compiled", opt, data)
    assert all(np.array_equal(a, b) for a, b in zip(bits(m_e.params()), bits(m_c.params())))
    assert s_e.step == s_c.step == 10
    for name in s_e.slots:
        assert all(np.array_equal(a, b) for a, b in zip(bits(s_e.slots[name]), bits(s_c.slots[name])))


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_every_optimizer_matches_eager_bit_for_bit(name, capsys):
    defn, _ = models.mlp(5, 7, 2)
    data = samples(defn, "float64", batch=4)
    runs = []
    for backend in ("eager", "compiled"):
        m = tlrs.instantiate_with_options(defn, "float64", Options(backend=Backend(backend)))
        opt = OPTIMIZERS[name]()
        state = m.train_with(opt, m.init_optim(opt), 10, data, log_every=3)
        runs.append((bits(m.params()), capsys.readouterr().out, state))
    (pe, out_e, st_e), (pc, out_c, st_c) = runs
    assert all(np.array_equal(a, b) for a, b in zip(pe, pc))
    assert out_e == out_c and out_e.count("\n") == 4 and out_e.startswith("step 0: loss=")
    assert st_e.kind == st_c.kind == name and st_e.step == st_c.step


def test_train_sgd_and_mean_loss_match_eager(capsys):
    defn, _ = models.mlp(4, 6, 1)
    data = samples(defn, "float64", batch=0)
    ms = [tlrs.instantiate_with_options(defn, "float64", Options(backend=Backend(b))) for b in ("eager", "compiled")]
    for m in ms:
        m.train_sgd(0.05, 10, data, log_every=5)
    outs = capsys.readouterr().out.splitlines()
    assert outs[:2] == outs[2:] and len(outs) == 4
    assert all(np.array_equal(a, b) for a, b in zip(bits(ms[0].params()), bits(ms[1].params())))
    assert np.array_equal(*bits([ms[0].mean_loss(data), ms[1].mean_loss(data)]))


def test_fast_kernels_within_tolerance():
    defn, _ = models.mlp(16, 32, 4)
    data = samples(defn, "float64", batch=8)
    ref = tlrs.instantiate_with_options(defn, "float64", Options(backend=Backend("compiled")))
    fast = tlrs.instantiate_with_options(defn, "float64", Options(backend=Backend("compiled"), fast_kernels=True))
    assert abs(ref.forward(data[0]).item() - fast.forward(data[0]).item()) < 1e-12


def _module(loss):
    return tlrs.ModuleDef([[3]], [[3]], loss)


def test_data_dependent_control_flow_fails_at_instantiation():
    def branchy(ps, xs):
        if xs[0].numpy().sum() > 0:
            return ops.mse_loss(xs[0], ps[0])
        return ops.sum(ps[0])

    with pytest.raises(tlrs.TraceError, match=r"reads tensor values in Python \(Tensor.numpy\(\)\)"):
        tlrs.instantiate_with_options(_module(branchy), "float64", Options(backend=Backend("compiled")))


def test_values_read_in_python_fail_at_instantiation():
    def leaky(ps, xs):
        return ops.sum(ps[0] * tlrs.tensor(xs[0].numpy()))

    with pytest.raises(tlrs.TraceError, match="reads tensor values in Python"):
        tlrs.instantiate_with_options(_module(leaky), "float64", Options(backend=Backend("compiled")))


def test_a_loss_that_raises_names_the_error():
    def broken(ps, xs):
        return ops.matmul(ps[0], tlrs.zeros(4, 4))

    with pytest.raises(ValueError, match="tracing it raised ShapeError"):
        tlrs.instantiate_with_options(_module(broken), "float64", Options(backend=Backend("compiled")))


def test_graph_description_lists_nodes():
    defn, _ = models.mlp(3, 4, 1)
    m = tlrs.instantiate_with_options(defn, "float64", Options(backend=Backend("compiled")))
    text = m._compiled.describe()
    assert "matmul(" in text and "relu(" in text and "param 0" in text and "return %" in text


def test_tlrs_graph_prints_the_traced_graph(capsys):
    from tlrs import cli

    assert cli.main(["graph", "mlp"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("inputs [[7], [1]]: 16 traced nodes, 10 ops (10 after fusion), ")  # mse_loss is one op
    assert "bytes of activations" in first
    assert "%2 = param 0 : float64 [32, 7]" in out
    assert cli.main(["graph", "cnn", "--batch", "2", "--dtype", "float32"]) == 0
    assert "inputs [[2, " in capsys.readouterr().out
    assert cli.main(["graph", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tlrs: error: ") and "unknown model 'nope'" in err and err.count("\n") == 1


def test_compiled_backend_through_tlrs_run(capsys):
    from tlrs import cli

    outs = []
    for backend in ("eager", "compiled"):
        assert cli.main(["run", "mlp", "--steps", "5", "--backend", backend]) == 0
        outs.append([line for line in capsys.readouterr().out.splitlines() if "loss" in line])
    assert outs[0] == outs[1]  # the same losses, printed to six digits
