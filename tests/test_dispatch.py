"""The one device dispatch (rust/src/storage.rs): operands on two devices are refused with a
DeviceError naming both, whichever op family; a CPU scalar meeting a device tensor is the one
mix allowed (it is passed to the kernel by value)."""

import numpy as np
import pytest

import tlrs
import tlrs.cuda
from tlrs import layer_ops as L
from tlrs import ops

pytestmark = [pytest.mark.cuda]

MIXED = {
    "add": lambda c, d: ops.add(c, d),
    "maximum": lambda c, d: ops.maximum(c, d),
    "matmul": lambda c, d: ops.matmul(c, ops.transpose(d, 0, 1)),
    "concat": lambda c, d: ops.concat([c, d], 0),
    "scatter_add": lambda c, d: L.scatter_add(c, 1, np.array([[0, 1, 2], [2, 1, 0]]), d),
}


@pytest.fixture()
def pair():
    if not tlrs.cuda.is_available():
        pytest.skip("no usable CUDA device (or emulator)")
    a = np.arange(6.0).reshape(2, 3)
    return tlrs.tensor(a), tlrs.tensor(a, device="cuda")


@pytest.mark.parametrize("name", list(MIXED))
def test_operands_on_two_devices_are_refused_naming_both(name, pair):
    cpu, dev = pair
    with pytest.raises(tlrs.DeviceError, match=r"cpu and cuda:0|cuda:0 and cpu"):
        MIXED[name](cpu, dev)


def test_a_cpu_scalar_joins_a_device_tensor(pair):
    _, dev = pair
    s = tlrs.tensor(np.array(2.0).reshape(()))
    assert list(s.shape) == []
    y = ops.mul(dev, s)
    assert y.device == "cuda:0"
    assert y.numpy().tolist() == (np.arange(6.0).reshape(2, 3) * 2).tolist()
