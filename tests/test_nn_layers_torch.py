"""tlrs.nn's ConvTranspose2d, GroupNorm and TransformerEncoderLayer against torch.nn's: torch's
state_dict loads with strict=True, and outputs and the gradients of the input and of every
parameter agree (float64 within 1e-10, float32 within 1e-5); default initialisations have
torch's shapes, names and bounds. OneCycleLR and SequentialLR give torch's learning rates bit
for bit."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import tlrs
from tlrs import nn, ops, optim
from tlrs.optim import lr_scheduler as S

DTYPES = ["float64", "float32"]


def tol(dtype):
    return {"rtol": 1e-10, "atol": 1e-10} if dtype == "float64" else {"rtol": 1e-5, "atol": 1e-5}


def mirror(tm, tl, dtype):
    """torch layer `tm` in `dtype` and `tl` holding its weights (strict load)."""
    tm = tm.to(getattr(torch, dtype))
    assert [n for n, _ in tl.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(tl.state_dict()) == list(tm.state_dict())
    result = tl.load_state_dict(tm.state_dict(), strict=True)
    assert result == ([], [])
    return tm, tl


def randomize(tm, seed=0, scale=1.0):
    """Every parameter of `tm` drawn from N(0, scale²) (so ones/zeros defaults hide nothing)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)


