"""tlrs.models against the reference tables (docs/runtime.md), the layer-initialiser LCG (docs/numerics.md)
computed here in plain Python, and NumPy forwards and losses."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tlrs
from tlrs import models as M

RNG = np.random.default_rng(7)


def lcg_unit(seed: int, n: int) -> list[float]:
    """Value i: the LCG applied i+1 times from `seed`, divided by 2^32."""
    s, out = seed % 2**32, []
    for _ in range(n):
        s = (1664525 * s + 1013904223) % 2**32
        out.append(s / 2**32)
    return out


def xavier_ref(shape, seed, fan_in, fan_out):
    bound = math.sqrt(6 / (fan_in + fan_out))
    vals = [-bound + r * (2 * bound) for r in lcg_unit(seed, math.prod(shape))]
    return np.array(vals).reshape(shape)


def uniform_ref(shape, seed, lo, hi):
    return np.array([lo + r * (hi - lo) for r in lcg_unit(seed, math.prod(shape))]).reshape(shape)


def np_ce(logits, onehot):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return float(np.mean(-(onehot * logp).sum(axis=-1)))


def np_conv(x, k, b, stride, pad):
    (_, h, w), (oc, _, kh, kw) = x.shape, k.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    out = np.zeros((oc, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, i, j] = np.tensordot(k, patch, axes=3) + b
    return out


def np_pool(x, kh, kw, stride):
    _, h, w = x.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.empty((x.shape[0], oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw].max(axis=(1, 2))
    return out


def np_attention_ln(x, wq, wk, wv, wo, gamma, beta, heads):
    (b, n, _), hd = x.shape, wq.shape[1] // heads
    def split(p):
        return p.reshape(b, n, heads, hd).transpose(0, 2, 1, 3)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    y = (a @ v).transpose(0, 2, 1, 3).reshape(b, n, heads * hd) @ wo
    mu, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
    return (y - mu) / np.sqrt(var + 1e-6) * gamma + beta


def arrays(defn):
    return [p.numpy() for p in defn.init_params]


def onehot(labels, c):
    return np.eye(c)[labels]


def check_backward(defn, x, target):
    m = tlrs.instantiate_with_options(defn, "float64", None)
    grads = m.backward([x, target])
    assert [tuple(g.shape) for g in grads] == [tuple(s) for s in defn.param_shapes]
    assert all(np.isfinite(g.numpy()).all() for g in grads)
    assert any(np.abs(g.numpy()).sum() > 0 for g in grads)
    return grads


def test_mlp_family_shapes():
    d, _ = M.mlp(5, 7, 3)
    assert d.param_shapes == ((7, 5), (7,), (3, 7), (3,))
    assert d.input_shapes == ((5,), (3,))
    assert d.param_names == ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
    assert M.param_count(d) == 7 * 5 + 7 + 3 * 7 + 3
    d, _ = M.mlp_classifier(4, 6, 3)
    assert d.param_shapes == ((6, 4), (6,), (3, 6), (3,)) and d.input_shapes == ((4,), (3,))
    d, _ = M.softmax_regression(4, 3)
    assert d.param_shapes == ((3, 4), (3,)) and d.input_shapes == ((4,), (3,))
    assert d.param_names == ("linear.weight", "linear.bias")
    d, _ = M.autoencoder(6, 2)
    assert d.param_shapes == ((2, 6), (2,), (6, 2), (6,)) and d.input_shapes == ((6,), (6,))
    assert M.param_count(d) == 12 + 2 + 12 + 6


def test_cnn_shapes():
    # 3x12x12 -> conv 3x3 s1 p1 -> 12x12 -> pool 2 s2 -> 6x6 -> conv 3x3 s1 p0 -> 4x4 -> pool -> 2x2
    d, _ = M.two_conv_cnn(3, 4, 5, 10, 12, 12, 3, 3, 1, 1, 1, 0)
    assert d.param_shapes == ((4, 3, 3, 3), (4,), (5, 4, 3, 3), (5,), (10, 20), (10,))
    assert d.input_shapes == ((3, 12, 12), (10,))
    assert d.param_names == ("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                             "fc.weight", "fc.bias")
    assert M.param_count(d) == 108 + 4 + 180 + 5 + 200 + 10
    assert M.cnn2 is M.two_conv_cnn


def test_transformer_shapes():
    d, _ = M.transformer_block(2, 3, 4, 2, 3)  # heads·head_dim = 6 != d_model
    assert d.param_shapes == ((4, 6), (4, 6), (4, 6), (6, 4), (4,), (4,))
    assert d.input_shapes == ((2, 3, 4), (2, 3, 4))
    assert d.param_names == ("attn.wq", "attn.wk", "attn.wv", "attn.wo", "norm.weight", "norm.bias")


def test_resnet18_table_and_count():
    d, _ = M.resnet18_model(3, 32, 32, 10)
    s = [list(x) for x in d.param_shapes]
    assert len(s) == 82 and len(set(d.param_names)) == 82

    def cbn(i, out_c, in_c, k):
        assert s[i:i + 4] == [[out_c, in_c, k, k], [out_c], [out_c], [out_c]], i

    cbn(0, 64, 3, 7)
    for i in range(4, 20, 4):  # stage 1: two blocks, two convs each
        cbn(i, 64, 64, 3)
    for base, ch in ((20, 128), (40, 256), (60, 512)):
        cbn(base, ch, ch // 2, 3)
        cbn(base + 4, ch, ch, 3)
        cbn(base + 8, ch, ch // 2, 1)
        for i in range(base + 12, base + 20, 4):
            cbn(i, ch, ch, 3)
    assert s[80:] == [[10, 512], [10]]
    assert d.param_names[0] == "conv1.weight" and d.param_names[80] == "fc.weight"
    assert d.param_names[28] == "layer2.0.downsample.0.weight"
    assert d.input_shapes == ((3, 32, 32), (10,))
    # By hand: stem 9600; stage 1: 4·(36864+64+128) = 148224; stage 2: 74112 + 147840 + 8576
    # + 2·147840 = 526208; stage 3: 295680 + 590592 + 33536 + 2·590592 = 2100992;
    # stage 4: 1181184 + 2360832 + 132608 + 2·2360832 = 8396288; head 5130.
    # (= torchvision's 11181642 with a 10-way head, plus 4800 conv biases.)
    assert M.param_count(d) == 9600 + 148224 + 526208 + 2100992 + 8396288 + 5130 == 11186442


def test_resnet18_width_scales_channels():
    d, _ = M.resnet18_model(1, 8, 8, 4, width=8)
    s = [list(x) for x in d.param_shapes]
    assert s[0] == [8, 1, 7, 7] and s[20] == [16, 8, 3, 3] and s[68] == [64, 32, 1, 1]
    assert s[80] == [4, 64] and M.resnet18_init_params(1, 8, 8, 4, width=8)[80].shape == [4, 64]


def test_constructors_registry():
    assert set(M.MODEL_CONSTRUCTORS) >= {"mlp", "mlp_classifier", "softmax_regression",
                                         "autoencoder", "two_conv_cnn", "cnn2",
                                         "transformer_block", "resnet18_model"}
    assert all(hasattr(M, name) for name in M.__all__)


def test_mlp_init_matches_lcg_xavier():
    d, _ = M.mlp(3, 4, 2)
    w1, b1, w2, b2 = arrays(d)
    np.testing.assert_array_equal(w1, xavier_ref([4, 3], 0, 3, 4))
    np.testing.assert_array_equal(w2, xavier_ref([2, 4], 0, 4, 2))
    assert not b1.any() and not b2.any()
    # Same stream: the unit samples of W2 are a prefix of W1's (bounds differ here).
    u1 = (w1.ravel() + math.sqrt(6 / 7)) / (2 * math.sqrt(6 / 7))
    u2 = (w2.ravel() + math.sqrt(6 / 6)) / (2 * math.sqrt(6 / 6))
    np.testing.assert_allclose(u2, u1[:8], rtol=0, atol=1e-12)


def test_mlp_default_seed_quirk_and_seeds():
    w1, _, w2, _ = arrays(M.mlp(3, 5, 3)[0])  # in == out: identical bounds and sizes
    np.testing.assert_array_equal(w1.ravel(), w2.ravel())
    w1, _, w2, _ = arrays(M.mlp(3, 5, 3, seed_w1=11, seed_w2=12)[0])
    np.testing.assert_array_equal(w1, xavier_ref([5, 3], 11, 3, 5))
    np.testing.assert_array_equal(w2, xavier_ref([3, 5], 12, 5, 3))
    w, b = arrays(M.softmax_regression(4, 3, seed_w=9)[0])
    np.testing.assert_array_equal(w, xavier_ref([3, 4], 9, 4, 3))
    assert not b.any()


def test_cnn_init():
    d, _ = M.two_conv_cnn(2, 3, 4, 5, 10, 10, 3, 3)
    k1, b1, k2, b2, w, b = arrays(d)
    np.testing.assert_array_equal(k1, uniform_ref([3, 2, 3, 3], 0, -0.1, 0.1))
    np.testing.assert_array_equal(k2, uniform_ref([4, 3, 3, 3], 2, -0.1, 0.1))
    np.testing.assert_array_equal(w, xavier_ref([5, 4], 4, 4, 5))  # feat = 4·1·1
    assert not (b1.any() or b2.any() or b.any())


def test_transformer_init():
    p = arrays(M.transformer_block(1, 2, 4, 2, 3, seed_w=5)[0])
    for i in range(3):
        np.testing.assert_array_equal(p[i], xavier_ref([4, 6], 5 + i, 6, 4))
    np.testing.assert_array_equal(p[3], xavier_ref([6, 4], 8, 4, 6))
    np.testing.assert_array_equal(p[4], np.ones(4))
    np.testing.assert_array_equal(p[5], np.zeros(4))


def test_resnet_init():
    p = [t.numpy() for t in M.resnet18_init_params(2, 16, 16, 3, width=4)]
    assert len(p) == 82
    for i in (0, 4, 24, 28, 72, 76):  # conv kernels: seed = index
        np.testing.assert_array_equal(p[i], uniform_ref(p[i].shape, i, -0.1, 0.1), err_msg=str(i))
    np.testing.assert_array_equal(p[80], uniform_ref([3, 32], 80, -0.1, 0.1))
    for i in range(0, 80, 4):
        assert not p[i + 1].any() and (p[i + 2] == 1).all() and not p[i + 3].any()
    assert not p[81].any()


def test_float32_dtype():
    d, pred = M.mlp(3, 4, 2, dtype="float32")
    assert all(t.dtype == "float32" for t in d.init_params)
    np.testing.assert_allclose(d.init_params[0].numpy(), xavier_ref([4, 3], 0, 3, 4), rtol=1e-6)
    assert pred(d.init_params, np.ones(3)).dtype == "float32"
    m = tlrs.instantiate_with_options(d, "float32", None)
    assert np.isfinite(m.forward([np.ones(3, np.float32), np.zeros(2, np.float32)]).item())


def np_mlp(p, x, act):
    w1, b1, w2, b2 = p
    return act(x @ w1.T + b1) @ w2.T + b2


@pytest.mark.parametrize("batch", [None, 5])
@pytest.mark.parametrize("kind", ["mlp", "autoencoder"])
def test_mse_models_forward_and_loss(kind, batch):
    mlp = kind == "mlp"
    d, pred = M.mlp(4, 6, 3, seed_w2=3) if mlp else M.autoencoder(4, 3)
    shape = (4,) if batch is None else (batch, 4)
    x, t = RNG.normal(size=shape), RNG.normal(size=shape[:-1] + (3 if mlp else 4,))
    want = np_mlp(arrays(d), x, (lambda z: np.maximum(z, 0)) if mlp else np.tanh)
    np.testing.assert_allclose(pred(d.init_params, tlrs.tensor(x)).numpy(), want, rtol=1e-12)
    loss = d.loss(list(d.init_params), [tlrs.tensor(x), tlrs.tensor(t)])
    assert loss.shape == [] and loss.item() == pytest.approx(np.mean((want - t) ** 2), rel=1e-12)
    m = tlrs.instantiate_with_options(d, "float64", None)
    assert m.forward([x, t]).item() == pytest.approx(np.mean((want - t) ** 2), rel=1e-12)


@pytest.mark.parametrize("batch", [None, 4])
def test_classifier_losses(batch):
    x = RNG.normal(size=(6,) if batch is None else (batch, 6))
    labels = RNG.integers(0, 3, size=() if batch is None else batch)
    t = onehot(labels, 3)
    for d, pred, fwd in (
        (*M.mlp_classifier(6, 5, 3, seed_w2=1), lambda p: np_mlp(p, x, lambda z: np.maximum(z, 0))),
        (*M.softmax_regression(6, 3, seed_w=2), lambda p: x @ p[0].T + p[1]),
    ):
        logits = fwd(arrays(d))
        np.testing.assert_allclose(pred(d.init_params, x).numpy(), logits, rtol=1e-12)
        got = d.loss(list(d.init_params), [tlrs.tensor(x), tlrs.tensor(t)]).item()
        assert got == pytest.approx(np_ce(logits, t), rel=1e-12)


def np_cnn(p, x, s1, p1, s2, p2, pkh, pkw, ps1, ps2):
    k1, b1, k2, b2, w, b = p
    y = np_pool(np.maximum(np_conv(x, k1, b1, s1, p1), 0), pkh, pkw, ps1)
    y = np_pool(np.maximum(np_conv(y, k2, b2, s2, p2), 0), pkh, pkw, ps2)
    return w @ y.ravel() + b


@pytest.mark.parametrize("cfg", [
    {"in_h": 12, "in_w": 12, "kh": 3, "kw": 3, "stride1": 1, "padding1": 1, "stride2": 1,
     "padding2": 0},
    {"in_h": 13, "in_w": 17, "kh": 3, "kw": 2, "stride1": 2, "padding1": 1, "stride2": 1,
     "padding2": 1, "pool_kh": 2, "pool_kw": 3, "pool_stride1": 1, "pool_stride2": 2},
])
def test_cnn_forward_and_loss(cfg):
    keys = ("stride1", "padding1", "stride2", "padding2", "pool_kh", "pool_kw", "pool_stride1",
            "pool_stride2")
    full = dict(zip(keys, (1, 0, 1, 0, 2, 2, 2, 2), strict=True)) | cfg
    d, pred = M.two_conv_cnn(2, 3, 4, 5, **cfg)
    p = [a + RNG.normal(scale=0.05, size=a.shape) for a in arrays(d)]  # non-zero biases too
    params = [tlrs.tensor(a) for a in p]
    x = RNG.normal(size=(3, 2, cfg["in_h"], cfg["in_w"]))
    want = np.stack([np_cnn(p, xi, *(full[k] for k in keys)) for xi in x])
    out = pred(params, x)
    assert out.shape == [3, 5]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pred(params, x[1]).numpy(), want[1], rtol=1e-10, atol=1e-12)
    t = onehot([0, 4, 2], 5)
    got = d.loss(params, [tlrs.tensor(x), tlrs.tensor(t)]).item()
    assert got == pytest.approx(np_ce(want, t), rel=1e-10)
    check_backward(d, x, t)


def test_transformer_forward():
    d, pred = M.transformer_block(2, 3, 4, 2, 3, seed_w=1)
    p = arrays(d)
    p[4], p[5] = p[4] + 0.3, p[5] - 0.2
    params = [tlrs.tensor(a) for a in p]
    x = RNG.normal(size=(2, 3, 4))
    want = np_attention_ln(x, *p, heads=2)
    np.testing.assert_allclose(pred(params, x).numpy(), want, rtol=1e-10, atol=1e-12)
    xb = RNG.normal(size=(3, 2, 3, 4))  # an extra leading batch axis
    wantb = np.stack([np_attention_ln(xi, *p, heads=2) for xi in xb])
    np.testing.assert_allclose(pred(params, xb).numpy(), wantb, rtol=1e-10, atol=1e-12)
    t = RNG.normal(size=(3, 2, 3, 4))
    got = d.loss(params, [tlrs.tensor(xb), tlrs.tensor(t)]).item()
    assert got == pytest.approx(np.mean((wantb - t) ** 2), rel=1e-10)


def test_resnet_shapes_loss_and_batching():
    d, pred = M.resnet18_model(3, 16, 16, 10, width=8)
    x = RNG.normal(size=(2, 3, 16, 16))
    out = pred(d.init_params, x)
    assert out.shape == [2, 10]
    single = pred(d.init_params, x[1])
    assert single.shape == [10]
    np.testing.assert_allclose(single.numpy(), out.numpy()[1], rtol=1e-10, atol=1e-12)
    t = onehot([3, 7], 10)
    got = d.loss(list(d.init_params), [tlrs.tensor(x), tlrs.tensor(t)]).item()
    assert got == pytest.approx(np_ce(out.numpy(), t), rel=1e-12)
    prog = M.resnet18_program(3, 16, 16, 10, width=8)
    np.testing.assert_array_equal(prog(d.init_params, x).numpy(), out.numpy())


def np_resnet(p, x):
    def cbn(i, t, stride, pad):
        y = np_conv(t, p[i], p[i + 1], stride, pad)
        mu, var = y.mean(axis=(1, 2), keepdims=True), y.var(axis=(1, 2), keepdims=True)
        return (y - mu) / np.sqrt(var + 1e-6) * p[i + 2][:, None, None] + p[i + 3][:, None, None]

    y = np.maximum(cbn(0, x, 2, 3), 0)
    y = np_pool(np.pad(y, ((0, 0), (1, 1), (1, 1)), constant_values=-np.inf), 3, 3, 2)
    i = 4
    for stage in range(4):
        for block in range(2):
            down = stage > 0 and block == 0
            r = cbn(i + 4, np.maximum(cbn(i, y, 2 if down else 1, 1), 0), 1, 1)
            y = np.maximum(r + (cbn(i + 8, y, 2, 0) if down else y), 0)
            i += 12 if down else 8
    return p[80] @ y.mean(axis=(1, 2)) + p[81]


def test_resnet_matches_numpy():
    d, pred = M.resnet18_model(2, 11, 9, 3, width=2)
    p = [a + RNG.normal(scale=0.1, size=a.shape) for a in arrays(d)]
    x = RNG.normal(size=(2, 2, 11, 9))
    want = np.stack([np_resnet(p, xi) for xi in x])
    got = pred([tlrs.tensor(a) for a in p], x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_backward_all_models():
    x4 = RNG.normal(size=(3, 4))
    check_backward(M.mlp(4, 5, 2)[0], x4, RNG.normal(size=(3, 2)))
    check_backward(M.mlp_classifier(4, 5, 3)[0], x4, onehot([0, 1, 2], 3))
    check_backward(M.softmax_regression(4, 3)[0], x4[0], onehot(2, 3))
    check_backward(M.autoencoder(4, 2)[0], x4, x4)
    check_backward(M.transformer_block(2, 3, 4, 2, 2)[0], RNG.normal(size=(2, 3, 4)),
                   RNG.normal(size=(2, 3, 4)))
    d, _ = M.resnet18_model(3, 16, 16, 10, width=8)
    grads = check_backward(d, RNG.normal(size=(2, 3, 16, 16)), onehot([1, 9], 10))
    assert len(grads) == 82


@pytest.mark.parametrize("build", [
    lambda: M.mlp(0, 3, 2),
    lambda: M.mlp(2, 3, 2, seed_w1=-1),
    lambda: M.softmax_regression(3, 0),
    lambda: M.two_conv_cnn(0, 2, 2, 2, 8, 8, 3, 3),
    lambda: M.two_conv_cnn(1, 2, 2, 2, 8, 8, 3, 3, stride1=0),
    lambda: M.two_conv_cnn(1, 2, 2, 2, 4, 4, 5, 5),
    lambda: M.two_conv_cnn(1, 2, 2, 2, 6, 6, 3, 3),  # 4 -> pool 2 -> conv 3 > 2
    lambda: M.transformer_block(1, 0, 4, 1, 4),
    lambda: M.resnet18_model(3, 0, 8, 10),
    lambda: M.resnet18_init_params(3, 8, 8, 10, width=0),
])
def test_bad_sizes_raise_value_error(build):
    with pytest.raises(ValueError):
        build()


def test_bad_input_shapes():
    d, pred = M.mlp(4, 3, 2)
    with pytest.raises(tlrs.ShapeError, match=r"\[4\]"):
        pred(d.init_params, np.ones(5))
    with pytest.raises(tlrs.ShapeError):
        pred(d.init_params, np.ones((2, 2, 4)))
    with pytest.raises(ValueError, match="parameters"):
        pred(d.init_params[:3], np.ones(4))
    with pytest.raises(tlrs.ShapeError, match="target"):
        d.loss(list(d.init_params), [tlrs.tensor(np.ones((2, 4))), tlrs.tensor(np.ones(2))])
    m = tlrs.instantiate_with_options(d, "float64", None)
    with pytest.raises(ValueError):
        m.forward([np.ones(3), np.ones(2)])
