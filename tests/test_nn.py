"""tlrs.nn against torch.nn: the same model source built with either namespace gives the same
parameter names, state_dict keys, outputs, gradients and optimizer steps once torch's weights
are loaded; plus the Module machinery (registration, tied weights, modes, conversion, errors)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tlrs
from tlrs import nn, ops, optim
from tlrs.nn import parameter as nn_parameter

# ---- the models, written once for both namespaces ------------------------------------------


def make_mlp(ns):
    return ns.Sequential(ns.Linear(5, 16), ns.ReLU(), ns.Linear(16, 16), ns.Tanh(), ns.Linear(16, 3))


def make_cnn(ns):
    return ns.Sequential(
        ns.Conv2d(2, 4, 3, padding=1), ns.BatchNorm2d(4), ns.ReLU(), ns.MaxPool2d(2),
        ns.Conv2d(4, 6, 3, stride=1, groups=2, bias=False), ns.BatchNorm2d(6), ns.ReLU(),
        ns.Flatten(), ns.Linear(6 * 2 * 2, 5),
    )


def make_block(ns, vocab=11, d=8, hidden=16):
    """A tiny GPT-ish block: embedding, pre-norm MLP with a residual, tied output head."""

    class Block(ns.Module):
        def __init__(self):
            super().__init__()
            self.wte = ns.Embedding(vocab, d)
            self.ln1 = ns.LayerNorm(d)
            self.mlp = ns.ModuleDict({"fc": ns.Linear(d, hidden), "act": ns.GELU(), "proj": ns.Linear(hidden, d)})
            self.drop = ns.Dropout(0.1)
            self.ln_f = ns.LayerNorm(d)
            self.lm_head = ns.Linear(d, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied

        def forward(self, idx):
            h = self.wte(idx)
            m = self.mlp["proj"](self.mlp["act"](self.mlp["fc"](self.ln1(h))))
            return self.lm_head(self.ln_f(h + self.drop(m)))

    return Block()


def pair(make, dtype="float64", seed=0):
    """(torch model, tlrs model holding torch's weights, loaded with strict=True)."""
    torch.manual_seed(seed)
    tm = make(torch.nn).to(getattr(torch, dtype))
    tl = make(nn).to(dtype)
    result = tl.load_state_dict(tm.state_dict())
    assert result == ([], [])
    return tm, tl


def tol(dtype):
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-5, "atol": 1e-6}


def inputs(shape, dtype, seed=1):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.from_numpy(x.copy()), tlrs.tensor(x)


def to_torch_state(sd):
    return {k: torch.tensor(np.array(v)) for k, v in sd.items()}


