"""Differential tests of the compiled backend against eager on adversarial losses: for every loss,
the compiled module either refuses at instantiation (TraceError naming the reason) or equals
eager bit for bit on three different batches (loss, gradients, parameters after three steps).
There is no third outcome. Each loss is also marked with the outcome it must have, so a
refusal that stops happening (or a loss that stops compiling) is noticed too."""

import math

import numpy as np
import pytest

import tlrs
from tlrs import Options, TraceError, ops
from tlrs.random import training_step

N, D, C = 5, 4, 3
PARAM_SHAPES = [[D, C], [C]]
INPUT_SHAPES = [[N, D], [N, C]]
CONST_LABELS = [0, 2, 1, 1, 0]
CONST_MASK = np.array([[True, False, True], [False, False, True], [True, True, False],
                       [False, True, False], [True, False, False]])


def _z(ps, xs):
    return ops.matmul(xs[0], ps[0]) + ps[1]


def _counter():
    calls = [0]

    def loss(ps, xs):
        calls[0] += 1
        return ops.sum(_z(ps, xs)) * float(calls[0])

    return loss


def _gradient_penalty(ps, xs):
    z = _z(ps, xs)
    (g,) = tlrs.grad(ops.sum(z * z), [ps[0]])
    return ops.sum(z) + ops.sum(g)


def _no_grad_scale(ps, xs):
    with tlrs.no_grad():
        scale = ops.mean(ops.abs(xs[0]))
    return ops.sum(_z(ps, xs) * scale)


# name -> (loss, whether it must compile)
REFUSED = {
    "labels_from_numpy_argmax": lambda ps, xs: ops.cross_entropy(_z(ps, xs), np.argmax(xs[1].numpy(), -1)),
    "labels_from_asarray": lambda ps, xs: ops.cross_entropy(_z(ps, xs), np.asarray(xs[1]).argmax(1)),
    "labels_from_tolist": lambda ps, xs: ops.cross_entropy(
        _z(ps, xs), [int(np.argmax(r)) for r in xs[1].tolist()]),
    "mask_from_numpy": lambda ps, xs: ops.sum(ops.masked_fill(_z(ps, xs), xs[1].numpy() > 0.5, 0.0)),
    "mask_value_from_item": lambda ps, xs: ops.sum(
        ops.masked_fill(_z(ps, xs), CONST_MASK, ops.mean(xs[0]).item())),
    "exponent_from_item": lambda ps, xs: ops.sum(ops.pow(ops.abs(_z(ps, xs)), ops.mean(xs[0]).item())),
    "clamp_max_from_float": lambda ps, xs: ops.sum(ops.clamp(_z(ps, xs), None, float(ops.max(xs[0])))),
    "clamp_bounds_from_item": lambda ps, xs: ops.sum(
        ops.clamp(_z(ps, xs), ops.mean(xs[0]).item() - 1, ops.mean(xs[0]).item() + 1)),
    "slice_end_from_item": lambda ps, xs: ops.sum(
        ops.slice(_z(ps, xs), 1, 0, int(abs(ops.sum(xs[0]).item() * 10)) % C + 1)),
    "index_select_from_argsort": lambda ps, xs: ops.sum(
        ops.index_select(_z(ps, xs), 0, np.argsort(xs[0].numpy()[:, 0]))),
    "gather_from_data": lambda ps, xs: ops.sum(
        ops.gather(_z(ps, xs), 1, np.argmax(xs[1].numpy(), 1).reshape(N, 1))),
    "scatter_add_from_data": lambda ps, xs: ops.sum(ops.scatter_add(
        _z(ps, xs), 1, np.argmax(xs[1].numpy(), 1).reshape(N, 1), ops.slice(xs[1], 1, 0, 1))),
    "embedding_from_data": lambda ps, xs: ops.sum(
        ops.embedding(np.argmax(xs[1].numpy(), 1), ps[0])),
    "python_if_on_item": lambda ps, xs: ops.sum(_z(ps, xs)) if ops.sum(xs[0]).item() > 0
    else ops.mean(_z(ps, xs)),
    "python_if_on_numpy": lambda ps, xs: ops.sum(_z(ps, xs)) if (xs[0].numpy() > 0.3).any()
    else ops.sum(ps[1]),
    "scalar_from_float": lambda ps, xs: ops.sum(_z(ps, xs)) * float(ops.mean(xs[0])),
    "constant_from_numpy_copy": lambda ps, xs: ops.sum(ps[0] * tlrs.tensor(xs[0].numpy()[:D, :C])),
    "constant_from_tolist": lambda ps, xs: ops.sum(ps[1] * tlrs.tensor(xs[1].tolist()[0])),
    "detached_input": lambda ps, xs: ops.sum(_z(ps, xs) * ops.mean(xs[0].detach())),
    "detached_intermediate": lambda ps, xs: ops.sum(_z(ps, xs) * _z(ps, xs).detach()),
    "no_grad_scale": _no_grad_scale,
    "gradient_inside_the_loss": _gradient_penalty,
    "numpy_noise": lambda ps, xs: ops.sum(_z(ps, xs) + tlrs.tensor(np.random.default_rng().normal(size=(N, C)))),
    "tlrs_rand_noise": lambda ps, xs: ops.sum(_z(ps, xs) * tlrs.rand(N, C)),
    "python_counter": None,  # filled per test: a closure with state
    "reshape_from_item": lambda ps, xs: ops.sum(
        ops.reshape(_z(ps, xs), [-1] if ops.sum(xs[0]).item() > 0 else [C, N])),
    "axis_from_item": lambda ps, xs: ops.sum(ops.mean(_z(ps, xs), int(ops.sum(xs[0]).item() > 0))),
    "caught_read": None,  # filled per test: a read whose exception the loss swallows
    "max_index_from_numpy": lambda ps, xs: ops.sum(
        ops.index_select(_z(ps, xs), 1, [int(np.argmax(_z(ps, xs).numpy().sum(0)))])),
}


