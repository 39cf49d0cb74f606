"""Learning-rate schedules with `torch.optim.lr_scheduler`'s names, arguments and formulas
(`tlrs.optim.lr_scheduler`): each wraps a `tlrs.optim` optimizer and sets its `lr` at every
`step()`, computing the same Python floats PyTorch's chainable forms compute (the same
operations in the same order), so a schedule gives PyTorch's learning rates bit for bit.

    opt = optim.adamw(1e-3, 0.01, 0.9, 0.999, 1e-8)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for batch in batches:
        params, state = opt.step(state, params, grads)
        sched.step()

Only a fresh start is supported (`last_epoch=-1`); a resumed run restores the optimizer's `lr`
and the scheduler's `last_epoch` through `state_dict()` / `load_state_dict()`.

As in PyTorch, the first scheduler built on an optimizer records its `lr` as the optimizer's
initial rate (torch's `group["initial_lr"]`; `OneCycleLR` sets it to max_lr / div_factor), and
every scheduler's `base_lr` is that rate: a second scheduler on the same optimizer (as in
`SequentialLR`) starts from the same base as torch's.
"""

from __future__ import annotations

import math
import weakref
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR",
           "SequentialLR", "StepLR"]

# optimizer -> its initial lr (torch's group["initial_lr"]), set by the first scheduler built on it.
_initial_lrs: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def _initial_lr(optimizer: Any, lr: float, overwrite: bool = False) -> float:
    """The optimizer's initial lr: `lr` if none was recorded yet (or `overwrite`), else the
    recorded one. An optimizer that cannot be weakly referenced keeps no record (`lr` is its)."""
    try:
        if overwrite or optimizer not in _initial_lrs:
            _initial_lrs[optimizer] = lr
        return _initial_lrs[optimizer]
    except TypeError:
        return lr


def _check_optimizer(who: str, optimizer: Any) -> None:
    hyper = getattr(optimizer, "hyper", None)
    if not isinstance(hyper, dict) or "lr" not in hyper:
        raise TypeError(f"{who}: expected a tlrs.optim optimizer with an lr, got {type(optimizer).__name__}")


class LRScheduler:
    """The base: `step()` advances `last_epoch` and sets the optimizer's `lr` to `get_lr()`."""

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        if last_epoch != -1:
            raise ValueError(f"{type(self).__name__}: only last_epoch=-1 (a fresh start) is supported; "
                             "restore a run with load_state_dict")
        self.optimizer = optimizer
        self.base_lr = _initial_lr(optimizer, float(optimizer.hyper["lr"]))
        self.last_epoch = -1
        self._is_initial = False
        self._initial_step()

    def _initial_step(self) -> None:
        """The step a construction takes (to epoch 0), with `_is_initial` set (torch's)."""
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> float:
        raise NotImplementedError

    def _closed_form_lr(self) -> float | None:
        """The rate at `last_epoch` from `base_lr` alone (torch's `_get_closed_form_lr`), or None
        where torch's scheduler has no closed form (then `get_lr` is used)."""
        return None

    def step(self) -> None:
        self.last_epoch += 1
        self.optimizer.hyper["lr"] = float(self.get_lr())

    def _update_lr(self, epoch: int) -> None:
        """Jumps to `epoch` (torch's `_update_lr(epoch)`, which `SequentialLR` calls at a
        milestone): the closed form where there is one, else `get_lr`."""
        self.last_epoch = epoch
        lr = self._closed_form_lr()
        self.optimizer.hyper["lr"] = float(self.get_lr() if lr is None else lr)

    def get_last_lr(self) -> list[float]:
        """The learning rate the last `step()` set, as a one-group list (PyTorch's shape)."""
        return [self.optimizer.hyper["lr"]]

    @property
    def lr(self) -> float:
        return float(self.optimizer.hyper["lr"])

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "base_lr": self.base_lr, "lr": self.lr}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.last_epoch, self.base_lr = int(state["last_epoch"]), float(state["base_lr"])
        self.optimizer.hyper["lr"] = float(state["lr"])