def compare(tm, tl, shape, dtype, seed=1, call=lambda m, x: m(x)):
    """Forward outputs, and gradients of the input and parameters of sum(y * r), r random."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    X = tlrs.tensor(x, requires_grad=True)
    ty, y = call(tm, tx), call(tl, X)
    assert y.dtype == dtype and y.shape == list(ty.shape)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), **tol(dtype))
    r = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    (ty * torch.from_numpy(r)).sum().backward()
    ops.sum(y * tlrs.tensor(r)).backward()
    np.testing.assert_allclose(X.grad.numpy(), tx.grad.numpy(), **tol(dtype), err_msg="input")
    n = 0
    for (name, p), (tname, tp) in zip(tl.named_parameters(), tm.named_parameters(), strict=True):
        assert name == tname and p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), **tol(dtype), err_msg=name)
        n += 1
    assert n == len(list(tm.parameters()))


# ---- ConvTranspose2d ---------------------------------------------------------------------------

CONVT = [
    ((4, 6, 3), {}),
    ((4, 6, 3), {"stride": 2}),
    ((4, 6, (3, 2)), {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2)}),
    ((4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    ((6, 4, 3), {"dilation": 2, "padding": 2, "groups": 2, "bias": False}),
    ((2, 3, 2), {"stride": 3, "dilation": (2, 1), "output_padding": 1}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args,kwargs", CONVT)
def test_conv_transpose2d_matches_torch(args, kwargs, dtype):
    torch.manual_seed(0)
    tm, tl = mirror(torch.nn.ConvTranspose2d(*args, **kwargs), nn.ConvTranspose2d(*args, **kwargs, dtype=dtype), dtype)
    compare(tm, tl, (2, args[0], 5, 4), dtype)


def test_conv_transpose2d_unbatched_and_output_size():
    torch.manual_seed(1)
    kwargs = {"stride": 2, "padding": 1}
    tm, tl = mirror(torch.nn.ConvTranspose2d(3, 2, 3, **kwargs), nn.ConvTranspose2d(3, 2, 3, **kwargs), "float64")
    compare(tm, tl, (3, 4, 5), "float64")
    for size in ([8, 10], [2, 2, 7, 9], [2, 2, 8, 9]):
        tm.zero_grad()
        tl.zero_grad()
        compare(tm, tl, (2, 3, 4, 5), "float64", call=lambda m, x, s=size: m(x, output_size=s))
    x = tlrs.tensor(np.zeros((1, 3, 4, 5)))
    with pytest.raises(ValueError, match="output size"):
        tl(x, output_size=[9, 9])  # valid: 7..8 and 9..10
    with pytest.raises(ValueError):
        tm(torch.zeros(1, 3, 4, 5, dtype=torch.float64), output_size=[9, 9])


def test_conv_transpose2d_default_init_is_torchs():
    # in != out / groups, so torch's fan_in (axis 1 of [in, out/g, kH, kW]) differs from conv2d's.
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose2d(4, 32, (3, 5), groups=2)
    tlrs.manual_seed(0)
    tl = nn.ConvTranspose2d(4, 32, (3, 5), groups=2)
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(tm.weight)
    assert fan_in == 16 * 15
    bound = 1 / math.sqrt(fan_in)
    for name in ("weight", "bias"):
        ours, theirs = getattr(tl, name).numpy(), getattr(tm, name).detach().numpy()
        assert ours.shape == theirs.shape and ours.dtype == np.float64
        for w in (ours, theirs):
            assert np.abs(w).max() <= bound
        assert np.abs(ours).max() > 0.8 * bound and np.abs(ours).std() > 0
    assert np.abs(tl.weight.numpy()).max() > 0.97 * bound  # 1920 draws: U(-b, b) reaches near b
    assert tl.weight.requires_grad and tl.bias.requires_grad
    assert repr(tl) == repr(tm)
    with pytest.raises(ValueError, match="divisible"):
        nn.ConvTranspose2d(4, 5, 3, groups=2)
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")


# ---- GroupNorm ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("groups,channels,shape,kwargs", [
    (2, 6, (3, 6, 4, 5), {}),
    (3, 6, (2, 6, 7), {}),
    (1, 4, (5, 4), {}),
    (4, 4, (2, 4, 3, 3), {}),
    (2, 6, (3, 6, 4, 5), {"affine": False}),
    (3, 6, (2, 6, 2, 3), {"bias": False}),
])
def test_group_norm_matches_torch(groups, channels, shape, kwargs, dtype):
    tm = torch.nn.GroupNorm(groups, channels, **kwargs)
    randomize(tm)
    tm, tl = mirror(tm, nn.GroupNorm(groups, channels, **kwargs, dtype=dtype), dtype)
    compare(tm, tl, shape, dtype)


def test_group_norm_defaults_and_eps():
    tm, tl = torch.nn.GroupNorm(3, 6, eps=0.5).double(), nn.GroupNorm(3, 6, eps=0.5)
    np.testing.assert_array_equal(tl.weight.numpy(), np.ones(6))
    np.testing.assert_array_equal(tl.bias.numpy(), np.zeros(6))
    assert repr(tl) == repr(tm)
    compare(*mirror(tm, tl, "float64"), (2, 6, 3), "float64")  # eps=0.5 is far from 1e-5's values
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ValueError, match="GroupNorm"):
        tl(tlrs.tensor(np.zeros((2, 4, 3))))


# ---- TransformerEncoderLayer -------------------------------------------------------------------

ENCODER = [
    {},
    {"norm_first": True},
    {"activation": "gelu"},
    {"activation": "gelu", "norm_first": True, "batch_first": True},
    {"bias": False, "layer_norm_eps": 1e-3},
    {"batch_first": True},
]


def encoder_pair(dtype, seed=0, d=8, heads=2, ff=16, **kwargs):
    torch.manual_seed(seed)
    tm = torch.nn.TransformerEncoderLayer(d, heads, ff, **kwargs)
    # LayerNorm's and the attention biases' ones/zeros replaced; scale 0.5 keeps the softmax away
    # from one-hot rows, whose float32 gradients are rounding noise (errors 7e-5 at scale 1).
    randomize(tm, seed, scale=0.5)
    return mirror(tm, nn.TransformerEncoderLayer(d, heads, ff, **kwargs, dtype=dtype), dtype)


def src_shape(kwargs, s=5, n=3, d=8):
    return (n, s, d) if kwargs.get("batch_first") else (s, n, d)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", ENCODER)
def test_transformer_encoder_layer_eval_matches_torch(kwargs, dtype):
    tm, tl = encoder_pair(dtype, **kwargs)
    tm.eval()
    tl.eval()
    assert not any(m.training for m in tl.modules())
    compare(tm, tl, src_shape(kwargs), dtype)


@pytest.mark.parametrize("kwargs", ENCODER[:4])
def test_transformer_encoder_layer_train_without_dropout_matches_torch(kwargs):
    tm, tl = encoder_pair("float64", dropout=0.0, **kwargs)
    assert tl.training and tm.training
    compare(tm, tl, src_shape(kwargs), "float64")


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True}, {"activation": "gelu", "batch_first": True}])
def test_transformer_encoder_layer_train_with_every_dropout_dropping_all_matches_torch(kwargs):
    # dropout=1.0 in training: attention weights, dropout, dropout1 and dropout2 all give zeros (no
    # randomness left), so torch's training-mode output is reproducible: each dropout must be there.
    tm, tl = encoder_pair("float64", seed=2, dropout=1.0, **kwargs)
    assert tl.training and tm.training
    compare(tm, tl, src_shape(kwargs), "float64")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_masks_match_torch(norm_first, dtype):
    tm, tl = encoder_pair(dtype, seed=3, norm_first=norm_first, batch_first=True)
    tm.eval()
    tl.eval()
    causal = np.triu(np.ones((5, 5), dtype=bool), 1)
    padding = np.zeros((3, 5), dtype=bool)
    padding[1, 3:] = True
    padding[2, 4] = True
    float_mask = np.random.default_rng(5).standard_normal((5, 5)).astype(dtype)

    def masks(m, x):
        if isinstance(x, torch.Tensor):
            return m(x, src_mask=torch.from_numpy(causal), src_key_padding_mask=torch.from_numpy(padding))
        return m(x, src_mask=causal, src_key_padding_mask=padding)

    compare(tm, tl, (3, 5, 8), dtype, call=masks)
    tm.zero_grad()
    tl.zero_grad()

    def added(m, x):
        if isinstance(x, torch.Tensor):
            return m(x, src_mask=torch.from_numpy(float_mask))
        return m(x, src_mask=tlrs.tensor(float_mask))

    compare(tm, tl, (3, 5, 8), dtype, call=added)
    tm.zero_grad()
    tl.zero_grad()

    def causal_hint(m, x):
        if isinstance(x, torch.Tensor):
            return m(x, src_mask=torch.from_numpy(causal), is_causal=True)
        return m(x, src_mask=causal, is_causal=True)

    compare(tm, tl, (3, 5, 8), dtype, call=causal_hint)


def test_transformer_encoder_layer_unbatched_matches_torch():
    tm, tl = encoder_pair("float64", seed=4, dropout=0.0)
    compare(tm, tl, (6, 8), "float64")


def test_transformer_encoder_layer_names_init_and_module_activation():
    torch.manual_seed(0)
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, activation=torch.nn.GELU(), norm_first=True)
    tl = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU(), norm_first=True)
    assert [n for n, _ in tl.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in tl.named_parameters()] == [n for n, _ in tm.named_parameters()]
    for (name, p), (_, q) in zip(tl.named_parameters(), tm.named_parameters(), strict=True):
        assert p.shape == list(q.shape) and p.requires_grad and p.dtype == "float64", name
    assert tl.dropout.p == tl.dropout1.p == tl.dropout2.p == tl.self_attn.dropout == 0.1
    # Default initialisations: the submodules' own (torch's), e.g. Linear's U(±1/sqrt(fan_in)).
    assert np.abs(tl.linear1.weight.numpy()).max() <= 1 / math.sqrt(8)
    assert np.abs(tl.linear2.weight.numpy()).max() <= 1 / math.sqrt(16)
    np.testing.assert_array_equal(tl.norm1.weight.numpy(), np.ones(8))
    np.testing.assert_array_equal(tl.self_attn.in_proj_bias.numpy(), np.zeros(24))
    tm.eval()
    tl.eval()
    compare(*mirror(tm, tl, "float64"), (4, 2, 8), "float64")
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_transformer_encoder_layer_dropout_is_seeded_and_off_in_eval():
    x = tlrs.tensor(np.random.default_rng(0).standard_normal((5, 2, 8)))
    tlrs.manual_seed(7)
    tl = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3)
    tlrs.manual_seed(11)
    a = tl(x).numpy()
    tlrs.manual_seed(11)
    np.testing.assert_array_equal(tl(x).numpy(), a)  # the same seed, the same masks
    b = tl(x).numpy()
    assert np.abs(a - b).max() > 1e-3  # the stream moved on: other masks
    tl.eval()
    np.testing.assert_array_equal(tl(x).numpy(), tl(x).numpy())
    assert np.abs(tl(x).numpy() - a).max() > 1e-3


# ---- schedulers --------------------------------------------------------------------------------

T = torch.optim.lr_scheduler


def lr_sequence(make, steps, torch_side):
    """The lrs of `steps` + 1 epochs (the initial one, then after each step)."""
    if torch_side:
        opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=3e-3)
        sched = make(opt)
        seen = [opt.param_groups[0]["lr"]]
        for _ in range(steps):
            opt.step()
            sched.step()
            seen.append(opt.param_groups[0]["lr"])
            assert sched.get_last_lr() == [seen[-1]]
        return seen
    opt = optim.sgd(3e-3)
    sched = make(opt)
    seen = [opt.hyper["lr"]]
    for _ in range(steps):
        sched.step()
        seen.append(opt.hyper["lr"])
        assert sched.get_last_lr() == [seen[-1]]
    return seen


SCHEDULES = {
    "onecycle_defaults": (lambda o: S.OneCycleLR(o, 0.1, total_steps=50),
                          lambda o: T.OneCycleLR(o, 0.1, total_steps=50, cycle_momentum=False)),
    "onecycle_linear": (lambda o: S.OneCycleLR(o, 0.02, total_steps=50, anneal_strategy="linear", pct_start=0.25),
                        lambda o: T.OneCycleLR(o, 0.02, total_steps=50, anneal_strategy="linear", pct_start=0.25,
                                               cycle_momentum=False)),
    "onecycle_three_phase": (lambda o: S.OneCycleLR(o, 0.5, total_steps=50, three_phase=True, div_factor=10.0,
                                                    final_div_factor=100.0),
                             lambda o: T.OneCycleLR(o, 0.5, total_steps=50, three_phase=True, div_factor=10.0,
                                                    final_div_factor=100.0, cycle_momentum=False)),
    "onecycle_epochs": (lambda o: S.OneCycleLR(o, 0.3, epochs=5, steps_per_epoch=10, pct_start=0.45),
                        lambda o: T.OneCycleLR(o, 0.3, epochs=5, steps_per_epoch=10, pct_start=0.45,
                                               cycle_momentum=False)),
    "warmup_cosine": (lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.01, total_iters=10),
                                                   S.CosineAnnealingLR(o, T_max=40, eta_min=1e-5)], [10]),
                      lambda o: T.SequentialLR(o, [T.LinearLR(o, start_factor=0.01, total_iters=10),
                                                   T.CosineAnnealingLR(o, T_max=40, eta_min=1e-5)], [10])),
    "three_stages": (lambda o: S.SequentialLR(o, [S.ExponentialLR(o, 0.9), S.StepLR(o, 5, 0.5),
                                                  S.MultiStepLR(o, [0, 3, 3, 9], 0.7)], [7, 20]),
                     lambda o: T.SequentialLR(o, [T.ExponentialLR(o, 0.9), T.StepLR(o, 5, 0.5),
                                                  T.MultiStepLR(o, [0, 3, 3, 9], 0.7)], [7, 20])),
    "milestone_zero_lambda": (lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.25, total_iters=8),
                                                           S.LambdaLR(o, lambda e: 0.97 ** e)], [0]),
                              lambda o: T.SequentialLR(o, [T.LinearLR(o, 0.25, total_iters=8),
                                                           T.LambdaLR(o, lambda e: 0.97 ** e)], [0])),
    "warmup_onecycle": (lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.5, total_iters=5),
                                                     S.OneCycleLR(o, 0.05, total_steps=45)], [5]),
                        lambda o: T.SequentialLR(o, [T.LinearLR(o, 0.5, total_iters=5),
                                                     T.OneCycleLR(o, 0.05, total_steps=45, cycle_momentum=False)],
                                                 [5])),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_give_torchs_learning_rates_bit_for_bit(name):
    mine, theirs = SCHEDULES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notes on step order
        want = lr_sequence(theirs, 50, torch_side=True)
    got = lr_sequence(mine, 50, torch_side=False)
    assert len(got) == 51 and len(set(got)) > 10
    assert got == want


def test_one_cycle_peaks_at_max_lr_and_refuses_what_torch_refuses():
    seen = lr_sequence(lambda o: S.OneCycleLR(o, 0.1, total_steps=50), 49, torch_side=False)
    assert seen[0] == pytest.approx(0.1 / 25) and max(seen) == pytest.approx(0.1)
    assert seen[-1] == pytest.approx(0.1 / 25 / 1e4)
    opt = optim.sgd(1.0)
    sched = S.OneCycleLR(opt, 0.1, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()
    for kwargs in ({}, {"total_steps": 0}, {"epochs": 2}, {"total_steps": 5, "pct_start": 1.5},
                   {"total_steps": 5, "anneal_strategy": "exp"}):
        with pytest.raises(ValueError):
            S.OneCycleLR(optim.sgd(1.0), 0.1, **kwargs)
    with pytest.raises(NotImplementedError, match="momentum"):
        S.OneCycleLR(optim.sgd(1.0), 0.1, total_steps=5, cycle_momentum=True)


def test_sequential_lr_checks_and_resumes():
    opt, other = optim.sgd(0.1), optim.sgd(0.1)
    a, b = S.LinearLR(opt, 0.1, total_iters=4), S.CosineAnnealingLR(opt, 10)
    with pytest.raises(ValueError, match="one more"):
        S.SequentialLR(opt, [a, b], [2, 3])
    with pytest.raises(ValueError, match="same optimizer"):
        S.SequentialLR(opt, [a, S.StepLR(other, 2)], [4])
    with pytest.raises(ValueError, match="at least one"):
        S.SequentialLR(opt, [], [])
    sched = S.SequentialLR(opt, [a, b], [4])
    for _ in range(6):
        sched.step()
    saved = sched.state_dict()
    rest = []
    for _ in range(5):
        sched.step()
        rest.append(opt.hyper["lr"])
    opt2 = optim.sgd(0.1)
    again = S.SequentialLR(opt2, [S.LinearLR(opt2, 0.1, total_iters=4), S.CosineAnnealingLR(opt2, 10)], [4])
    again.load_state_dict(saved)
    resumed = []
    for _ in range(5):
        again.step()
        resumed.append(opt2.hyper["lr"])
    assert resumed == rest


def test_a_second_scheduler_starts_from_the_initial_lr_as_torch():
    opt = optim.sgd(0.2)
    S.LinearLR(opt, 0.5, total_iters=3)
    assert opt.hyper["lr"] == 0.1
    step = S.StepLR(opt, 2, 0.5)
    topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.2)
    T.LinearLR(topt, 0.5, total_iters=3)
    tstep = T.StepLR(topt, 2, 0.5)
    assert step.base_lr == tstep.base_lrs[0] == 0.2
