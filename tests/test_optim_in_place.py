"""The CPU optimizer writes into a parameter's own buffer only when nothing else can see it (the
compiled loop's parameters after its first step, an eager module's own parameters under SGD),
and splits large parameters across threads. Neither may change a bit: functional updates (always
into copies, checked against the reference formulas in test_optim.py) and NumPy are the oracles,
and tensors the caller holds must keep their values."""

import numpy as np
import pytest

import tlrs
from test_compiled import OPTIMIZERS, bits
from tlrs import ops, optim
from tlrs.config import Backend, Options

# 400 x 700 = 280,000 elements per weight: above the size at which an update is split across
# the pool.
ROWS, COLS = 400, 700


def wide_linear():
    rng = np.random.default_rng(3)
    init = [tlrs.tensor(rng.normal(size=(ROWS, COLS)) * 0.05, dtype="float32"),
            tlrs.tensor(rng.normal(size=(ROWS,)) * 0.05, dtype="float32")]

    def loss(ps, xs):
        d = ops.sub(ops.linear(xs[0], ps[0], ps[1]), xs[1])
        return ops.mean(ops.mul(d, d))

    return tlrs.ModuleDef([[ROWS, COLS], [ROWS]], [[COLS], [ROWS]], loss, init_params=init)


def data(batch=2):
    rng = np.random.default_rng(4)
    return [[tlrs.tensor(rng.normal(size=(batch, COLS)), dtype="float32"),
             tlrs.tensor(rng.normal(size=(batch, ROWS)), dtype="float32")]]


@pytest.fixture
def two_threads():
    before = tlrs.get_num_threads()
    tlrs.set_num_threads(2)
    yield
    tlrs.set_num_threads(before)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_large_parameters_in_place_and_threaded_equal_eager_bits(name, two_threads):
    defn, xs = wide_linear(), data()
    runs = []
    for backend in ("eager", "compiled"):
        m = tlrs.instantiate_with_options(defn, "float32", Options(backend=Backend(backend)))
        opt = OPTIMIZERS[name]()
        state = m.train_with(opt, m.init_optim(opt), 4, xs, log_every=0)
        runs.append((bits(m.params()), {k: bits(v) for k, v in state.slots.items()}))
    (pe, se), (pc, sc) = runs
    assert all(np.array_equal(a, b) for a, b in zip(pe, pc, strict=True))
    assert se.keys() == sc.keys()
    for k in se:
        assert all(np.array_equal(a, b) for a, b in zip(se[k], sc[k], strict=True))


@pytest.mark.parametrize("backend", ["eager", "compiled"])
def test_tensors_the_caller_holds_keep_their_values(backend):
    defn, xs = wide_linear(), data()
    m = tlrs.instantiate_with_options(defn, "float32", Options(backend=Backend(backend)))
    opt = optim.adam(0.01, 0.9, 0.999, 1e-8)
    state0 = m.train_with(opt, m.init_optim(opt), 1, xs, log_every=0)
    held_params = m.params()
    held_slots = {k: list(v) for k, v in state0.slots.items()}
    before = bits(held_params), {k: bits(v) for k, v in held_slots.items()}
    state = m.train_with(opt, state0, 3, xs, log_every=0)
    assert state.step == 4
    assert all(np.array_equal(a, b) for a, b in zip(bits(held_params), before[0], strict=True))
    for k, v in held_slots.items():
        assert all(np.array_equal(a, b) for a, b in zip(bits(v), before[1][k], strict=True))
    # ...while the module itself moved on.
    assert not np.array_equal(bits(m.params())[0], before[0][0])


def _address(t):
    # The buffer's address; the NumPy view is dropped at once so it holds nothing afterwards.
    return np.asarray(t).ctypes.data


def test_eager_sgd_writes_the_modules_own_buffers_with_the_formulas_bits():
    defn, xs = wide_linear(), data()
    m = tlrs.instantiate_with_options(defn, "float32", Options(backend=Backend("eager")))
    lr = 0.05
    m.step(lr, xs[0])  # the first update copies: the definition's init_params share the buffers
    for _ in range(2):
        before = [np.asarray(p).copy() for p in m.params()]
        grads = [np.asarray(g) for g in m.backward(xs[0])]
        addresses = [_address(p) for p in m._params]
        m.step(lr, xs[0])
        assert [_address(p) for p in m._params] == addresses
        after = [np.asarray(p).copy() for p in m.params()]
        for a, b, g in zip(after, before, grads, strict=True):
            want = b - np.float32(lr) * g  # each operation rounded in float32, as the reference
            assert np.array_equal(a.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("hold", ["params", "state_dict", "numpy"])
def test_eager_sgd_copies_a_parameter_someone_still_holds(hold):
    defn, xs = wide_linear(), data()
    m = tlrs.instantiate_with_options(defn, "float32", Options(backend=Backend("eager")))
    if hold == "params":
        held = m.params()
    elif hold == "state_dict":
        held = list(m.state_dict().values())
    else:
        held = [np.asarray(p) for p in m.params()]
    before = [np.asarray(h).copy() for h in held]
    m.train_sgd(0.05, 2, xs, log_every=0)
    for h, b in zip(held, before, strict=True):
        assert np.array_equal(np.asarray(h), b)
    assert not np.array_equal(np.asarray(m.params()[0]), before[0])