class StepLR(LRScheduler):
    """`lr * gamma` every `step_size` steps."""

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive integer, got {step_size!r}")
        self.step_size, self.gamma = step_size, float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self.lr
        return self.lr * self.gamma

    def _closed_form_lr(self) -> float:
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """`lr * gamma**k` at a step that appears k times in `milestones`."""

    def __init__(self, optimizer: Any, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.milestones: dict[int, int] = {}
        for m in milestones:
            self.milestones[int(m)] = self.milestones.get(int(m), 0) + 1
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        if self.last_epoch not in self.milestones:
            return self.lr
        return self.lr * self.gamma ** self.milestones[self.last_epoch]

    def _closed_form_lr(self) -> float:
        passed = sorted(m for m, k in self.milestones.items() for _ in range(k))
        return self.base_lr * self.gamma ** bisect_right(passed, self.last_epoch)


class ExponentialLR(LRScheduler):
    """`lr * gamma` every step."""

    def __init__(self, optimizer: Any, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        return self.lr if self._is_initial else self.lr * self.gamma

    def _closed_form_lr(self) -> float:
        return self.base_lr * self.gamma ** self.last_epoch


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base rate to `eta_min` over `T_max` steps (PyTorch's recursive
    form, restarting upward after `T_max`, as PyTorch does)."""

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        if isinstance(T_max, bool) or not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive integer, got {T_max!r}")
        self.T_max, self.eta_min = T_max, float(eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        if self._is_initial:
            return self.lr
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return self.lr + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
        return ((1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (self.lr - self.eta_min) + self.eta_min)

    def _closed_form_lr(self) -> float:
        return (self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / 2)


class LinearLR(LRScheduler):
    """The rate scaled linearly from `start_factor` to `end_factor` over `total_iters` steps."""

    def __init__(self, optimizer: Any, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: expected 0 < start_factor <= 1 and 0 <= end_factor <= 1, got "
                             f"{start_factor!r}, {end_factor!r}")
        self.start_factor, self.end_factor, self.total_iters = float(start_factor), float(end_factor), int(total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        if self.last_epoch == 0:
            return self.lr * self.start_factor
        if self._is_initial or self.last_epoch > self.total_iters:
            return self.lr
        return self.lr * (1.0 + (self.end_factor - self.start_factor) / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * (self.end_factor - self.start_factor)))

    def _closed_form_lr(self) -> float:
        return self.base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                               * min(self.total_iters, self.last_epoch) / self.total_iters)


class LambdaLR(LRScheduler):
    """The base rate times `lr_lambda(step)`."""

    def __init__(self, optimizer: Any, lr_lambda: Callable[[int], float], last_epoch: int = -1) -> None:
        if not callable(lr_lambda):
            raise TypeError(f"LambdaLR: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        return self.base_lr * self.lr_lambda(self.last_epoch)


def _anneal_cos(start: float, end: float, pct: float) -> float:
    """Cosine from `start` to `end` as pct goes from 0 to 1 (torch's `_annealing_cos`)."""
    cos_out = math.cos(math.pi * pct) + 1
    return end + (start - end) / 2.0 * cos_out


def _anneal_linear(start: float, end: float, pct: float) -> float:
    """Linear from `start` to `end` as pct goes from 0 to 1 (torch's `_annealing_linear`)."""
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy (torch's `OneCycleLR`, the same phases and float formulas): from
    max_lr / div_factor up to `max_lr` over the first `pct_start` of `total_steps` (or
    epochs · steps_per_epoch), then down to initial_lr / final_div_factor, annealed by cosine
    ('cos') or linearly ('linear'); `three_phase` comes back to the initial rate first, then
    down to the minimum. Call `step()` after each batch; stepping past `total_steps` raises
    ValueError, as torch.

    Momentum is not cycled: `cycle_momentum` defaults to False here (torch: True, cycling the
    optimizer's momentum / beta1 between `max_momentum` and `base_momentum`), and True is refused;
    `base_momentum` and `max_momentum` are accepted for torch's signature and unused.
    """

    def __init__(self, optimizer: Any, max_lr: float, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = False, base_momentum: float = 0.85, max_momentum: float = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        _check_optimizer("OneCycleLR", optimizer)
        if total_steps is not None:
            if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            for name, v in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    raise ValueError(f"Expected positive integer {name}, but got {v}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if isinstance(pct_start, bool) or not isinstance(pct_start, (int, float)) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        if cycle_momentum:
            raise NotImplementedError("OneCycleLR: momentum cycling is not supported (pass cycle_momentum=False)")
        self.anneal_strategy, self.cycle_momentum = anneal_strategy, False
        self.max_lr = max_lr
        self.initial_lr = max_lr / div_factor
        self.min_lr = self.initial_lr / final_div_factor
        lrs = {"initial_lr": self.initial_lr, "max_lr": self.max_lr, "min_lr": self.min_lr}
        # (end step, start lr, end lr) per phase, torch's end steps (floats but the last).
        phases: list[tuple[float, str, str]] = [(float(pct_start * self.total_steps) - 1, "initial_lr", "max_lr")]
        if three_phase:
            phases.append((float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr"))
            phases.append((self.total_steps - 1, "initial_lr", "min_lr"))
        else:
            phases.append((self.total_steps - 1, "max_lr", "min_lr"))
        self._phases = [(end, lrs[a], lrs[b]) for end, a, b in phases]
        _initial_lr(optimizer, self.initial_lr, overwrite=True)  # torch sets group["initial_lr"]
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is "
                             f"{self.total_steps}")
        anneal = _anneal_cos if self.anneal_strategy == "cos" else _anneal_linear
        start_step = 0.0
        for i, (end_step, start_lr, end_lr) in enumerate(self._phases):
            if step_num <= end_step or i == len(self._phases) - 1:
                return anneal(start_lr, end_lr, (step_num - start_step) / (end_step - start_step))
            start_step = end_step
        raise AssertionError("unreachable: the last phase always answers")


class SequentialLR(LRScheduler):
    """Runs `schedulers` one after another (torch's `SequentialLR`): the i-th from milestone
    i - 1 on, jumping to its epoch 0 there (its closed form, as torch), e.g. a linear warmup
    then a cosine decay:

        warmup = LinearLR(opt, start_factor=0.01, total_iters=10)
        decay = CosineAnnealingLR(opt, T_max=90)
        sched = SequentialLR(opt, [warmup, decay], milestones=[10])

    All the schedulers must wrap `optimizer`; building this one resets its lr to the initial
    rate and takes the first scheduler's initial step again, as torch.
    """

    def __init__(self, optimizer: Any, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1) -> None:
        _check_optimizer("SequentialLR", optimizer)
        if last_epoch != -1:
            raise ValueError("SequentialLR: only last_epoch=-1 (a fresh start) is supported; "
                             "restore a run with load_state_dict")
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler):
                raise TypeError(f"SequentialLR: scheduler at index {i} is not a tlrs LRScheduler: {type(s).__name__}")
            if s.optimizer is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(s).__name__} at index {i} with another one")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self.optimizer = optimizer
        self._schedulers, self._milestones = list(schedulers), [int(m) for m in milestones]
        self.last_epoch = 0
        self._is_initial = False
        self.base_lr = _initial_lr(optimizer, float(optimizer.hyper["lr"]))
        optimizer.hyper["lr"] = self.base_lr  # back to the initial rate
        self._undo(self)  # the schedulers' own initial steps are undone ...
        self._schedulers[bisect_right(self._milestones, 0)]._initial_step()  # ... and the first one's redone

    @staticmethod
    def _undo(sched: LRScheduler) -> None:
        """torch's `recursive_undo`: one epoch back, in nested SequentialLRs too."""
        if isinstance(sched, SequentialLR):
            for s in sched._schedulers:
                SequentialLR._undo(s)
        else:
            sched.last_epoch -= 1

    def get_lr(self) -> float:
        return self.lr

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "base_lr": self.base_lr, "lr": self.lr,
                "_milestones": list(self._milestones), "_schedulers": [s.state_dict() for s in self._schedulers]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self._milestones = [int(m) for m in state["_milestones"]]
        for s, saved in zip(self._schedulers, state["_schedulers"], strict=True):
            s.load_state_dict(saved)
        self.optimizer.hyper["lr"] = float(state["lr"])