# ---- names and keys ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [make_mlp, make_cnn, make_block])
def test_names_and_keys_match_torch(make):
    tm, tl = make(torch.nn), make(nn)
    assert [n for n, _ in tl.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in tl.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert list(tl.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in tl.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in tl.named_children()] == [n for n, _ in tm.named_children()]
    for (_, p), (_, q) in zip(tl.named_parameters(), tm.named_parameters(), strict=True):
        assert p.shape == list(q.shape) and p.requires_grad


# ---- outputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_mlp_output(dtype):
    tm, tl = pair(make_mlp, dtype)
    tx, x = inputs((7, 5), dtype)
    y = tl(x)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), tm(tx).detach().numpy(), **tol(dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cnn_output_train_and_eval(dtype):
    tm, tl = pair(make_cnn, dtype)
    tx, x = inputs((3, 2, 8, 8), dtype)
    # Training mode: batch statistics, and running statistics updated as torch does.
    np.testing.assert_allclose(tl(x).numpy(), tm(tx).detach().numpy(), **tol(dtype))
    np.testing.assert_allclose(tl(x).numpy(), tm(tx).detach().numpy(), **tol(dtype))
    for (name, b), (tname, tb) in zip(tl.named_buffers(), tm.named_buffers(), strict=True):
        assert name == tname
        np.testing.assert_allclose(np.asarray(b), tb.numpy(), **tol(dtype))
    assert tl[1].num_batches_tracked == 2
    # Eval mode: the running statistics, and nothing updated.
    tl.eval()
    tm.eval()
    assert not any(m.training for m in tl.modules())
    tx2, x2 = inputs((2, 2, 8, 8), dtype, seed=2)
    np.testing.assert_allclose(tl(x2).numpy(), tm(tx2).detach().numpy(), **tol(dtype))
    assert tl[1].num_batches_tracked == 2


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_block_output_eval(dtype):
    tm, tl = pair(make_block, dtype)
    tm.eval()
    tl.eval()
    idx = np.random.default_rng(3).integers(0, 11, size=(2, 6))
    np.testing.assert_allclose(tl(idx).numpy(), tm(torch.from_numpy(idx)).detach().numpy(), **tol(dtype))


def test_batchnorm1d_cumulative_momentum():
    torch.manual_seed(0)
    tm = torch.nn.BatchNorm1d(3, momentum=None).double()
    tl = nn.BatchNorm1d(3, momentum=None)
    tl.load_state_dict(tm.state_dict())
    for seed in range(3):
        tx, x = inputs((4, 3, 5), "float64", seed)
        np.testing.assert_allclose(tl(x).numpy(), tm(tx).detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tl.running_var.numpy(), tm.running_var.numpy(), rtol=1e-12)
    assert tl.state_dict()["num_batches_tracked"].dtype == np.int64
    assert int(tl.state_dict()["num_batches_tracked"]) == int(tm.num_batches_tracked) == 3


# ---- gradients and an optimizer step ----------------------------------------------------------


@pytest.mark.parametrize("make,shape", [(make_mlp, (6, 5)), (make_cnn, (3, 2, 8, 8)), (make_block, None)])
def test_backward_fills_grad_like_torch(make, shape):
    tm, tl = pair(make)
    if shape is None:  # the block: token ids, next-token targets
        tm.eval()
        tl.eval()
        idx = np.random.default_rng(4).integers(0, 11, size=(2, 5))
        tx, x = torch.from_numpy(idx), idx
        target = np.random.default_rng(5).integers(0, 11, size=(10,))
        tloss = torch.nn.CrossEntropyLoss()(tm(tx).reshape(10, 11), torch.from_numpy(target))
        loss = nn.CrossEntropyLoss()(tl(x).reshape(10, 11), target)
    else:
        tx, x = inputs(shape, "float64")
        out = tl(x)
        ty, y = inputs(out.shape, "float64", seed=9)
        tloss = torch.nn.MSELoss()(tm(tx), ty)
        loss = nn.MSELoss()(out, y)
    tloss.backward()
    loss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    for (name, p), (_, q) in zip(tl.named_parameters(), tm.named_parameters(), strict=True):
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    tl.zero_grad()
    assert all(p.grad is None for p in tl.parameters())


def _assign(model, names, values):
    """Puts a functional optimizer's new tensors back on the model, by parameter name."""
    for name, value in zip(names, values, strict=True):
        path, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(path), leaf, value)


def test_sgd_step_matches_torch():
    tm, tl = pair(make_cnn)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    names = [n for n, _ in tl.named_parameters()]
    opt = optim.sgd(0.1)
    state = opt.init(list(tl.parameters()))
    for seed in range(2):
        tx, x = inputs((3, 2, 8, 8), "float64", seed)
        topt.zero_grad()
        tm(tx).square().mean().backward()
        topt.step()
        params = list(tl.parameters())
        grads = tlrs.grad(ops.mean(ops.pow(tl(x), 2.0)), params)
        new, state = opt.step(state, params, grads)
        _assign(tl, names, new)
        # Still registered, under the same names, as leaves that require a gradient.
        assert [n for n, _ in tl.named_parameters()] == names
        assert all(p is q for p, q in zip(tl.parameters(), new))
        assert all(p.requires_grad and p.is_leaf for p in tl.parameters())
    for (name, p), (_, q) in zip(tl.named_parameters(), tm.named_parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-11, atol=1e-13, err_msg=name)


# ---- tied weights -----------------------------------------------------------------------------


def test_tied_weights():
    tm, tl = pair(make_block)  # strict load torch -> tlrs, both names present
    assert tl.lm_head.weight is tl.wte.weight
    params = list(tl.parameters())
    assert len(params) == len(list(tm.parameters())) == 9
    assert sum(p is tl.wte.weight for p in params) == 1
    keys = list(tl.state_dict())
    assert "wte.weight" in keys and "lm_head.weight" in keys
    # tlrs -> torch, strict, into a fresh model.
    torch.manual_seed(7)
    tm2 = make_block(torch.nn).double()
    assert tm2.load_state_dict(to_torch_state(tl.state_dict())) is not None
    np.testing.assert_array_equal(tm2.lm_head.weight.detach().numpy(), tl.wte.weight.numpy())
    # Loading one name writes the shared tensor.
    sd = dict(tl.state_dict())
    sd["lm_head.weight"] = np.ones((11, 8))
    sd["wte.weight"] = np.ones((11, 8))
    tl.load_state_dict(sd)
    assert tl.lm_head.weight is tl.wte.weight and float(ops.sum(tl.wte.weight)) == 88.0
    # Conversion keeps the tie.
    tl.to("float32")
    assert tl.lm_head.weight is tl.wte.weight and tl.wte.weight.dtype == "float32"
    assert len(list(tl.parameters())) == 9


