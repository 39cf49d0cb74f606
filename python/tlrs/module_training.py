"""The `Module` training loops (tlrs/module.py dispatches to them): the eager loop, one Python
step at a time, and the compiled backend's native loop, one Rust call for all the steps; both
print the reference's `step N: loss=<v>` lines, stop between two whole steps on a signal
(`tlrs.interrupts`) and can check every loss for NaN and infinity."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import _core, interrupts, optim
from ._core import Tensor
from .compiled import slots_from_native, slots_to_native
from .errors import NonFiniteLossError
from .module_def import format_float
from .random import training_step

if TYPE_CHECKING:
    from .module import Module

__all__ = ["Record", "check_finite_losses", "check_loop", "check_optimizer", "train_eager",
           "train_native"]

Inputs = Sequence[Any]
Record = Callable[[optim.OptimState, list[float]], None]
"""`record(state, losses)`: called inside each update's commit with the new state and losses."""
Update = Callable[[Any, list[Tensor]], Any]
"""`update(state, grads) -> state`: the eager loop's parameter update."""


def check_optimizer(opt: Any, where: str) -> None:
    if not isinstance(opt, optim.Optimizer):
        raise TypeError(f"{where}: expected a tlrs.optim optimizer, got {type(opt).__name__}")


def check_finite_losses(losses: Sequence[float], name: str, start: int = 0) -> None:
    """Raise NonFiniteLossError at the first NaN or infinite loss from index `start` on,
    naming its step and the last finite loss before it."""
    for i in range(start, len(losses)):
        if not math.isfinite(losses[i]):
            raise NonFiniteLossError(i, losses[i], losses[:i], name)


def check_loop(name: str, samples: Sequence[Any], steps: int, log_every: int) -> None:
    """The training loops' argument checks, with the reference's empty-dataset message."""
    if not samples:
        raise ValueError(f"{name}: empty dataset")
    for what, n in (("steps", steps), ("log_every", log_every)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name}: {what} must be a natural number, got {n!r}")


def train_native(module: Module, samples: Sequence[Inputs], steps: int, log_every: int,
                 name: str, opt: optim.Optimizer, state: Any, check_finite: bool = False,
                 record: Record | None = None, clip: float | None = None,
                 lrs: Sequence[float] | None = None, accumulate: int = 1
                 ) -> tuple[optim.OptimState, list[float]]:
    """The compiled backend's loop: every step (forward, backward, update) runs in Rust.
    Returns the new state and each step's pre-update loss. An interrupt ends the native
    loop between two steps; the steps done are kept and the `Interrupted` carries them.
    `clip` and `lrs`: as `clipped_update`; `accumulate`: as `train_eager`; all run natively."""
    samples = [module._inputs(xs) for xs in samples]
    check_loop(name, samples, steps, log_every)
    shapes = {tuple(tuple(x.shape) for x in xs) for xs in samples}
    if len(shapes) != 1:
        raise ValueError(f"{name}: the compiled backend needs samples of one shape, got {sorted(shapes)}")
    assert module._compiled is not None
    graph = module._compiled.graph_for(next(iter(shapes)))
    check_optimizer(opt, name)
    if not opt.native:
        raise ValueError(f"{name}: {opt!r} needs Python in its update (an orthogonalizer or "
                         "projector, or parameter groups), which the compiled backend's native loop "
                         "cannot run: train it with the eager backend")
    if state is not None and not isinstance(state, optim.OptimState):
        raise TypeError(f"{name}: expected an OptimState, got {type(state).__name__}")
    names = type(opt).slot_names
    st = opt.init(module._params) if state is None else state
    if st.kind != opt.kind:
        raise ValueError(f"{opt.kind}: expected a {opt.kind} state, got a {st.kind} state")
    with interrupts.handled():
        with module._settings():  # the module's GPU matmul precision and TF32, as in eager
            losses, params, slots, step, interrupt = graph.train(
                module._params, list(module.requires_grad), samples, steps, opt.kind,
                dict(opt.hyper), slots_to_native(st, len(module._params), names), st.step,
                module.opts.fast_kernels, None if lrs is None else [float(v) for v in lrs], clip,
                accumulate)
        with interrupts.deferred():
            module._params = list(params)
            st = optim.OptimState(opt.kind, step, slots_from_native(slots, names))
            if record is not None:
                record(st, list(losses))
        for i, loss in enumerate(losses):
            if log_every != 0 and i % log_every == 0:
                print(f"step {i}: loss={format_float(loss)}")
        if isinstance(interrupt, KeyboardInterrupt):
            raise interrupts.Interrupted.during(interrupt, st, losses) from None
        if interrupt is not None:
            raise interrupt  # what a program's own signal handler raised
    if check_finite:
        check_finite_losses(losses, name)
    return st, list(losses)


