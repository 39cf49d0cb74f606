"""Bad input (docs/runtime.md): mismatched shapes and dtypes, bad indices and axes raise the documented
exception classes with messages naming what came, never pyo3's PanicException; long native
work releases the GIL."""

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tlrs
from tlrs import ops


def z(*shape, dtype="float64"):
    return tlrs.zeros(*shape, dtype=dtype)


def not_panic(e):
    assert isinstance(e, Exception)
    assert type(e).__name__ != "PanicException"
    assert type(e).__module__ != "pyo3_runtime"


def raises(exc, fn, *needles):
    with pytest.raises(BaseException) as ei:
        fn()
    e = ei.value
    not_panic(e)
    assert isinstance(e, exc), f"{type(e)} is not {exc}: {e}"
    for n in needles:
        assert n in str(e), f"{n!r} not in {str(e)!r}"
    return e


# ---------------------------------------------------------------- shapes

BINARY = [ops.add, ops.sub, ops.mul, ops.div, ops.maximum, ops.minimum]
OPERATORS = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b]


@pytest.mark.parametrize("fn", BINARY + OPERATORS)
@pytest.mark.parametrize("sa, sb", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3, 4), (2, 4))])
def test_binary_shape_mismatch(fn, sa, sb):
    e = raises(tlrs.ShapeError, lambda: fn(z(*sa), z(*sb)), str(list(sa)), str(list(sb)))
    assert isinstance(e, ValueError)


@pytest.mark.parametrize("sa, sb", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (4,)), ((5,), (4, 2)),
                                    ((2, 3, 4), (2, 5, 6)), ((), (3,))])
def test_matmul_shape_mismatch(sa, sb):
    for fn in (ops.matmul, lambda a, b: a @ b):
        e = raises(tlrs.ShapeError, lambda f=fn: f(z(*sa), z(*sb)), str(list(sa)), str(list(sb)))
        assert isinstance(e, ValueError)


def test_matmul_batch_mismatch_names_both_shapes():
    raises(tlrs.ShapeError, lambda: ops.matmul(z(2, 3, 4), z(3, 4, 5)), "[2, 3, 4]", "[3, 4, 5]")


def test_matmul_batch_mismatch_message_is_accurate():
    e = raises(tlrs.ShapeError, lambda: ops.matmul(z(2, 3, 4), z(3, 4, 5)))
    assert "inner" not in str(e) and "batch" in str(e)


@pytest.mark.parametrize("x, w, b, needles", [
    ((2, 3), (4, 5), None, ["[2, 3]", "[4, 5]"]),
    ((2, 5), (4, 5), (3,), ["[4]", "[3]"]),
    ((2, 5), (4,), None, ["[2, 5]", "4 features"]),
    ((5,), (4, 6), (4,), ["[5]", "[4, 6]"]),
])
def test_linear_shape_mismatch(x, w, b, needles):
    raises(tlrs.ShapeError, lambda: ops.linear(z(*x), z(*w), None if b is None else z(*b)), *needles)


@pytest.mark.parametrize("shapes, dim", [([(2, 3), (4, 5)], 0), ([(2, 3), (2, 3, 1)], 0), ([(2, 3), (3, 3)], 1)])
def test_concat_shape_mismatch(shapes, dim):
    raises(tlrs.ShapeError, lambda: ops.concat([z(*s) for s in shapes], dim), *[str(list(s)) for s in shapes])


def test_concat_empty_list():
    raises(ValueError, lambda: ops.concat([]))


@pytest.mark.parametrize("sa, sb", [((2, 3), (3, 2)), ((4,), (4, 1)), ((2, 3), (2, 3, 1))])
def test_mse_loss_shape_mismatch(sa, sb):
    raises(tlrs.ShapeError, lambda: ops.mse_loss(z(*sa), z(*sb)), str(list(sa)), str(list(sb)))


def test_cross_entropy_shape_mismatch():
    raises(tlrs.ShapeError, lambda: ops.cross_entropy(z(2, 3), z(2, 4)), "[2, 3]", "[2, 4]")
    raises(tlrs.ShapeError, lambda: ops.cross_entropy(z(2, 3), [0, 1, 2]), "[2, 3]", "3")
    # [N, C, d1] logits take labels [N, d1]
    raises(tlrs.ShapeError, lambda: ops.cross_entropy(z(2, 3, 4), [0, 1]), "[2, 4]", "[2]")