# ---- state_dict loading -----------------------------------------------------------------------


def test_load_errors_in_torch_wording():
    tm, tl = make_mlp(torch.nn), make_mlp(nn)
    sd = dict(tm.state_dict())
    del sd["2.bias"]
    sd["extra.weight"] = torch.zeros(2)
    with pytest.raises(RuntimeError) as theirs:
        tm.load_state_dict(sd)
    before = tl[0].weight.numpy().copy()
    with pytest.raises(RuntimeError) as ours:
        tl.load_state_dict(sd)
    assert str(ours.value) == str(theirs.value)
    np.testing.assert_array_equal(tl[0].weight.numpy(), before)  # all or nothing
    missing, unexpected = tl.load_state_dict(sd, strict=False)
    assert missing == ["2.bias"] and unexpected == ["extra.weight"]
    np.testing.assert_array_equal(tl[0].weight.numpy(), tm[0].weight.detach().numpy().astype(np.float64))


def test_load_size_mismatch():
    tl = make_mlp(nn)
    sd = dict(tl.state_dict())
    sd["0.weight"] = np.zeros((3, 5))
    with pytest.raises(RuntimeError, match=r"size mismatch for 0\.weight: copying a param with shape \[3, 5\] "
                                           r"from checkpoint, the shape in current model is \[16, 5\]\."):
        tl.load_state_dict(sd)
    with pytest.raises(RuntimeError, match="size mismatch"):
        tl.load_state_dict(sd, strict=False)


def test_load_converts_and_copies():
    tl = nn.Linear(3, 2)
    params_before = list(tl.parameters())
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    tl.load_state_dict({"weight": w, "bias": tlrs.tensor([1.0, 2.0], dtype="float32")})
    assert tl.weight.dtype == "float64"
    w[0, 0] = 100.0  # the source changes afterwards: the model keeps the loaded value
    np.testing.assert_array_equal(tl.weight.numpy(), np.arange(6).reshape(2, 3))
    assert all(p is q for p, q in zip(tl.parameters(), params_before))  # copied in place
    with pytest.raises(tlrs.DTypeError):
        tl.load_state_dict({"weight": np.zeros((2, 3), dtype=np.int64), "bias": np.zeros(2)})
    with pytest.raises(TypeError, match="dict-like"):
        tl.load_state_dict([("weight", w)])


# ---- the Module machinery ---------------------------------------------------------------------


def test_registration():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(np.ones(3))
            self.register_buffer("stat", tlrs.zeros(3))
            self.register_buffer("scratch", tlrs.zeros(2), persistent=False)
            self.plain = tlrs.ones(2)  # a tensor not made by Parameter: an ordinary attribute
            self.sub = nn.Linear(3, 1)

    m = M()
    assert [n for n, _ in m.named_parameters()] == ["w", "sub.weight", "sub.bias"]
    assert [n for n, _ in m.named_buffers()] == ["stat", "scratch"]
    assert list(m.state_dict()) == ["w", "stat", "sub.weight", "sub.bias"]
    assert list(m.children()) == [m.sub]
    with pytest.raises(TypeError, match="cannot assign 'str' as parameter 'w'"):
        m.w = "nope"
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("w", tlrs.zeros(1))
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        _ = m.missing
    del m.sub
    assert [n for n, _ in m.named_parameters()] == ["w"]
    m.requires_grad_(False)
    assert not m.w.requires_grad


def test_modes_apply_and_dropout():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.ModuleList([nn.ReLU(), nn.Identity()]))
    assert model.training and model[1].training
    x = tlrs.ones(64, 4)
    model[1].train()
    h = model[0](x)
    dropped = model[1](h).numpy()
    assert np.any(dropped == 0.0) and np.any(dropped != 0.0)
    assert model.eval() is model and not model[2][0].training
    np.testing.assert_array_equal(model[1](h).numpy(), h.numpy())
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Dropout", "ReLU", "Identity", "ModuleList", "Sequential"]


