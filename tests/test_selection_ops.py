"""argmax/argmin, topk, sort, multinomial and one_hot (python/tlrs/selection_ops.py) against
PyTorch: the same indices (ties to the lower index, NaN as the largest), values carrying
PyTorch's gradients, and multinomial's draws following the weights and repeating from a seed."""

import numpy as np
import pytest
import torch

import tlrs
from tlrs import selection_ops as S

RNG = np.random.default_rng(0)
# Ties, signed zeros and a NaN among ordinary values.
SPECIAL = np.array([[1.0, 3.0, 3.0, -0.0, 0.0], [np.nan, 2.0, np.nan, -1.0, 2.0], [5.0, -5.0, 0.0, 5.0, 1.0]])


def _both(a, dtype):
    return tlrs.tensor(a, dtype=dtype), torch.tensor(a, dtype=getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("data", [SPECIAL, RNG.standard_normal((3, 4, 5))])
def test_argmax_and_argmin_match_torch(data, dtype):
    t, tt = _both(data, dtype)
    for fn, tfn in ((S.argmax, torch.argmax), (S.argmin, torch.argmin)):
        assert np.array_equal(fn(t), tfn(tt).numpy())
        for dim in range(-data.ndim, data.ndim):
            for keepdim in (False, True):
                got = fn(t, dim, keepdim)
                assert got.dtype == "int64"
                assert np.array_equal(got, tfn(tt, dim, keepdim).numpy()), (fn.__name__, dim, keepdim)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_topk_matches_torch_with_gradients(dtype):
    data = RNG.standard_normal((4, 7))
    for largest in (True, False):
        for dim in (0, 1, -1):
            t, tt = tlrs.tensor(data, dtype=dtype, requires_grad=True), torch.tensor(data, requires_grad=True)
            k = 3
            values, idx = S.topk(t, k, dim, largest)
            tv, ti = torch.topk(tt, k, dim, largest)
            assert np.array_equal(idx, ti.numpy())
            assert values.numpy().tobytes() == tv.detach().numpy().astype(dtype).tobytes()
            w = RNG.standard_normal(values.shape)
            (g,) = tlrs.grad(tlrs.ops.sum(values * tlrs.tensor(w, dtype=dtype)), [t])
            (tv * torch.tensor(w)).sum().backward()
            np.testing.assert_array_equal(g.numpy(), tt.grad.numpy().astype(dtype))


def test_topk_puts_nan_first_as_torch():
    t, tt = _both(SPECIAL, "float64")
    values, idx = S.topk(t, 2, 1)
    tv, ti = torch.topk(tt, 2, 1)
    assert np.array_equal(idx, ti.numpy())
    np.testing.assert_array_equal(values.numpy(), tv.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sort_matches_torch_stable_sort(dtype):
    data = np.round(RNG.standard_normal((5, 6)) * 2) / 2  # many ties
    data[1, 2] = np.nan
    t, tt = _both(data, dtype)
    for dim in (0, 1):
        for descending in (False, True):
            values, idx = S.sort(t, dim, descending)
            tv, ti = torch.sort(tt, stable=True, dim=dim, descending=descending)
            assert np.array_equal(idx, ti.numpy()), (dim, descending)
            assert values.numpy().tobytes() == tv.numpy().tobytes()


def test_sort_values_carry_gradients():
    data = RNG.standard_normal((3, 4))
    t, tt = tlrs.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    values, _ = S.sort(t, 1, True)
    w = RNG.standard_normal((3, 4))
    (g,) = tlrs.grad(tlrs.ops.sum(values * tlrs.tensor(w)), [t])
    (torch.sort(tt, 1, True)[0] * torch.tensor(w)).sum().backward()
    assert g.numpy().tobytes() == tt.grad.numpy().tobytes()


def test_multinomial_follows_the_weights_and_repeats_from_a_seed():
    w = tlrs.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]])
    tlrs.manual_seed(5)
    a = S.multinomial(w, 20000, replacement=True)
    tlrs.manual_seed(5)
    b = S.multinomial(w, 20000, replacement=True)
    assert np.array_equal(a, b) and list(a.shape) == [2, 20000] and a.dtype == "int64"
    a = a.numpy()
    freq = np.stack([np.bincount(row, minlength=4) / 20000 for row in a])
    np.testing.assert_allclose(freq, [[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.0, 0.5]], atol=0.015)
    assert not (a[:, :] == 1)[0].any() and not (a[1] == 2).any()  # zero weights are never drawn


