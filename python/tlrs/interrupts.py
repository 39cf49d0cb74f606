"""Interrupts that land between whole training steps.

Python raises `KeyboardInterrupt` wherever the main thread happens to be, which could leave a
module with some parameters updated and others not. The training loops therefore run inside
`handled()`: SIGINT (and, on the CLI, SIGTERM) raises `Interrupted` at once during a step's
forward and backward pass (the native compiled loop checks between its steps), but waits while
a step's update is committed (`deferred()`), so the caller always sees the state of the last
completed step, which the exception carries.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["Interrupted", "deferred", "handled", "signal_name"]


def signal_name(signum: int) -> str:
    """`SIGINT`, `SIGTERM`, ... for a signal number (`signal N` when it has no name)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Interrupted(KeyboardInterrupt):
    """A run stopped by SIGINT or SIGTERM, between two whole steps.

    A `KeyboardInterrupt`, so code that handles Ctrl-C handles both signals.
    Attributes: signum: the signal; state: the optimizer state after the last completed step
    (None when the interrupt came outside a training loop); losses: the pre-update losses of the
    steps this call completed; `str(err)`: a line saying where it stopped; exit_code: 128 + signum, the shell's code for the signal.
    """

    def __init__(self, signum: int, state: Any = None, losses: Sequence[float] = (),
                 message: str | None = None) -> None:
        super().__init__(message or f"interrupted by {signal_name(signum)}")
        self.signum = int(signum)
        self.state = state
        self.losses = list(losses)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @classmethod
    def during(cls, err: BaseException, state: Any, losses: Sequence[float]) -> Interrupted:
        """`err` (an interrupt) as an `Interrupted` carrying the loop's progress."""
        signum = err.signum if isinstance(err, Interrupted) else int(signal.SIGINT)
        return cls(signum, state, losses)


class _Held:
    depth = 0
    pending: int | None = None


_held = _Held()


def _handler(signum: int, frame: Any) -> None:
    if _held.depth:
        if _held.pending is None:
            _held.pending = signum
        return
    raise Interrupted(signum)


@contextmanager
def handled(sigterm: bool = False) -> Iterator[None]:
    """For its duration, SIGINT (and SIGTERM when `sigterm`) raise `Interrupted`, except inside
    `deferred()` sections, which raise it when they end.

    Only the main thread receives signals, so elsewhere this does nothing. SIGINT is taken over
    only from Python's default handler and SIGTERM only from the default action: a handler the
    program installed itself stays in place. Nested uses keep the outer one's handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted: list[tuple[signal.Signals, Any]] = [(signal.SIGINT, signal.default_int_handler)]
    if sigterm:
        wanted.append((signal.SIGTERM, signal.SIG_DFL))
    previous: dict[signal.Signals, Any] = {}
    for sig, default in wanted:
        current = signal.getsignal(sig)
        if current is default:
            previous[sig] = current
            signal.signal(sig, _handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """A section a signal does not cut: under `handled()`, a signal that arrives inside waits
    until the section ends, then raises `Interrupted`."""
    _held.depth += 1
    try:
        yield
    finally:
        _held.depth -= 1
        if _held.depth == 0 and _held.pending is not None:
            signum, _held.pending = _held.pending, None
            raise Interrupted(signum)
