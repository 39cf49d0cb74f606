"""Views: on the CPU, permute/transpose/slice return tensors that read their input's memory
through strides (no copy until an op needs row-major values), and matmul reads them in place.

Oracles: NumPy applying the same layout ops to the values, and, for gradients, to an array of
element indices (each output element is one input element, so the gradient of sum(out * r) is r
added at the indices it came from). Matmul on views is also checked bit for bit, with reference
kernels, against the same product of row-major copies."""

import numpy as np
import pytest

import tlrs
from tlrs import ops

T = tlrs.tensor


def random_layout_ops(rng, shape, count):
    """A sequence of layout ops valid for `shape`, each as (name, args)."""
    steps = []
    for _ in range(count):
        kind = rng.choice(["permute", "transpose", "slice", "reshape"])
        rank = len(shape)
        if kind == "permute":
            perm = [int(p) for p in rng.permutation(rank)]
            steps.append(("permute", perm))
            shape = tuple(shape[p] for p in perm)
        elif kind == "transpose" and rank >= 2:
            a, b = (int(v) for v in rng.choice(rank, size=2, replace=False))
            steps.append(("transpose", (a, b)))
            shape = list(shape)
            shape[a], shape[b] = shape[b], shape[a]
            shape = tuple(shape)
        elif kind == "slice":
            ax = int(rng.integers(rank))
            start = int(rng.integers(0, shape[ax]))
            end = int(rng.integers(start + 1, shape[ax] + 1))
            steps.append(("slice", (ax, start, end)))
            shape = shape[:ax] + (end - start,) + shape[ax + 1 :]
        elif kind == "reshape" and rank >= 2:
            # Merge the first two axes.
            shape = (shape[0] * shape[1],) + shape[2:]
            steps.append(("reshape", shape))
    return steps


def apply_tlrs(t, steps):
    for name, args in steps:
        if name == "permute":
            t = t.permute(*args)
        elif name == "transpose":
            t = t.transpose(*args)
        elif name == "slice":
            t = ops.slice(t, *args)
        else:
            t = t.reshape(*args)
    return t


def apply_numpy(a, steps):
    for name, args in steps:
        if name == "permute":
            a = a.transpose(args)
        elif name == "transpose":
            a = np.swapaxes(a, *args)
        elif name == "slice":
            ax, start, end = args
            a = a[(slice(None),) * ax + (slice(start, end),)]
        else:
            a = a.reshape(args)
    return a


@pytest.mark.parametrize("seed", range(40))
def test_chains_of_layout_ops_read_and_differentiate_like_numpy(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 6, size=int(rng.integers(2, 5))))
    steps = random_layout_ops(rng, shape, int(rng.integers(1, 6)))
    x = rng.uniform(-1, 1, size=shape)
    want = apply_numpy(x, steps)
    xt = T(x, requires_grad=True)
    out = apply_tlrs(xt, steps)
    assert out.shape == list(want.shape)
    np.testing.assert_array_equal(out.numpy(), want)
    r = rng.uniform(-1, 1, size=want.shape)
    ops.sum(ops.mul(out, T(r))).backward()
    idx = apply_numpy(np.arange(x.size).reshape(shape), steps)
    grad = np.bincount(idx.ravel(), weights=r.ravel(), minlength=x.size).reshape(shape)
    np.testing.assert_array_equal(xt.grad.numpy(), grad)


def test_permute_transpose_and_slice_are_views_until_copied():
    x = T(np.arange(24.0).reshape(2, 3, 4))
    assert x.is_contiguous()
    for v in (x.permute(2, 0, 1), x.transpose(0, 2), x.T, ops.slice(x, 2, 1, 3)):
        assert not v.is_contiguous()
        c = v.contiguous()
        assert c.is_contiguous() and c.shape == v.shape
        np.testing.assert_array_equal(c.numpy(), v.numpy())
    # A slice over a whole axis, or a permute that moves only axes of length 1, reads all of the
    # input's memory as it lies.
    assert ops.slice(x, 1, 0, 3).is_contiguous()
    assert T(np.ones((1, 5))).permute(1, 0).is_contiguous()


def test_contiguous_passes_gradients_through():
    x = np.random.default_rng(1).uniform(size=(3, 4))
    xt = T(x, requires_grad=True)
    r = np.random.default_rng(2).uniform(size=(4, 3))
    ops.sum(ops.mul(xt.T.contiguous(), T(r))).backward()
    np.testing.assert_array_equal(xt.grad.numpy(), r.T)


def heads(rng, b, n, h, d, dtype):
    """q as attention lays it out: [B, n, h·d] memory seen as [B, h, n, d]."""
    p = rng.uniform(-1, 1, size=(b, n, h * d)).astype(dtype)
    return p, p.reshape(b, n, h, d).transpose(0, 2, 1, 3)


