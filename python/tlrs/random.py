"""(`tlrs.random`; `tlrs.rand` is the tensor constructor, as in torch.) The reference's generators: the global SplitMix64 seed stream (`manual_seed`, `fresh_seed`,
`with_model`), the runtime-init unit sampler, the layer-initialiser LCG and the dataset-shuffle LCG.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from . import _core
from ._args import natural
from ._core import (
    fresh_seed,
    key_of,
    next_seed,
    runtime_init_unit,
    seed_stream_state,
    splitmix64,
)

T = TypeVar("T")


def manual_seed(seed: int) -> None:
    """Seeds the global seed stream. Raises: ValueError: a seed outside [0, 2**64)."""
    _core.manual_seed(natural("seed", seed, 2**64))


@contextmanager
def training_step(step: int) -> Iterator[None]:
    """Runs its body as training step `step`: each `dropout` without a key draws the step's next
    mask, `key_of(key_of(seed, step), n)` for the n-th (seed: the global stream's, as
    `manual_seed` set it), so the eager and compiled backends draw the same fresh masks each
    step. `Module`'s training loops open one per step with the optimizer's step count."""
    previous = _core.enter_step(natural("step", step, 2**64))
    try:
        yield
    finally:
        _core.exit_step(previous)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Runs its body with the global seed stream at (seed, 0), then puts the stream back where
    it stood: a fixed model (a command's default definition) without disturbing the caller's
    draws."""
    before = _core.seed_stream_state()
    manual_seed(seed)
    try:
        yield
    finally:
        _core.set_seed_stream_state(*before)


def set_seed_stream_state(seed: int, counter: int) -> None:
    """Puts the global seed stream at `(seed, counter)`, as `seed_stream_state()` read it (a
    resumed run continues the stream where it stood).

    Raises: ValueError: a seed or counter outside [0, 2**64).
    """
    _core.set_seed_stream_state(natural("seed", seed, 2**64), natural("counter", counter, 2**64))


def lcg_units(seed: int, n: int) -> list[float]:
    """The layer-initialiser LCG's first `n` units in [0, 1) for `seed`.

    Raises: ValueError: a seed outside [0, 2**64) or a count outside [0, 2**63); MemoryError:
    a count too large to allocate.
    """
    return _core.lcg_units(natural("seed", seed, 2**64), natural("n", n, 2**63))


def shuffle_permutation(seed: int, n: int) -> tuple[list[int], int]:
    """The dataset-shuffle LCG's permutation of `n` items for `seed`, and the next seed.

    Raises: as `lcg_units`.
    """
    return _core.shuffle_permutation(natural("seed", seed, 2**64), natural("n", n, 2**63))

__all__ = [
    "fresh_seed",
    "key_of",
    "lcg_units",
    "manual_seed",
    "next_seed",
    "runtime_init_unit",
    "seed_stream_state",
    "set_seed_stream_state",
    "shuffle_permutation",
    "splitmix64",
    "with_model",
    "SeedStream",
]


class SeedStream:
    """A local (seed, counter) stream: `fresh_seed()` returns next_seed(seed, counter), counter += 1."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.counter = 0

    def fresh_seed(self) -> int:
        """The next seed of this stream."""
        s = next_seed(self.seed, self.counter)
        self.counter += 1
        return s


def with_model(builder: Callable[[SeedStream], T], k: Callable[[T], object] | None = None) -> T:
    """Draws one seed from the global stream and builds from a fresh local stream (seed, 0).

    Layers draw their seeds from the local stream in construction order (the reference's
    `nn.withModel`). Calls `k(model)` when given and returns the model.
    """
    model = builder(SeedStream(fresh_seed()))
    if k is not None:
        k(model)
    return model