def test_reshape_mismatch():
    raises(tlrs.ShapeError, lambda: ops.reshape(z(2, 3), [4, 2]), "[2, 3]", "[4, 2]")
    raises(ValueError, lambda: ops.reshape(z(2, 3), [-1, -1]))


# ---------------------------------------------------------------- dtypes

@pytest.mark.parametrize("fn", BINARY + OPERATORS + [ops.matmul, lambda a, b: a @ b,
                                                     lambda a, b: ops.concat([a, b]),
                                                     lambda a, b: ops.concat([a, b], 1)])
@pytest.mark.parametrize("order", ["f64-f32", "f32-f64"])
def test_dtype_mismatch(fn, order):
    a, b = z(3, 3), z(3, 3, dtype="float32")
    if order == "f32-f64":
        a, b = b, a
    e = raises(tlrs.DTypeError, lambda: fn(a, b), "float32", "float64")
    assert isinstance(e, TypeError)


@pytest.mark.parametrize("fn", [ops.mse_loss, ops.cross_entropy, lambda a, b: ops.linear(a, b)])
def test_dtype_mismatch_losses(fn):
    raises(tlrs.DTypeError, lambda: fn(z(3, 3), z(3, 3, dtype="float32")), "float32", "float64")


def test_dtype_mismatch_names_called_op():
    e = raises(tlrs.DTypeError, lambda: ops.mse_loss(z(3), z(3, dtype="float32")))
    assert str(e).startswith("mse_loss")


def test_python_scalar_takes_tensor_dtype():
    # A Python number is not a float64 operand: it adopts the tensor's dtype.
    assert (z(2, dtype="float32") + 1.5).dtype == "float32"
    assert ops.mul(z(2, dtype="float32"), 2).dtype == "float32"


# ---------------------------------------------------------------- indices and axes

@pytest.mark.parametrize("index", [[0, 3], [5], np.array([1, 7], dtype=np.int64), np.array([3], dtype=np.int32),
                                   [-1], [2**40]])
def test_index_select_out_of_range(index):
    bad = next(i for i in np.asarray(index).reshape(-1).tolist() if not 0 <= i < 3)
    raises(IndexError, lambda: ops.index_select(z(2, 3), 1, index), "3", str(bad))


@pytest.mark.parametrize("target", [[0, 3], [4, 0], np.array([0, 9]), [-1, 0]])
def test_cross_entropy_label_out_of_range(target):
    raises(IndexError, lambda: ops.cross_entropy(z(2, 3), target), "3")


@pytest.mark.parametrize("call", [
    lambda: ops.sum(z(2, 3), 2), lambda: ops.mean(z(2, 3), -3), lambda: ops.max(z(2, 3), 5),
    lambda: ops.softmax(z(2, 3), 2), lambda: ops.log_softmax(z(2, 3), -3), lambda: ops.concat([z(2, 3)], 2),
    lambda: ops.slice(z(2, 3), 2, 0, 1), lambda: ops.transpose(z(2, 3), 0, 2), lambda: ops.permute(z(2, 3), [0, 0]),
    lambda: ops.permute(z(2, 3), [0]), lambda: ops.permute(z(2, 3), [0, 2]), lambda: ops.flatten(z(2, 3), 3),
    lambda: ops.index_select(z(2, 3), 4, [0]), lambda: z(2, 3).sum(-5), lambda: z(2, 3).softmax(9),
])
def test_bad_axis_raises_value_error(call):
    raises(ValueError, call)


@pytest.mark.parametrize("call", [
    lambda: ops.index_select(z(2, 3), 1, [0.5]),
    lambda: ops.index_select(z(2, 3), 1, np.array([1.0])),
    lambda: ops.index_select(z(2, 3), 1, tlrs.tensor([0.0])),
    lambda: ops.cross_entropy(z(2, 3), np.array([0.0, 1.0])),
    lambda: ops.cross_entropy(z(2, 3), [0.0, 1.0]),
])
def test_float_indices_raise_type_error(call):
    raises(TypeError, call, "float")