def test_sequential_and_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and isinstance(seq[1], nn.ReLU)
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    assert head(tlrs.ones(4, 2)).shape == [4, 3]
    with pytest.raises(IndexError):
        seq[3]
    seq[1] = nn.Tanh()
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.Linear(1, 2))
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.Linear(1, 3)
    tml = torch.nn.ModuleList([torch.nn.Linear(1, 1), torch.nn.Linear(1, 2)])
    tmd = torch.nn.ModuleDict({"a": torch.nn.Linear(1, 1), "b": torch.nn.Linear(1, 3)})
    assert list(ml.state_dict()) == list(tml.state_dict())
    assert list(md.state_dict()) == list(tmd.state_dict()) and "b" in md and len(md) == 2


def test_to_dtype():
    tl = make_cnn(nn)
    assert tl[0].weight.dtype == "float64"
    assert tl.to("float32") is tl
    assert all(p.dtype == "float32" and p.requires_grad for p in tl.parameters())
    assert all(b.dtype == "float32" for b in tl.buffers() if isinstance(b, tlrs.Tensor))
    assert tl(tlrs.ones(1, 2, 8, 8, dtype="float32")).dtype == "float32"
    tl.to(torch.float64)
    assert tl[-1].bias.dtype == "float64"
    assert nn.Linear(2, 2, dtype="float32").weight.dtype == "float32"


def test_default_initialisation():
    tlrs.manual_seed(123)
    a = nn.Linear(100, 50)
    tlrs.manual_seed(123)
    b = nn.Linear(100, 50, dtype="float32")
    np.testing.assert_array_equal(a.weight.numpy().astype(np.float32), b.weight.numpy())  # same seed, same draws
    w = a.weight.numpy()
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.099 and abs(w.mean()) < 0.005
    assert np.abs(a.bias.numpy()).max() <= 0.1
    conv = nn.Conv2d(4, 8, 3, groups=2)
    bound = 1 / np.sqrt(2 * 9)
    assert conv.weight.shape == [8, 2, 3, 3] and np.abs(conv.weight.numpy()).max() <= bound
    bn, ln = nn.BatchNorm2d(3), nn.LayerNorm(5)
    assert (bn.weight.numpy() == 1).all() and (bn.bias.numpy() == 0).all() and (ln.weight.numpy() == 1).all()
    assert (bn.running_var.numpy() == 1).all() and bn.num_batches_tracked == 0
    emb = nn.Embedding(1000, 16)
    assert abs(emb.weight.numpy().std() - 1) < 0.05


def test_embedding_padding_idx():
    torch.manual_seed(0)
    tm = torch.nn.Embedding(6, 3, padding_idx=2).double()
    tl = nn.Embedding(6, 3, padding_idx=2)
    assert (tl.weight.numpy()[2] == 0).all()
    tl.load_state_dict(tm.state_dict())
    idx = np.array([[0, 2, 5], [2, 2, 1]])
    tm(torch.from_numpy(idx)).pow(2).sum().backward()
    ops.sum(ops.pow(tl(idx), 2.0)).backward()
    np.testing.assert_array_equal(tl.weight.grad.numpy(), tm.weight.grad.numpy())
    assert (tl.weight.grad.numpy()[2] == 0).all()


def test_activation_and_pool_modules_match_torch():
    tx, x = inputs((2, 3, 6, 6), "float64")
    for name, args in [("ReLU", ()), ("GELU", ()), ("GELU", ("tanh",)), ("Tanh", ()), ("Sigmoid", ()),
                       ("SiLU", ()), ("Softmax", (1,)), ("LogSoftmax", (-1,)), ("LeakyReLU", (0.2,)),
                       ("ELU", ()), ("Softplus", ()), ("Identity", ()), ("Flatten", ()), ("MaxPool2d", (2,)),
                       ("AvgPool2d", (3, 2, 1)), ("AdaptiveAvgPool2d", ((2, 4),)),
                       ("AdaptiveAvgPool2d", ((None, 3),))]:
        ours = getattr(nn, name)(*args)(x).numpy()
        theirs = getattr(torch.nn, name)(*args)(tx).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("kwargs", [{"padding": 1}, {"stride": 2, "bias": False}, {"padding": "same", "groups": 2}])
