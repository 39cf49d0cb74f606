"""Process groups over MPI: the launcher's environment, `init`, and deadline-bounded collectives
on tlrs tensors (through mpi4py buffers of the tensors' NumPy copies)."""

from __future__ import annotations

import atexit
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np

from .._core import Tensor
from ..errors import DTypeError, ShapeError
from ..tensor import from_numpy
from . import _nccl

__all__ = [
    "CollectiveTimeoutError", "DistributedError", "MPIUnavailableError", "NotInitializedError",
    "all_gather", "all_reduce", "barrier", "broadcast", "init", "is_initialized", "local_rank",
    "rank", "shutdown", "world_size",
]

DEFAULT_TIMEOUT = 60.0
TIMEOUT_ENV = "TLRS_DIST_TIMEOUT"
_MAX_DIMS = 16
_SPIN = 0.05  # seconds a wait polls without sleeping
_ABORT_GRACE = 0.3  # seconds between a rank's last output and its MPI_Abort (see _abort)
_PREFIX = "tlrs.distributed"
# dtype codes in the metadata exchange; 0 means "not a tensor tlrs can send".
_DTYPE_CODES = {"float32": 1, "float64": 2, "int64": 3, "uint8": 4}
_DTYPE_NAMES = {v: k for k, v in _DTYPE_CODES.items()}
_OPS = ("barrier", "all_reduce", "broadcast", "all_gather")
_REDUCE_OPS = ("sum", "prod", "min", "max")
_NP_FOLD: dict[str, np.ufunc] = {
    "sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


class DistributedError(RuntimeError):
    """A process-group failure: not initialized, a launcher/MPI disagreement, ranks that called
    different collectives, or a collective that could not complete."""


class MPIUnavailableError(DistributedError, ImportError):
    """mpi4py (or the MPI library it loads) cannot be imported."""


class NotInitializedError(DistributedError):
    """A call that needs `tlrs.distributed.init()` first."""


class CollectiveTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within its deadline (a rank died, hung or never called it)."""


@dataclass
class _World:
    MPI: Any
    comm: Any
    rank: int
    size: int
    local_rank: int
    timeout: float
    seq: int = 0
    broken: str | None = None
    nccl: Any = None  # the NCCL communicator (backend "nccl"), for CUDA tensors


_world: _World | None = None
_saved_hook: Callable[[type[BaseException], BaseException, TracebackType | None], Any] | None = None
_atexit_registered = False


def _where(w: _World) -> str:
    return f"{_PREFIX}: rank {w.rank} of {w.size}"


def _parse_timeout(timeout: float | None, what: str = "timeout") -> float:
    if timeout is None:
        raw = os.environ.get(TIMEOUT_ENV)
        if raw is None or raw.strip() == "":
            return DEFAULT_TIMEOUT
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{_PREFIX}: {TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
        what = TIMEOUT_ENV
    else:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"{_PREFIX}: {what} must be a number of seconds, got {timeout!r}")
        value = float(timeout)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{_PREFIX}: {what} must be a positive, finite number of seconds, "
                         f"got {value!r}")
    return value


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise DistributedError(f"{_PREFIX}: the launcher's environment has {name}={raw!r}, "
                               "which is not an integer") from None
    if value < 0:
        raise DistributedError(f"{_PREFIX}: the launcher's environment has {name}={value}, "
                               "which is negative")
    return value


# (rank variable, size variable) pairs that launchers set: MPICH/Intel MPI (hydra, PMI),
# Open MPI, and torchrun-style variables (MPI must still be the transport).
_LAUNCHER_VARS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                  ("RANK", "WORLD_SIZE"))
_LOCAL_RANK_VARS = ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")


def launcher_env() -> dict[str, tuple[int | None, int | None]]:
    """The ranks and sizes the launcher's environment announces: {'PMI': (rank, size), ...} for
    each set of variables present (PMI_*, OMPI_COMM_WORLD_*, RANK/WORLD_SIZE).

    Raises: DistributedError: a variable that is not a non-negative integer.
    """
    found = {}
    for rank_var, size_var in _LAUNCHER_VARS:
        r, s = _env_int(rank_var), _env_int(size_var)
        if r is not None or s is not None:
            found[f"{rank_var}/{size_var}"] = (r, s)
    return found


def _import_mpi() -> Any:
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as e:
        raise MPIUnavailableError(
            f"{_PREFIX}: the MPI backend needs mpi4py and an MPI library: "
            f"pip install mpi4py mpich (importing mpi4py failed: {e})") from e
    return MPI


def _check_launcher(mpi_rank: int, mpi_size: int) -> None:
    for names, (r, s) in launcher_env().items():
        rank_var, size_var = names.split("/")
        if s is not None and s != mpi_size:
            hint = (f"launch with mpiexec -n {s} python ... (torchrun and other launchers that "
                    "only set RANK/WORLD_SIZE do not provide an MPI transport)"
                    if mpi_size == 1 else "the environment and the MPI library disagree; "
                    "check that mpiexec comes from the same MPI as mpi4py")
            raise DistributedError(f"{_PREFIX}: the launcher's environment says {size_var}={s}, "
                                   f"but MPI sees {mpi_size} process(es): {hint}")
        if r is not None and r != mpi_rank:
            raise DistributedError(f"{_PREFIX}: the launcher's environment says {rank_var}={r}, "
                                   f"but MPI gives this process rank {mpi_rank} (of {mpi_size})")
        if r is not None and s is not None and r >= s:
            raise DistributedError(f"{_PREFIX}: the launcher's environment says {rank_var}={r} "
                                   f"with {size_var}={s}; a rank must be below the size")


def _local_rank(rank: int, size: int) -> int:
    for name in _LOCAL_RANK_VARS:
        value = _env_int(name)
        if value is not None:
            return value
    return 0 if size == 1 else rank


def init(backend: str = "auto", *, timeout: float | None = None,
         abort_on_exception: bool = True) -> None:
    """Join the process group the launcher started (`mpiexec -n N python train.py`).

    Args: backend: "auto" or "mpi" (MPI through mpi4py: CPU tensors, and CUDA tensors through
    host copies), or "nccl" (MPI as above, plus NCCL for CUDA tensors on device memory: each rank
    uses cuda:<local rank>; needs a GPU per rank and libnccl, `pip install nvidia-nccl-cu13`);
    timeout: seconds each collective waits for the other ranks (default $TLRS_DIST_TIMEOUT,
    else 60; NCCL's device-side waits are NCCL's own); abort_on_exception: with more than one
    rank, an uncaught exception on any rank prints its traceback and one line, then MPI_Abort
    ends every rank (instead of the others waiting for it until their deadline). A plain
    `python train.py` is a world of one. Calling `init` again while initialized changes nothing.
    Raises: CudaUnavailableError: backend "nccl" where NCCL or CUDA cannot be used (on any
    rank; every rank raises); ValueError: an unknown backend or a bad timeout;
    MPIUnavailableError: mpi4py missing; DistributedError: the launcher's environment
    (PMI_RANK/PMI_SIZE, OMPI_COMM_WORLD_RANK/SIZE, RANK/WORLD_SIZE) disagrees with MPI, or the
    group could not be set up in time.
    """
    global _world
    name = backend.lower() if isinstance(backend, str) else backend
    if name not in ("auto", "mpi", "nccl"):
        raise ValueError(f"{_PREFIX}: unknown backend {backend!r}; expected 'auto', 'mpi' or "
                         "'nccl'")
    wait = _parse_timeout(timeout)
    if _world is not None:
        return
    MPI = _import_mpi()
    if not MPI.Is_initialized():
        MPI.Init()
    world_comm = MPI.COMM_WORLD
    mpi_rank, mpi_size = int(world_comm.Get_rank()), int(world_comm.Get_size())
    _check_launcher(mpi_rank, mpi_size)
    w = _World(MPI, world_comm, mpi_rank, mpi_size, _local_rank(mpi_rank, mpi_size), wait)
    # A private communicator keeps tlrs's traffic apart from the program's own MPI calls;
    # duplicating it is itself a collective, so it gets the same deadline.
    try:
        comm, req = world_comm.Idup()
    except (AttributeError, NotImplementedError, MPI.Exception):
        comm = world_comm
    else:
        _wait(w, req, "init", wait)
    w.comm = comm
    _world = w
    if name == "nccl":
        try:
            w.nccl = _nccl.join(_PREFIX, w.rank, w.size, w.local_rank, gather_arrays,
                                broadcast_array)
        except BaseException:
            _world = None
            raise
    if abort_on_exception:
        _install_abort_hooks()


def _install_abort_hooks() -> None:
    global _saved_hook, _atexit_registered
    if _saved_hook is None:
        _saved_hook = sys.excepthook
        sys.excepthook = _abort_excepthook
    if not _atexit_registered:
        atexit.register(_abort_if_broken)
        _atexit_registered = True


def _abort_excepthook(tp: type[BaseException], value: BaseException,
                      tb: TracebackType | None) -> None:
    hook = _saved_hook if _saved_hook is not None else sys.__excepthook__
    hook(tp, value, tb)
    w = _world
    if w is not None and w.size > 1:
        print(f"{_where(w)}: uncaught {tp.__name__}; aborting all {w.size} ranks (MPI_Abort)",
              file=sys.stderr, flush=True)
        _abort(w)


def _abort_if_broken() -> None:
    # A collective left pending (timed out) would make MPI_Finalize wait forever.
    w = _world
    if w is not None and w.broken is not None and w.size > 1:
        print(f"{_where(w)}: exiting after a failed collective; aborting all {w.size} ranks "
              "(MPI_Abort)", file=sys.stderr, flush=True)
        _abort(w)


def _abort(w: _World) -> None:
    """MPI_Abort, and leave even where the launcher lets it return (no MPI_Finalize, which
    would wait for the missing ranks). A short pause first: the launcher forwards each rank's
    output through pipes, and an abort that follows the last line at once can tear the job down
    before that line is forwarded (seen: a killed-rank run under MPICH ended with no output)."""
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(_ABORT_GRACE)
    try:
        w.MPI.COMM_WORLD.Abort(1)
    finally:
        os._exit(1)


def is_initialized() -> bool:
    """Whether `init` has been called (and `shutdown` not since)."""
    return _world is not None


def _get(what: str) -> _World:
    if _world is None:
        raise NotInitializedError(f"{_PREFIX}.{what}: not initialized; call "
                                  "tlrs.distributed.init() first (launch with mpiexec -n N)")
    if _world.broken is not None:
        raise DistributedError(f"{_PREFIX}.{what}: the process group is unusable after an "
                               f"earlier failure ({_world.broken})")
    return _world


def rank() -> int:
    """This process's rank, 0 .. world_size()-1. Raises: NotInitializedError."""
    return _get("rank").rank


def world_size() -> int:
    """The number of processes in the group. Raises: NotInitializedError."""
    return _get("world_size").size


def local_rank() -> int:
    """The rank among processes on this host: LOCAL_RANK, MPI_LOCALRANKID or
    OMPI_COMM_WORLD_LOCAL_RANK from the launcher, else the rank. Raises: NotInitializedError."""
    return _get("local_rank").local_rank


def shutdown(timeout: float | None = None) -> None:
    """Leave the group: a final barrier (so no rank leaves while others still need it), then
    forget the group; `init` may be called again. MPI itself is finalized by mpi4py at exit.
    Nothing happens when not initialized.

    Raises: CollectiveTimeoutError: the barrier did not complete in time.
    """
    global _world, _saved_hook
    if _world is None:
        return
    if _world.broken is None:
        barrier(timeout=timeout)
    w, _world = _world, None
    if w.comm is not w.MPI.COMM_WORLD:
        w.comm.Free()
    if _saved_hook is not None and sys.excepthook is _abort_excepthook:
        sys.excepthook = _saved_hook
    _saved_hook = None


def _wait(w: _World, req: Any, what: str, timeout: float) -> None:
    """Poll a nonblocking request until it completes or the deadline passes."""
    start = time.monotonic()
    deadline, spin_until = start + timeout, start + _SPIN
    delay = 0.0
    while True:
        try:
            if req.Test():
                return
        except w.MPI.Exception as e:
            w.broken = f"{what} failed in MPI: {e}"
            msg = f"{_where(w)}: {what} failed in MPI (another rank may have died): {e}"
            print(msg, file=sys.stderr, flush=True)
            raise DistributedError(msg) from e
        if time.monotonic() > deadline:
            w.broken = f"{what} timed out after {timeout:g} s"
            msg = (f"{_where(w)}: {what} timed out after {timeout:g} s waiting for the other "
                   "ranks (one may have died, hung, or not reached this call); pass timeout= "
                   f"or set {TIMEOUT_ENV} to wait longer")
            print(msg, file=sys.stderr, flush=True)
            raise CollectiveTimeoutError(msg)
        # MPI progresses only inside Test: poll hard (yielding the core) for a short while,
        # then back off to sleeps of at most 1 ms while waiting for a slow or missing rank.
        if time.monotonic() < spin_until:
            os.sched_yield()
            continue
        time.sleep(delay)
        delay = min(max(2 * delay, 1e-5), 1e-3)


def _describe(row: np.ndarray) -> str:
    code, ndim = int(row[3]), int(row[4])
    if code == 0:
        return "no tensor"
    shape = [int(d) for d in row[5:5 + min(ndim, _MAX_DIMS)]]
    return f"{_DTYPE_NAMES.get(code, '?')} {shape}" + ("..." if ndim > _MAX_DIMS else "")


def _exchange_meta(w: _World, op: str, arr: np.ndarray | None, extra: int,
                   timeout: float) -> None:
    """All ranks swap (call number, collective, extra argument, dtype, shape) and all raise the
    same error when they differ, before any data moves."""
    meta = np.full(5 + _MAX_DIMS, -1, dtype=np.int64)
    meta[0], meta[1], meta[2] = w.seq, _OPS.index(op), extra
    if arr is None:
        meta[3], meta[4] = 0, 0
    else:
        meta[3], meta[4] = _DTYPE_CODES.get(arr.dtype.name, 0), arr.ndim
        meta[5:5 + min(arr.ndim, _MAX_DIMS)] = arr.shape[:_MAX_DIMS]
    w.seq += 1
    rows = np.empty((w.size, meta.size), dtype=np.int64)
    _wait(w, w.comm.Iallgather(meta, rows), op, timeout)
    if w.size == 1 and arr is not None and arr.ndim <= _MAX_DIMS:
        return
    if (rows[:, :2] != rows[0, :2]).any():
        calls = ", ".join(f"rank {i}: {_OPS[int(r[1])] if 0 <= r[1] < len(_OPS) else '?'} "
                          f"(call {int(r[0])})" for i, r in enumerate(rows))
        raise DistributedError(f"{_where(w)}: the ranks called different collectives ({calls}); "
                               "every rank must make the same collective calls in the same order")
    if (rows[:, 2] != rows[0, 2]).any():
        what = {"broadcast": "root", "all_reduce": "op"}.get(op, "argument")
        vals = ", ".join(f"rank {i}: {_arg_name(op, int(r[2]))}" for i, r in enumerate(rows))
        raise DistributedError(f"{_where(w)}: {op} got different {what}s across ranks ({vals})")
    if arr is None:
        return
    if (rows[:, 3] == 0).any() or (rows[:, 4] > _MAX_DIMS).any():
        bad = ", ".join(f"rank {i}: {_describe(r)}" for i, r in enumerate(rows)
                        if r[3] == 0 or r[4] > _MAX_DIMS)
        raise DTypeError(f"{_where(w)}: {op} needs float32/float64 tensors of at most "
                         f"{_MAX_DIMS} dimensions ({bad})")
    if (rows[:, 3] != rows[0, 3]).any():
        got = ", ".join(f"rank {i}: {_describe(r)}" for i, r in enumerate(rows))
        raise DTypeError(f"{_where(w)}: {op} got tensors of different dtypes across ranks ({got})")
    if (rows[:, 4:] != rows[0, 4:]).any():
        got = ", ".join(f"rank {i}: {_describe(r)}" for i, r in enumerate(rows))
        raise ShapeError(f"{_where(w)}: {op} got tensors of different shapes across ranks ({got})")


def _arg_name(op: str, value: int) -> str:
    if op == "all_reduce" and 0 <= value < len(_REDUCE_OPS):
        return repr(_REDUCE_OPS[value])
    return str(value)


def _as_array(t: Any) -> np.ndarray | None:
    if isinstance(t, Tensor):
        return np.asarray(t.numpy(), order="C")
    return None


def _layout_of(t: Tensor) -> np.ndarray:
    """An array of `t`'s shape and dtype for the metadata exchange, without copying a device
    tensor to the host (np.empty maps no pages it does not touch)."""
    return np.empty(t.shape, dtype=t.dtype)


def _local_type_error(arr: np.ndarray | None, t: Any, op: str) -> None:
    # Raised only after the metadata exchange, so every rank raises (none waits forever).
    if arr is None:
        raise DTypeError(f"{_PREFIX}.{op}: expected a tlrs Tensor, got {type(t).__name__}")


def _result(arr: np.ndarray, like: Tensor) -> Tensor:
    """A tensor over `arr`, a receive buffer this module allocated and nobody else holds, so
    the tensor shares it instead of copying (from_numpy)."""
    out = from_numpy(np.asarray(arr, dtype=like.dtype, order="C"))  # 0-d stays 0-d
    return out if like.device == "cpu" else out.to(like.device)


def barrier(*, timeout: float | None = None) -> None:
    """Wait until every rank reaches this call (within the deadline).

    Raises: NotInitializedError; CollectiveTimeoutError; DistributedError: ranks at different
    collectives.
    """
    w = _get("barrier")
    _exchange_meta(w, "barrier", None, 0, w.timeout if timeout is None else _parse_timeout(timeout))


def all_reduce(t: Tensor, op: str = "sum", *, ordered: bool = False,
               timeout: float | None = None) -> Tensor:
    """A new tensor: `op` ("sum", "prod", "min", "max") of `t` over all ranks, elementwise.

    With `ordered=False` MPI reduces (its summation order is its own, so sums may differ in the
    last bits between world sizes). `ordered=True` gathers every rank's tensor and folds them in
    rank order, `((t_0 op t_1) op t_2) ...`, identically on every rank.
    Raises: NotInitializedError; ValueError: an unknown op; ShapeError/DTypeError: tensors that
    differ across ranks; CollectiveTimeoutError; DistributedError.
    """
    w = _get("all_reduce")
    if op not in _REDUCE_OPS:
        raise ValueError(f"{_PREFIX}.all_reduce: unknown op {op!r}; expected one of "
                         f"{', '.join(_REDUCE_OPS)}")
    wait = w.timeout if timeout is None else _parse_timeout(timeout)
    if w.nccl is not None and _nccl.is_device_tensor(t):
        _exchange_meta(w, "all_reduce", _layout_of(t), _REDUCE_OPS.index(op), wait)
        return _nccl.all_reduce(w.nccl, t, op, ordered)
    arr = _as_array(t)
    _exchange_meta(w, "all_reduce", arr, _REDUCE_OPS.index(op), wait)
    _local_type_error(arr, t, "all_reduce")
    assert arr is not None
    if ordered:
        rows = _gather(w, arr, "all_reduce", wait)
        out = np.array(rows[0], copy=True)
        for row in rows[1:]:
            _NP_FOLD[op](out, row, out=out)
    else:
        out = np.empty_like(arr)
        mpi_op = {"sum": w.MPI.SUM, "prod": w.MPI.PROD, "min": w.MPI.MIN, "max": w.MPI.MAX}[op]
        _wait(w, w.comm.Iallreduce(arr, out, op=mpi_op), "all_reduce", wait)
    return _result(out, t)


def broadcast(t: Tensor, root: int = 0, *, timeout: float | None = None) -> Tensor:
    """A new tensor holding rank `root`'s `t` on every rank (every rank passes a tensor of the
    same shape and dtype).

    Raises: NotInitializedError; ValueError: a root outside 0..world_size-1; ShapeError/
    DTypeError: tensors that differ across ranks; CollectiveTimeoutError; DistributedError:
    different roots across ranks.
    """
    w = _get("broadcast")
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)):
        raise TypeError(f"{_PREFIX}.broadcast: root must be an int, got {root!r}")
    wait = w.timeout if timeout is None else _parse_timeout(timeout)
    device = w.nccl is not None and _nccl.is_device_tensor(t)
    arr = _layout_of(t) if device else _as_array(t)
    _exchange_meta(w, "broadcast", arr, int(root), wait)
    _local_type_error(arr, t, "broadcast")
    assert arr is not None
    if not 0 <= root < w.size:
        raise ValueError(f"{_PREFIX}.broadcast: root {root} is not a rank (world size {w.size})")
    if device:
        return _nccl.broadcast(w.nccl, t, int(root))
    return _result(_bcast(w, arr, int(root), "broadcast", wait), t)


