"""The engine's one source of randomness, so that one seed reproduces every weight and mask.

Fillers draw on the host (as Caffe's do, even in GPU mode) so a seed gives the same initial
weights on numpy and cupy. Per-iteration noise (Dropout masks) is drawn by the array module of
the data, from a generator seeded off the host one.

``seeded(seed)`` gives the calling thread generators of its own for a while: a training run in a
worker thread and a preview in another then neither disturb nor depend on each other's draws.
Elsewhere every thread shares the process-wide generators.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np


class _Generators:
    def __init__(self, seed: int | None = None) -> None:
        self.host = np.random.default_rng(seed)
        self.device: dict[str, Any] = {}


_shared = _Generators()
_local = threading.local()


def _current() -> _Generators:
    own: _Generators | None = getattr(_local, "generators", None)
    return own if own is not None else _shared


def _seed_value(seed: int | None) -> int | None:
    return None if seed is None or seed < 0 else int(seed)


def set_random_seed(seed: int | None) -> None:
    """Seed the current generators; a negative seed (Caffe's default -1) draws a fresh one."""
    global _shared
    fresh = _Generators(_seed_value(seed))
    if getattr(_local, "generators", None) is not None:
        _local.generators = fresh
    else:
        _shared = fresh


def host() -> np.random.Generator:
    return _current().host


def for_module(xp: ModuleType) -> Any:
    """A Generator of the array module ``xp`` (the host generator for numpy)."""
    current = _current()
    if xp is np:
        return current.host
    key = xp.__name__
    if key not in current.device:
        current.device[key] = xp.random.default_rng(int(current.host.integers(2**31)))
    return current.device[key]


@contextmanager
def seeded(seed: int | None = None) -> Iterator[np.random.Generator]:
    """In this thread, draw from generators of its own seeded with ``seed`` until the block ends."""
    outer = getattr(_local, "generators", None)
    _local.generators = _Generators(_seed_value(seed))
    try:
        yield _local.generators.host
    finally:
        _local.generators = outer
