"""Integer (int64) and bool tensors: construction, conversions, comparisons, data movement, the
index ops that take them (against NumPy and PyTorch), and token ids / labels as graph inputs of
the compiled backend (compiled equals eager bit for bit)."""

from __future__ import annotations

import operator
from operator import index as operator_index

import numpy as np
import pytest

import tlrs
from tlrs import nn, ops, optim

torch = pytest.importorskip("torch")


def test_constructors_keep_integers_and_bools():
    t = tlrs.tensor([[1, -2], [3, 2**62]])
    assert t.dtype == "int64" and t.numpy().tolist() == [[1, -2], [3, 2**62]]
    assert tlrs.tensor([True, False]).dtype == "bool"
    assert tlrs.from_numpy(np.arange(5)).dtype == "int64"
    assert tlrs.zeros(2, 3, dtype="int64").numpy().tolist() == [[0, 0, 0]] * 2
    assert tlrs.full([2], 7, dtype="long").numpy().tolist() == [7, 7]
    assert tlrs.arange(4, dtype="int64").numpy().tolist() == [0, 1, 2, 3]
    assert tlrs.tensor(2**62 + 1).item() == 2**62 + 1 and isinstance(tlrs.tensor(3).item(), int)
    assert tlrs.tensor(True).item() is True


def test_float_ops_and_gradients_refuse_integer_tensors():
    t = tlrs.tensor([1, 2, 3])
    for f in (lambda: t.exp(), lambda: t + t, lambda: ops.sum(t), lambda: ops.softmax(t, 0),
              lambda: ops.matmul(t, t)):
        with pytest.raises(tlrs.DTypeError, match="expected a float32 or float64 tensor.*got int64"):
            f()
    with pytest.raises(tlrs.DTypeError, match="only float tensors can require gradients"):
        t.requires_grad = True
    with pytest.raises(tlrs.DTypeError, match="only float tensors can require gradients"):
        tlrs.tensor([1, 2], requires_grad=True)


def test_conversions_truncate_and_refuse_what_has_no_int64():
    x = tlrs.tensor([-2.7, -0.5, 0.5, 2.9, 1e18])
    assert x.long().numpy().tolist() == np.array([-2.7, -0.5, 0.5, 2.9, 1e18]).astype(np.int64).tolist()
    assert tlrs.tensor([0.0, -0.0, 2.0, float("nan")]).bool().numpy().tolist() == [False, False, True, True]
    assert tlrs.tensor([3, 0]).to("float32").numpy().tolist() == [3.0, 0.0]
    assert tlrs.tensor([True, False]).double().numpy().tolist() == [1.0, 0.0]
    for bad in (float("nan"), float("inf"), 2.0**63):
        with pytest.raises(ValueError, match="cannot convert .* to int64"):
            tlrs.tensor([1.0, bad]).long()
    assert tlrs.tensor([-(2.0**63)]).long().item() == -(2**63)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_comparisons_match_numpy_with_broadcasting(op, dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (4, 1, 5)).astype(dtype)
    b = rng.integers(-3, 4, (3, 1)).astype(dtype)
    if dtype != "int64":
        a[0, 0, 0], b[1, 0] = np.nan, np.nan
    got = getattr(tlrs.tensor(a), f"__{op}__")(tlrs.tensor(b))
    want = getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                        "gt": "greater", "ge": "greater_equal"}[op])(a, b)
    assert got.dtype == "bool" and not got.requires_grad
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("v", [2.5, -2.5, 2.0, 2, float("inf"), float("-inf"), float("nan"), 1e30, -1e30,
                               2**70, -(2**70), np.int64(5), np.float32(2.5), True])
def test_int_tensors_compare_exactly_with_any_python_number(v):
    a = np.array([-3, 0, 2, 5, 2**62])
    t = tlrs.tensor(a)
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        # Python compares an int with a float exactly: the oracle.
        want = [getattr(operator, op)(int(x), v.item() if isinstance(v, np.generic) else v) for x in a]
        assert getattr(t, f"__{op}__")(v).numpy().tolist() == want, (op, v)


def test_comparisons_widen_float32_exactly_and_refuse_int_with_float_tensors():
    x, y = tlrs.tensor(np.float32([0.1, 2.0])), tlrs.tensor([0.1, 2.0])
    assert (x == y).numpy().tolist() == [False, True]  # float32(0.1) widened is not 0.1
    with pytest.raises(tlrs.DTypeError, match="never promotes"):
        _ = tlrs.tensor([1, 2]) == tlrs.tensor([1.0, 2.0])
    assert operator_index(tlrs.tensor(3)) == 3
    with pytest.raises(TypeError, match="one-element int64"):
        operator_index(tlrs.tensor([1, 2]))


