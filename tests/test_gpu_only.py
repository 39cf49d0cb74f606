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
    from tlrs.distributed import _nccl

    ok, why = _nccl.probe()  # loads pip's NCCL first, as init(backend="nccl") does
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


def _mapped(prefix: str) -> set[str]:
    """Files named prefix* mapped into this process."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if len(line.split()) >= 6}
    return {p for p in paths if p.rsplit("/", 1)[-1].startswith(prefix)}


def test_one_nccl_copy_is_mapped_and_the_probe_names_it():
    # A second libnccl in the process (a system one beside pip's) made every collective fail
    # with "corrupted comm object": tlrs must use the copy already loaded.
    from tlrs.distributed import _nccl

    comm = _comm()
    ok, what = _nccl.probe()
    assert ok, what
    comm.all_reduce_sum(tlrs.tensor([1.0, 2.0], device="cuda")).numpy()
    copies = _mapped("libnccl.so")
    assert len(copies) == 1, copies
    assert what.endswith(f"({copies.pop()})"), what


def test_nccl_refuses_cpu_tensors():
    with pytest.raises(tlrs.DeviceError, match="expected tensors on a CUDA device"):
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
