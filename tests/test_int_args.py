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


@pytest.mark.parametrize("call", [lambda: ops.sum(tlrs.ones(2), 2**63), lambda: ops.slice(tlrs.ones(2), 0, 2**64, 1),
                                  lambda: ops.avg_pool2d(tlrs.ones(1, 1, 2, 2), -1),
                                  lambda: ops.conv2d(tlrs.ones(1, 1, 3, 3), tlrs.ones(1, 1, 1, 1), padding=-1)])
def test_op_functions_name_the_op(call):
    with pytest.raises(ValueError, match="integer argument is out of range"):
        call()


def test_in_range_integers_still_work():
    t = tlrs.ones(2, 3)
    assert t.sum(1).tolist() == [3.0, 3.0] and t.sum(-1).tolist() == [3.0, 3.0]
    assert t.transpose(0, 1).shape == [3, 2] and t.sum().item() == 6.0
