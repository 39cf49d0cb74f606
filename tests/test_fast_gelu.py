"""The fast kernels' GELU (float32): erf from a rational approximation instead of libm's
algorithm, within the tolerance docs/numerics.md states (3e-7 * max(1, |x|), forward and
gradient), the same non-finite values, and the same bits eager and compiled (the fused chain's
blocks run on helper threads, which take the caller's kernel settings)."""

import numpy as np

import tlrs
from tlrs import Options, ops


def _data():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(300_000) * 4, np.linspace(-12, 12, 100_001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-40]])
    return x.astype(np.float32)


def test_fast_gelu_is_within_the_stated_tolerance():
    x = _data()
    t = tlrs.tensor(x, requires_grad=True)
    ref = ops.gelu(t)
    (gref,) = tlrs.grad(ops.sum(ref), [t])
    with tlrs.fast_kernels():
        fast = ops.gelu(t)
        (gfast,) = tlrs.grad(ops.sum(fast), [t])
    for a, b in ((fast.numpy(), ref.numpy()), (gfast.numpy(), gref.numpy())):
        finite = np.isfinite(b)
        assert np.array_equal(np.isnan(a), np.isnan(b))
        assert np.array_equal(a[~finite & ~np.isnan(b)], b[~finite & ~np.isnan(b)])
        err = np.abs(a[finite].astype(np.float64) - b[finite]) / np.maximum(1.0, np.abs(x[finite]))
        assert err.max() <= 3e-7, err.max()
    assert not np.array_equal(fast.numpy(), ref.numpy())  # it is another algorithm


def test_fast_gelu_compiled_equals_eager_bit_for_bit():
    rng = np.random.default_rng(1)
    defn = tlrs.ModuleDef([[64, 256], [256]], [[128, 64]],
                          lambda ps, xs: ops.sum(ops.gelu(ops.matmul(xs[0], ps[0]) + ps[1]) * 0.5),
                          init_params=[rng.standard_normal((64, 256)) * 0.3, rng.standard_normal(256)])
    xs = [rng.standard_normal((128, 64))]
    opts = Options(fast_kernels=True)
    eager = tlrs.instantiate_with_options(defn, "float32", opts)
    compiled = tlrs.instantiate_with_options(defn, "float32", Options(backend="compiled", fast_kernels=True))
    assert "gelu" in compiled._compiled.describe()
    assert compiled.forward(xs).numpy().tobytes() == eager.forward(xs).numpy().tobytes()
    assert [g.numpy().tobytes() for g in compiled.backward(xs)] == [g.numpy().tobytes() for g in eager.backward(xs)]
