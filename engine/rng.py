"""The engine's one source of randomness, so that one seed reproduces every weight and mask.

Fillers draw on the host (as Caffe's do, even in GPU mode) so a seed gives the same initial
weights on numpy and cupy. Per-iteration noise (Dropout masks) is drawn by the array module of
the data, from a generator seeded off the host one.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

_host = np.random.default_rng()
_device: dict[str, Any] = {}


def set_random_seed(seed: int) -> None:
    """Seed every generator; a negative seed (Caffe's default -1) draws a fresh one."""
    global _host
    _host = np.random.default_rng(None if seed is None or seed < 0 else int(seed))
    _device.clear()


def host() -> np.random.Generator:
    return _host


def for_module(xp: ModuleType) -> Any:
    """A Generator of the array module ``xp`` (the host generator for numpy)."""
    if xp is np:
        return _host
    key = xp.__name__
    if key not in _device:
        _device[key] = xp.random.default_rng(int(_host.integers(2**31)))
    return _device[key]
