"""Layer ops (conv2d, pooling, batch/layer norm, attention, dropout, embedding, gather,
scatter_add, masked_fill) against independent NumPy implementations written here.

Tolerances: float64 within 1e-12 (relative, plus 1e-12 absolute since values are O(1) and
some outputs are sums that cancel to near 0). float32 values are compared with the NumPy result
computed in float64 from the same float32 inputs, within 1e-5 relative + 2e-5 absolute (at most
a few dozen float32 roundings of O(1) terms per output).
"""

import numpy as np
import pytest

import tlrs
from tlrs import ops

DTYPES = ["float32", "float64"]


def tol(dtype):
    return {"rtol": 1e-5, "atol": 2e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}


def check(t, expected, dtype):
    assert isinstance(t, tlrs.Tensor) and t.dtype == dtype
    expected = np.asarray(expected, dtype=np.float64)
    assert list(t.shape) == list(expected.shape)
    np.testing.assert_allclose(t.numpy().astype(np.float64), expected, **tol(dtype))


def data(shape, dtype="float64", lo=-1.0, hi=1.0, seed=0):
    """An array in `dtype` plus the same values widened to float64 for the reference."""
    a = np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)
    return a, a.astype(np.float64)


T = tlrs.tensor

# ---------------------------------------------------------------- NumPy references


def np_conv2d(x, w, b=None, stride=1, padding=0):
    squeeze = x.ndim == 3
    x = x[None] if squeeze else x
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oc, _, kh, kw = w.shape
    oh, ow = (xp.shape[2] - kh) // stride + 1, (xp.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], oc, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    if b is not None:
        out += b[None, :, None, None]
    return out[0] if squeeze else out


