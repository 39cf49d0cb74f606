"""Learning-rate schedules and gradient clipping against PyTorch's: the schedules' learning rates
bit for bit over a long run (the same Python float formulas), clipped gradients and norms within
rounding (the norms fold in another order)."""

import numpy as np
import pytest
import torch

import tlrs
from tlrs import nn, ops, optim
from tlrs.optim import lr_scheduler as S

SCHEDULES = {
    "StepLR": (lambda o: S.StepLR(o, 7, 0.5), lambda o: torch.optim.lr_scheduler.StepLR(o, 7, 0.5)),
    "MultiStepLR": (lambda o: S.MultiStepLR(o, [3, 10, 10, 25], 0.3),
                    lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [3, 10, 10, 25], 0.3)),
    "ExponentialLR": (lambda o: S.ExponentialLR(o, 0.93), lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.93)),
    "CosineAnnealingLR": (lambda o: S.CosineAnnealingLR(o, 17, 1e-4),
                          lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 17, 1e-4)),
    "LinearLR": (lambda o: S.LinearLR(o, 0.25, 1.0, 12), lambda o: torch.optim.lr_scheduler.LinearLR(o, 0.25, 1.0, 12)),
    "LambdaLR": (lambda o: S.LambdaLR(o, lambda e: 1.0 / (1 + e) ** 0.5),
                 lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1.0 / (1 + e) ** 0.5)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_give_pytorchs_learning_rates_bit_for_bit(name):
    mine, theirs = SCHEDULES[name]
    opt = optim.adamw(3e-3, 0.01, 0.9, 0.999, 1e-8)
    topt = torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=3e-3)
    s, ts = mine(opt), theirs(topt)
    for step in range(80):
        assert s.get_last_lr() == ts.get_last_lr(), (name, step)
        assert opt.hyper["lr"] == topt.param_groups[0]["lr"]
        topt.step()
        ts.step()
        s.step()


def test_a_schedule_drives_training_and_resumes():
    opt = optim.sgd(0.1)
    sched = S.StepLR(opt, 2, 0.5)
    p = [tlrs.tensor([1.0])]
    st = opt.init(p)
    seen = []
    for _ in range(5):
        p, st = opt.step(st, p, [tlrs.tensor([1.0])])
        seen.append(opt.hyper["lr"])
        sched.step()
    assert seen == [0.1, 0.1, 0.05, 0.05, 0.025]
    saved = sched.state_dict()
    other = optim.sgd(0.1)
    again = S.StepLR(other, 2, 0.5)
    again.load_state_dict(saved)
    assert other.hyper["lr"] == opt.hyper["lr"] and again.last_epoch == sched.last_epoch
    with pytest.raises(TypeError, match="StepLR"):
        S.StepLR(object(), 2)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 4)), rng.standard_normal(5), rng.standard_normal((2, 2, 2))]
    ps = [tlrs.tensor(a, requires_grad=True) for a in arrays]
    tps = [torch.tensor(a, requires_grad=True) for a in arrays]
    w = [rng.standard_normal(a.shape) for a in arrays]
    ops.sum(ops.concat([ops.reshape(p * tlrs.tensor(v), [-1]) for p, v in zip(ps, w)], 0)).backward()
    sum((p * torch.tensor(v)).sum() for p, v in zip(tps, w)).backward()
    total = nn.clip_grad_norm_(ps, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-14)
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-14, atol=1e-16)


def test_clip_grad_norm_refuses_a_nonfinite_norm_when_asked():
    g = [tlrs.tensor([np.inf, 1.0])]
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.clip_grad_norm(g, 1.0, error_if_nonfinite=True)
    clipped, total = nn.clip_grad_norm(g, 1.0)
    assert np.isinf(total.item())
    with pytest.raises(ValueError, match="clip_grad_norm"):
        nn.clip_grad_norm([], 1.0)


def test_param_groups_update_each_parameter_as_its_groups_optimizer_would():
    rng = np.random.default_rng(3)
    ps = [tlrs.tensor(rng.standard_normal(s)) for s in ((4, 3), (3,), (3, 2), (2,))]
    base = optim.adamw(0.01, 0.1, 0.9, 0.95, 1e-8)
    opt = optim.param_groups(base, [{"params": [ps[0], ps[2]]}, {"params": [ps[1], ps[3]], "weight_decay": 0.0}])
    state = opt.init(ps)
    decay, no_decay = optim.adamw(0.01, 0.1, 0.9, 0.95, 1e-8), optim.adamw(0.01, 0.0, 0.9, 0.95, 1e-8)
    a, b = [ps[0], ps[2]], [ps[1], ps[3]]
    sa, sb = decay.init(a), no_decay.init(b)
    sched = S.StepLR(opt, 2, 0.5)  # one lr for every group
    refs = [S.StepLR(decay, 2, 0.5), S.StepLR(no_decay, 2, 0.5)]
    for _ in range(4):
        gs = [tlrs.tensor(rng.standard_normal(p.shape)) for p in ps]
        ps, state = opt.step(state, ps, gs)
        a, sa = decay.step(sa, a, [gs[0], gs[2]])
        b, sb = no_decay.step(sb, b, [gs[1], gs[3]])
        sched.step()
        for r in refs:
            r.step()
    bits = [p.numpy().tobytes() for p in ps]
    assert bits == [t.numpy().tobytes() for t in (a[0], b[0], a[1], b[1])]


def test_param_groups_match_torchs_adamw_groups():
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((3, 3)), rng.standard_normal(3)]
    ps = [tlrs.tensor(x) for x in arrays]
    tps = [torch.tensor(x, requires_grad=True) for x in arrays]
    opt = optim.param_groups(optim.adamw(0.01, 0.1, 0.9, 0.999, 1e-8),
                             [{"params": [0]}, {"params": [1], "weight_decay": 0.0}])
    topt = torch.optim.AdamW([{"params": [tps[0]]}, {"params": [tps[1]], "weight_decay": 0.0}],
                             lr=0.01, weight_decay=0.1, betas=(0.9, 0.999), eps=1e-8)
    state = opt.init(ps)
    for _ in range(5):
        gs = [rng.standard_normal(x.shape) for x in arrays]
        ps, state = opt.step(state, ps, [tlrs.tensor(g) for g in gs])
        for tp, g in zip(tps, gs):
            tp.grad = torch.tensor(g)
        topt.step()
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_param_groups_refuse_what_they_cannot_do():
    base = optim.adamw(0.01, 0.1, 0.9, 0.999, 1e-8)
    with pytest.raises(ValueError, match="lr is the base's"):
        optim.param_groups(base, [{"params": [0], "lr": 0.1}])
    with pytest.raises(ValueError, match="sets"):
        optim.param_groups(base, [{"params": [0], "momentum": 0.1}])
    p = [tlrs.tensor([1.0]), tlrs.tensor([2.0])]
    with pytest.raises(ValueError, match="in no group"):
        optim.param_groups(base, [{"params": [0]}]).init(p)
    with pytest.raises(ValueError, match="groups 0 and 1"):
        optim.param_groups(base, [{"params": [0, 1]}, {"params": [1]}]).init(p)


def test_the_compiled_loop_refuses_param_groups_by_name():
    defn = tlrs.ModuleDef([[2], [2]], [[3, 2]], lambda ps, xs: ops.sum(xs[0] * ps[0] + ps[1]))
    m = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend="compiled"))
    opt = optim.param_groups(optim.sgd(0.1), [{"params": [0, 1]}])
    with pytest.raises(ValueError, match="parameter groups"):
        m.train_steps(opt, m.init_optim(opt), [[np.ones((3, 2))]])
