"""Kernel switches (docs/numerics.md): thread count, reference kernels that are bit-identical across thread
counts and equal to a plain left fold with separate multiply and add, fast kernels within tolerance."""

import numpy as np
import pytest

import tlrs
from tlrs import ops

DTYPES = ["float32", "float64"]
UINT = {"float32": np.uint32, "float64": np.uint64}


def bits(x):
    x = np.ascontiguousarray(x)
    return x.view(UINT[x.dtype.name])


def assert_bits_equal(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.array_equal(bits(actual), bits(expected)), np.max(np.abs(actual - expected))


@pytest.fixture
def restore():
    threads, fast = tlrs.get_num_threads(), tlrs.get_fast_kernels()
    yield
    tlrs.set_num_threads(threads)
    tlrs.set_fast_kernels(fast)


def arr(shape, dtype, seed, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)


# ---------------------------------------------------------------- switches

def test_num_threads_round_trip(restore):
    assert tlrs.get_num_threads() >= 1
    for n in (1, 3, 2):
        tlrs.set_num_threads(n)
        assert tlrs.get_num_threads() == n


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-2, ValueError), (1.5, TypeError), ("2", TypeError),
                                      (True, TypeError)])
def test_set_num_threads_rejects(bad, exc, restore):
    before = tlrs.get_num_threads()
    with pytest.raises(exc):
        tlrs.set_num_threads(bad)
    assert tlrs.get_num_threads() == before


def test_fast_kernels_switch_and_context(restore):
    tlrs.set_fast_kernels(False)
    assert tlrs.get_fast_kernels() is False
    tlrs.set_fast_kernels(True)
    assert tlrs.get_fast_kernels() is True
    tlrs.set_fast_kernels(False)
    with tlrs.fast_kernels():
        assert tlrs.get_fast_kernels() is True
        with tlrs.fast_kernels(False):
            assert tlrs.get_fast_kernels() is False
        assert tlrs.get_fast_kernels() is True
    assert tlrs.get_fast_kernels() is False
    tlrs.set_fast_kernels(True)
    with tlrs.fast_kernels(False):
        assert tlrs.get_fast_kernels() is False
    assert tlrs.get_fast_kernels() is True


def test_fast_kernels_context_restores_after_exception(restore):
    tlrs.set_fast_kernels(False)
    with pytest.raises(KeyError), tlrs.fast_kernels():
        raise KeyError("x")
    assert tlrs.get_fast_kernels() is False


def test_default_is_reference():
    import subprocess
    import sys
    code = "import tlrs; print(tlrs.get_fast_kernels(), tlrs.get_num_threads() >= 1)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.stdout.split() == ["False", "True"], out.stderr[-500:]


# ---------------------------------------------------------------- reference kernels: exact left folds

def naive_matmul(a, b):
    """Explicit Python loops, one rounding per multiply and per add, in the operands' dtype."""
    cast = a.dtype.type
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=a.dtype)
    for i in range(m):
        for j in range(n):
            acc = cast(0.0)
            for p in range(k):
                acc = cast(acc + cast(a[i, p] * b[p, j]))
            out[i, j] = acc
    return out


def fold_matmul(a, b):
    """The same left fold over k, vectorised over the outputs (NumPy elementwise ops: no FMA)."""
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
    for p in range(a.shape[1]):
        acc = acc + a[:, p:p + 1] * b[p:p + 1, :]
    return acc


