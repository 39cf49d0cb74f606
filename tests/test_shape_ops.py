"""torch's shape and indexing functions (tlrs.ops: stack, split, flip, where, ...) and Tensor
methods (size, view, x[key], ...): values bit for bit torch's on float32 and float64 (-0.0, NaN
and infinities included), gradients equal to torch's, and bad arguments refused naming the
function."""

import numpy as np
import pytest
import torch

import tlrs
from tlrs import ops
from tlrs.compiled import CompiledLoss

DTYPES = ["float32", "float64"]


def data(shape, dtype, seed=0):
    """Random values with -0.0, NaN and infinities among them (when there is room)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape).astype(dtype)
    flat = a.reshape(-1)
    for i, v in enumerate([-0.0, np.nan, np.inf, -np.inf, 0.0][: flat.size // 3]):
        flat[(7 * i + 1) % flat.size] = v
    return a


def pair(shape, dtype, seed=0):
    a = data(shape, dtype, seed)
    return tlrs.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def flat(out):
    return [v for o in out for v in flat(o)] if isinstance(out, (tuple, list)) else [out]


def same_values(got, want):
    got, want = flat(got), flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, tlrs.Tensor)
        assert g.shape == list(w.shape)
        assert g.dtype == str(w.dtype).removeprefix("torch.")
        assert np.ascontiguousarray(g.numpy()).tobytes() == w.detach().contiguous().numpy().tobytes()


def same_grads(got, want, leaves, seed=1):
    """Gradients for small-integer cotangents (every sum exact, whatever its order)."""
    got, want = flat(got), flat(want)
    rng = np.random.default_rng(seed)
    cots = [rng.integers(-3, 4, size=w.shape).astype(str(w.dtype).removeprefix("torch.")) for w in want]
    want_g = torch.autograd.grad(want, [t for _, t in leaves], [torch.from_numpy(c) for c in cots], allow_unused=True)
    got_g = tlrs.grad(got, [x for x, _ in leaves], [tlrs.tensor(c) for c in cots], allow_unused=True)
    for (x, t), g, w in zip(leaves, got_g, want_g):
        w = torch.zeros_like(t) if w is None else w
        g = np.zeros(x.shape, x.dtype) if g is None else g.numpy()
        assert g.dtype == w.numpy().dtype
        assert np.array_equal(g, w.numpy()), (g, w)


def check(fn_tlrs, fn_torch, *shapes, dtype="float64", grads=True):
    leaves = [pair(s, dtype, seed=i) for i, s in enumerate(shapes)]
    got = fn_tlrs(*[x for x, _ in leaves])
    want = fn_torch(*[t for _, t in leaves])
    same_values(got, want)
    if grads and any(w.requires_grad for w in flat(want)):
        same_grads(got, want, leaves)


# ---- functions ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dims", [((), [0, -1]), ((3,), [0, 1, -1, -2]), ((2, 3), [0, 1, 2, -1, -3]),
                                        ((0, 3), [0, 2, -1])])
def test_unsqueeze(shape, dims, dtype):
    for d in dims:
        check(lambda x: ops.unsqueeze(x, d), lambda t: torch.unsqueeze(t, d), shape, dtype=dtype)
        check(lambda x: x.unsqueeze(d), lambda t: t.unsqueeze(d), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dims", [
    ((), [None, 0, -1, (0,), ()]),
    ((1,), [None, 0, -1]),
    ((1, 3, 1), [None, 0, 1, 2, -1, (0, 2), (0, 1), (-1, -3), ()]),
    ((2, 1, 0, 1), [None, 1, 2, (1, 3), -1]),
])
def test_squeeze(shape, dims, dtype):
    for d in dims:
        if d is None:
            check(ops.squeeze, torch.squeeze, shape, dtype=dtype)
            check(lambda x: x.squeeze(), lambda t: t.squeeze(), shape, dtype=dtype)
        else:
            check(lambda x: ops.squeeze(x, d), lambda t: torch.squeeze(t, d), shape, dtype=dtype)
            check(lambda x: x.squeeze(d), lambda t: t.squeeze(d), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,n,dims", [((), 2, [0, -1]), ((3,), 1, [0, 1, -1]), ((2, 3), 3, [0, 1, 2, -1, -3]),
                                          ((0, 2), 2, [0, 1, 2])])
def test_stack(shape, n, dims, dtype):
    for d in dims:
        check(lambda *xs: ops.stack(list(xs), d), lambda *ts: torch.stack(ts, d), *[shape] * n, dtype=dtype)
        check(lambda *xs: ops.stack(xs, dim=d), lambda *ts: torch.stack(ts, dim=d), *[shape] * n, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,arg,dim", [
    ((7,), 2, 0), ((7,), 3, -1), ((7,), 7, 0), ((7,), 10, 0), ((4, 6), 4, 1), ((4, 6), 1, -2),
    ((0, 3), 2, 0), ((0, 3), 0, 0), ((4, 6), [1, 0, 5], 1), ((4, 6), (2, 2), 0), ((4, 6), [6], -1),
])
def test_split(shape, arg, dim, dtype):
    check(lambda x: ops.split(x, arg, dim), lambda t: torch.split(t, arg, dim), shape, dtype=dtype)
    check(lambda x: x.split(arg, dim), lambda t: t.split(arg, dim), shape, dtype=dtype)
    if isinstance(arg, list):
        check(lambda x: ops.split_with_sizes(x, arg, dim), lambda t: torch.split_with_sizes(t, arg, dim), shape,
              dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,chunks,dim", [
    ((6,), 4, 0), ((7,), 3, 0), ((5,), 5, 0), ((5,), 9, -1), ((3, 7), 2, 1), ((3, 7), 3, -2), ((0, 3), 3, 0),
    ((1, 0), 2, 1),
])
def test_chunk(shape, chunks, dim, dtype):
    check(lambda x: ops.chunk(x, chunks, dim), lambda t: torch.chunk(t, chunks, dim), shape, dtype=dtype)
    check(lambda x: x.chunk(chunks, dim=dim), lambda t: t.chunk(chunks, dim=dim), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dims", [((4,), [0, -1]), ((2, 3), [0, 1, -1, -2]), ((2, 0, 3), [0, 1, 2])])
def test_unbind(shape, dims, dtype):
    for d in dims:
        check(lambda x: ops.unbind(x, d), lambda t: torch.unbind(t, d), shape, dtype=dtype)
        check(lambda x: x.unbind(d), lambda t: t.unbind(d), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim,start,length", [
    ((10,), 0, 0, 0), ((10,), 0, 5, 3), ((10,), 0, -5, 2), ((10,), -1, -10, 10), ((10,), 0, 10, 0),
    ((4, 6), 1, 2, 4), ((4, 6), -2, 3, 1), ((4, 6), 1, np.int64(1), 2), ((4, 6), 1, np.array(3), 3),
])
def test_narrow(shape, dim, start, length, dtype):
    check(lambda x: ops.narrow(x, dim, start, length), lambda t: torch.narrow(t, dim, int(start), length),
          shape, dtype=dtype)
    check(lambda x: x.narrow(dim, start, length), lambda t: t.narrow(dim, int(start), length), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dims", [
    ((), [(), (0,), (-1,)]), ((5,), [(0,), (-1,), ()]), ((3, 4), [(0,), (1,), (0, 1), (-1, 0)]),
    ((2, 3, 4), [(0, 2), (1,), (2, 1, 0)]), ((2, 0, 3), [(0, 1, 2)]),
])
def test_flip(shape, dims, dtype):
    for d in dims:
        check(lambda x: ops.flip(x, d), lambda t: torch.flip(t, d), shape, dtype=dtype)
        if d:  # torch's x.flip() needs dims
            check(lambda x: x.flip(*d), lambda t: t.flip(*d), shape, dtype=dtype)
        check(lambda x: x.flip(d), lambda t: t.flip(d), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,shifts,dims", [
    ((), 10, None), ((5,), 2, None), ((5,), -7, 0), ((3, 4), 5, None), ((3, 4), 1, 1), ((3, 4), -1, -2),
    ((3, 4), (1, 2), (0, 1)), ((3, 4), (3, -9), (1, 1)), ((2, 3, 4), 10000, 1), ((0, 3), 1, 1), ((0, 3), 2, None),
    ((3, 4), (2,), (1,)), ((3, 4), 0, 0),
])
def test_roll(shape, shifts, dims, dtype):
    check(lambda x: ops.roll(x, shifts, dims), lambda t: torch.roll(t, shifts, dims), shape, dtype=dtype)
    check(lambda x: x.roll(shifts, dims), lambda t: t.roll(shifts, dims), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 4), (2, 1, 3, 3), (0, 3), (3, 0)])
def test_triangles(name, shape, dtype):
    for k in [0, 1, -1, 2, -3, 10, -10, 2**70, -(2**70)]:
        tk = min(max(k, -20), 20)  # torch's own argument is 64-bit
        check(lambda x: getattr(ops, name)(x, k), lambda t: getattr(torch, name)(t, tk), shape, dtype=dtype)
        check(lambda x: getattr(x, name)(diagonal=k), lambda t: getattr(t, name)(diagonal=tk), shape, dtype=dtype)
    check(getattr(ops, name), getattr(torch, name), shape, dtype=dtype)


def test_triangles_keep_negative_zero_and_nan_and_write_positive_zero():
    a = np.array([[-0.0, np.nan], [np.nan, -0.0]])
    for name in ("tril", "triu"):
        got = getattr(ops, name)(tlrs.tensor(a)).numpy()
        want = getattr(torch, name)(torch.tensor(a)).numpy()
        assert got.tobytes() == want.tobytes()
        assert np.signbit(got[0, 0]) and np.signbit(got[1, 1])


WHERE_SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 1, 3), (4, 1), ()),
                ((4, 1), (), (4, 5)), ((0, 3), (1, 3), (3,)), ((2,), (1, 1), (1,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c_shape,a_shape,b_shape", WHERE_SHAPES)
def test_where(c_shape, a_shape, b_shape, dtype):
    cond = np.asarray(np.random.default_rng(5).random(c_shape) < 0.5)
    check(lambda a, b: ops.where(cond, a, b), lambda a, b: torch.where(torch.from_numpy(cond), a, b),
          a_shape, b_shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_with_numbers_lists_and_mixed_dtypes(dtype):
    cond = [[True, False, True], [False, False, True]]
    tc = torch.tensor(cond)
    check(lambda a: ops.where(cond, a, 2.5), lambda a: torch.where(tc, a, 2.5), (2, 3), dtype=dtype)
    check(lambda a: ops.where(cond, -0.0, a), lambda a: torch.where(tc, -0.0, a), (3,), dtype=dtype)
    check(lambda a: ops.where(cond, 1, a), lambda a: torch.where(tc, 1, a), (2, 1), dtype=dtype)
    other = pair((3,), "float32" if dtype == "float64" else "float64", seed=3)
    leaves = [pair((2, 3), dtype), other]
    got = ops.where(cond, leaves[0][0], leaves[1][0])
    want = torch.where(tc, leaves[0][1], leaves[1][1])
    same_values(got, want)
    same_grads(got, want, leaves)


def test_where_keeps_every_bit_of_the_selected_side():
    a = np.array([-0.0, 0.0, np.nan, -np.inf, 5e-324, -1.0])
    b = np.array([0.0, -0.0, 1.0, np.nan, -0.0, np.inf])
    for cond in (np.ones(6, bool), np.zeros(6, bool), np.arange(6) % 2 == 0):
        got = ops.where(cond, tlrs.tensor(a), tlrs.tensor(b)).numpy()
        assert got.tobytes() == torch.where(torch.from_numpy(cond), torch.tensor(a), torch.tensor(b)).numpy().tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,sizes", [
    ((5, 1, 1), (5, 5, 5)), ((5, 1, 5), (-1, 5, -1)), ((5, 1), (5, 5, 5)), ((1,), (5, 5, 5)), ((1, 5), (1, 1, 5)),
    ((), ()), ((), (1, 3, 2)), ((1, 3), (0, 3)), ((2, 3), (2, 3)), ((3, 1), (2, 3, -1)),
])
def test_expand(shape, sizes, dtype):
    check(lambda x: ops.expand(x, *sizes), lambda t: t.expand(sizes), shape, dtype=dtype)
    check(lambda x: ops.expand(x, sizes), lambda t: t.expand(sizes), shape, dtype=dtype)
    if sizes:  # torch's x.expand() needs sizes
        check(lambda x: x.expand(*sizes), lambda t: t.expand(*sizes), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (2,), (3, 2)])
@pytest.mark.parametrize("sizes", [(0, 2), (1, 1), (2, 3), (1, 3, 2), (3, 1, 1), (2, 0, 1)])
def test_repeat(shape, sizes, dtype):
    check(lambda x: ops.repeat(x, *sizes), lambda t: t.repeat(*sizes), shape, dtype=dtype)
    check(lambda x: x.repeat(sizes), lambda t: t.repeat(sizes), shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,src,dst", [
    ((4, 3, 2, 1), [0, 1, 2, 3], [3, 2, 1, 0]), ((), (), ()), ((), 0, -1), ((3, 5, 7, 2), -2, 1),
    ((3, 5, 7, 2), (-1, 0), (0, -1)), ((2, 3, 4, 5, 6), (3, -3, 4), (1, 0, -1)), ((2, 0, 3), 0, 2),
])
def test_movedim(shape, src, dst, dtype):
    check(lambda x: ops.movedim(x, src, dst), lambda t: torch.movedim(t, src, dst), shape, dtype=dtype)
    check(lambda x: x.movedim(src, dst), lambda t: t.movedim(src, dst), shape, dtype=dtype)


# ---- methods ----

def test_size_dim_and_view():
    x, t = pair((2, 3, 4), "float32")
    assert x.size() == tuple(t.size()) and isinstance(x.size(), tuple)
    assert [x.size(d) for d in (0, 1, 2, -1, -3)] == [t.size(d) for d in (0, 1, 2, -1, -3)]
    assert x.dim() == 3 and tlrs.tensor(1.0).dim() == 0 and tlrs.tensor(1.0).size() == ()
    for shape in [(24,), (4, -1), (2, 3, 4, 1), (-1,)]:
        check(lambda x: x.view(*shape), lambda t: t.view(*shape), (2, 3, 4))
        check(lambda x: x.view(shape), lambda t: t.view(shape), (2, 3, 4))
    check(lambda x: x.view(()), lambda t: t.view(()), (1,))
    check(lambda x: x.view(1, 1), lambda t: t.view(1, 1), ())


def test_methods_do_not_replace_native_ones():
    native = ("reshape", "permute", "transpose", "flatten", "sum", "mean", "max", "T", "shape", "numel")
    for name in native:
        assert getattr(getattr(tlrs.Tensor, name), "__module__", None) != "tlrs.tensor_methods"


_ = slice(None)
KEYS = [
    0, -1, 1, (1, 2), (0, -1, 3), (-2, _, 0), slice(0, 1), slice(None, None, 2), (_, slice(1, None, 2)),
    (_, slice(5, 1)), (slice(-100, 100), slice(2, 3)), (_, _, slice(None, None, 3)), (slice(2, None), 0),
    None, (None, 0, None), (_, None, _, None), Ellipsis, (Ellipsis, 0), (0, Ellipsis), (Ellipsis, None),
    (0, Ellipsis, 1), (), (_, Ellipsis, slice(1, 3)),
    [1, 0], [0, 0, -1], (_, [2, 0, 2]), (_, _, [3, 1]), ([0, 1], [2, 0]), ([0, 1], _, [1, 2]),
    (0, _, [1, 2]), (_, 0, [1, 2]), ([0, 1], 0), ([[0, 1], [1, 0]],), (_, [[0], [2]], [1, 3]),
    ([0, 1], None, [1, 2]), (None, [0, 1], [1, 2]), ([1, 0], Ellipsis, [1, 2]), (np.array([1]), _, np.array([2, 3])),
    (np.array(1), _, [1, 2]), (np.int64(1), slice(None, None, 2)), ([],), (_, []), (_, np.array([], dtype=np.int64)),
    ((0, 1),), (_, (2, 1)),
    np.array([True, False]), (_, np.array([True, False, True])), (np.array([[True, False, True], [False, False, True]]),),
    (_, _, np.array([False] * 4)), (np.array([False, True]), _, [0, 2, 1]), (np.array([[True, False, True], [True, True, False]]), [1, 2, 0, 3]),
    True, False, (_, True, [0, 1]), (True, 0), (0, False), np.bool_(True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem(key, dtype):
    def torch_key(k):
        if isinstance(k, tuple):
            return tuple(torch_key(v) for v in k)
        if isinstance(k, np.bool_):
            return bool(k)
        return torch.from_numpy(k) if isinstance(k, np.ndarray) and k.ndim > 0 else k

    check(lambda x: x[key], lambda t: t[torch_key(key)], (2, 3, 4), dtype=dtype)


@pytest.mark.parametrize("shape,key", [((), ()), ((), Ellipsis), ((), None), ((), (None, None)), ((), True),
                                       ((), False), ((0, 3), 0 if False else slice(None)), ((0, 3), (_, 1)),
                                       ((0, 3), [])])
def test_getitem_edge_shapes(shape, key):
    check(lambda x: x[key], lambda t: t[key], shape)


def test_getitem_repeated_indices_sum_gradients_and_mask_matches_torch_order():
    check(lambda x: x[[0, 0, 1, 0]], lambda t: t[[0, 0, 1, 0]], (3, 2))
    check(lambda x: x[([0, 0, 1], [1, 1, 1])], lambda t: t[([0, 0, 1], [1, 1, 1])], (3, 2))
    m = data((3, 4), "float64", seed=9) > 0
    check(lambda x: x[m], lambda t: t[torch.from_numpy(m)], (3, 4))


def test_huge_empty_axes_make_no_position_lists():
    """An empty tensor may have an axis of 2**40: flips, strided slices, triangles and rolls of it
    take no time."""
    z = tlrs.zeros(0, 2**40, requires_grad=True)
    assert ops.flip(z, [1]).shape == [0, 2**40]
    assert z[:, ::2].shape == [0, 2**39]
    assert z[..., None, 5:].shape == [0, 1, 2**40 - 5]
    assert ops.tril(tlrs.zeros(2**40, 0)).shape == [2**40, 0]
    assert ops.roll(z, 3, 1).shape == [0, 2**40]
    assert tlrs.zeros(2, 2**40, 0)[[0, 1], [5, 7]].shape == [2, 0]
    assert len(ops.chunk(z, 3, 0)) == 3
    (g,) = tlrs.grad(ops.sum(z[:, 1::3]), [z])
    assert g.shape == [0, 2**40]


def test_iteration_uses_getitem_like_torch():
    x, t = pair((3, 2), "float32")
    assert [r.numpy().tobytes() for r in x] == [r.detach().numpy().tobytes() for r in t]


def test_composites_run_on_the_compiled_backend():
    """A loss built from the composites traces and replays bit for bit as eager."""
    def loss(p, x):
        y = ops.stack([p[0], x[0]], 1)[:, :, 1::2]
        z = ops.where(np.array([True, False, True]).reshape(3, 1, 1), ops.flip(y, [0]), ops.roll(y, 1, 0))
        a, b = ops.chunk(ops.tril(ops.repeat(z.movedim(0, -1), 1, 1, 2)), 2, 0)
        c = ops.unsqueeze(ops.narrow(x[0], 1, 1, 3), 0).expand(2, 3, 3)[..., [0, 2]].view(2, 6)
        return ops.sum(a * b + c)

    rng = np.random.default_rng(0)
    p, x = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    compiled = CompiledLoss(loss, [p.shape], [x.shape], "float64")
    graph = compiled.graph_for([x.shape])
    ps = [tlrs.tensor(p, requires_grad=True)]
    eager = loss(ps, [tlrs.tensor(x)])
    (eager_g,) = tlrs.grad(eager, ps)
    value, grads = graph.loss_and_grads([tlrs.tensor(p)], [True], [tlrs.tensor(x)])
    assert value.numpy().tobytes() == eager.numpy().tobytes()
    assert grads[0].numpy().tobytes() == eager_g.numpy().tobytes()


# ---- refusals: the message names the function ----

X = tlrs.tensor(np.zeros((2, 3)))
S = tlrs.tensor(1.0)

ERRORS = [
    (lambda: ops.unsqueeze(X, 3), IndexError, "unsqueeze"),
    (lambda: ops.unsqueeze(X, 1.0), TypeError, "unsqueeze"),
    (lambda: ops.unsqueeze([1.0], 0), TypeError, "unsqueeze"),
    (lambda: ops.squeeze(X, 2), IndexError, "squeeze"),
    (lambda: ops.squeeze(X, (0, 0)), ValueError, "squeeze"),
    (lambda: ops.stack([]), ValueError, "stack"),
    (lambda: ops.stack(X), TypeError, "stack"),
    (lambda: ops.stack([X, X.T]), tlrs.ShapeError, "stack"),
    (lambda: ops.stack([X, X], 3), IndexError, "stack"),
    (lambda: ops.split(X, -1), ValueError, "split"),
    (lambda: ops.split(X, 0), ValueError, "split"),
    (lambda: ops.split(S, 1), ValueError, "split"),
    (lambda: ops.split(X, [1, 1], 1), tlrs.ShapeError, "split_with_sizes"),
    (lambda: ops.split(X, [4, -1], 1), ValueError, "split_with_sizes"),
    (lambda: ops.chunk(X, 0), ValueError, "chunk"),
    (lambda: ops.chunk(S, 1), ValueError, "chunk"),
    (lambda: ops.unbind(S), IndexError, "unbind"),
    (lambda: ops.unbind(X, 2), IndexError, "unbind"),
    (lambda: ops.narrow(S, 0, 0, 1), ValueError, "narrow"),
    (lambda: ops.narrow(X, 1, 4, 0), IndexError, "narrow"),
    (lambda: ops.narrow(X, 1, -4, 0), IndexError, "narrow"),
    (lambda: ops.narrow(X, 1, 1, 3), IndexError, "narrow"),
    (lambda: ops.narrow(X, 1, 1, -1), ValueError, "narrow"),
    (lambda: ops.narrow(X, 1, 2**70, 1), IndexError, "narrow"),
    (lambda: ops.flip(X, [0, 0]), ValueError, "flip"),
    (lambda: ops.flip(X, [3]), IndexError, "flip"),
    (lambda: X.flip(), TypeError, "flip"),
    (lambda: ops.roll(X, (1, 2), 0), ValueError, "roll"),
    (lambda: ops.roll(X, (1, 2)), ValueError, "roll"),
    (lambda: ops.roll(X, ()), ValueError, "roll"),
    (lambda: ops.roll(X, 1, 5), IndexError, "roll"),
    (lambda: ops.roll(S, 1, 0), IndexError, "roll"),
    (lambda: ops.tril(tlrs.tensor([1.0, 2.0])), ValueError, "tril"),
    (lambda: ops.triu(S), ValueError, "triu"),
    (lambda: ops.tril(X, 0.5), TypeError, "tril"),
    (lambda: ops.where(np.array([True, False]), X, 0.0), tlrs.ShapeError, "where"),
    (lambda: ops.where(np.array([1, 0]), X, 0.0), TypeError, "where"),
    (lambda: ops.where(X, X, X), TypeError, "where"),
    (lambda: ops.where([True], 1.0, 2.0), TypeError, "where"),
    (lambda: ops.where([True], X, "a"), TypeError, "where"),
    (lambda: ops.where([True], X, 2**1024), ValueError, "where"),
    (lambda: ops.expand(X, 3), tlrs.ShapeError, "expand"),
    (lambda: ops.expand(X, 2, 4), tlrs.ShapeError, "expand"),
    (lambda: ops.expand(X, -1, 2, 3), tlrs.ShapeError, "expand"),
    (lambda: ops.expand(X, -2, 3), tlrs.ShapeError, "expand"),
    (lambda: ops.expand(S, 2**70), ValueError, "expand"),
    (lambda: ops.repeat(X, 2), tlrs.ShapeError, "repeat"),
    (lambda: ops.repeat(X, 2, -1), ValueError, "repeat"),
    (lambda: ops.repeat(X, 2**70, 1), ValueError, "repeat"),
    (lambda: ops.repeat(tlrs.zeros(0, 2**40), 2, 2**40), tlrs.ShapeError, "repeat"),
    (lambda: ops.expand(tlrs.zeros(0, 1), 2**62, 0, 2**40), tlrs.ShapeError, "expand"),
    (lambda: ops.unbind(tlrs.zeros(3, 0, 2**40), -1), ValueError, "unbind"),
    (lambda: ops.chunk(tlrs.zeros(0, 2**40), 2**40), ValueError, "chunk"),
    (lambda: ops.split(tlrs.zeros(0, 2**40), 1, 1), ValueError, "split"),
    (lambda: ops.movedim(X, (0, 0), (0, 1)), ValueError, "movedim"),
    (lambda: ops.movedim(X, (0, 1), (1, 1)), ValueError, "movedim"),
    (lambda: ops.movedim(X, (0, 1), (0,)), ValueError, "movedim"),
    (lambda: ops.movedim(X, 2, 0), IndexError, "movedim"),
    (lambda: X.size(2), IndexError, "size"),
    (lambda: S.size(0), IndexError, "size"),
    (lambda: X.view(4), tlrs.ShapeError, "view"),
    (lambda: X.view(2**70), ValueError, "view"),
    (lambda: X.view(-1, -1), ValueError, "view"),
    (lambda: X.view("float32"), TypeError, "view"),
    (lambda: X[::-1], ValueError, "step must be greater than zero"),
    (lambda: X[:, ::0], ValueError, "step must be greater than zero"),
    (lambda: X[2], IndexError, "__getitem__"),
    (lambda: X[-3], IndexError, "__getitem__"),
    (lambda: X[2**70], IndexError, "__getitem__"),
    (lambda: X[[0, 2]], IndexError, "__getitem__"),
    (lambda: X[:, [2**70]], IndexError, "__getitem__"),
    (lambda: X[0, 0, 0], IndexError, "__getitem__"),
    (lambda: S[0], IndexError, "__getitem__"),
    (lambda: X[..., ...], IndexError, "__getitem__"),
    (lambda: X[1.5], IndexError, "__getitem__"),
    (lambda: X[X], IndexError, "__getitem__"),
    (lambda: X[np.array([0.5])], IndexError, "__getitem__"),
    (lambda: X[[0, 1], [0, 1, 2]], IndexError, "__getitem__"),
    (lambda: X[np.ones((2, 2), bool)], IndexError, "__getitem__"),
    (lambda: X[[[0, 1], [1, 0]]], IndexError, "__getitem__"),
    (lambda: X[0:1.5], TypeError, "__getitem__"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    call, exc, fragment = ERRORS[i]
    with pytest.raises(exc, match=fragment.replace("(", r"\(")):
        call()


def test_iteration_follows_torch():
    t = tlrs.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    rows = list(t)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    (g,) = tlrs.grad(ops.sum(rows[1] * 2.0), [t])
    assert g.tolist() == [[0.0, 0.0], [2.0, 2.0]]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(tlrs.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(torch.tensor(1.0))  # the rule it mirrors


@pytest.mark.parametrize("dim,start,end,step", [(1, 1, -2, 3), (0, -10, -2, 2), (0, None, None, 1), (-1, 2, None, 4),
                                                 (2, None, 3, 1), (1, 5, 2, 2)])
def test_slice_takes_torchs_optional_bounds_and_step(dim, start, end, step):
    x = np.random.default_rng(3).standard_normal((12, 9, 7))
    t = tlrs.tensor(x, requires_grad=True)
    tt = torch.tensor(x, requires_grad=True)
    y = ops.slice(t, dim, start, end, step)
    ty = torch.ops.aten.slice(tt, dim, start, end, step)
    assert y.numpy().tolist() == ty.detach().numpy().tolist()
    (g,) = tlrs.grad(ops.sum(y), [t])
    ty.sum().backward()
    assert g.numpy().tolist() == tt.grad.numpy().tolist()
    with pytest.raises(IndexError, match="slice: dim 3 is out of range"):
        ops.slice(t, 3, None, None, 2)


def test_cat_skips_shape_0_tensors_beside_other_ranks_as_torch():
    a, e = tlrs.tensor(np.arange(6.0).reshape(3, 2)), tlrs.zeros(0)
    assert ops.cat([e, a, e], 1).numpy().tolist() == a.numpy().tolist()
    assert ops.cat([e, e]).shape == [0]
    with pytest.raises(tlrs.ShapeError):  # a [0, 2] tensor is not the legacy empty one
        ops.cat([tlrs.zeros(0, 3), a], 0)
