"""tlrs.optim against the reference formulas written out here with plain Python floats (binary64):
the same IEEE operations in the same order, so results are compared with `==`, bit for bit."""

import math

import numpy as np
import pytest

import tlrs
from tlrs import optim

_RNG = np.random.default_rng(7)
P0 = _RNG.normal(size=16).tolist() + [0.5, -1.25, 2.0, 0.0]
P1 = [[0.3], [-0.7]]
G_STEPS = [  # two steps of gradients for (P0, P1); full-mantissa values and zeros on purpose
    (_RNG.normal(size=16).tolist() + [0.1, -0.2, 0.0, 3.5], [[-0.05], [0.75]]),
    (_RNG.normal(size=16).tolist() + [-0.3, 0.6, 0.25, 0.0], [[0.4], [-1.5]]),
]
N0 = len(P0)


def flat(x):
    return np.asarray(x, dtype=np.float64).reshape(-1).tolist()


def power(beta, t):
    out = 1.0
    for _ in range(t):
        out = out * beta
    return out


# ------------------------------------------------- scalar reference formulas (one element)

def ref_sgd(p, gs, lr):
    for g in gs:
        p = p - lr * g
    return p


def ref_momentum(p, gs, lr, mu):
    buf = 0.0
    for g in gs:
        buf = mu * buf + g
        p = p - lr * buf
    return p


def ref_adagrad(p, gs, lr, eps):
    acc = 0.0
    for g in gs:
        acc = acc + g * g
        p = p - (lr / (math.sqrt(acc) + eps)) * g
    return p


def ref_rmsprop(p, gs, lr, decay, eps):
    v = 0.0
    for g in gs:
        v = decay * v + (1.0 - decay) * (g * g)
        p = p - (lr / (math.sqrt(v) + eps)) * g
    return p


def ref_adam(p, gs, lr, b1, b2, eps, wd=None):
    m = v = 0.0
    for t, g in enumerate(gs, start=1):
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * (g * g)
        m_hat = m * (1.0 / (1.0 - power(b1, t)))
        v_hat = v * (1.0 / (1.0 - power(b2, t)))
        if wd is not None:
            p = p - (lr * wd) * p
        p = p - (lr / (math.sqrt(v_hat) + eps)) * m_hat
    return p


def ref_adamw(p, gs, lr, wd, b1, b2, eps):
    return ref_adam(p, gs, lr, b1, b2, eps, wd=wd)


def ref_adadelta(p, gs, lr, rho, eps):
    v = u = 0.0
    for g in gs:
        v = rho * v + (1.0 - rho) * (g * g)
        delta = -lr * (math.sqrt(u + eps) / math.sqrt(v + eps)) * g
        p = p + delta
        u = rho * u + (1.0 - rho) * (delta * delta)
    return p


CASES = {
    "sgd": (optim.sgd, ref_sgd, (0.1,)),
    "momentum_sgd": (optim.momentum_sgd, ref_momentum, (0.1, 0.9)),
    "adagrad": (optim.adagrad, ref_adagrad, (0.1, 1e-10)),
    "rmsprop": (optim.rmsprop, ref_rmsprop, (0.01, 0.99, 1e-8)),
    "adam": (optim.adam, ref_adam, (0.001, 0.9, 0.999, 1e-8)),
    "adamw": (optim.adamw, ref_adamw, (0.3, 2.5, 0.9, 0.999, 1e-8)),  # lr*wd = 0.75
    "adadelta": (optim.adadelta, ref_adadelta, (0.7, 0.9, 1e-6)),
}


def params():
    return [tlrs.tensor(P0), tlrs.tensor(P1)]


def grads(k):
    return [tlrs.tensor(g) for g in G_STEPS[k]]


def expected(ref, hyper, n_steps, which):
    start = flat([P0, P1][which])
    gs = [flat(G_STEPS[k][which]) for k in range(n_steps)]
    return [ref(p, [g[i] for g in gs], *hyper) for i, p in enumerate(start)]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("n_steps", [1, 2])
def test_steps_match_reference_formula_bit_for_bit(name, n_steps):
    make, ref, hyper = CASES[name]
    opt = make(*hyper)
    ps = params()
    state = opt.init(ps)
    for k in range(n_steps):
        ps, state = opt.step(state, ps, grads(k), [True, True])
    assert state.step == n_steps and state.kind == name
    for which in (0, 1):
        assert ps[which].dtype == "float64"
        assert ps[which].shape == list(np.shape([P0, P1][which]))
        assert flat(ps[which].numpy()) == expected(ref, hyper, n_steps, which)


