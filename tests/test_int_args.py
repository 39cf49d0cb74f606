"""Integer arguments out of range are ValueErrors naming the argument, never OverflowError."""

import pytest

import tlrs
from tlrs import ops


@pytest.mark.parametrize("call, name", [
    (lambda t: t.sum(2**63), "dim"), (lambda t: t.mean(-2**70), "dim"), (lambda t: t.max(2**64), "dim"),
    (lambda t: t.transpose(2**63, 0), "dim0"), (lambda t: t.softmax(2**63), "dim"),
    (lambda t: t.log_softmax(-2**64), "dim"), (lambda t: t.cuda(2**64), "device"),
    (lambda t: t.reshape(2**64), "reshape"), (lambda t: tlrs.zeros(2**70), "shape"),
    (lambda t: tlrs.random.lcg_units(-1, 3), "seed"), (lambda t: tlrs.random.shuffle_permutation(1, 2**63), "n"),
    (lambda t: tlrs.manual_seed(-3), "seed"), (lambda t: tlrs.init.layer_init("uniform", [2**64]), "shape"),
])
def test_out_of_range_integers_are_value_errors_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call(tlrs.ones(2, 3))


@pytest.mark.parametrize("call, text", [
    (lambda: ops.sum(tlrs.ones(2), 2**63), "sum: dim=9223372036854775808 is out of range (expected an integer in [-2**63, 2**63))"),
    (lambda: ops.slice(tlrs.ones(2), 0, 2**64, 1), "slice: start=18446744073709551616 is out of range"),
    (lambda: ops.avg_pool2d(tlrs.ones(1, 1, 2, 2), -1), "avg_pool2d: kernel_size=-1 is out of range (expected an integer in [0, 2**63))"),
    (lambda: ops.conv2d(tlrs.ones(1, 1, 3, 3), tlrs.ones(1, 1, 1, 1), padding=-1), "conv2d: padding=-1"),
    (lambda: ops.conv2d(tlrs.ones(1, 1, 3, 3), tlrs.ones(1, 1, 1, 1), stride=-1), "conv2d: stride=-1"),
    (lambda: ops.dropout(tlrs.ones(2), 0.5, key=2**64), "dropout: key=18446744073709551616 is out of range (expected an integer in [0, 2**64))"),
    (lambda: ops.dropout(tlrs.ones(2), 0.5, key=-1), "dropout: key=-1"),
    (lambda: ops.softmax(tlrs.ones(2), -2**70), "softmax: dim=-1180591620717411303424"),
    (lambda: ops.flatten(tlrs.ones(2), 2**64), "flatten: start_dim="),
    (lambda: ops.reshape(tlrs.ones(2), [2**64]), "reshape: shape[0]="),
    (lambda: tlrs.ones(2).flatten(0, 2**63), "end_dim=9223372036854775808"),
    (lambda: tlrs.ones(2, 2).permute(0, -2**64), "dims[1]=-18446744073709551616"),
    (lambda: tlrs.init.FloatInit.uniform(0.0, 1.0, seed=-1), "seed=-1 is out of range (expected an integer in [0, 2**64))"),
    (lambda: tlrs.init.FloatInit.xavier_uniform(2**63, 1), "fan_in=9223372036854775808"),
    (lambda: tlrs.init.FloatInit.kaiming_uniform(1, 2**64), "seed=18446744073709551616"),
    (lambda: tlrs.init.FloatInit.zeros().values([2, -1]), "shape[1]=-1"),
    (lambda: tlrs.init.Plan([[2, 2**64]], [tlrs.init.FloatInit.zeros()]), "param_shapes[0][1]="),
    (lambda: tlrs.init.kaiming_linear_weight(-1, 2), "out_dim=-1"),
    (lambda: tlrs.init.xavier_linear_weight(2, 2**70), "in_dim="),
    (lambda: tlrs.init.kaiming_uniform_for_shape([2, -3]), "shape[1]=-3"),
    (lambda: tlrs.init.xavier_uniform_for_shape([2, 2], seed=2**64), "seed="),
    (lambda: tlrs.init.fan_in_out([-1]), "shape[0]=-1"),
    (lambda: tlrs.random.splitmix64(-1), "x=-1"),
    (lambda: tlrs.random.next_seed(1, 2**64), "counter="),
    (lambda: tlrs.random.key_of(-1, 0), "seed=-1"),
    (lambda: tlrs.random.runtime_init_unit(0, -1), "index=-1"),
    (lambda: tlrs.random.set_seed_stream_state(0, -1), "counter must be an integer in [0, 18446744073709551616)"),
])
def test_integer_arguments_name_the_argument_and_its_range(call, text):
    with pytest.raises(ValueError) as info:
        call()
    assert text in str(info.value)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, -1])
def test_dim_0_and_minus_1_of_a_0d_tensor_act_as_in_pytorch(op, dim):
    torch = pytest.importorskip("torch")
    for v in [2.5, float("nan"), -float("inf")]:
        x = tlrs.tensor(v, requires_grad=True)
        y = getattr(ops, op)(x, dim)
        (g,) = tlrs.grad(y, [x])
        tx = torch.tensor(v, dtype=torch.float64, requires_grad=True)
        ty = getattr(torch, op)(tx, dim)
        ty = ty.values if op == "max" else ty
        ty.backward()
        assert y.shape == [] and y.numpy().tobytes() == ty.detach().numpy().tobytes(), (op, v)
        assert g.numpy().tobytes() == tx.grad.numpy().tobytes(), (op, v)


def test_other_dims_of_a_0d_tensor_say_it_has_no_axes():
    for call in [lambda t: ops.sum(t, 1), lambda t: ops.transpose(t, 0, 1),
                 lambda t: ops.slice(t, 0, 0, 1), lambda t: ops.softmax(t, -2)]:
        with pytest.raises(ValueError, match="a 0-d tensor has no axes"):
            call(tlrs.tensor(2.0))


def test_in_range_integers_still_work():
    t = tlrs.ones(2, 3)
    assert t.sum(1).tolist() == [3.0, 3.0] and t.sum(-1).tolist() == [3.0, 3.0]
    assert t.transpose(0, 1).shape == [3, 2] and t.sum().item() == 6.0
