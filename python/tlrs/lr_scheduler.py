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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "StepLR"]


class LRScheduler:
    """The base: `step()` advances `last_epoch` and sets the optimizer's `lr` to `get_lr()`."""

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        hyper = getattr(optimizer, "hyper", None)
        if not isinstance(hyper, dict) or "lr" not in hyper:
            raise TypeError(f"{type(self).__name__}: expected a tlrs.optim optimizer with an lr, got "
                            f"{type(optimizer).__name__}")
        if last_epoch != -1:
            raise ValueError(f"{type(self).__name__}: only last_epoch=-1 (a fresh start) is supported; "
                             "restore a run with load_state_dict")
        self.optimizer = optimizer
        self.base_lr = float(hyper["lr"])
        self.last_epoch = -1
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self) -> float:
        raise NotImplementedError

    def step(self) -> None:
        self.last_epoch += 1
        self.optimizer.hyper["lr"] = float(self.get_lr())

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


class ExponentialLR(LRScheduler):
    """`lr * gamma` every step."""

    def __init__(self, optimizer: Any, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        return self.lr if self._is_initial else self.lr * self.gamma


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


class LambdaLR(LRScheduler):
    """The base rate times `lr_lambda(step)`."""

    def __init__(self, optimizer: Any, lr_lambda: Callable[[int], float], last_epoch: int = -1) -> None:
        if not callable(lr_lambda):
            raise TypeError(f"LambdaLR: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> float:
        return self.base_lr * self.lr_lambda(self.last_epoch)