def test_multinomial_without_replacement_draws_each_category_once():
    tlrs.manual_seed(1)
    draws = S.multinomial(tlrs.tensor([0.5, 0.2, 0.0, 0.3]), 3)
    assert sorted(draws.tolist()) == [0, 1, 3]
    with pytest.raises(ValueError, match="multinomial"):
        S.multinomial(tlrs.tensor([0.5, 0.0, 0.0]), 2)


def _draws_row_by_row(rows, units, replacement):
    """The definition, one row and one draw at a time: the first category whose running weight
    (a float64 cumsum in index order) exceeds u times the total, the last one with weight at
    worst; without replacement a drawn category's weight drops to zero."""
    rows, out = rows.copy(), np.empty(units.shape, dtype=np.int64)
    for r, w in enumerate(rows):
        for j in range(units.shape[1]):
            cdf = np.cumsum(w)
            hit = int(np.searchsorted(cdf, units[r, j] * cdf[-1], side="right"))
            out[r, j] = min(hit, int(np.flatnonzero(w)[-1]))
            if not replacement:
                w[out[r, j]] = 0.0
    return out


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_draws_as_the_row_by_row_definition(replacement):
    rng = np.random.default_rng(3)
    for case in range(60):
        rows, cols = int(rng.integers(1, 30)), int(rng.integers(1, 20))
        w = rng.random((rows, cols)) * (rng.random((rows, cols)) < 0.7)
        w[:, -1] += w.sum(axis=1) == 0  # every row some weight
        most = int(np.count_nonzero(w, axis=1).min()) if not replacement else 6
        draws = int(rng.integers(1, most + 1))
        tlrs.manual_seed(case)
        got = S.multinomial(tlrs.tensor(w), draws, replacement=replacement).numpy()
        tlrs.manual_seed(case)  # the same uniforms the op draws
        units = tlrs._core.rand([rows, draws], "float64").numpy()
        np.testing.assert_array_equal(got, _draws_row_by_row(w, units, replacement), err_msg=f"case {case}")


@pytest.mark.parametrize("bad", [[-0.1, 1.0], [np.nan, 1.0], [0.0, 0.0], [np.inf, 1.0]])
def test_multinomial_refuses_bad_weights(bad):
    with pytest.raises(ValueError, match="multinomial"):
        S.multinomial(tlrs.tensor(bad), 1, replacement=True)


def test_one_hot_matches_torch():
    labels = np.array([[0, 3], [2, 1]])
    got = S.one_hot(labels, 5)
    assert got.dtype == "int64"
    assert np.array_equal(got, torch.nn.functional.one_hot(torch.tensor(labels), 5).numpy())
    assert np.array_equal(S.one_hot([1, 0]), torch.nn.functional.one_hot(torch.tensor([1, 0])).numpy())
    with pytest.raises(ValueError, match="one_hot"):
        S.one_hot([3], 3)
    with pytest.raises(TypeError, match="one_hot"):
        S.one_hot(tlrs.tensor([1.0]), 3)


def test_bad_arguments_name_the_op():
    t = tlrs.tensor([[1.0, 2.0]])
    with pytest.raises(IndexError, match="argmax"):
        S.argmax(t, 2)
    with pytest.raises(ValueError, match="topk"):
        S.topk(t, 3)
    with pytest.raises(ValueError, match="argmin"):
        S.argmin(tlrs.tensor(np.zeros((0, 2))))
