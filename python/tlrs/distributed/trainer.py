"""World-size-invariant data parallelism: a global batch split into `grad_shards` micro-batches,
per-shard gradients gathered to every rank and folded in shard order, one optimizer update
applied identically everywhere."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import optim
from .._core import Tensor
from ..config import Options
from ..errors import CheckpointError, ShapeError
from ..kernels import kernel_settings
from ..module import Module, ModuleDef
from ..tensor import tensor
from . import _comm

__all__ = ["DistributedTrainer", "data_parallel", "fold_shards"]


def fold_shards(rows: np.ndarray) -> np.ndarray:
    """The left fold `((r_0 + r_1) + r_2) + ... + r_{S-1}` over axis 0, in the rows' dtype,
    one IEEE addition per element per step (a copy; `rows` is untouched)."""
    acc = np.array(rows[0], copy=True)
    for row in rows[1:]:
        np.add(acc, row, out=acc)
    return acc


class DistributedTrainer:
    """Data-parallel training of a `tlrs.Module` whose result does not depend on the world size.

    Each `step(batch)` splits the global batch (every input's leading axis, B rows) into
    `grad_shards` = S equal micro-batches, shard k = rows [k*B/S, (k+1)*B/S). Rank r of W
    computes the gradients and losses of shards r*S/W .. (r+1)*S/W - 1 (one forward
    and backward pass each); every rank gathers all S per-shard results (an all-gather, never an MPI
    reduction) and folds them in shard order: grad = (((g_0 + g_1) + g_2) + ... + g_{S-1}) * (1/S),
    loss = (((l_0 + l_1) + ...) + l_{S-1}) / S, in the module's dtype. Each shard's loss is a
    mean over its rows, so this is the mean over shards (= over rows). Then every rank applies
    the same `opt.step`, so parameters and optimizer state stay identical on all ranks. With
    the reference kernels the result is bit-identical for every world size dividing S, and
    equal to the same trainer without `init` (one process, the same S). Without
    `tlrs.distributed.init()` it runs in this process alone (world size 1, no MPI).

    Args: module: the live module (its parameters are replaced by rank 0's at construction);
    opt: the optimizer; grad_shards: S, a multiple of the world size; state: optimizer state
    (default `module.init_optim(opt)`; rank 0's is used on every rank); compute_loss: False
    leaves the loss out of the exchange (`step` then returns NaN; the gradients and the
    update are unchanged).
    Raises: ValueError: S not a positive multiple of the world size; DistributedError and its
    subclasses: as the collectives.
    """

    def __init__(self, module: Module, opt: optim.Optimizer, grad_shards: int,
                 state: optim.OptimState | None = None, *, compute_loss: bool = True) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"DistributedTrainer: expected a tlrs Module, got "
                            f"{type(module).__name__}")
        if isinstance(grad_shards, bool) or not isinstance(grad_shards, (int, np.integer)) \
                or grad_shards < 1:
            raise ValueError(f"DistributedTrainer: grad_shards must be a positive integer, got "
                             f"{grad_shards!r}")
        self.distributed = _comm.is_initialized()
        self.world_size = _comm.world_size() if self.distributed else 1
        self.rank = _comm.rank() if self.distributed else 0
        if grad_shards % self.world_size:
            raise ValueError(f"DistributedTrainer: grad_shards={grad_shards} must be a multiple "
                             f"of the world size {self.world_size} (each rank takes whole shards)")
        self.module, self.opt, self.grad_shards = module, opt, int(grad_shards)
        self.compute_loss = bool(compute_loss)
        self.state = module.init_optim(opt) if state is None else state
        if self.state.kind != opt.kind:
            raise ValueError(f"DistributedTrainer: a {self.state.kind} state for a {opt.kind} "
                             "optimizer")
        self._shapes = [tuple(s) for s in module.defn.param_shapes]
        self._sizes = _comm.sizes(self._shapes)
        if self.distributed and self.world_size > 1:
            self._sync_from_root()

    @property
    def shards_per_rank(self) -> int:
        """S / W: how many shards this rank computes per step."""
        return self.grad_shards // self.world_size

    @property
    def local_shards(self) -> range:
        """The shard indices this rank computes: r*S/W .. (r+1)*S/W - 1."""
        n = self.shards_per_rank
        return range(self.rank * n, (self.rank + 1) * n)

    def _flat(self, tensors: Sequence[Tensor]) -> np.ndarray:
        parts = [np.ascontiguousarray(t.numpy()).reshape(-1) for t in tensors]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=self.module.dtype)

    def _unflat(self, flat: np.ndarray) -> list[Tensor]:
        out, at = [], 0
        for shape, n in zip(self._shapes, self._sizes, strict=True):
            out.append(tensor(flat[at:at + n].reshape(shape), dtype=self.module.dtype,
                              device=self.module.opts.device))
            at += n
        return out

    def _sync_from_root(self) -> None:
        """Rank 0's parameters, optimizer step count and state slots on every rank."""
        names = sorted(self.state.slots)
        what = "DistributedTrainer: the initial broadcast"
        layout = np.array([len(self._sizes), sum(self._sizes), len(names), self.state.step],
                          dtype=np.int64)
        got = _comm.gather_arrays(layout, what)
        if (got[:, :3] != got[0, :3]).any():
            raise ShapeError(f"{what}: the ranks' modules or optimizer states differ in layout "
                             f"(parameters, scalars, slots per rank: {got[:, :3].tolist()})")
        flat = np.concatenate([self._flat(self.module.params())]
                              + [self._flat(self.state.slots[n]) for n in names])
        flat = _comm.broadcast_array(flat, 0, what)
        step = int(_comm.broadcast_array(layout[3:], 0, what)[0])
        chunks = np.split(flat, len(names) + 1)
        self.module.set_params(self._unflat(chunks[0]))
        slots = {n: self._unflat(c) for n, c in zip(names, chunks[1:], strict=True)}
        self.state = optim.OptimState(self.state.kind, step, slots)

    def shard(self, batch: Sequence[Any], k: int, *, local: bool = False) -> list[Any]:
        """Shard k of a global batch (rows [k*B/S, (k+1)*B/S) of every input); with
        `local=True`, `batch` holds only this rank's rows and k is a global shard index among
        `local_shards`.

        Raises: ShapeError: inputs without a common leading axis divisible by the shard count.
        """
        arrays = [x.numpy() if isinstance(x, Tensor) else np.asarray(x) for x in batch]
        count = self.shards_per_rank if local else self.grad_shards
        first = k - self.local_shards.start if local else k
        if not arrays or any(a.ndim == 0 for a in arrays):
            raise ShapeError("DistributedTrainer: every input needs a leading batch axis")
        rows = {a.shape[0] for a in arrays}
        if len(rows) != 1 or next(iter(rows)) % count:
            what = "this rank's rows" if local else "the global batch"
            raise ShapeError(f"DistributedTrainer: {what} must have one leading size divisible "
                             f"by {count} (shards), got leading sizes "
                             f"{[a.shape[0] for a in arrays]}")
        n = next(iter(rows)) // count
        out: list[Any] = []
        for x, a in zip(batch, arrays, strict=True):
            part = np.ascontiguousarray(a[first * n:(first + 1) * n])
            out.append(tensor(part, dtype=x.dtype) if isinstance(x, Tensor) else part)
        return out

    def step(self, batch: Sequence[Any], *, local: bool = False) -> float:
        """One data-parallel update from a global batch (every rank passes the same one), or
        with `local=True` from this rank's rows only (rows [r*B/W, (r+1)*B/W)); returns the
        global loss before the update (the shard fold / S).

        Raises: ShapeError: a batch that does not split into the shards; as `module.backward`;
        DistributedError and its subclasses: as the collectives.
        """
        rows = []
        for k in self.local_shards:
            xs = self.shard(batch, k, local=local)
            # The loss of the pass that gave the gradients (the same bits as `module.forward`).
            value, grads = self.module._value_and_grads(xs)
            loss = (np.asarray(value.numpy(), dtype=self.module.dtype)
                    if self.compute_loss else np.zeros((), dtype=self.module.dtype))
            rows.append(np.concatenate([self._flat(grads), loss.reshape(1)]))
        mine = np.stack(rows)
        if self.distributed and self.world_size > 1:
            every = _comm.gather_arrays(mine, "DistributedTrainer.step")
            every = every.reshape(self.grad_shards, mine.shape[1])
        else:
            every = mine
        total = fold_shards(every)
        dt = total.dtype.type
        grads_flat = total[:-1] * dt(1.0 / self.grad_shards)
        mean_loss = total[-1] / dt(self.grad_shards)
        opts = self.module.opts
        with kernel_settings(opts.fast_kernels, str(opts.fast_gpu_matmul_precision) == "fp64",
                             opts.tf32):
            params, self.state = self.opt.step(self.state, self.module.params(),
                                               self._unflat(grads_flat),
                                               self.module.requires_grad)
        self.module.set_params(params)
        return float(mean_loss) if self.compute_loss else math.nan

    def save(self, path: str) -> None:
        """Rank 0 writes the module and optimizer state (`Module.save`, atomic); every rank
        returns once it is written. It is an ordinary checkpoint: any world size loads it.

        Raises: CheckpointError: the file could not be written (on every rank).
        """
        error: BaseException | None = None
        if self.rank == 0:
            try:
                self.module.save(path, self.state)
            except Exception as e:  # noqa: BLE001 - reported on every rank below
                error = e
        if self.distributed and self.world_size > 1:
            ok = _comm.gather_arrays(np.array([error is None], dtype=np.int64),
                                     "DistributedTrainer.save")
            if error is None and not ok[0, 0]:
                raise CheckpointError(f"{path}: rank 0 could not write the checkpoint")
        if error is not None:
            raise error

    @classmethod
    def load(cls, path: str, defn: ModuleDef, opt: optim.Optimizer, grad_shards: int,
             opts: Options | None = None) -> DistributedTrainer:
        """A trainer resumed from a checkpoint written by `save` (or `Module.save`) at any
        world size. Rank 0 reads the file and sends its bytes to the others, so only rank 0's
        host needs it.

        Raises: CheckpointError: a missing or invalid file (on every rank); as the constructor.
        """
        distributed = _comm.is_initialized() and _comm.world_size() > 1
        if not distributed:
            module, state = Module.load_checkpoint(path, defn, opts)
            return cls(module, opt, grad_shards, state)
        what = "DistributedTrainer.load"
        data, problem = b"", ""
        if _comm.rank() == 0:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                problem = f"{path}: cannot read the checkpoint on rank 0 ({e})"
        n = int(_comm.broadcast_array(np.array([-1 if problem else len(data)], np.int64),
                                      0, what)[0])
        if n < 0:
            raise CheckpointError(problem or f"{path}: rank 0 could not read the checkpoint")
        raw = _comm.broadcast_array(np.frombuffer(data, np.uint8) if _comm.rank() == 0
                                    else np.zeros(n, np.uint8), 0, what)
        fd, tmp = tempfile.mkstemp(suffix=".safetensors", prefix="tlrs-dist-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(raw.tobytes())
            module, state = Module.load_checkpoint(tmp, defn, opts)
        finally:
            os.unlink(tmp)
        return cls(module, opt, grad_shards, state)


def data_parallel(module: Module, opt: optim.Optimizer, *, grad_shards: int,
                  state: optim.OptimState | None = None,
                  compute_loss: bool = True) -> DistributedTrainer:
    """`DistributedTrainer(module, opt, grad_shards, state, compute_loss=compute_loss)`."""
    return DistributedTrainer(module, opt, grad_shards, state, compute_loss=compute_loss)