def test_data_movement_on_integer_tensors():
    a = np.arange(24).reshape(2, 3, 4)
    t = tlrs.tensor(a)
    np.testing.assert_array_equal(ops.permute(t, [2, 0, 1]).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t[:, 1:, ::2].numpy(), a[:, 1:, ::2])
    np.testing.assert_array_equal(ops.reshape(t, [6, 4]).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(ops.concat([t, t], 1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(ops.unsqueeze(t, 0).expand(2, 2, 3, 4).numpy(), np.broadcast_to(a, (2, 2, 3, 4)))
    np.testing.assert_array_equal(ops.index_select(t, 2, tlrs.tensor([3, 0])).numpy(), a[:, :, [3, 0]])
    np.testing.assert_array_equal(ops.stack([t[0], t[1]]).numpy(), a)


def test_indexing_with_integer_and_bool_tensors_carries_gradients():
    xa = np.arange(12.0).reshape(3, 4)
    x = tlrs.tensor(xa, requires_grad=True)
    tx = torch.tensor(xa, requires_grad=True)
    idx, mask = np.array([2, 0, 2]), xa > 4.5
    y = ops.sum(x[tlrs.tensor(idx)] * 2.0) + ops.sum(x[x > 4.5])
    ty = (tx[torch.tensor(idx)] * 2.0).sum() + tx[torch.tensor(mask)].sum()
    y.backward()
    ty.backward()
    assert y.item() == ty.item()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_and_cross_entropy_take_int64_tensors_as_torch(dtype):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((11, 5)).astype(dtype)
    ids = rng.integers(0, 11, (3, 4))
    labels = rng.integers(0, 5, 12)
    tw = torch.tensor(w, requires_grad=True)
    want = torch.nn.functional.cross_entropy(
        torch.nn.functional.embedding(torch.tensor(ids), tw).reshape(12, 5), torch.tensor(labels))
    want.backward()
    lw = tlrs.tensor(w, requires_grad=True)
    got = ops.cross_entropy(ops.reshape(ops.embedding(tlrs.tensor(ids), lw), [12, 5]), tlrs.tensor(labels))
    got.backward()
    tol = 1e-6 if dtype == "float32" else 1e-14
    assert abs(got.item() - want.item()) <= tol
    np.testing.assert_allclose(lw.grad.numpy(), tw.grad.numpy(), rtol=tol, atol=tol)
    # The int64-tensor path and the NumPy-index path are the same computation, bit for bit.
    lw2 = tlrs.tensor(w, requires_grad=True)
    again = ops.cross_entropy(ops.reshape(ops.embedding(ids, lw2), [12, 5]), labels)
    again.backward()
    assert again.item() == got.item()
    np.testing.assert_array_equal(lw2.grad.numpy(), lw.grad.numpy())


def test_index_tensors_out_of_range_raise_index_error():
    w = tlrs.randn(4, 2)
    with pytest.raises(IndexError):
        ops.embedding(tlrs.tensor([0, 4]), w)
    with pytest.raises(IndexError):
        ops.cross_entropy(tlrs.randn(2, 3), tlrs.tensor([0, 3]))
    with pytest.raises(TypeError, match="float32 Tensor"):
        ops.embedding(tlrs.tensor([0.0, 1.0], dtype="float32"), w)


def test_selection_ops_return_int64_tensors_the_index_ops_take():
    x = tlrs.tensor([[0.1, 0.9, 0.3], [0.7, 0.2, 0.1]])
    i = ops.argmax(x, 1)
    assert i.dtype == "int64" and i.numpy().tolist() == [1, 0]
    w = tlrs.tensor(np.eye(3))
    np.testing.assert_array_equal(ops.embedding(i, w).numpy(), np.eye(3)[[1, 0]])
    assert ops.one_hot(i, 3).dtype == "int64"
    tlrs.manual_seed(0)
    assert ops.multinomial(x, 2).dtype == "int64"


class _TinyLM(nn.Module):
    def __init__(self, vocab: int, d: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(ops.gelu(self.wte(ids)))


def _lm_loss(model, ids, labels):
    logits = model(ids)
    return ops.cross_entropy(ops.reshape(logits, [-1, logits.shape[-1]]), ops.reshape(labels, [-1]))


def _eager_and_compiled(vocab, width, batch, t):
    """A tiny LM over int64 ids and labels [batch, t], as an eager and a compiled module."""
    tlrs.manual_seed(0)
    defn = nn.to_module_def(_TinyLM(vocab, width), _lm_loss, [[batch, t], [batch, t]],
                            input_dtypes=["int64", "int64"])
    return [tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend=b)) for b in ("eager", "compiled")]


def test_token_ids_and_labels_are_graph_inputs_of_the_compiled_backend():
    vocab, batch, t = 13, 4, 6
    eager, compiled = _eager_and_compiled(vocab, 8, batch, t)
    rng = np.random.default_rng(1)
    # A fresh batch each step: the graph must read it, not the trace's values.
    batches = [[tlrs.tensor(rng.integers(0, vocab, (batch, t))), rng.integers(0, vocab, (batch, t))]
               for _ in range(5)]
    opt = optim.adamw(0.05, 0.01, 0.9, 0.999, 1e-8)
    _, le = eager.train_steps(opt, eager.init_optim(opt), batches)
    _, lc = compiled.train_steps(opt, compiled.init_optim(opt), batches)
    assert le == lc and len(set(le)) == len(le)
    assert [p.numpy().tobytes() for p in eager.params()] == [p.numpy().tobytes() for p in compiled.params()]
    assert compiled.forward(batches[0]).item() == eager.forward(batches[0]).item()
    with pytest.raises(tlrs.DTypeError, match="input 0: expected integer values"):
        compiled.forward([np.zeros((batch, t)), np.zeros((batch, t), dtype=np.int64)])


def test_ignored_labels_count_for_nothing_eager_compiled_and_as_torch():
    """ignore_index inside the fused cross-entropy: eager and compiled give the same bits on
    batches whose ignored rows move from step to step, and match torch's loss and gradient."""
    vocab, batch, t = 7, 3, 5
    eager, compiled = _eager_and_compiled(vocab, 6, batch, t)
    rng = np.random.default_rng(2)
    batches = []
    for _ in range(4):
        labels = rng.integers(0, vocab, (batch, t))
        labels[rng.random((batch, t)) < 0.3] = -100
        batches.append([tlrs.tensor(rng.integers(0, vocab, (batch, t))), tlrs.tensor(labels)])
    opt = optim.sgd(0.5)
    _, le = eager.train_steps(opt, eager.init_optim(opt), batches)
    _, lc = compiled.train_steps(opt, compiled.init_optim(opt), batches)
    assert le == lc and len(set(le)) == len(le)

    x = np.random.default_rng(3).standard_normal((6, 4))
    y = np.array([1, -100, 3, 0, -100, 2])
    for labels in (tlrs.tensor(y), y):
        lx = tlrs.tensor(x, requires_grad=True)
        got = ops.cross_entropy(lx, labels)
        (g,) = tlrs.grad(got, [lx])
        tx = torch.tensor(x, requires_grad=True)
        want = torch.nn.functional.cross_entropy(tx, torch.tensor(y))
        want.backward()
        assert abs(got.item() - want.item()) <= 1e-15
        np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), rtol=1e-14, atol=1e-16)
        assert (g.numpy()[[1, 4]] == 0).all()
    assert np.isnan(ops.cross_entropy(tlrs.tensor(x), np.full(6, 5), ignore_index=5).item())  # nothing counted
    with pytest.raises(IndexError):  # a label neither in range nor ignored
        ops.cross_entropy(tlrs.tensor(x), tlrs.tensor(np.array([1, -1, 3, 0, 2, 2])))