def test_adam_state_holds_the_reference_moments():
    opt = optim.adam(0.001, 0.9, 0.999, 1e-8)
    ps = params()
    state = opt.init(ps)
    for k in range(2):
        ps, state = opt.step(state, ps, grads(k))
    m = v = 0.0
    for gs in G_STEPS:
        g = gs[0][1]
        m = 0.9 * m + (1.0 - 0.9) * g
        v = 0.999 * v + (1.0 - 0.999) * (g * g)
    assert state.slots["m"][0].tolist()[1] == m
    assert state.slots["v"][0].tolist()[1] == v


def test_adam_bias_correction_uses_repeated_multiplication_over_many_steps():
    b1, b2 = 0.9, 0.999  # 0.9**4 differs from 0.9*0.9*0.9*0.9 in the last bit
    opt = optim.adam(0.001, b1, b2, 1e-8)
    ps = params()
    state = opt.init(ps)
    for k in range(12):
        ps, state = opt.step(state, ps, grads(k % 2))
    gs = [flat(G_STEPS[k % 2][0]) for k in range(12)]
    want = [ref_adam(p, [g[i] for g in gs], 0.001, b1, b2, 1e-8) for i, p in enumerate(P0)]
    assert flat(ps[0].numpy()) == want


def test_adadelta_state_holds_the_reference_accumulators():
    lr, rho, eps = 0.7, 0.9, 1e-6
    opt = optim.adadelta(lr, rho, eps)
    ps = params()
    state = opt.init(ps)
    for k in range(2):
        ps, state = opt.step(state, ps, grads(k))
    for i in range(N0):
        v = u = 0.0
        for gs in G_STEPS:
            g = gs[0][i]
            v = rho * v + (1.0 - rho) * (g * g)
            delta = -lr * (math.sqrt(u + eps) / math.sqrt(v + eps)) * g
            u = rho * u + (1.0 - rho) * (delta * delta)
        assert state.slots["v"][0].tolist()[i] == v
        assert state.slots["u"][0].tolist()[i] == u


def test_adam_float32_follows_binary32_arithmetic():
    f = np.float32
    lr, b1, b2, eps = f(0.01), f(0.9), f(0.999), f(1e-8)
    p0, gs = [f(0.5), f(-1.25)], [[f(0.1), f(-0.3)], [f(-0.7), f(0.2)]]
    opt = optim.adam(0.01, 0.9, 0.999, 1e-8)
    ps = [tlrs.tensor(np.array(p0, dtype=np.float32))]
    state = opt.init(ps)
    for g in gs:
        ps, state = opt.step(state, ps, [tlrs.tensor(np.array(g, dtype=np.float32))])
    for i in range(2):
        p, m, v, pw1, pw2 = p0[i], f(0), f(0), f(1), f(1)
        for g in gs:
            g = g[i]
            pw1, pw2 = pw1 * b1, pw2 * b2
            m = b1 * m + (f(1) - b1) * g
            v = b2 * v + (f(1) - b2) * (g * g)
            m_hat = m * (f(1) / (f(1) - pw1))
            v_hat = v * (f(1) / (f(1) - pw2))
            p = p - (lr / (np.sqrt(v_hat) + eps)) * m_hat
        assert ps[0].dtype == "float32"
        assert ps[0].numpy()[i] == p


@pytest.mark.parametrize("name", CASES)
def test_requires_grad_false_parameter_is_skipped(name):
    make, ref, hyper = CASES[name]
    opt = make(*hyper)
    ps = params()
    state = opt.init(ps)
    for k in range(2):
        # the frozen parameter may come with no gradient at all
        ps, state = opt.step(state, ps, [grads(k)[0], None], [True, False])
    assert state.step == 2
    assert ps[1].tolist() == P1
    for slot in state.slots.values():
        assert slot[1].tolist() == [[0.0], [0.0]]
    assert flat(ps[0].numpy()) == expected(ref, hyper, 2, 0)


@pytest.mark.parametrize("name", ["sgd", "adagrad", "rmsprop", "adam", "adadelta"])
def test_unused_parameter_with_zero_gradient_stays_put_on_the_first_step(name):
    make, _, hyper = CASES[name]
    opt = make(*hyper)
    ps = params()
    new, state = opt.step(opt.init(ps), ps, [tlrs.zeros(N0), tlrs.zeros(2, 1)])
    assert new[0].tolist() == P0 and new[1].tolist() == P1
    for slot in state.slots.values():
        assert slot[0].tolist() == [0.0] * N0


