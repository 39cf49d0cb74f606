"""Data parallelism over MPI (`from tlrs import distributed`).

Launch N processes with `mpiexec -n N python train.py`; each calls `distributed.init()`.
Collectives (`barrier`, `all_reduce`, `broadcast`, `all_gather`) move CPU tensors through
mpi4py with a deadline (`timeout=`, default $TLRS_DIST_TIMEOUT or 60 s), so a rank that dies
makes the others fail with a message instead of hanging. `DistributedTrainer` trains a
`tlrs.Module` with results that do not depend on the world size (see docs/scaling-out.md).
Needs `pip install mpi4py mpich` (or mpi4py against another MPI); `init(backend="nccl")` adds
NCCL for CUDA tensors (`pip install nvidia-nccl-cu13`).
"""

from ._comm import (
    DEFAULT_TIMEOUT,
    TIMEOUT_ENV,
    CollectiveTimeoutError,
    DistributedError,
    MPIUnavailableError,
    NotInitializedError,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    init,
    is_initialized,
    launcher_env,
    local_rank,
    rank,
    shutdown,
    world_size,
)
from .trainer import DistributedTrainer, data_parallel, fold_shards

__all__ = [
    "DEFAULT_TIMEOUT",
    "TIMEOUT_ENV",
    "CollectiveTimeoutError",
    "DistributedError",
    "DistributedTrainer",
    "MPIUnavailableError",
    "NotInitializedError",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "data_parallel",
    "fold_shards",
    "init",
    "is_initialized",
    "launcher_env",
    "local_rank",
    "rank",
    "shutdown",
    "world_size",
]