def clipped_update(module: Module, opt: optim.Optimizer, clip: float | None,
                   lrs: Sequence[float] | None) -> Update:
    """An eager update by `opt` that first clips the trainable gradients to joint 2-norm `clip`
    (`tlrs.nn.clip_grad_norm`, PyTorch's formula) and takes the learning rate of its step from
    `lrs` (one per step, e.g. a schedule's): what the native loop runs, in the same order."""
    from .nn.utils import clip_grad_norm  # the layer API sits above the runtime: import at use

    calls = [0]

    def update(state: Any, grads: list[Tensor]) -> Any:
        step_opt = opt
        if lrs is not None:
            step_opt = copy.copy(opt)
            step_opt.hyper = {**opt.hyper, "lr": float(lrs[calls[0]])}
        calls[0] += 1
        if clip is not None:
            trained = [i for i, flag in enumerate(module.requires_grad) if flag]
            if trained:
                clipped, _ = clip_grad_norm([grads[i] for i in trained], clip)
                grads = list(grads)
                for i, g in zip(trained, clipped, strict=True):
                    grads[i] = g
        return module._optim_step(step_opt, state, grads)

    return update


def accumulated(module: Module, samples: Sequence[Inputs], first: int, k: int) -> tuple[Tensor, list[Tensor]]:
    """One step's loss and gradients over `k` consecutive samples from `first` (wrapping): for
    k > 1 their means, each a left fold in sample order divided by k once (the native loop's
    ops, in its order)."""
    loss, grads = module._value_and_grads(samples[first % len(samples)])
    if k == 1:
        return loss, grads
    for j in range(1, k):
        more, more_grads = module._value_and_grads(samples[(first + j) % len(samples)])
        loss = _core.add(loss, more)
        grads = [_core.add(a, g) for a, g in zip(grads, more_grads, strict=True)]
    div = [_core.full([], float(k), t.dtype, device=t.device) for t in (loss, *grads)]
    return _core.div(loss, div[0]), [_core.div(g, d) for g, d in zip(grads, div[1:], strict=True)]


def train_eager(module: Module, samples: Sequence[Inputs], steps: int, log_every: int, name: str,
                update: Update, state: Any, check_finite: bool = False,
                record: Record | None = None, accumulate: int = 1) -> tuple[Any, list[float]]:
    """The eager loop; returns (state, pre-update losses). A signal interrupts a step's
    forward and backward pass at once, never its update (see `tlrs.interrupts`). With
    `accumulate` k, step i averages the losses and gradients of samples k·i .. k·i + k - 1."""
    samples = list(samples)
    check_loop(name, samples, steps, log_every)
    losses: list[float] = []
    with interrupts.handled():
        try:
            for step in range(steps):
                # The step's dropout masks come from the optimizer's step count, as in the
                # native loop.
                with training_step(getattr(state, "step", step)):
                    loss, grads = accumulated(module, samples, step * accumulate, accumulate)
                value = loss.item()
                if log_every != 0 and step % log_every == 0:
                    print(f"step {step}: loss={format_float(value)}")
                with interrupts.deferred():
                    state = update(state, grads)
                    losses.append(value)
                    if record is not None:
                        record(state, [value])
                if check_finite:
                    check_finite_losses(losses, name, len(losses) - 1)
        except KeyboardInterrupt as err:
            raise interrupts.Interrupted.during(err, state, losses) from None
    return state, losses
