"""The reference's optimizers (`sgd`, `momentum_sgd`, `adagrad`, `rmsprop`, `adam`, `adamw`,
`adadelta`) and TorchLean's newer `muon` and `projected_sgd`: functional steps with the exact
formulas and evaluation order, plain-data state."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from . import _core
from ._core import Tensor
from .tensor import tensor

__all__ = [
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "MomentumSGD",
    "Muon",
    "NewtonSchulz",
    "OptimState",
    "ParamGroups",
    "Optimizer",
    "RMSprop",
    "adadelta",
    "adagrad",
    "adam",
    "adam_default",
    "lr_scheduler",
    "adamw",
    "momentum_sgd",
    "muon",
    "newton_schulz",
    "param_groups",
    "projected_sgd",
    "ProjectedSGD",
    "rmsprop",
    "sgd",
]



@dataclass
class OptimState:
    """An optimizer's state: its kind, the step count and per-parameter tensors for each slot.

    Args: kind: the optimizer name (`adam`, ...); step: steps taken; slots: slot name (e.g. `m`,
    `v`) -> one tensor per parameter, aligned with the parameter list.
    """

    kind: str
    step: int = 0
    slots: dict[str, list[Tensor]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: `{"kind", "step", "slots": {name: [NumPy arrays]}}` (arrays are copies)."""
        return {
            "kind": self.kind,
            "step": self.step,
            "slots": {name: [t.numpy().copy() for t in ts] for name, ts in self.slots.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OptimState:
        """The state `to_dict` described (float32/float64 arrays keep their dtype).

        Raises: ValueError: a missing key, a negative or non-integer step, or a slot that is not a
        list of arrays; TypeError: a kind that is not a string; DTypeError: non-numeric arrays.
        """
        try:
            kind, step, slots = data["kind"], data["step"], data["slots"]
        except (KeyError, TypeError) as e:
            raise ValueError(
                f"optimizer state: expected keys kind, step, slots, got {data!r}") from e
        if not isinstance(kind, str):
            raise TypeError(f"optimizer state: kind must be a string, got {kind!r}")
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"optimizer state: step must be a natural number, got {step!r}")
        if not isinstance(slots, dict) or not all(
                isinstance(v, (list, tuple)) for v in slots.values()):
            raise ValueError("optimizer state: slots must map names to lists of arrays")
        tensors = {str(name): [tensor(np.asarray(a)) for a in arrays]
                   for name, arrays in slots.items()}
        return cls(kind, int(step), tensors)


def _hyper(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


class Optimizer:
    """An optimizer with the reference interface: `init(params)` and a functional `step`.

    Subclasses set `kind` and `slot_names`; hyper-parameters are explicit (no defaults). The
    update itself is the native one (`tlrs._core.optim_update`, the same code the compiled
    backend's training loop runs, on CPU and CUDA parameters alike). Updates are elementwise in
    the parameter's dtype; scalar hyper-parameter arithmetic (`1 - beta`,
    `beta^t` by repeated multiplication, `1/(1 - beta^t)`, `lr*wd`) is rounded in that dtype too,
    one IEEE operation at a time, so binary64 results equal plain Python float code bit for bit.
    """

    kind: ClassVar[str]
    slot_names: ClassVar[tuple[str, ...]] = ()
    # Whether the native update (and so the compiled loop) runs this optimizer as configured.
    native: bool = True

    def __init__(self, **hyper: float) -> None:
        self.hyper = {name: _hyper(name, value) for name, value in hyper.items()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.hyper.items())
        return f"{type(self).__name__}({args})"

    def init(self, params: Sequence[Tensor]) -> OptimState:
        """Fresh state: step 0 and, for each slot, zeros shaped and typed like each parameter."""
        slots = {name: [_core.full(list(p.shape), 0.0, p.dtype, device=p.device) for p in params]
                 for name in self.slot_names}
        return OptimState(self.kind, 0, slots)

    def step(
        self,
        state: OptimState,
        params: Sequence[Tensor],
        grads: Sequence[Tensor | None],
        requires_grad: Sequence[bool] | None = None,
    ) -> tuple[list[Tensor], OptimState]:
        """One update; returns (new parameters, new state) and leaves the inputs untouched.

        Args: state: from `init` or an earlier step of this kind; params, grads: aligned lists;
        requires_grad: per-parameter flags (default all true). A parameter whose flag is false
        keeps its value and state (its gradient may be None). The step count always advances.
        Raises: ValueError: a state of another optimizer kind, misaligned lists, or a gradient
        whose shape differs from its parameter's.
        """
        n = len(params)
        flags = [True] * n if requires_grad is None else [bool(f) for f in requires_grad]
        if state.kind != self.kind:
            raise ValueError(
                f"{self.kind}: expected a {self.kind} state, got a {state.kind} state")
        if len(grads) != n or len(flags) != n:
            raise ValueError(
                f"{self.kind}: expected one gradient and one requires_grad flag per parameter "
                f"({n}), got {len(grads)} gradients and {len(flags)} flags")
        for name in self.slot_names:
            held = len(state.slots.get(name) or [])
            if held != n:
                raise ValueError(
                    f"{self.kind}: state slot {name!r} holds {held} tensors, expected {n}")
        t = state.step + 1
        new_params = list(params)
        new_slots = {name: list(state.slots[name]) for name in self.slot_names}
        for i, (p, g, flag) in enumerate(zip(params, grads, flags, strict=True)):
            if not flag:
                continue
            if g is None or list(g.shape) != list(p.shape):
                got = None if g is None else list(g.shape)
                raise ValueError(
                    f"{self.kind}: gradient {i} has shape {got}, expected {list(p.shape)}")
            # State loaded from a checkpoint lives on the CPU; it follows its parameter.
            slots = [new_slots[name][i].to(p.device) for name in self.slot_names]
            new_params[i], updated = self._update_at(i, t, p.detach(), g.detach(), slots)
            for name, value in zip(self.slot_names, updated, strict=True):
                new_slots[name][i] = value
        return new_params, OptimState(self.kind, t, new_slots)


    def _update_at(self, i: int, t: int, p: Tensor, g: Tensor, slots: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        """Parameter `i`'s update (`ParamGroups` picks its group's hyper-parameters here)."""
        return self._update(t, p, g, slots)

    def _update(self, t: int, p: Tensor, g: Tensor, slots: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        """One parameter's native update (the compiled loop runs the same)."""
        new, updated = _core.optim_update(self.kind, self.hyper, t, p, g, slots)
        return new, list(updated)


class SGD(Optimizer):
    """`p <- p - lr*g`."""

    kind = "sgd"


class MomentumSGD(Optimizer):
    """`buf <- momentum*buf + g`; `p <- p - lr*buf` (no dampening, no Nesterov)."""

    kind = "momentum_sgd"
    slot_names = ("buf",)


class Adagrad(Optimizer):
    """`G <- G + g^2`; `p <- p - (lr/(sqrt(G) + eps))*g`."""

    kind = "adagrad"
    slot_names = ("sum_sq",)


class RMSprop(Optimizer):
    """`v <- decay*v + (1-decay)*g^2`; `p <- p - (lr/(sqrt(v) + eps))*g`."""

    kind = "rmsprop"
    slot_names = ("v",)


class Adam(Optimizer):
    """Adam with bias correction `m*(1/(1-beta1^t))` and the step `(lr/(sqrt(v_hat)+eps))*m_hat`."""

    kind = "adam"
    slot_names = ("m", "v")


class AdamW(Adam):
    """Adam moments from the raw gradient, then `p' = p - (lr*wd)*p` and the Adam step on `p'`."""

    kind = "adamw"


class Adadelta(Optimizer):
    """`v <- rho*v + (1-rho)*g^2`; `d = -lr*(sqrt(u+eps)/sqrt(v+eps))*g`; `p <- p + d`;
    `u <- rho*u + (1-rho)*d^2`."""

    kind = "adadelta"
    slot_names = ("v", "u")


def sgd(lr: float) -> SGD:
    """Plain SGD: `p <- p - lr*g`. Raises: TypeError: a non-numeric argument."""
    return SGD(lr=lr)


def momentum_sgd(lr: float, momentum: float) -> MomentumSGD:
    """Heavy-ball momentum (buffer starts at 0). Raises: TypeError: a non-numeric argument."""
    return MomentumSGD(lr=lr, momentum=momentum)


def adagrad(lr: float, eps: float) -> Adagrad:
    """Adagrad. Raises: TypeError: a non-numeric argument."""
    return Adagrad(lr=lr, eps=eps)


def rmsprop(lr: float, decay: float, eps: float) -> RMSprop:
    """RMSprop. Raises: TypeError: a non-numeric argument."""
    return RMSprop(lr=lr, decay=decay, eps=eps)


def adam(lr: float, beta1: float, beta2: float, eps: float) -> Adam:
    """Adam (the reference's CPU grouping). Raises: TypeError: a non-numeric argument."""
    return Adam(lr=lr, beta1=beta1, beta2=beta2, eps=eps)


def adam_default(lr: float = 1e-3) -> Adam:
    """Adam with the examples' defaults beta1=0.9, beta2=0.999, eps=1e-8."""
    return adam(lr, 0.9, 0.999, 1e-8)


def adamw(lr: float, weight_decay: float, beta1: float, beta2: float, eps: float) -> AdamW:
    """AdamW, decoupled decay (weight decay is the second argument, as the reference).

    Raises: TypeError: a non-numeric argument.
    """
    return AdamW(lr=lr, weight_decay=weight_decay, beta1=beta1, beta2=beta2, eps=eps)


def adadelta(lr: float, rho: float, eps: float) -> Adadelta:
    """Adadelta with a learning rate. Raises: TypeError: a non-numeric argument."""
    return Adadelta(lr=lr, rho=rho, eps=eps)


class NewtonSchulz:
    """TorchLean's Newton-Schulz orthogonaliser (`Optim.Muon.newtonSchulzOrthogonalizer`): `steps`
    times `X <- a*X + b*(X G) + c*((X G) G)` with the column Gram `G = X^T X` (`orientation=
    "column"`), or `X <- a*X + b*(G X) + c*(G (G X))` with the row Gram `G = X X^T` ("row"), each
    sum formed left to right as TorchLean writes it. As there, the coefficients are the caller's
    and nothing normalises X first (scale the buffer yourself if the polynomial needs it). It
    applies to 2-D parameters; every other shape keeps its buffer (the identity backend)."""

    def __init__(self, a: float, b: float, c: float, steps: int, orientation: str = "column") -> None:
        self.a, self.b, self.c = (_hyper(n, v) for n, v in (("a", a), ("b", b), ("c", c)))
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"newton_schulz: steps must be a natural number, got {steps!r}")
        if orientation not in ("column", "row"):
            raise ValueError(f"newton_schulz: orientation must be 'column' or 'row', got {orientation!r}")
        self.steps, self.orientation = int(steps), orientation

    def __repr__(self) -> str:
        return f"NewtonSchulz(a={self.a!r}, b={self.b!r}, c={self.c!r}, steps={self.steps}, " \
               f"orientation={self.orientation!r})"

    def __call__(self, x: Tensor) -> Tensor:
        if x.ndim != 2:
            return x
        for _ in range(self.steps):
            if self.orientation == "column":
                gram = _core.matmul(_core.transpose(x, 0, 1), x)
                once = _core.matmul(x, gram)
                twice = _core.matmul(once, gram)
            else:
                gram = _core.matmul(x, _core.transpose(x, 0, 1))
                once = _core.matmul(gram, x)
                twice = _core.matmul(gram, once)
            x = (x * self.a + once * self.b) + twice * self.c
        return x


def newton_schulz(a: float, b: float, c: float, steps: int, orientation: str = "column") -> NewtonSchulz:
    """A Newton-Schulz orthogonaliser for `muon` (see `NewtonSchulz`)."""
    return NewtonSchulz(a, b, c, steps, orientation)


class Muon(Optimizer):
    """TorchLean's runtime Muon (`Optim.Muon.update`): `buf <- momentum*buf + g`, then
    `p <- p - lr*orthogonalizer(buf)`. With no orthogonaliser (TorchLean's default, the identity)
    it is momentum SGD exactly, natively on CPU, CUDA and in the compiled loop; with one (a
    `newton_schulz(...)` or any function of a tensor) the direction is computed with tlrs ops and
    the loop runs in eager mode."""

    kind = "muon"
    slot_names = ("buf",)

    def __init__(self, orthogonalizer: Any = None, **hyper: float) -> None:
        super().__init__(**hyper)
        if orthogonalizer is not None and not callable(orthogonalizer):
            raise TypeError(f"muon: orthogonalizer must be callable, got {type(orthogonalizer).__name__}")
        self.orthogonalizer = orthogonalizer
        self.native = orthogonalizer is None

    def _update(self, t: int, p: Tensor, g: Tensor, slots: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        moved, (buf,) = _core.optim_update("momentum_sgd", self.hyper, t, p, g, slots)
        if self.orthogonalizer is None:
            return moved, [buf]
        direction = self.orthogonalizer(buf)
        if not isinstance(direction, Tensor) or list(direction.shape) != list(p.shape):
            raise ValueError(f"muon: the orthogonalizer must return a tensor of the parameter's shape "
                             f"{list(p.shape)}")
        stepped, _ = _core.optim_update("sgd", {"lr": self.hyper["lr"]}, t, p, direction.detach(), [])
        return stepped, [buf]


class ProjectedSGD(Optimizer):
    """TorchLean's GaLore-style projected SGD (`Optim.GaLore.projectedSGDUpdate`):
    `p <- p - lr*lift(project(g))` with a same-shape projector; with none (the identity) it is
    SGD exactly, natively everywhere. `project` and `lift` are functions of a tensor."""

    kind = "projected_sgd"

    def __init__(self, project: Any = None, lift: Any = None, **hyper: float) -> None:
        super().__init__(**hyper)
        for name, f in (("project", project), ("lift", lift)):
            if f is not None and not callable(f):
                raise TypeError(f"projected_sgd: {name} must be callable, got {type(f).__name__}")
        self.project, self.lift = project, lift
        self.native = project is None and lift is None

    def _update(self, t: int, p: Tensor, g: Tensor, slots: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        for f in (self.project, self.lift):
            g = g if f is None else f(g)
        if not isinstance(g, Tensor) or list(g.shape) != list(p.shape):
            raise ValueError(f"projected_sgd: lift(project(g)) must be a tensor of the parameter's shape "
                             f"{list(p.shape)}")
        return _core.optim_update("sgd", {"lr": self.hyper["lr"]}, t, p, g.detach(), [])


def muon(lr: float, momentum: float, orthogonalizer: Any = None) -> Muon:
    """Muon with TorchLean's formulas (see `Muon`). Raises: TypeError: a non-numeric
    hyper-parameter or a non-callable orthogonalizer."""
    return Muon(orthogonalizer, lr=lr, momentum=momentum)


def projected_sgd(lr: float, project: Any = None, lift: Any = None) -> ProjectedSGD:
    """Projected SGD with TorchLean's formula (see `ProjectedSGD`)."""
    return ProjectedSGD(project, lift, lr=lr)


class ParamGroups(Optimizer):
    """`base` with other hyper-parameters for some parameters (PyTorch's `param_groups`), e.g.
    nanoGPT's weight decay on matrices only:

        opt = optim.param_groups(optim.adamw(3e-4, 0.1, 0.9, 0.95, 1e-8),
                                 [{"params": matrices}, {"params": vectors, "weight_decay": 0.0}])

    A group lists its parameters (tensors, matched by identity when `init` sees the parameter
    list, or positions in it) and the hyper-parameters it overrides; every parameter must be in
    exactly one group. The learning rate is the base's for every group, so a schedule
    (`lr_scheduler`) moves them all; a group cannot set its own `lr`. Each parameter's update is
    the base optimizer's with its group's values, so a parameter's result is the one a separate
    optimizer for its group would give, bit for bit. Runs eagerly: the compiled loop takes one
    set of hyper-parameters, and refuses it by name.
    """

    def __init__(self, base: Optimizer, groups: Sequence[dict[str, Any]]) -> None:
        if not isinstance(base, Optimizer) or isinstance(base, ParamGroups):
            raise TypeError(f"param_groups: expected a tlrs.optim optimizer, got {type(base).__name__}")
        self.base, self.kind, self.slot_names = base, base.kind, base.slot_names  # type: ignore[misc]
        self.hyper = base.hyper  # shared: a schedule's lr reaches every group
        self.groups: list[tuple[list[Any], dict[str, float]]] = []
        for k, group in enumerate(groups):
            if not isinstance(group, dict) or "params" not in group:
                raise ValueError(f"param_groups: group {k} must be a dict with 'params', got {group!r}")
            extra = {name: v for name, v in group.items() if name != "params"}
            unknown = sorted(set(extra) - set(base.hyper) | ({"lr"} & set(extra)))
            if unknown:
                raise ValueError(f"param_groups: group {k} sets {unknown}; a group may override "
                                 f"{sorted(set(base.hyper) - {'lr'})} (the lr is the base's, for schedules)")
            self.groups.append((list(group["params"]), {n: _hyper(n, v) for n, v in extra.items()}))
        self.native = False  # the native loop takes one set of hyper-parameters
        self._members: list[Optimizer] = []
        self._group_of: list[int] = []

    def __repr__(self) -> str:
        return f"ParamGroups({self.base!r}, {len(self.groups)} groups)"

    def init(self, params: Sequence[Tensor]) -> OptimState:
        """Resolves each group's parameters against `params` (by identity or position)."""
        where = {id(p): i for i, p in enumerate(params)}
        group_of = [-1] * len(params)
        for k, (members, _) in enumerate(self.groups):
            for m in members:
                i = m if isinstance(m, (int, np.integer)) and not isinstance(m, bool) else where.get(id(m))
                if i is None or not 0 <= i < len(params):
                    raise ValueError(f"param_groups: group {k} names a parameter not in the list given to init")
                if group_of[i] != -1:
                    raise ValueError(f"param_groups: parameter {i} is in groups {group_of[i]} and {k}")
                group_of[i] = k
        if -1 in group_of:
            raise ValueError(f"param_groups: parameter {group_of.index(-1)} is in no group")
        self._group_of = group_of
        self._members = []
        for _, extra in self.groups:
            member = copy.copy(self.base)
            member.hyper = {**self.base.hyper, **extra}
            self._members.append(member)
        return self.base.init(params)

    def _update_at(self, i: int, t: int, p: Tensor, g: Tensor, slots: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        if not self._group_of:
            raise ValueError("param_groups: call init(params) first (it resolves the groups)")
        member = self._members[self._group_of[i]]
        member.hyper["lr"] = self.base.hyper["lr"]
        return member._update(t, p, g, slots)


def param_groups(base: Optimizer, groups: Sequence[dict[str, Any]]) -> ParamGroups:
    """`base` with per-group hyper-parameters (see `ParamGroups`)."""
    return ParamGroups(base, groups)


from . import lr_scheduler as lr_scheduler  # noqa: E402 - tlrs.optim.lr_scheduler, as torch.optim's
