"""Module checkpoints: one safetensors file, written atomically, holding the parameters by name,
the optimizer state, and, for a run to resume exactly, its progress (`TrainProgress`): every
completed step's loss, the global seed stream's position, the data loader's cursor and the
flags that shaped the run. A SHA-256 over the metadata and every tensor guards the whole."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core, optim
from ._core import Tensor
from .config import Options
from .errors import CheckpointError, ShapeError
from .tensor import tensor

if TYPE_CHECKING:
    from .module import Module
    from .module_def import ModuleDef

__all__ = ["OPTIM_PREFIX", "Loaded", "TrainProgress", "load_checkpoint", "load_for_module",
           "load_torchlean_params", "save_checkpoint", "save_module", "save_torchlean"]

OPTIM_PREFIX = "__optim__/"
_TRAIN_PREFIX = "__train__/"
_FORMAT = "tlrs.module/1"
_TRAIN_FORMAT = "tlrs.train/1"


@dataclasses.dataclass(frozen=True)
class TrainProgress:
    """Where a training run stands, beyond its parameters and optimizer state: what `save`
    stores so that a resumed run continues with the uninterrupted run's bits.

    Args: losses: the pre-update loss of every completed step, in order (its length is the
    number of steps done); seed_stream: the global seed stream's `(seed, counter)`
    (`tlrs.random.seed_stream_state()`); loader: a `tlrs.data.BatchLoader.state()` or None;
    run: the flags or settings that shaped the run (JSON values: a program compares them on
    resume and may keep its own keys there, dropout keys for one); before: the mean loss before
    training, if the program printed one.
    """

    losses: Sequence[float]
    seed_stream: tuple[int, int]
    loader: dict[str, Any] | None = None
    run: dict[str, Any] = dataclasses.field(default_factory=dict)
    before: float | None = None

    @property
    def steps(self) -> int:
        """The number of completed steps."""
        return len(self.losses)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _checksum(names: Sequence[str], tensors: Sequence[Tensor], metadata: dict[str, str]) -> str:
    """SHA-256 of the metadata (less the checksum) and each tensor's name, dtype, shape, bytes."""
    h = hashlib.sha256()
    rest = {k: v for k, v in metadata.items() if k != "checksum"}
    h.update(json.dumps(rest, sort_keys=True).encode())
    for name, t in sorted(zip(names, tensors, strict=True), key=lambda nt: nt[0]):
        h.update(json.dumps([name, t.dtype, list(t.shape)]).encode())
        h.update(np.ascontiguousarray(t.numpy()).tobytes())
    return h.hexdigest()


def _progress_entries(progress: TrainProgress) -> tuple[dict[str, Any], list[str], list[Tensor]]:
    """The metadata and tensors of `progress`: losses and the loader's order as binary64 tensors
    (exact: losses are binary64 already, order indices stay below 2^53)."""
    loader = None if progress.loader is None else dict(progress.loader)
    names, tensors = [f"{_TRAIN_PREFIX}losses"], [
        tensor(np.asarray(list(progress.losses), dtype=np.float64), dtype="float64")]
    if loader is not None:
        order = np.asarray(loader.pop("order"), dtype=np.int64)
        names.append(f"{_TRAIN_PREFIX}loader_order")
        tensors.append(tensor(order.astype(np.float64), dtype="float64"))
    seed, counter = progress.seed_stream
    meta = {"format": _TRAIN_FORMAT, "seed_stream": [int(seed), int(counter)],
            "loader": loader, "run": dict(progress.run),
            "before": None if progress.before is None else float(progress.before)}
    return meta, names, tensors


