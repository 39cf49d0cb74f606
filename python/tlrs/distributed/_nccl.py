"""The NCCL transport for CUDA tensors (`init(backend="nccl")`): MPI starts the world and
carries the NCCL unique id; each rank joins one NCCL communicator on cuda:<local rank>; the
collectives on CUDA tensors then move device memory through NCCL. `all_reduce(ordered=True)`
gathers and folds in rank order on the device (the same bits at every world size); the
unordered sum is NCCL's own."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core, ops
from .._core import CudaUnavailableError, Tensor

_FOLD = {"sum": ops.add, "prod": ops.mul, "min": ops.minimum, "max": ops.maximum}


def probe() -> tuple[bool, str]:
    """(usable, NCCL version or the reason it is not), after loading pip's NCCL library."""
    from ..cuda import _preload_pip_libraries

    _preload_pip_libraries()
    ok, what = _core.nccl_probe()
    return bool(ok), str(what)


def join(prefix: str, rank: int, size: int, local_rank: int,
         gather: Any, broadcast: Any) -> Any:
    """This rank's communicator. Every rank probes first and the results are exchanged over
    MPI (`gather`, `broadcast`: the array collectives), so all ranks fail together, each
    naming its own reason, instead of some waiting for the others.

    Raises: CudaUnavailableError: NCCL or CUDA not usable on some rank.
    """
    ok, why = probe()
    oks = gather(np.array([int(ok)], dtype=np.int64), "init (NCCL probe)")[:, 0]
    if not oks.all():
        bad = [r for r in range(size) if not oks[r]]
        mine = f"; this rank: {why}" if not ok else ""
        raise CudaUnavailableError(f"{prefix}: backend 'nccl' cannot be used on rank(s) {bad}{mine}")
    uid = np.frombuffer(_core.nccl_unique_id(), np.uint8) if rank == 0 else np.zeros(128, np.uint8)
    uid = broadcast(uid, 0, "init (NCCL unique id)")
    return _core.NcclComm(local_rank, size, rank, bytes(uid.tobytes()))


def is_device_tensor(t: Any) -> bool:
    return isinstance(t, Tensor) and t.device != "cpu"


def _row(g: Tensor, r: int, shape: list[int]) -> Tensor:
    return ops.reshape(ops.slice(g, 0, r, r + 1), shape)


def all_reduce(comm: Any, t: Tensor, op: str, ordered: bool) -> Tensor:
    if op == "sum" and not ordered:
        out: Tensor = comm.all_reduce_sum(t)
        return out
    g = comm.all_gather(t)
    acc = _row(g, 0, list(t.shape))
    for r in range(1, comm.size):
        acc = _FOLD[op](acc, _row(g, r, list(t.shape)))
    return acc


def broadcast(comm: Any, t: Tensor, root: int) -> Tensor:
    out: Tensor = comm.broadcast(t, root)
    return out


def all_gather(comm: Any, t: Tensor) -> list[Tensor]:
    g = comm.all_gather(t)
    return [_row(g, r, list(t.shape)) for r in range(comm.size)]