# (name, a as NumPy array and tlrs view, b likewise) builders: attention's head views on both
# sides with a transpose, a column slice (an offset and a row stride), a batch of views against
# one shared matrix, and transposed 2-D operands.
def cases(rng, dtype):
    u = lambda *s: rng.uniform(-1, 1, size=s).astype(dtype)  # noqa: E731
    q, qn = heads(rng, 2, 5, 3, 4, dtype)
    k, kn = heads(rng, 2, 5, 3, 4, dtype)
    yield (
        "q k^T",
        qn,
        T(q).reshape(2, 5, 3, 4).permute(0, 2, 1, 3),
        kn.swapaxes(-1, -2),
        T(k).reshape(2, 5, 3, 4).permute(0, 2, 1, 3).transpose(-1, -2),
    )
    a, b = u(6, 9), u(4, 5)
    yield ("column slice", a[:, 2:6], ops.slice(T(a), 1, 2, 6), b, T(b))
    a3, m = u(3, 4, 7), u(4, 6)
    yield ("batch of views @ shared", a3.transpose(0, 2, 1), T(a3).transpose(1, 2), m, T(m))
    a2, b2 = u(5, 8), u(6, 5)
    yield ("both transposed", a2.T, T(a2).T, b2.T, T(b2).T)
    big_a, big_b = u(40, 130), u(130, 70)
    yield (
        "large sliced product",
        big_a[3:37, 1:129],
        ops.slice(ops.slice(T(big_a), 0, 3, 37), 1, 1, 129),
        big_b[1:129],
        ops.slice(T(big_b), 0, 1, 129),
    )


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_reads_views_in_place_like_numpy(fast, dtype):
    rng = np.random.default_rng(7)
    for name, a, at, b, bt in cases(rng, dtype):
        assert not (at.is_contiguous() and bt.is_contiguous()), name
        with tlrs.fast_kernels(fast):
            got = ops.matmul(at, bt).numpy()
            copied = ops.matmul(at.contiguous(), bt.contiguous()).numpy()
        want = a.astype(np.float64) @ b.astype(np.float64)
        tol = 1e-12 if dtype == "float64" else 1e-5
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * a.shape[-1], err_msg=name)
        if not fast:
            # The reference kernel's fold does not depend on where operands sit.
            np.testing.assert_array_equal(got, copied, err_msg=name)


@pytest.mark.parametrize("fast", [False, True])
def test_matmul_gradients_through_head_views_match_numpy(fast):
    rng = np.random.default_rng(11)
    b, n, h, d = 2, 5, 3, 4
    q, qn = heads(rng, b, n, h, d, "float64")
    k, kn = heads(rng, b, n, h, d, "float64")
    qt, kt = T(q, requires_grad=True), T(k, requires_grad=True)
    split = lambda t: t.reshape(b, n, h, d).permute(0, 2, 1, 3)  # noqa: E731
    r = rng.uniform(-1, 1, size=(b, h, n, n))
    with tlrs.fast_kernels(fast):
        ops.sum(ops.mul(ops.matmul(split(qt), split(kt).transpose(-1, -2)), T(r))).backward()
    # s = q k^T per head: ds/dq = r k, ds/dk = r^T q; then back to [B, n, h·d].
    gq = (r @ kn).transpose(0, 2, 1, 3).reshape(b, n, h * d)
    gk = (r.swapaxes(-1, -2) @ qn).transpose(0, 2, 1, 3).reshape(b, n, h * d)
    np.testing.assert_allclose(qt.grad.numpy(), gq, rtol=0, atol=1e-12)
    np.testing.assert_allclose(kt.grad.numpy(), gk, rtol=0, atol=1e-12)


def test_numpy_reads_a_view_in_place():
    x = np.random.default_rng(3).uniform(size=(4, 5, 6))
    t = T(x)
    base = t.numpy()
    for v, want in ((t.permute(2, 0, 1), x.transpose(2, 0, 1)), (ops.slice(t.T, 1, 1, 4), x.swapaxes(-1, -2)[:, 1:4])):
        a = v.numpy()
        np.testing.assert_array_equal(a, want)
        assert np.shares_memory(a, base) and not a.flags.writeable
        # A row-major copy is its own memory.
        assert not np.shares_memory(v.contiguous().numpy(), base)


@pytest.mark.parametrize("fast", [False, True])
def test_matmul_gradients_from_a_sum_read_a_broadcast_view(fast):
    # The gradient of sum() reaches the matmul as a broadcast of one value (every stride 0),
    # which the product reads in place.
    rng = np.random.default_rng(13)
    a, b = rng.uniform(-1, 1, size=(3, 40, 50)), rng.uniform(-1, 1, size=(50, 60))
    at, bt = T(a, requires_grad=True), T(b, requires_grad=True)
    with tlrs.fast_kernels(fast):
        ops.sum(ops.matmul(at, bt)).backward()
    ones = np.ones((3, 40, 60))
    np.testing.assert_allclose(at.grad.numpy(), ones @ b.T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        bt.grad.numpy(), np.einsum("nij,njk->ik", a.transpose(0, 2, 1), ones), rtol=0, atol=1e-11
    )


def test_memory_borrowed_from_numpy_is_copied_not_viewed():
    # NumPy may still write an array tlrs.from_numpy shares; a view's row-major copy (made once)
    # would then disagree with the readers of the live memory, so layout ops copy at once.
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = tlrs.from_numpy(a).T
    assert v.is_contiguous()
    a[0, 1] = 100.0
    np.testing.assert_array_equal(v.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3).T)
    np.testing.assert_array_equal(ops.add(v, T(np.zeros((3, 2), np.float32))).numpy(), v.numpy())


def test_an_empty_slice_at_the_end_of_an_axis_reads_as_numpy():
    # x[:, 5:5] of [5, 5, 5]: once a view whose offset sat at the base's end, which NumPy refused.
    x = np.arange(125.0).reshape(5, 5, 5)
    for dim, start in ((0, 5), (1, 5), (2, 5), (1, 0)):
        t = ops.slice(tlrs.tensor(x), dim, start, start)
        want = np.take(x, np.arange(start, start), axis=dim)
        assert t.shape == list(want.shape)
        assert t.numpy().shape == want.shape and t.tolist() == want.tolist()