def _caught_read(ps, xs):
    try:
        k = int(xs[0].numpy().sum() > 0)
    except TraceError:
        k = 0
    return ops.sum(ops.slice(_z(ps, xs), 1, 0, k + 1))


COMPILES = {
    "constant_labels": lambda ps, xs: ops.cross_entropy(_z(ps, xs), CONST_LABELS),
    "one_hot_targets_from_input": lambda ps, xs: ops.cross_entropy(_z(ps, xs), xs[1]),
    "constant_mask": lambda ps, xs: ops.sum(ops.masked_fill(_z(ps, xs), CONST_MASK, -1.5)),
    "constant_exponent_and_bounds": lambda ps, xs: ops.sum(
        ops.pow(ops.clamp(_z(ps, xs), -2.0, 2.0), 2.0)),
    "dropout_with_key": lambda ps, xs: ops.sum(ops.dropout(_z(ps, xs), 0.5, key=7)),
    # In a training step, dropout without a key draws the step's masks in both backends.
    "dropout_without_key": lambda ps, xs: ops.sum(ops.dropout(_z(ps, xs), 0.5)),
    "dropout_on_params_without_key": lambda ps, xs: ops.sum(ops.matmul(xs[0], ops.dropout(ps[0], 0.3))),
    "constant_slices": lambda ps, xs: ops.sum(ops.slice(_z(ps, xs), 1, 1, 3)) + ops.sum(ops.slice(xs[0], 0, 0, 2)),
    "shape_dependent_if": lambda ps, xs: ops.sum(_z(ps, xs)) if xs[0].shape[0] > 3 else ops.mean(_z(ps, xs)),
    "cast_round_trip": lambda ps, xs: ops.sum(_z(ps, xs).to("float32").to("float64")),
    "constant_index_select": lambda ps, xs: ops.sum(ops.index_select(_z(ps, xs), 0, [4, 0, 0, 2])),
    "constant_gather": lambda ps, xs: ops.sum(ops.gather(_z(ps, xs), 1, np.array([[0], [2], [1], [1], [0]]))),
    "constant_scatter_add": lambda ps, xs: ops.sum(ops.scatter_add(
        _z(ps, xs), 1, np.array([[0], [2], [1], [1], [0]]), ops.slice(xs[1], 1, 0, 1))),
    "repr_inside_the_loss": lambda ps, xs: (repr(xs[0]), ops.sum(_z(ps, xs)))[1],
    "max_reduction": lambda ps, xs: ops.sum(ops.max(_z(ps, xs), 1)) + ops.max(xs[0]),
    "detach_of_a_constant": lambda ps, xs: ops.sum(_z(ps, xs) * tlrs.full([N, C], 0.5).detach()),
    "no_grad_on_constants": lambda ps, xs: ops.sum(_z(ps, xs) * _const_under_no_grad()),
    "concat_permute": lambda ps, xs: ops.sum(ops.permute(ops.concat([_z(ps, xs), xs[1]], 1), [1, 0]) ** 2),
    "mse_mean": lambda ps, xs: ops.mse_loss(ops.sigmoid(_z(ps, xs)), xs[1]),
    "transcendental_chain": lambda ps, xs: ops.sum(ops.log(ops.exp(ops.tanh(_z(ps, xs))) + 2.0)),
    "log_softmax_nll_by_one_hot": lambda ps, xs: -ops.sum(ops.log_softmax(_z(ps, xs), 1) * xs[1]) / float(N),
    "python_scalars_from_shapes": lambda ps, xs: ops.sum(_z(ps, xs)) / float(xs[0].shape[0] * math.prod(xs[1].shape)),
    "layer_norm": lambda ps, xs: ops.sum(ops.layer_norm(_z(ps, xs), C) * xs[1]),
}