def fold_sum(x, axis):
    x = np.moveaxis(x, axis, 0)
    acc = np.zeros(x.shape[1:], dtype=x.dtype)
    for row in x:
        acc = acc + row
    return acc


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_matmul_equals_python_left_fold(dtype):
    a, b = arr((7, 5), dtype, 1), arr((5, 3), dtype, 2)
    expected = naive_matmul(a, b)
    assert_bits_equal(fold_matmul(a, b), expected)  # the vectorised fold is the same computation
    assert_bits_equal((tlrs.tensor(a) @ tlrs.tensor(b)).numpy(), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_sum_and_mean_equal_python_left_fold(dtype):
    x = arr((11,), dtype, 3)
    cast = x.dtype.type
    acc = cast(0.0)
    for v in x:
        acc = cast(acc + v)
    out = ops.sum(tlrs.tensor(x)).numpy()
    assert out.dtype == np.dtype(dtype) and bits(np.array(out)) == bits(np.array(acc))
    mean = ops.mean(tlrs.tensor(x)).numpy()
    assert bits(np.array(mean)) == bits(np.array(cast(acc / cast(11))))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_reference_results_equal_left_fold_for_each_thread_count(dtype, threads, restore):
    tlrs.set_fast_kernels(False)
    tlrs.set_num_threads(threads)
    a, b = arr((67, 301), dtype, 4), arr((301, 45), dtype, 5)
    assert_bits_equal((tlrs.tensor(a) @ tlrs.tensor(b)).numpy(), fold_matmul(a, b))
    ab, bb = arr((3, 9, 20), dtype, 6), arr((3, 20, 11), dtype, 7)
    batched = np.stack([fold_matmul(ab[i], bb[i]) for i in range(3)])
    assert_bits_equal(ops.matmul(tlrs.tensor(ab), tlrs.tensor(bb)).numpy(), batched)
    x = arr((50, 40, 30), dtype, 8)
    for axis in (0, 1, 2):
        assert_bits_equal(ops.sum(tlrs.tensor(x), axis).numpy(), fold_sum(x, axis))
    flat = arr((100_003,), dtype, 9)
    total = np.add.accumulate(flat)[-1]  # sequential, not pairwise
    assert bits(np.array(ops.sum(tlrs.tensor(flat)).numpy())) == bits(np.array(total))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_bit_identical_across_thread_counts(dtype, restore):
    tlrs.set_fast_kernels(False)
    a, b = arr((256, 320), dtype, 10), arr((320, 192), dtype, 11)
    x = arr((512, 300), dtype, 12)
    outs = []
    for n in (1, 2, 4):
        tlrs.set_num_threads(n)
        ta, tb, tx = tlrs.tensor(a), tlrs.tensor(b), tlrs.tensor(x)
        outs.append([(ta @ tb).numpy(), ops.sum(tx).numpy(), ops.sum(tx, 0).numpy(), ops.mean(tx, 1).numpy(),
                     ops.softmax(tx, -1).numpy(), ops.exp(tx).numpy()])
    for other in outs[1:]:
        for r, o in zip(outs[0], other):
            assert_bits_equal(np.asarray(o), np.asarray(r))


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_ops_are_single_correctly_rounded_operations(dtype):
    a, b = arr((1000,), dtype, 13, 0.1, 10.0), arr((1000,), dtype, 14, 0.1, 10.0)
    ta, tb = tlrs.tensor(a), tlrs.tensor(b)
    assert_bits_equal((ta + tb).numpy(), a + b)
    assert_bits_equal((ta - tb).numpy(), a - b)
    assert_bits_equal((ta * tb).numpy(), a * b)
    assert_bits_equal((ta / tb).numpy(), a / b)
    assert_bits_equal(ops.sqrt(ta).numpy(), np.sqrt(a))
    assert_bits_equal(ops.maximum(ta, tb).numpy(), np.maximum(a, b))


# ---------------------------------------------------------------- fast kernels

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((7, 5), (5, 3)), ((130, 257), (257, 70)), ((4, 33, 65), (4, 65, 17)),
                                    ((300, 200), (200, 100))])