def save_checkpoint(module: Module, path: str, optim_state: optim.OptimState | None,
                    progress: TrainProgress | None) -> None:
    """`Module.save`: the file is written whole under a temporary name, then renamed over
    `path`, so a reader never sees a half-written checkpoint."""
    names, tensors = list(module.param_names), list(module._params)
    meta: dict[str, Any] = {
        "format": _FORMAT, "dtype": module.dtype, "param_names": list(module.param_names),
        "param_shapes": [list(s) for s in module.defn.param_shapes],
        "input_shapes": [list(s) for s in module.defn.input_shapes],
        "requires_grad": list(module.requires_grad),
        "options": {f.name: _plain(getattr(module.opts, f.name))
                    for f in dataclasses.fields(Options)},
    }
    if optim_state is not None:
        slots = {k: list(v) for k, v in optim_state.slots.items()}
        if any(len(v) != len(names) for v in slots.values()):
            raise ValueError(f"save: optimizer state slots must hold {len(names)} tensors each")
        meta["optim"] = {
            "kind": optim_state.kind, "step": optim_state.step, "slots": list(slots)}
        for slot, ts in slots.items():
            names += [f"{OPTIM_PREFIX}{slot}/{i}" for i in range(len(ts))]
            tensors += ts
    if progress is not None:
        meta["train"], more_names, more = _progress_entries(progress)
        names += more_names
        tensors += more
    metadata = {k: json.dumps(v) for k, v in meta.items()}
    metadata["checksum"] = _checksum(names, tensors, metadata)
    _core.save_safetensors(str(path), names, tensors, metadata)