def test_unused_parameter_keeps_moving_on_momentum_and_adam_moments():
    for name in ("momentum_sgd", "adam"):
        make, ref, hyper = CASES[name]
        opt = make(*hyper)
        ps = params()
        ps, state = opt.step(opt.init(ps), ps, grads(0))
        ps, state = opt.step(state, ps, [tlrs.zeros(N0), tlrs.zeros(2, 1)])
        g0 = flat(G_STEPS[0][0])
        want = [ref(p, [g0[i], 0.0], *hyper) for i, p in enumerate(P0)]
        assert flat(ps[0].numpy()) == want
        assert flat(ps[0].numpy()) != flat(P0)


def test_adamw_decays_an_unused_parameter():
    lr, wd = 0.3, 2.5
    opt = optim.adamw(lr, wd, 0.9, 0.999, 1e-8)
    ps = params()
    new, _ = opt.step(opt.init(ps), ps, [tlrs.zeros(N0), tlrs.zeros(2, 1)])
    assert new[0].tolist() == [p - (lr * wd) * p - (lr / (0.0 + 1e-8)) * 0.0 for p in P0]
    assert new[0].tolist() != P0


def test_step_is_functional():
    opt = optim.adam(0.1, 0.9, 0.999, 1e-8)
    ps = params()
    state = opt.init(ps)
    new, new_state = opt.step(state, ps, grads(0))
    assert ps[0].tolist() == P0 and state.step == 0
    assert state.slots["m"][0].tolist() == [0.0] * N0
    assert new_state is not state and new[0] is not ps[0]


@pytest.mark.parametrize("name", CASES)
def test_state_round_trips_through_plain_data(name):
    make, ref, hyper = CASES[name]
    opt = make(*hyper)
    ps = params()
    ps, state = opt.step(opt.init(ps), ps, grads(0))
    data = state.to_dict()
    assert data["kind"] == name and data["step"] == 1
    assert set(data["slots"]) == set(opt.slot_names)
    for arrays in data["slots"].values():
        assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in arrays)
    restored = optim.OptimState.from_dict(data)
    assert restored.kind == name and restored.step == 1
    for slot, arrays in data["slots"].items():
        assert [t.tolist() for t in restored.slots[slot]] == [a.tolist() for a in arrays]
    ps, _ = opt.step(restored, ps, grads(1))
    assert flat(ps[0].numpy()) == expected(ref, hyper, 2, 0)


def test_state_round_trip_keeps_float32():
    opt = optim.adam_default()
    state = opt.init([tlrs.zeros(3, dtype="float32")])
    restored = optim.OptimState.from_dict(state.to_dict())
    assert restored.slots["m"][0].dtype == "float32"


def test_from_dict_rejects_malformed_data():
    with pytest.raises(ValueError, match="expected keys"):
        optim.OptimState.from_dict({"kind": "adam"})
    with pytest.raises(ValueError, match="natural"):
        optim.OptimState.from_dict({"kind": "adam", "step": -1, "slots": {}})
    with pytest.raises(ValueError, match="lists"):
        optim.OptimState.from_dict({"kind": "adam", "step": 0, "slots": {"m": 3}})


def test_no_defaults_at_this_layer_and_the_default_adam():
    with pytest.raises(TypeError):
        optim.adam(0.1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        optim.adamw(0.1, 0.0)  # type: ignore[call-arg]
    assert optim.adam_default().hyper == {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    assert optim.adam_default(0.5).hyper["lr"] == 0.5
    # adamw takes the weight decay second
    assert list(optim.adamw(1.0, 2.0, 3.0, 4.0, 5.0).hyper.items()) == [
        ("lr", 1.0), ("weight_decay", 2.0), ("beta1", 3.0), ("beta2", 4.0), ("eps", 5.0)]


def test_misuse_raises():
    opt = optim.sgd(0.1)
    ps = params()
    with pytest.raises(TypeError, match="lr must be a number"):
        optim.sgd("0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected a adam state|expected a sgd state"):
        opt.step(optim.adam_default().init(ps), ps, grads(0))
    with pytest.raises(ValueError, match="one gradient"):
        opt.step(opt.init(ps), ps, grads(0)[:1])
    with pytest.raises(ValueError, match=r"gradient 1 has shape \[2\], expected \[2, 1\]"):
        opt.step(opt.init(ps), ps, [grads(0)[0], tlrs.zeros(2)])
    with pytest.raises(ValueError, match="slot 'm' holds 1 tensors, expected 2"):
        optim.adam_default().step(optim.adam_default().init(ps[:1]), ps, grads(0))