def test_fast_matmul_within_tolerance(dtype, shapes, restore):
    a, b = arr(shapes[0], dtype, 15, 0.1, 1.0), arr(shapes[1], dtype, 16, 0.1, 1.0)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    with tlrs.fast_kernels():
        out = (tlrs.tensor(a) @ tlrs.tensor(b)).numpy()
        lin = ops.linear(tlrs.tensor(a), tlrs.tensor(np.swapaxes(b, -1, -2).copy())).numpy() if a.ndim == 2 else None
    assert out.dtype == np.dtype(dtype)
    rtol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(out, expected, rtol=rtol)
    if lin is not None:
        np.testing.assert_allclose(lin, expected, rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_reductions_within_tolerance(dtype, restore):
    x = arr((400, 250), dtype, 17, 0.1, 1.0)
    x64 = x.astype(np.float64)
    rtol = 1e-4 if dtype == "float32" else 1e-12
    with tlrs.fast_kernels():
        t = tlrs.tensor(x)
        np.testing.assert_allclose(ops.sum(t).numpy(), x64.sum(), rtol=rtol)
        np.testing.assert_allclose(ops.sum(t, 1).numpy(), x64.sum(1), rtol=rtol)
        np.testing.assert_allclose(ops.mean(t, 0).numpy(), x64.mean(0), rtol=rtol)
        e = np.exp(x64 - x64.max(1, keepdims=True))
        np.testing.assert_allclose(ops.softmax(t, 1).numpy(), e / e.sum(1, keepdims=True), rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_kernels_deterministic_for_fixed_threads(dtype, restore):
    a, b = arr((200, 300), dtype, 18), arr((300, 150), dtype, 19)
    tlrs.set_num_threads(2)
    with tlrs.fast_kernels():
        first = (tlrs.tensor(a) @ tlrs.tensor(b)).numpy()
        second = (tlrs.tensor(a) @ tlrs.tensor(b)).numpy()
    assert_bits_equal(second, first)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_kernels_repeat_bit_for_bit_on_any_thread_count(dtype, restore):
    """Fast GEMMs are cut into blocks by shape alone (rust/src/backend/cpu/matmul.rs), so a
    product, a linear layer's gradients and a convolution's give the same bits on 1, 2 and 3
    threads."""
    a, b = arr((160, 300), dtype, 1), arr((300, 520), dtype, 2)
    x, w = arr((8, 16, 12, 12), dtype, 3), arr((32, 16, 3, 3), dtype, 4)
    lx, lw = arr((128, 784), dtype, 5), arr((512, 784), dtype, 6)

    def run():
        tlrs.set_fast_kernels(True)
        out = [(tlrs.tensor(a, dtype=dtype) @ tlrs.tensor(b, dtype=dtype)).numpy()]
        tx = tlrs.tensor(lx, dtype=dtype, requires_grad=True)
        tw = tlrs.tensor(lw, dtype=dtype, requires_grad=True)
        out += [g.numpy() for g in tlrs.grad(ops.sum(ops.linear(tx, tw, None) ** 2), [tx, tw])]
        cx = tlrs.tensor(x, dtype=dtype, requires_grad=True)
        cw = tlrs.tensor(w, dtype=dtype, requires_grad=True)
        y = ops.conv2d(cx, cw, None, 1, 1)
        out += [y.numpy()] + [g.numpy() for g in tlrs.grad(ops.sum(y * y), [cx, cw])]
        return out

    results = {}
    for n in (1, 2, 3):
        tlrs.set_num_threads(n)
        results[n] = run()
    for n in (2, 3):
        for got, want in zip(results[n], results[1]):
            assert_bits_equal(got, want)
    np.testing.assert_allclose(results[1][0], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_fma_peak_is_measured_where_the_cpu_has_vector_fma_and_is_plausible():
    import platform
    from pathlib import Path

    cpuinfo = Path("/proc/cpuinfo")
    flags = set(cpuinfo.read_text().split()) if cpuinfo.exists() else set()
    has_fma = platform.machine() == "x86_64" and {"avx2", "fma"} <= flags
    for measure in (tlrs._core.fma_peak_gflops, tlrs._core.mul_add_peak_gflops):
        peak = measure(2_000_000)
        assert (peak is not None) == has_fma
        if peak is not None:
            # Below a scalar core's rate or beyond any CPU's would mean the loop was folded
            # away by the compiler or mistimed.
            assert 1.0 < peak < 2_000.0 * tlrs.get_num_threads()


def fast_sum_order(x):
    """The fast kernels' sum order as docs/numerics.md states it, in NumPy scalars: 64 partial
    sums (partial j folds elements j, j + 64, ... from +0), then j + 32 added into j, j + 16, ..."""
    cast = x.dtype.type
    acc = [cast(0.0)] * 64
    for i, v in enumerate(x):
        acc[i % 64] = cast(acc[i % 64] + v)
    width = 64
    while width > 1:
        width //= 2
        for j in range(width):
            acc[j] = cast(acc[j] + acc[j + width])
    return acc[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000, 4099])
def test_fast_sum_follows_its_documented_order_on_any_thread_count(dtype, n, restore):
    x = arr((n,), dtype, 8, lo=-1e3, hi=1e3)
    want = fast_sum_order(x)
    tlrs.set_fast_kernels(True)
    for threads in [1, 2, 3]:
        tlrs.set_num_threads(threads)
        got = ops.sum(tlrs.tensor(x)).numpy()
        assert got.dtype == np.dtype(dtype) and bits(np.array(got)) == bits(np.array(want)), threads
    # Within rounding of the exact sum (each of the n additions errs by at most half an ulp of
    # a partial, which the sum of magnitudes bounds).
    exact = float(np.sum(x.astype(np.float64)))
    assert abs(float(got) - exact) <= n * np.finfo(dtype).eps * float(np.sum(np.abs(x), dtype=np.float64))


@pytest.mark.parametrize("fast", [False, True])
def test_full_sum_gradient_spreads_one_over_the_input(fast, restore):
    # The sum's gradient is one scalar broadcast over the input's shape and made dense by the
    # product's backward: every element of d/dx sum(x * c) is c's.
    tlrs.set_fast_kernels(fast)
    x = tlrs.tensor(arr((4, 8, 5, 3), "float32", 9), requires_grad=True)
    c = arr((4, 8, 5, 3), "float32", 10)
    (g,) = tlrs.grad(ops.sum(ops.mul(x, tlrs.tensor(c))), [x])
    assert_bits_equal(g.numpy(), c)