def _progress(meta: dict[str, Any], by_name: dict[str, Tensor]) -> TrainProgress:
    train = meta["train"]
    if train["format"] != _TRAIN_FORMAT:
        raise ValueError(f"unknown training-state format {train['format']!r}")
    losses = [float(v) for v in np.asarray(by_name[f"{_TRAIN_PREFIX}losses"].numpy()).ravel()]
    loader = train["loader"]
    if loader is not None:
        order = np.asarray(by_name[f"{_TRAIN_PREFIX}loader_order"].numpy()).astype(np.int64)
        loader = {**loader, "order": order}
    seed, counter = train["seed_stream"]
    before = train["before"]
    return TrainProgress(losses, (int(seed), int(counter)), loader, dict(train["run"]),
                         None if before is None else float(before))


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What a checkpoint holds, checked against its checksum (`load_checkpoint`)."""

    params: list[Tensor]
    param_shapes: tuple[tuple[int, ...], ...]
    param_names: list[str]
    requires_grad: list[bool]
    opts: Options
    state: optim.OptimState | None
    progress: TrainProgress | None


def load_checkpoint(path: str) -> Loaded:
    """Read a checkpoint `save_checkpoint` wrote.

    Raises: CheckpointError: a missing, truncated, corrupt or foreign file (nothing is returned
    partially).
    """
    names, tensors, metadata = _core.load_safetensors(str(path))
    try:
        by_name = dict(zip(names, tensors, strict=True))
        expected = _checksum(list(by_name), list(by_name.values()), metadata)
        if metadata.get("checksum") != expected:
            raise ValueError("checksum mismatch")
        meta = {k: json.loads(v) for k, v in metadata.items() if k != "checksum"}
        if meta["format"] != _FORMAT:
            raise ValueError(f"unknown format {meta['format']!r}")
        params = [by_name[n] for n in meta["param_names"]]
        if any(p.dtype != meta["dtype"] for p in params):
            raise ValueError("parameter dtypes differ from the recorded dtype")
        known = {f.name for f in dataclasses.fields(Options)}
        saved_opts = Options(**{k: v for k, v in meta["options"].items() if k in known})
        state = None
        if "optim" in meta:
            o = meta["optim"]
            slots = {s: [by_name[f"{OPTIM_PREFIX}{s}/{i}"] for i in range(len(params))]
                     for s in o["slots"]}
            state = optim.OptimState(str(o["kind"]), int(o["step"]), slots)
        progress = _progress(meta, by_name) if "train" in meta else None
        shapes = tuple(tuple(int(d) for d in s) for s in meta["param_shapes"])
        if any(d < 0 for s in shapes for d in s):
            raise ValueError("negative parameter dimensions")
        return Loaded(params, shapes, [str(n) for n in meta["param_names"]],
                      [bool(f) for f in meta["requires_grad"]], saved_opts, state, progress)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"{path}: not a valid tlrs module checkpoint ({e})") from e


# --- TorchLean parameter files (tlrs/interop/torchlean_params.py) --------------------------------

def save_torchlean(module: Module, path: str, optim_state: optim.OptimState | None,
                   progress: TrainProgress | None) -> None:
    """`Module.save(path, format="torchlean")`: the parameters only, by position, atomically.

    Raises: ValueError: optimizer state or progress given (the format has no place for them).
    """
    from .interop.torchlean_params import write_torchlean_params

    if optim_state is not None or progress is not None:
        raise ValueError("save: a TorchLean parameter file holds the parameters only (no "
                         "optimizer state, no training progress)")
    write_torchlean_params(module.params(), path)


def load_torchlean_params(path: str, param_shapes: Sequence[Sequence[int]],
                          dtype: str) -> list[Tensor]:
    """The parameters of a TorchLean file, as `dtype` tensors, checked against the model's
    shapes in order (TorchLean's `tensorFromJsonBits` shape check).

    Raises: CheckpointError: a malformed file, or a parameter count other than the model's;
    ShapeError: a parameter whose shape differs (its index and both shapes named).
    """
    from .interop.torchlean_params import read_torchlean_params

    params = read_torchlean_params(path, dtype)
    if len(params) != len(param_shapes):
        raise CheckpointError(f"{path}: the TorchLean file holds {len(params)} parameters, the "
                              f"model has {len(param_shapes)}")
    for i, (p, want) in enumerate(zip(params, param_shapes, strict=True)):
        if list(p.shape) != list(want):
            raise ShapeError(f"{path}: parameter {i}: the TorchLean file has shape {list(p.shape)}, "
                             f"the model expects {list(want)}")
    return params


# --- what `Module.save` and `Module.load_training` do with either format -------------------------

def save_module(module: Module, path: str, optim_state: optim.OptimState | None,
                progress: TrainProgress | None, format: str) -> None:
    """`Module.save`: a safetensors checkpoint (`save_checkpoint`) or, with
    `format="torchlean"`, a TorchLean parameter file (`save_torchlean`).

    Raises: ValueError: an unknown format, or as the writer chosen.
    """
    if format == "torchlean":
        save_torchlean(module, path, optim_state, progress)
    elif format == "safetensors":
        save_checkpoint(module, path, optim_state, progress)
    else:
        raise ValueError(f"save: format must be 'safetensors' or 'torchlean', got {format!r}")


def load_for_module(path: str, defn: ModuleDef, dtype: str | None
                    ) -> tuple[ModuleDef, list[Tensor], Options, optim.OptimState | None,
                               TrainProgress | None]:
    """`Module.load_training`'s reading: (the definition to build the module from, its parameters,
    the saved options, the optimizer state, the progress). The definition is `defn` without
    initial values, with a checkpoint's names and flags (a TorchLean file keeps `defn`'s); a
    TorchLean file holds no options (default `Options`), state or progress.

    Raises: CheckpointError: as `load_checkpoint`/`load_torchlean_params`, or a `dtype` other than
    a checkpoint's; ValueError: parameter shapes other than `defn`'s (ShapeError for a TorchLean
    file, naming the parameter).
    """
    from .interop.torchlean_params import is_torchlean_file
    from .module_def import _show

    if is_torchlean_file(path):  # parameters only: names, flags from the definition
        params = load_torchlean_params(path, defn.param_shapes, dtype or "float64")
        return dataclasses.replace(defn, init_params=None, init_plan=None), params, Options(), None, None
    got = load_checkpoint(path)
    if dtype is not None and got.params and got.params[0].dtype != dtype:
        raise CheckpointError(f"{path}: the checkpoint holds {got.params[0].dtype} "
                              f"parameters, not {dtype}")
    if got.param_shapes != tuple(defn.param_shapes):
        raise ValueError(f"checkpoint parameter shapes {_show(got.param_shapes)} do not "
                         f"match the definition's {_show(defn.param_shapes)}")
    defn = dataclasses.replace(defn, init_params=None, init_plan=None,
                               requires_grad=got.requires_grad, param_names=got.param_names)
    return defn, got.params, got.opts, got.state, got.progress
