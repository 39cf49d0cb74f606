"""TorchLean's newer optimizers against their formulas written in NumPy: Muon (`buf <- m*buf + g`,
`p <- p - lr*orth(buf)`, Newton-Schulz orthogonalisers in both orientations, the identity for other
shapes) and GaLore-style projected SGD (`p <- p - lr*lift(project(g))`); their identity backends
equal momentum SGD and SGD bit for bit, natively and in the compiled loop; `--optim muon`."""

import numpy as np
import pytest

import tlrs
from tlrs import Options, ops, optim

RNG = np.random.default_rng(0)


def _ns_numpy(x, a, b, c, steps, orientation):
    for _ in range(steps):
        if orientation == "column":
            g = x.T @ x
            once = x @ g
            twice = once @ g
        else:
            g = x @ x.T
            once = g @ x
            twice = g @ once
        x = (x * a + once * b) + twice * c
    return x


@pytest.mark.parametrize("orientation", ["column", "row"])
def test_muon_with_newton_schulz_matches_the_formula(orientation):
    lr, m = 0.05, 0.9
    a, b, c, steps = 1.5, -0.5, 0.0, 3  # the cubic Newton-Schulz polynomial
    p0 = RNG.standard_normal((4, 3)) * 0.3
    v0 = RNG.standard_normal(5)  # a 1-D parameter: the identity backend
    opt = optim.muon(lr, m, optim.newton_schulz(a, b, c, steps, orientation))
    params = [tlrs.tensor(p0), tlrs.tensor(v0)]
    state = opt.init(params)
    want_p, want_v, buf_p, buf_v = p0.copy(), v0.copy(), np.zeros_like(p0), np.zeros_like(v0)
    for _ in range(3):
        gp, gv = RNG.standard_normal(p0.shape) * 0.1, RNG.standard_normal(v0.shape)
        params, state = opt.step(state, params, [tlrs.tensor(gp), tlrs.tensor(gv)])
        buf_p, buf_v = m * buf_p + gp, m * buf_v + gv
        want_p = want_p - lr * _ns_numpy(buf_p, a, b, c, steps, orientation)
        want_v = want_v - lr * buf_v
    np.testing.assert_allclose(params[0].numpy(), want_p, rtol=1e-13, atol=1e-15)
    assert params[1].numpy().tobytes() == want_v.tobytes()  # elementwise: the same IEEE operations
    assert state.kind == "muon" and state.step == 3


def test_newton_schulz_moves_singular_values_toward_one():
    x = RNG.standard_normal((6, 4))
    x = x / np.linalg.norm(x, 2)  # the cubic polynomial converges for singular values in (0, sqrt(3))
    y = optim.newton_schulz(1.5, -0.5, 0.0, 12)(tlrs.tensor(x)).numpy()
    np.testing.assert_allclose(np.linalg.svd(y, compute_uv=False), 1.0, atol=1e-3)


def test_identity_backends_are_momentum_sgd_and_sgd_bit_for_bit():
    p = [tlrs.tensor(RNG.standard_normal((3, 2))), tlrs.tensor(RNG.standard_normal(4))]
    gs = [[tlrs.tensor(RNG.standard_normal(t.shape)) for t in p] for _ in range(3)]
    for mine, ref in ((optim.muon(0.1, 0.8), optim.momentum_sgd(0.1, 0.8)),
                      (optim.projected_sgd(0.1), optim.sgd(0.1))):
        a, sa, b, sb = list(p), mine.init(p), list(p), ref.init(p)
        for g in gs:
            a, sa = mine.step(sa, a, g)
            b, sb = ref.step(sb, b, g)
        assert [t.numpy().tobytes() for t in a] == [t.numpy().tobytes() for t in b]


def test_projected_sgd_applies_project_then_lift():
    p0, g0 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    opt = optim.projected_sgd(0.5, project=lambda g: g * 2.0, lift=lambda g: ops.tanh(g))
    (p1,), _ = opt.step(opt.init([tlrs.tensor(p0)]), [tlrs.tensor(p0)], [tlrs.tensor(g0)])
    np.testing.assert_allclose(p1.numpy(), p0 - 0.5 * np.tanh(2.0 * g0), rtol=1e-15, atol=1e-15)
    bad = optim.projected_sgd(0.5, project=lambda g: ops.sum(g))
    with pytest.raises(ValueError, match="projected_sgd"):
        bad.step(bad.init([tlrs.tensor(p0)]), [tlrs.tensor(p0)], [tlrs.tensor(g0)])
    with pytest.raises(TypeError, match="muon"):
        optim.muon(0.1, 0.9, orthogonalizer=3)


def _defn():
    rng = np.random.default_rng(1)
    return tlrs.ModuleDef([[3, 2], [2]], [[4, 3], [4, 2]],
                          lambda ps, xs: ops.mse_loss(ops.matmul(xs[0], ps[0]) + ps[1], xs[1]),
                          init_params=[rng.standard_normal((3, 2)), rng.standard_normal(2)])


def test_compiled_loop_runs_identity_muon_and_refuses_a_python_backend():
    samples = [[np.random.default_rng(i).standard_normal((4, 3)), np.random.default_rng(9 + i).standard_normal((4, 2))]
               for i in range(3)]
    compiled = tlrs.instantiate_with_options(_defn(), "float64", Options(backend="compiled"))
    eager = tlrs.instantiate_with_options(_defn(), "float64", Options())
    opt = optim.muon(0.05, 0.9)
    sc, _ = compiled.train_steps(opt, compiled.init_optim(opt), samples * 2)
    se, _ = eager.train_steps(opt, eager.init_optim(opt), samples * 2)
    assert [t.numpy().tobytes() for t in compiled.params()] == [t.numpy().tobytes() for t in eager.params()]
    assert sc.kind == se.kind == "muon"
    ns = optim.muon(0.05, 0.9, optim.newton_schulz(1.5, -0.5, 0.0, 2))
    with pytest.raises(ValueError, match="eager backend"):
        compiled.train_steps(ns, compiled.init_optim(ns), samples)
    eager.train_steps(ns, eager.init_optim(ns), samples)  # eager runs it


@pytest.mark.parametrize("name", ["muon", "projected_sgd"])
def test_the_cli_trains_with_the_new_optimizers(name, capsys):
    from tlrs.cli import main

    assert main(["run", "mlp", "--optim", name, "--steps", "3"]) == 0
    assert "mean_loss" in capsys.readouterr().out
