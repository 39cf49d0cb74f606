"""Checks that need a real GPU, marked `gpu`: scripts/gpu-check.sh runs them on the device;
scripts/test deselects them (the CUDA emulator has no NCCL, and PyTorch cannot read emulator
memory as CUDA memory). NCCL at world size 1, and DLPack with PyTorch's CUDA tensors."""

from __future__ import annotations

import numpy as np
import pytest

import tlrs
from tlrs import _core

pytestmark = pytest.mark.gpu


def _comm():
    ok, why = _core.nccl_probe()
    assert ok, why
    return _core.NcclComm(0, 1, 0, _core.nccl_unique_id())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nccl_collectives_at_world_size_1(dtype):
    comm = _comm()
    assert (comm.rank, comm.size) == (0, 1)
    x = np.arange(12, dtype=dtype).reshape(3, 4) - 5.5
    t = tlrs.tensor(x, device="cuda")
    g = comm.all_gather(t)
    assert g.shape == [1, 3, 4] and g.device == "cuda:0"
    np.testing.assert_array_equal(g.numpy()[0], x)
    np.testing.assert_array_equal(comm.broadcast(t, 0).numpy(), x)
    np.testing.assert_array_equal(comm.all_reduce_sum(t).numpy(), x)


def test_nccl_refuses_cpu_tensors():
    with pytest.raises(tlrs.DeviceError, match="expected a CUDA tensor"):
        _comm().all_gather(tlrs.tensor([1.0]))


def test_dlpack_with_torch_cuda_tensors_shares_device_memory():
    import torch

    assert torch.cuda.is_available()
    x = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3) * 3
    t = tlrs.from_dlpack(x)
    assert t.device == "cuda:0" and t.data_ptr() == x.data_ptr()
    np.testing.assert_array_equal((t + 1.0).numpy(), (x + 1).cpu().numpy())
    back = torch.from_dlpack(t * 2.0)
    assert back.is_cuda
    np.testing.assert_array_equal(back.cpu().numpy(), (x * 2).cpu().numpy())