def all_gather(t: Tensor, *, timeout: float | None = None) -> list[Tensor]:
    """Every rank's `t`, in rank order, as new tensors (every rank passes the same shape and
    dtype).

    Raises: NotInitializedError; ShapeError/DTypeError: tensors that differ across ranks;
    CollectiveTimeoutError; DistributedError.
    """
    w = _get("all_gather")
    wait = w.timeout if timeout is None else _parse_timeout(timeout)
    if w.nccl is not None and _nccl.is_device_tensor(t):
        _exchange_meta(w, "all_gather", _layout_of(t), 0, wait)
        return _nccl.all_gather(w.nccl, t)
    arr = _as_array(t)
    _exchange_meta(w, "all_gather", arr, 0, wait)
    _local_type_error(arr, t, "all_gather")
    assert arr is not None
    rows = _gather(w, arr, "all_gather", wait)
    return [_result(np.asarray(row, order="C"), t) for row in rows]


def _gather(w: _World, arr: np.ndarray, what: str, timeout: float) -> np.ndarray:
    rows = np.empty((w.size, *arr.shape), dtype=arr.dtype)
    _wait(w, w.comm.Iallgather(arr, rows), what, timeout)
    return rows


def _bcast(w: _World, arr: np.ndarray, root: int, what: str, timeout: float) -> np.ndarray:
    buf = arr.copy() if w.rank == root else np.empty_like(arr)
    _wait(w, w.comm.Ibcast(buf, root=root), what, timeout)
    return buf


# Array-level collectives for the trainer (NumPy in, NumPy out, same checks and deadlines).

def gather_arrays(arr: np.ndarray, what: str, timeout: float | None = None) -> np.ndarray:
    """Every rank's `arr` stacked in rank order (shape (world_size, *arr.shape))."""
    w = _get(what)
    wait = w.timeout if timeout is None else _parse_timeout(timeout)
    arr = np.asarray(arr, order="C")
    _exchange_meta(w, "all_gather", arr, 0, wait)
    return _gather(w, arr, what, wait)


def broadcast_array(arr: np.ndarray, root: int, what: str,
                    timeout: float | None = None) -> np.ndarray:
    """Rank `root`'s `arr` on every rank."""
    w = _get(what)
    wait = w.timeout if timeout is None else _parse_timeout(timeout)
    arr = np.asarray(arr, order="C")
    _exchange_meta(w, "broadcast", arr, root, wait)
    return _bcast(w, arr, root, what, wait)


def sizes(shapes: Sequence[Sequence[int]]) -> list[int]:
    """The element count of each shape."""
    return [math.prod(s) for s in shapes]