def test_conv1d_matches_torch(kwargs):
    torch.manual_seed(0)
    tm = torch.nn.Conv1d(2, 4, 3, **kwargs).double()
    tl = nn.Conv1d(2, 4, 3, **kwargs)
    assert [n for n, _ in tl.named_parameters()] == [n for n, _ in tm.named_parameters()]
    tl.load_state_dict(tm.state_dict(), strict=True)
    tx, x = inputs((2, 2, 7), "float64")
    tx.requires_grad_(True)
    out = tm(tx)
    np.testing.assert_allclose(tl(x).numpy(), out.detach().numpy(), rtol=1e-12, atol=1e-12)
    out.pow(2).sum().backward()
    ops.sum(ops.pow(tl(x), 2.0)).backward()
    np.testing.assert_allclose(tl.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_parameter_table_does_not_leak():
    for _ in range(2000):
        nn.Parameter(np.zeros(2))
    assert len(nn_parameter._marked) < 1000
    keep = nn.Linear(2, 2)
    for _ in range(2000):
        nn.Parameter(np.zeros(2))
    assert nn_parameter.is_parameter(keep.weight)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_torch(batch_first):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
    tl = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    assert [n for n, _ in tl.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(tl.state_dict()) == list(tm.state_dict())
    tl.load_state_dict(tm.state_dict())
    rng = np.random.default_rng(0)
    q, kv = rng.standard_normal((5, 3, 8)), rng.standard_normal((4, 3, 8))
    if batch_first:
        q, kv = q.transpose(1, 0, 2).copy(), kv.transpose(1, 0, 2).copy()
    attn_mask = np.triu(np.ones((5, 4), dtype=bool), 1)
    key_padding_mask = np.zeros((3, 4), dtype=bool)
    key_padding_mask[1, 3] = True
    tq, tkv = torch.from_numpy(q).requires_grad_(), torch.from_numpy(kv)
    want, want_w = tm(tq, tkv, tkv, attn_mask=torch.from_numpy(attn_mask),
                      key_padding_mask=torch.from_numpy(key_padding_mask))
    x = tlrs.tensor(q, requires_grad=True)
    got, got_w = tl(x, tlrs.tensor(kv), tlrs.tensor(kv), attn_mask=attn_mask, key_padding_mask=key_padding_mask)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_w.numpy(), want_w.detach().numpy(), rtol=1e-12, atol=1e-14)
    want.sum().backward()
    ops.sum(got).backward()
    np.testing.assert_allclose(x.grad.numpy(), tq.grad.numpy(), rtol=1e-10, atol=1e-13)
    for (name, p), (_, t) in zip(tl.named_parameters(), tm.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-13, err_msg=name)


def test_assign_parameters_keeps_tied_weights_tied():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(5, 3)
            self.head = nn.Linear(3, 5, bias=False)
            self.head.weight = self.wte.weight

    m = Tied()
    params = list(m.parameters())
    assert len(params) == 1
    new = [p * 2.0 for p in params]
    nn.assign_parameters(m, new)
    assert m.wte.weight is m.head.weight
    assert np.array_equal(m.wte.weight.numpy(), new[0].numpy()) and m.wte.weight.is_leaf
    assert [n for n, _ in m.named_parameters()] == ["wte.weight"]
    with pytest.raises(ValueError, match="assign_parameters"):
        nn.assign_parameters(m, [])


def test_a_model_runs_through_the_runtime_eager_and_compiled_with_the_same_bits(tmp_path):
    tlrs.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))

    def loss(m, x, y):
        return ops.mse_loss(m(x), y)

    defn = nn.to_module_def(model, loss, [[5, 4], [5, 3]])
    assert list(defn.param_names) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    eager = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
    compiled = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend="compiled"))
    rng = np.random.default_rng(0)
    batches = [[rng.standard_normal((5, 4)), rng.standard_normal((5, 3))] for _ in range(4)]
    opt = optim.adam(0.01, 0.9, 0.999, 1e-8)
    _, le = eager.train_steps(opt, eager.init_optim(opt), batches)
    _, lc = compiled.train_steps(opt, compiled.init_optim(opt), batches)
    assert le == lc
    assert [p.numpy().tobytes() for p in eager.params()] == [p.numpy().tobytes() for p in compiled.params()]
    # the model itself was left as it was, and takes the trained values back
    before = model(tlrs.tensor(batches[0][0]))
    nn.assign_parameters(model, eager.params())
    after = model(tlrs.tensor(batches[0][0]))
    assert before.numpy().tobytes() != after.numpy().tobytes()
    assert eager.forward(batches[0]).item() == ops.mse_loss(after, tlrs.tensor(batches[0][1])).item()
    # state_dict names are the model's; ONNX export runs the model's forward
    assert list(eager.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    eager.export_onnx(str(tmp_path / "m.onnx"), np.zeros((2, 4)))
    assert (tmp_path / "m.onnx").exists()