def _const_under_no_grad():
    with tlrs.no_grad():
        return ops.exp(tlrs.full([N, C], 0.25))


def _batches():
    rng = np.random.default_rng(11)
    out = []
    for lo, hi in ((0.2, 1.0), (-1.0, -0.2), (-2.0, 2.0)):
        x = rng.uniform(lo, hi, size=(N, D))
        y = np.eye(C)[rng.integers(0, C, N)]
        out.append([tlrs.tensor(x), tlrs.tensor(y)])
    return out


def _defn(loss):
    rng = np.random.default_rng(3)
    init = [rng.normal(size=s) for s in PARAM_SHAPES]
    return tlrs.ModuleDef(PARAM_SHAPES, INPUT_SHAPES, loss, init_params=init)


def _bits(ts):
    return [t.numpy().tobytes() for t in ts]


def _outcome(loss_factory):
    """'refused' (with the message) or 'equal'; raises AssertionError on any difference."""
    try:
        compiled = tlrs.instantiate_with_options(_defn(loss_factory()), "float64",
                                                 Options(backend="compiled"))
    except TraceError as err:
        assert str(err).startswith("cannot compile the loss: "), str(err)
        return "refused", str(err)
    eager = tlrs.instantiate_with_options(_defn(loss_factory()), "float64", Options())
    batches = _batches()
    # Each batch as training step i (dropout without a key draws that step's masks).
    for i, b in enumerate(batches):
        with training_step(i):
            assert compiled.forward(b).numpy().tobytes() == eager.forward(b).numpy().tobytes()
        with training_step(i):
            assert _bits(compiled.backward(b)) == _bits(eager.backward(b))
    for i, b in enumerate(batches):
        with training_step(i):
            compiled.step(0.1, b)
        with training_step(i):
            eager.step(0.1, b)
    assert _bits(compiled.params()) == _bits(eager.params())
    return "equal", ""


def _factory(name, loss):
    if name == "python_counter":
        return _counter
    if name == "caught_read":
        return lambda: _caught_read
    return lambda: loss


def test_the_suite_is_large_enough():
    assert len(REFUSED) + len(COMPILES) >= 40


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_value_dependent_loss_is_refused_at_instantiation(name):
    outcome, message = _outcome(_factory(name, REFUSED[name]))
    assert outcome == "refused", f"{name} compiled (and matched eager on these batches)"
    assert message


@pytest.mark.parametrize("name", sorted(COMPILES))
def test_a_sound_loss_compiles_and_equals_eager_bit_for_bit(name):
    outcome, message = _outcome(_factory(name, COMPILES[name]))
    assert outcome == "equal", message


def test_refusals_name_the_reason():
    messages = {n: _outcome(_factory(n, REFUSED[n]))[1] for n in
                ("labels_from_numpy_argmax", "detached_input", "tlrs_rand_noise", "python_counter")}
    assert "reads tensor values in Python (Tensor.numpy())" in messages["labels_from_numpy_argmax"]
    assert "without autograd" in messages["detached_input"]
    assert "constant that changed with the inputs" in messages["tlrs_rand_noise"]
    assert "constant that changed with the inputs" in messages["python_counter"]


def test_an_attribute_that_differs_between_traces_is_named():
    # Random labels drawn in Python (not from the inputs): only the second trace can tell.
    rng = np.random.default_rng(0)
    loss = lambda ps, xs: ops.cross_entropy(_z(ps, xs), rng.integers(0, C, N))  # noqa: E731
    outcome, message = _outcome(lambda: loss)
    assert outcome == "refused"
    assert "(cross_entropy): its attribute `target` differs between two traces" in message


def test_cast_nodes_record_their_target_dtype():
    defn = tlrs.ModuleDef([[3]], [[3]], lambda ps, xs: ops.sum(
        (ps[0] * xs[0]).to("float64").to("float32")))
    m = tlrs.instantiate_with_options(defn, "float32", Options(backend="compiled"))
    text = m._compiled.describe()
    assert text.count("cast(") == 2
    x = [tlrs.tensor([1.5, -2.0, 0.25], dtype="float32")]
    eager = tlrs.instantiate_with_options(defn, "float32", Options())
    assert m.forward(x).numpy().tobytes() == eager.forward(x).numpy().tobytes()
    assert m.forward(x).dtype == "float32"