@pytest.mark.parametrize("call, exc", [
    (lambda: z(2) * "a", TypeError), (lambda: "a" + z(2), TypeError), (lambda: z(2, 2) @ 3.0, TypeError),
    (lambda: ops.add(z(2), "a"), TypeError), (lambda: tlrs.zeros(-1, 2), ValueError),
    (lambda: tlrs.tensor([1.0]).to("tpu"), ValueError), (lambda: ops.max(z(0)), ValueError),
    (lambda: tlrs.tensor([[1.0], [2.0, 3.0]]), ValueError),
])
def test_other_bad_input(call, exc):
    raises(exc, call)




@pytest.mark.parametrize("make", [tlrs.zeros, tlrs.rand])
def test_element_count_overflow_is_rejected(make):
    raises((ValueError, MemoryError, OverflowError), lambda: make(2**62, 4))


@pytest.mark.parametrize("make", [lambda: tlrs.zeros(2**31, 2**31), lambda: tlrs.full((2**31, 2**31), 1.0),
                                  lambda: tlrs.randn(2**31, 2**31)])
def test_huge_shape_raises_clean_error(make):
    raises((ValueError, MemoryError), make)


def test_out_of_memory_does_not_abort():
    code = ("import tlrs\ntry:\n    tlrs.zeros(2**50)\nexcept MemoryError:\n    print('MemoryError')\n"
            "except Exception as e:\n    print(type(e).__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-500:]
    assert r.stdout.strip() == "MemoryError"


def test_exception_hierarchy():
    assert issubclass(tlrs.ShapeError, ValueError)
    assert issubclass(tlrs.DTypeError, TypeError)
    assert issubclass(tlrs.CudaUnavailableError, RuntimeError)
    assert issubclass(tlrs.AutogradError, RuntimeError)
    assert issubclass(tlrs.ArgError, ValueError)
    assert issubclass(tlrs.DeviceError, ValueError)


# ---------------------------------------------------------------- threads and the GIL

def test_matmul_releases_the_gil():
    n = 1024
    rng = np.random.default_rng(0)
    a, b = tlrs.tensor(rng.normal(size=(n, n))), tlrs.tensor(rng.normal(size=(n, n)))
    # Baseline speed of the counting loop.
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.2:
        count += 1
    rate = count / (time.perf_counter() - t0)

    started, done, timing = threading.Event(), threading.Event(), {}

    def work():
        started.set()
        t = time.perf_counter()
        # Repeat so the native work lasts long enough to measure, however fast the kernel is.
        while time.perf_counter() - t < 0.5:
            timing["out"] = a @ b
        timing["seconds"] = time.perf_counter() - t
        done.set()

    prev = tlrs.get_num_threads()
    tlrs.set_num_threads(1)  # leave a core for the counting thread
    try:
        th = threading.Thread(target=work)
        th.start()
        started.wait()
        counter = 0
        while not done.is_set():
            counter += 1
        th.join()
    finally:
        tlrs.set_num_threads(prev)
    expected = a.numpy() @ b.numpy()
    np.testing.assert_allclose(timing["out"].numpy(), expected, rtol=1e-9, atol=1e-9)
    # With the GIL held the loop could only run during at most one 5 ms switch interval.
    assert timing["seconds"] > 0.02
    assert counter > max(0.1 * rate * timing["seconds"], 20 * rate * 0.005), (counter, rate, timing["seconds"])


def test_ops_from_many_threads():
    rng = np.random.default_rng(1)
    arrays = [(rng.normal(size=(64, 48)), rng.normal(size=(48, 32))) for _ in range(6)]
    results, errors = [None] * 6, []

    def work(i):
        try:
            x, y = arrays[i]
            for _ in range(5):
                out = ops.sum(ops.tanh(tlrs.tensor(x) @ tlrs.tensor(y)), 1)
            results[i] = out.numpy()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for (x, y), r in zip(arrays, results):
        np.testing.assert_allclose(r, np.tanh(x @ y).sum(1), rtol=1e-12, atol=1e-12)
