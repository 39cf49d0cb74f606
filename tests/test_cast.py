"""`instantiate_with_options(defn, cast, opts)` takes the reference's scalar `cast : Float -> alpha`
as well as dtype names: `float`/`numpy.float64` give binary64, `numpy.float32` binary32, and any
other callable maps each scalar of each initial tensor."""

import math

import numpy as np
import pytest

import tlrs
from tlrs import Options, instantiate_with_options


def _defn():
    init = [np.array([[0.1, -2.5, 3.0]]), np.array([1e-3])]
    return tlrs.ModuleDef([[1, 3], [1]], [[3]], lambda ps, xs: tlrs.ops.sum(ps[0] * xs[0]) + ps[1].sum(),
                          init_params=init)


@pytest.mark.parametrize("cast,dtype", [(float, "float64"), (np.float64, "float64"),
                                        (np.float32, "float32")])
def test_scalar_types_pick_the_dtype(cast, dtype):
    m = instantiate_with_options(_defn(), cast, Options())
    assert m.dtype == dtype
    want = [np.asarray(p, dtype=dtype) for p in ([[0.1, -2.5, 3.0]], [1e-3])]
    for p, w in zip(m.params(), want):
        assert p.dtype == dtype
        assert p.numpy().tobytes() == w.tobytes()


def test_a_scalar_function_is_applied_to_each_scalar():
    # Not vectorisable (a Python branch on the value): applied per scalar.
    m = instantiate_with_options(_defn(), lambda v: v if v > 0 else 0.0, Options())
    assert m.params()[0].tolist() == [[0.1, 0.0, 3.0]]
    assert m.dtype == "float64"
    m = instantiate_with_options(_defn(), lambda v: np.float32(math.floor(v)), Options())
    assert m.dtype == "float32"
    assert m.params()[0].tolist() == [[0.0, -3.0, 3.0]]


def test_a_vectorisable_function_and_a_tensor_function_give_the_same_values():
    by_array = instantiate_with_options(_defn(), np.tanh, Options())
    expected = np.tanh(np.array([[0.1, -2.5, 3.0]]))
    assert by_array.params()[0].numpy().tobytes() == expected.tobytes()
    doubled = instantiate_with_options(_defn(), lambda t: t * 2.0, Options())
    assert doubled.params()[0].tolist() == [[0.2, -5.0, 6.0]]


def test_a_cast_to_something_else_is_refused():
    with pytest.raises(TypeError, match="map each scalar to a float"):
        instantiate_with_options(_defn(), lambda v: "x", Options())
    with pytest.raises(TypeError, match="dtype name, a float type or a callable"):
        instantiate_with_options(_defn(), 3, Options())