def np_pool(x, k, stride, padding, kind):
    squeeze = x.ndim == 3
    x = x[None] if squeeze else x
    s = k if stride is None else stride
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=fill)
    oh, ow = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
    out = np.empty(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.sum(axis=(2, 3)) / (k * k)
    return out[0] if squeeze else out


def np_normalise(x, axes, eps):
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def np_attention(x, wq, wk, wv, wo, h, mask=None):
    squeeze = x.ndim == 2
    x = x[None] if squeeze else x
    b, n, _ = x.shape
    hd = wq.shape[1] // h

    def heads(w):
        return (x @ w).reshape(b, n, h, hd).transpose(0, 2, 1, 3)

    q, k, v = heads(wq), heads(wk), heads(wv)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn = e / e.sum(axis=-1, keepdims=True)
    out = (attn @ v).transpose(0, 2, 1, 3).reshape(b, n, h * hd) @ wo
    return out[0] if squeeze else out


def causal(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


# ---------------------------------------------------------------- conv2d

CONV_CASES = [  # (input shape, out channels, kernel (kh, kw), stride, padding)
    ((2, 3, 7, 6), 4, (3, 3), 1, 0), ((2, 3, 7, 6), 4, (3, 3), 1, 1), ((2, 3, 8, 9), 5, (3, 3), 2, 1),
    ((1, 2, 6, 5), 3, (3, 3), 2, 2), ((3, 2, 5, 5), 2, (1, 1), 1, 0), ((2, 4, 6, 7), 3, (1, 1), 2, 1),
    ((2, 3, 16, 16), 8, (7, 7), 2, 3), ((3, 6, 5), 2, (2, 3), 1, 1),
]


@pytest.mark.parametrize("shape, oc, k, stride, padding", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d_matches_numpy(shape, oc, k, stride, padding, bias, dtype):
    x, x64 = data(shape, dtype, seed=1)
    w, w64 = data((oc, shape[-3]) + k, dtype, seed=2)
    b, b64 = data((oc,), dtype, seed=3)
    got = ops.conv2d(T(x), T(w), T(b) if bias else None, stride=stride, padding=padding)
    check(got, np_conv2d(x64, w64, b64 if bias else None, stride, padding), dtype)


@pytest.mark.parametrize("shape, oc, k, stride, padding", CONV_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d_fast_kernels_match_reference(shape, oc, k, stride, padding, dtype):
    x, w, b = data(shape, dtype, seed=4)[0], data((oc, shape[-3]) + k, dtype, seed=5)[0], data((oc,), dtype, seed=6)[0]
    ref = ops.conv2d(T(x), T(w), T(b), stride, padding).numpy().astype(np.float64)
    with tlrs.fast_kernels():
        fast = ops.conv2d(T(x), T(w), T(b), stride, padding)
    check(fast, ref, dtype)


def test_conv2d_accepts_pairs_equal_or_not():
    x, w = data((1, 2, 5, 5))[0], data((3, 2, 3, 3))[0]
    check(ops.conv2d(T(x), T(w), stride=(2, 2), padding=(1, 1)), np_conv2d(x, w, None, 2, 1), "float64")
    # stride (1, 2): every other column of the stride-1 convolution
    check(ops.conv2d(T(x), T(w), stride=(1, 2)), np_conv2d(x, w, None, 1, 0)[..., ::2], "float64")


def test_conv2d_shape_errors_name_the_shapes():
    x, w = T(np.zeros((2, 3, 5, 5))), T(np.zeros((4, 2, 3, 3)))
    with pytest.raises(tlrs.ShapeError, match=r"\[2, 3, 5, 5\].*\[4, 2, 3, 3\]"):
        ops.conv2d(x, w)
    with pytest.raises(tlrs.ShapeError, match=r"\[4\].*\[3\]"):
        ops.conv2d(x, T(np.zeros((4, 3, 3, 3))), T(np.zeros(3)))
    with pytest.raises(tlrs.ShapeError, match=r"\[5, 5\]"):
        ops.conv2d(T(np.zeros((5, 5))), w)


# ---------------------------------------------------------------- pooling

POOL_CASES = [((2, 3, 6, 8), 2, None, 0), ((2, 2, 7, 5), 3, 2, 1), ((1, 2, 5, 5), 3, 1, 1),
              ((2, 1, 6, 7), 2, 1, 1), ((3, 6, 5), 2, 2, 1), ((2, 9, 4), 3, 3, 0)]


@pytest.mark.parametrize("shape, k, stride, padding", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pools_match_numpy(shape, k, stride, padding, kind, dtype):
    fn = ops.max_pool2d if kind == "max" else ops.avg_pool2d
    for lo, hi in [(-1.0, 1.0), (-3.0, -1.0)]:  # all-negative: padding (0 or -inf) must never win
        x, x64 = data(shape, dtype, lo, hi, seed=7)
        check(fn(T(x), k, stride, padding), np_pool(x64, k, stride, padding, kind), dtype)


def np_max_pool_grad(x, g, k, s):
    """Max pooling's gradient without padding: each output's gradient to the first maximum of
    its window in row-major order (np.argmax's choice), accumulated in output order."""
    return np_max_pool_padded(x, g, k, s, 0)[1]


@pytest.mark.parametrize("k, s", [(2, 2), (3, 2)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_pools_on_every_thread_count_match_numpy(k, s, dtype):
    # Large enough that planes are spread over threads; rounded values make many ties.
    x = np.round(np.random.default_rng(11).normal(size=(8, 8, 28, 28)), 1).astype(dtype)
    g = np.random.default_rng(12).normal(size=(8, 8, (28 - k) // s + 1, (28 - k) // s + 1)).astype(dtype)
    results, before = [], tlrs.get_num_threads()
    for threads in (1, 2):
        tlrs.set_num_threads(threads)
        try:
            t = tlrs.tensor(x, requires_grad=True)
            y = ops.max_pool2d(t, k, s)
            (gx,) = tlrs.grad([y], [t], grad_outputs=[tlrs.tensor(g)])
            a = ops.avg_pool2d(tlrs.tensor(x), k, s)
        finally:
            tlrs.set_num_threads(before)
        results.append((y.numpy().tobytes(), gx.numpy().tobytes(), a.numpy().tobytes()))
        np.testing.assert_array_equal(y.numpy(), np_pool(x, k, s, 0, "max"))
        np.testing.assert_array_equal(gx.numpy(), np_max_pool_grad(x, g, k, s))
        check(a, np_pool(x.astype(np.float64), k, s, 0, "avg"), dtype)
    assert results[0] == results[1], "the bits must not depend on the thread count"


def np_max_pool_padded(x, g, k, s, p):
    """Max pooling with padding and its gradient: windows over x padded with -inf (the inputs
    are finite or NaN, so padding never wins), each output's gradient to its window's first
    maximum in row-major order (np.argmax's choice, a NaN counting as the maximum)."""
    n, c, h, w = x.shape
    xp = np.full((n, c, h + 2 * p, w + 2 * p), -np.inf, x.dtype)
    xp[:, :, p:p + h, p:p + w] = x
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    y, gx = np.zeros((n, c, oh, ow), x.dtype), np.zeros_like(xp)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k].reshape(n, c, -1)
            r, q = np.divmod(win.argmax(axis=2), k)
            for a in range(n):
                for b in range(c):
                    y[a, b, i, j] = xp[a, b, i * s + r[a, b], j * s + q[a, b]]
                    gx[a, b, i * s + r[a, b], j * s + q[a, b]] += g[a, b, i, j]
    return y, gx[:, :, p:p + h, p:p + w]


@pytest.mark.parametrize("k, s, p", [(3, 2, 1), (3, 1, 1), (2, 2, 1), (5, 3, 2), (4, 2, 1)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_padded_max_pool_winners_match_numpy(k, s, p, dtype):
    # Rounded values make ties (the first maximum must win); a few NaNs must win and stay.
    rng = np.random.default_rng(21)
    x = np.round(rng.normal(size=(2, 3, 11, 13)), 1).astype(dtype)
    x.flat[rng.choice(x.size, 6, replace=False)] = np.nan
    g = rng.normal(size=(2, 3, (11 + 2 * p - k) // s + 1, (13 + 2 * p - k) // s + 1)).astype(dtype)
    y_want, gx_want = np_max_pool_padded(x, g, k, s, p)
    t = tlrs.tensor(x, requires_grad=True)
    y = ops.max_pool2d(t, k, s, p)
    (gx,) = tlrs.grad([y], [t], grad_outputs=[tlrs.tensor(g)])
    np.testing.assert_array_equal(y.numpy(), y_want)
    np.testing.assert_array_equal(gx.numpy(), gx_want)


def test_max_pool_padding_never_wins_and_avg_divisor_counts_padding():
    x = -np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
    mx = ops.max_pool2d(T(x), 2, stride=2, padding=1).numpy()
    assert mx.tolist() == [[[[-1.0, -2.0], [-4.0, -5.0]]]]
    avg = ops.avg_pool2d(T(-x), 2, stride=2, padding=1).numpy()
    assert avg.tolist() == [[[[1 / 4, (2 + 3) / 4], [(4 + 7) / 4, (5 + 6 + 8 + 9) / 4]]]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_global_avg_pool2d(dtype):
    x, x64 = data((2, 3, 4, 5), dtype, seed=8)
    check(ops.global_avg_pool2d(T(x)), x64.mean(axis=(2, 3)), dtype)
    check(ops.global_avg_pool2d(T(x[0])), x64[0].mean(axis=(1, 2)), dtype)


# ---------------------------------------------------------------- batch norm and layer norm


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_per_image(shape, affine, dtype):
    x, x64 = data(shape, dtype, -2.0, 3.0, seed=9)
    c = shape[-3]
    g, g64 = data((c,), dtype, 0.5, 1.5, seed=10)
    b, b64 = data((c,), dtype, seed=11)
    want = np_normalise(x64, (-2, -1), 1e-6)
    if affine:
        want = want * g64[:, None, None] + b64[:, None, None]
    check(ops.batch_norm_per_image(T(x), T(g) if affine else None, T(b) if affine else None), want, dtype)


def test_batch_norm_per_image_default_eps_is_1e_6():
    x = data((1, 2, 3, 3), seed=12)[1] * 1e-3  # variance ~1e-7: eps matters
    check(ops.batch_norm_per_image(T(x)), np_normalise(x, (-2, -1), 1e-6), "float64")


@pytest.mark.parametrize("shape", [(4, 3, 2, 5), (6, 3)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_train_updates_running_stats_and_eval_uses_them(shape, dtype):
    x, x64 = data(shape, dtype, -1.0, 3.0, seed=13)
    axes = (0, 2, 3) if len(shape) == 4 else (0,)
    g, g64 = data((3,), dtype, 0.5, 1.5, seed=14)
    b, b64 = data((3,), dtype, seed=15)
    rm0, rv0 = np.array([0.1, -0.2, 0.3]), np.array([1.0, 2.0, 0.5])
    rm, rv = T(rm0.astype(dtype)), T(rv0.astype(dtype))
    cshape = (1, 3) + (1,) * (len(shape) - 2)
    out = ops.batch_norm(T(x), rm, rv, T(g), T(b), training=True, momentum=0.2, eps=1e-5)
    want = np_normalise(x64, axes, 1e-5) * g64.reshape(cshape) + b64.reshape(cshape)
    check(out, want, dtype)
    n = x64.size // 3
    check(rm, 0.8 * rm0 + 0.2 * x64.mean(axis=axes), dtype)
    check(rv, 0.8 * rv0 + 0.2 * x64.var(axis=axes) * n / (n - 1), dtype)  # unbiased
    # Evaluation mode: the (updated) running statistics, not the batch's.
    rm1, rv1 = rm.numpy().astype(np.float64), rv.numpy().astype(np.float64)
    out = ops.batch_norm(T(x), rm, rv, T(g), T(b), training=False, eps=1e-5)
    want = (x64 - rm1.reshape(cshape)) / np.sqrt(rv1.reshape(cshape) + 1e-5) * g64.reshape(cshape) + b64.reshape(cshape)
    check(out, want, dtype)
    assert rm.numpy().tolist() == rm1.astype(dtype).tolist()  # eval leaves them alone
    # Without running statistics: batch statistics.
    check(ops.batch_norm(T(x)), np_normalise(x64, axes, 1e-5), dtype)


def test_batch_norm_shape_errors():
    with pytest.raises(tlrs.ShapeError, match=r"\[3\].*\[4\]"):
        ops.batch_norm(T(np.zeros((2, 3, 4, 4))), T(np.zeros(4)), T(np.ones(4)))
    with pytest.raises(tlrs.ShapeError, match=r"\[5\]"):
        ops.batch_norm(T(np.zeros(5)))


@pytest.mark.parametrize("norm", [5, (5,), (4, 5)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm(norm, affine, dtype):
    x, x64 = data((3, 4, 5), dtype, -2.0, 2.0, seed=16)
    ns = (norm,) if isinstance(norm, int) else norm
    g, g64 = data(ns, dtype, 0.5, 1.5, seed=17)
    b, b64 = data(ns, dtype, seed=18)
    want = np_normalise(x64, tuple(range(-len(ns), 0)), 1e-6)
    args = (T(g), T(b)) if affine else (None, None)
    check(ops.layer_norm(T(x), norm, *args, eps=1e-6), want * g64 + b64 if affine else want, dtype)


def test_layer_norm_shape_errors_name_the_shapes():
    x = T(np.zeros((2, 3, 4)))
    with pytest.raises(tlrs.ShapeError, match=r"\[2, 3, 4\].*\[3\]"):
        ops.layer_norm(x, 3)
    with pytest.raises(tlrs.ShapeError, match=r"\[4\].*\[3\]"):
        ops.layer_norm(x, 4, T(np.ones(3)))


# ---------------------------------------------------------------- attention

ATTN_CASES = [((2, 5, 6), 2, 3), ((4, 6), 3, 2), ((1, 7, 4), 1, 4)]  # (x shape, heads, head_dim)


def attn_inputs(shape, h, hd, dtype, seed=20):
    dm = shape[-1]
    arrs = [data(shape, dtype, seed=seed)] + [
        data((dm, h * hd) if i < 3 else (h * hd, dm), dtype, -0.7, 0.7, seed=seed + 1 + i) for i in range(4)]
    return [a for a, _ in arrs], [a64 for _, a64 in arrs]


@pytest.mark.parametrize("shape, h, hd", ATTN_CASES)
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_matches_numpy(shape, h, hd, masked, dtype):
    xs, xs64 = attn_inputs(shape, h, hd, dtype)
    mask = causal(shape[-2]) if masked else None
    check(ops.multi_head_attention(*map(T, xs), h, mask=mask), np_attention(*xs64, h, mask), dtype)


def test_attention_masked_key_has_exactly_zero_weight():
    (x, *ws), _ = attn_inputs((2, 6, 4), 2, 3, "float64")
    mask = causal(6)
    base = ops.multi_head_attention(T(x), *map(T, ws), 2, mask=mask).numpy()
    x2 = x.copy()
    x2[:, -1, :] = [1e3, -7.0, 42.0, 0.5]  # only the last key (masked for every earlier query)
    changed = ops.multi_head_attention(T(x2), *map(T, ws), 2, mask=mask).numpy()
    assert np.array_equal(base[:, :-1], changed[:, :-1])
    assert not np.array_equal(base[:, -1], changed[:, -1])


def test_attention_shape_errors_name_the_shapes():
    x, w = T(np.zeros((2, 4, 6))), T(np.zeros((6, 6)))
    with pytest.raises(tlrs.ShapeError, match=r"\[5, 6\]"):
        ops.multi_head_attention(x, w, w, w, T(np.zeros((5, 6))), 2)
    with pytest.raises(tlrs.ShapeError, match=r"\[6, 4\]"):
        ops.multi_head_attention(x, w, T(np.zeros((6, 4))), w, w, 2)
    with pytest.raises(tlrs.ShapeError, match=r"\[6, 6\]"):
        ops.multi_head_attention(x, w, w, w, w, 4)  # 6 is not a multiple of 4 heads
    with pytest.raises(tlrs.ShapeError):
        ops.multi_head_attention(x, w, w, w, w, 2, mask=causal(3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(dtype):
    x, x64 = data((3, 4), dtype, seed=30)
    for mask in [np.array([True, False, False, True]), np.arange(12).reshape(3, 4) % 5 == 1]:
        check(ops.masked_fill(T(x), mask, -2.5), np.where(mask, -2.5, x64), dtype)


@pytest.mark.parametrize("mask_shape", [(1, 1, 5, 5), (5, 1), (1, 5), (2, 1, 5, 1), (3, 1, 1),
                                        (2, 3, 5, 5), (), (5,)])
def test_masked_fill_broadcasts_the_mask_and_masks_the_gradient(mask_shape):
    # Each mask row is copied or repeated whole (ops/index.rs expand_mask): every broadcast
    # pattern against NumPy's where, values and gradient.
    x, x64 = data((2, 3, 5, 5), "float64", seed=31)
    mask = np.random.default_rng(32).random(mask_shape) < 0.4
    t = T(x)
    t.requires_grad = True
    y = ops.masked_fill(t, mask, -2.5)
    check(y, np.where(mask, -2.5, x64), "float64")
    (g,) = tlrs.grad(ops.sum(y * T(x)), [t])
    check(g, np.where(mask, 0.0, x64), "float64")


# ---------------------------------------------------------------- dropout


def reference_keep_mask(key, n, keep):
    """The reference sampler: u_i = (splitmix64(key + i) mod 2^32) / 2^32; keep when keep > u_i."""
    with np.errstate(over="ignore"):
        z = np.uint64(key) + np.arange(n, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return keep > (z & np.uint64(0xFFFFFFFF)).astype(np.float64) / 2.0**32


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_statistics_scale_and_reference_mask(p, dtype):
    n, key = 100_000, 987654321
    x, x64 = data((n,), dtype, 0.5, 1.5, seed=31)
    y = ops.dropout(T(x), p, key=key).numpy().astype(np.float64)
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.01
    np.testing.assert_array_equal(kept, reference_keep_mask(key, n, 1 - p))
    np.testing.assert_allclose(y[kept], x64[kept] / (1 - p), rtol=1e-6 if dtype == "float32" else 1e-15)
    again = ops.dropout(T(x), p, key=key).numpy()
    assert np.array_equal(again, y.astype(dtype))
    other = ops.dropout(T(x), p, key=key + 1).numpy() != 0
    assert not np.array_equal(other, kept)


def test_dropout_global_stream_eval_mode_and_bad_p():
    x = T(np.ones(1000))
    tlrs.manual_seed(5)
    a, b = ops.dropout(x, 0.5).numpy(), ops.dropout(x, 0.5).numpy()
    assert not np.array_equal(a, b)
    tlrs.manual_seed(5)
    assert np.array_equal(ops.dropout(x, 0.5).numpy(), a)
    assert np.array_equal(ops.dropout(x, 0.7, training=False).numpy(), np.ones(1000))
    assert np.array_equal(ops.dropout(x, 0.0).numpy(), np.ones(1000))
    for p in [1.5, -0.1]:
        with pytest.raises(ValueError):
            ops.dropout(x, p)
    # p = 1 drops everything, as PyTorch: input * 0 (NaN stays NaN).
    y = ops.dropout(T(np.array([1.0, -2.0, np.nan])), 1.0).numpy()
    assert np.array_equal(y, [0.0, -0.0, np.nan], equal_nan=True) and np.signbit(y[1])


# ---------------------------------------------------------------- embedding, gather, scatter_add


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding(dtype):
    w, w64 = data((7, 3), dtype, seed=40)
    for idx in [[1, 3, 1, 6], np.array([[0, 6, 6], [2, 2, 5]]), np.array([4], dtype=np.int32), 3]:
        check(ops.embedding(idx, T(w)), np.take(w64, np.asarray(idx), axis=0), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(dtype):
    x, x64 = data((3, 4, 5), dtype, seed=41)
    rng = np.random.default_rng(42)
    for dim, ishape in [(0, (5, 4, 5)), (1, (3, 2, 5)), (2, (3, 4, 9)), (-1, (3, 4, 2)), (0, (2, 3, 4))]:
        idx = rng.integers(0, x.shape[dim], size=ishape)
        sub = x64[tuple(slice(0, s) if d != dim % 3 else slice(None) for d, s in enumerate(ishape))]
        check(ops.gather(T(x), dim, idx), np.take_along_axis(sub, idx, axis=dim), dtype)
    check(ops.gather(T(x[0]), 1, [[0, 0], [4, 1], [2, 2], [3, 3]]), np.take_along_axis(
        x64[0], np.array([[0, 0], [4, 1], [2, 2], [3, 3]]), axis=1), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add(dtype):
    rng = np.random.default_rng(43)
    x, x64 = data((3, 4, 5), dtype, seed=44)
    for dim, sshape in [(0, (6, 4, 5)), (1, (3, 7, 5)), (2, (2, 3, 8)), (-2, (3, 4, 5))]:
        src, src64 = data(sshape, dtype, seed=45)
        idx = rng.integers(0, x.shape[dim], size=sshape)  # many repeats
        want = x64.copy()
        coords = list(np.indices(sshape))
        coords[dim] = idx
        np.add.at(want, tuple(coords), src64)
        check(ops.scatter_add(T(x), dim, idx, T(src)), want, dtype)


def test_index_errors_name_the_bound():
    w, x = T(np.zeros((7, 2))), T(np.zeros((3, 4)))
    for call, bound, bad in [
        (lambda: ops.embedding([1, 9], w), 7, 9), (lambda: ops.embedding([-1], w), 7, -1),
        (lambda: ops.gather(x, 1, [[0, 6]]), 4, 6), (lambda: ops.gather(x, 0, [[3]]), 3, 3),
        (lambda: ops.scatter_add(x, 0, [[0], [5]], T(np.ones((2, 1)))), 3, 5),
    ]:
        with pytest.raises(IndexError) as e:
            call()
        msg = str(e.value)
        assert str(bound) in msg and str(bad) in msg, msg


def test_index_shape_errors():
    x = T(np.zeros((3, 4)))
    with pytest.raises(tlrs.ShapeError):
        ops.gather(x, 1, [[[0]]])  # rank mismatch
    with pytest.raises(tlrs.ShapeError):
        ops.scatter_add(x, 0, [[0, 1, 2, 0]], T(np.ones((1, 3))))  # index larger than src
    with pytest.raises(tlrs.ShapeError):
        ops.embedding([0], T(np.zeros(7)))


# ---------------------------------------------------------------- gradients vs NumPy central differences


def numeric_grads(f, arrays, eps=1e-6):
    out = []
    for a in arrays:
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + eps
            hi = f(*arrays)
            a[i] = old - eps
            lo = f(*arrays)
            a[i] = old
            g[i] = (hi - lo) / (2 * eps)
        out.append(g)
    return out


def check_grads(tl_fn, np_fn, arrays, seed):
    r = np.random.default_rng(seed).uniform(-1, 1, size=np_fn(*arrays).shape)
    ts = [T(a, requires_grad=True) for a in arrays]
    loss = ops.sum(ops.mul(tl_fn(*ts), T(r)))
    got = tlrs.grad(loss, ts)
    want = numeric_grads(lambda *a: float((np_fn(*a) * r).sum()), [a.copy() for a in arrays])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape, oc, k, stride, padding", [CONV_CASES[i] for i in (1, 2, 3, 5, 7)])
@pytest.mark.parametrize("fast", [False, True])
def test_conv2d_grads_vs_numpy_central_differences(shape, oc, k, stride, padding, fast):
    arrays = [data(shape, seed=50)[0], data((oc, shape[-3]) + k, seed=51)[0], data((oc,), seed=52)[0]]
    with tlrs.fast_kernels(fast):
        check_grads(lambda x, w, b: ops.conv2d(x, w, b, stride, padding),
                    lambda x, w, b: np_conv2d(x, w, b, stride, padding), arrays, seed=53)


@pytest.mark.parametrize("shape, h, hd", ATTN_CASES[:2])
@pytest.mark.parametrize("masked", [False, True])
def test_attention_grads_vs_numpy_central_differences(shape, h, hd, masked):
    arrays, _ = attn_inputs(shape, h, hd, "float64", seed=60)
    mask = causal(shape[-2]) if masked else None
    check_grads(lambda *t: ops.multi_head_attention(*t, h, mask=mask),
                lambda *a: np_attention(*a, h, mask), arrays, seed=61)


def test_gather_takes_torchs_edge_indices():
    torch = pytest.importorskip("torch")
    x = tlrs.tensor(2.5, requires_grad=True)
    for idx in (np.array([0]), np.array(0)):
        y = ops.gather(x, 0, idx)
        assert y.shape == list(torch.gather(torch.tensor(2.5), 0, torch.from_numpy(idx)).shape) and y.numpy().tolist() == (
            [2.5] if idx.ndim else 2.5)
    v = tlrs.tensor(np.arange(5.0), requires_grad=True)
    empty = ops.gather(v, 0, np.zeros((2, 0), np.int64))
    assert empty.shape == [2, 0]
    (g,) = tlrs.grad(ops.sum(empty) + ops.sum(v) * 0.0, [v])
    assert g.numpy().tolist() == [0.0] * 5