def test_compiled_replays_comparisons_on_each_steps_values():
    def loss(params, xs):
        (w,), (x,) = params, xs
        h = ops.matmul(x, w)
        return ops.sum((h > 0.0).to(h.dtype) * h)  # a ReLU written with a comparison

    defn = tlrs.ModuleDef([[3, 2]], [[3]], loss, init_params=[np.array([[1.0, -1.0], [0.5, 2.0], [-1.0, 0.3]])])
    eager = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
    compiled = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend="compiled"))
    for x in ([[1.0, 2.0, 3.0]], [[-1.0, 0.5, -2.0]]):
        assert eager.forward([np.array(x)]).item() == compiled.forward([np.array(x)]).item()
        ge, gc = eager.backward([np.array(x)]), compiled.backward([np.array(x)])
        np.testing.assert_array_equal(ge[0].numpy(), gc[0].numpy())


@pytest.mark.cuda
@pytest.mark.skipif(not tlrs.cuda.is_available(), reason="no usable CUDA device (or emulator)")
def test_integer_and_bool_tensors_on_cuda_match_the_cpu():
    a = np.arange(-6, 18).reshape(2, 3, 4)
    t, d = tlrs.tensor(a), tlrs.tensor(a, device="cuda")
    assert d.device == "cuda:0" and d.dtype == "int64" and d.numpy().tolist() == a.tolist()
    for f in (lambda x: ops.permute(x, [2, 0, 1]), lambda x: x[:, 1:, ::2], lambda x: ops.cat([x, x], 1),
              lambda x: ops.index_select(x, 2, tlrs.tensor([3, 0])), lambda x: ops.unsqueeze(x, 0).expand(2, 2, 3, 4)):
        y = f(d)
        assert y.device == "cuda:0" and y.numpy().tolist() == f(t).numpy().tolist()
    assert (d > 3).numpy().tolist() == (a > 3).tolist()
    assert d.to("float64").device == "cuda:0" and d.to("float64").numpy().tolist() == a.astype(float).tolist()
    w = tlrs.tensor(np.random.default_rng(0).standard_normal((24, 5)))
    d, t = tlrs.tensor(a + 6, device="cuda"), tlrs.tensor(a + 6)  # ids in range
    np.testing.assert_array_equal(ops.embedding(d, w.to("cuda")).numpy(),
                                  ops.embedding(t, w).numpy())
    m = tlrs.tensor([[True, False], [False, True]], device="cuda")
    assert m.dtype == "bool" and m.numpy().tolist() == [[True, False], [False, True]]
    with pytest.raises(tlrs.DTypeError, match="expected a float32 or float64 tensor"):
        ops.sum(d)
