"""The plots' ranges, grown in round steps instead of fitted to every new point.

pyqtgraph's auto-range refits each frame, so the axes (and the grid they draw) re-render each
frame; while a run trains that is most of the drawing cost, paid with the GIL the training
thread needs. Here x grows to the next 1-1.5-2-3-4-5-6-8 x 10^k, the loss axis spans 0 to a round
number above the highest loss (the highest is nearly always the first), accuracies span 0-1, and
the learning rate axis 0 to a round number above the highest rate. The axes change a few times a
run. Once the user pans or zooms, the plots are left alone until pyqtgraph's "A" button is used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

STEPS = (1, 1.5, 2, 3, 4, 5, 6, 8, 10)


def nice_number(value: float) -> float:
    """The smallest of STEPS x 10^k that is >= ``value`` (> 0)."""
    power = 10 ** math.floor(math.log10(value))
    return next(m * power for m in STEPS if m * power >= value * (1 - 1e-12))


def nice_ceiling(value: float) -> float:
    """An x range end: ``nice_number`` of ``value``, 10 at least."""
    return 10.0 if value <= 10 else nice_number(value)


def span(arrays: Iterable[np.ndarray]) -> tuple[float, float] | None:
    """(min, max) of the finite values of ``arrays``; None when there are none."""
    lo, hi = math.inf, -math.inf
    for a in arrays:
        finite = a[np.isfinite(a)]
        if finite.size:
            lo, hi = min(lo, float(finite.min())), max(hi, float(finite.max()))
    return (lo, hi) if lo <= hi else None


def round_range(lo: float, hi: float) -> tuple[float, float]:
    """A range from 0 (or a round number below a negative ``lo``) to a round number above ``hi``."""
    top = nice_number(hi) if hi > 0 else 1.0
    bottom = 0.0 if lo >= 0 else -nice_number(-lo)
    return bottom, top


class RangeKeeper:
    """Keeps one view box's range round; remembers what it set so unchanged ranges cost nothing."""

    def __init__(self, view_box, axis: int) -> None:
        self.view_box, self.axis = view_box, axis  # axis: 0 for x, 1 for y
        self.current: tuple[float, float] | None = None

    def reset(self) -> None:
        self.current = None

    def keep(self, lo: float, hi: float, margin: float = 0.02) -> None:
        if (lo, hi) == self.current:
            return
        self.current = (lo, hi)
        pad = (hi - lo) * margin
        if self.axis == 0:
            self.view_box.setXRange(lo - pad, hi + pad * 0.25, padding=0)
        else:
            self.view_box.setYRange(lo - pad * 0.25, hi + pad, padding=0)
