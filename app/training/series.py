"""Curves as columns of float64 that grow by doubling, and the debiased moving average.

Appending a batch is amortised O(1) per point and ``column`` is a view, so a 100,000-iteration
run feeds the plots without copies. Qt-free.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Series:
    """Rows of named float columns: ``extend(rows)``, ``column(name)`` (a view of the filled part)."""

    def __init__(self, columns: Sequence[str], capacity: int = 1024) -> None:
        self.names = tuple(columns)
        self._index = {name: i for i, name in enumerate(self.names)}
        self._data = np.full((len(self.names), max(16, capacity)), np.nan)
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def extend(self, rows: np.ndarray | Sequence[Sequence[float]]) -> None:
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, len(self.names))
        need = self.size + len(rows)
        if need > self._data.shape[1]:
            capacity = self._data.shape[1]
            while capacity < need:
                capacity *= 2
            grown = np.full((len(self.names), capacity), np.nan)
            grown[:, : self.size] = self._data[:, : self.size]
            self._data = grown
        self._data[:, self.size : need] = rows.T
        self.size = need

    def append(self, *row: float) -> None:
        self.extend([row])

    def column(self, name: str) -> np.ndarray:
        return self._data[self._index[name], : self.size]

    def last(self, name: str) -> float | None:
        return float(self._data[self._index[name], self.size - 1]) if self.size else None


class Smoother:
    """The debiased exponential moving average of one column, kept up to date incrementally.

    ``s_t = w * s_{t-1} + (1 - w) * x_t`` and the output is ``s_t / (1 - w**t)``, so the first
    points are not dragged towards zero (Adam's bias correction, TensorBoard's smoothing).
    Changing ``weight`` recomputes from the start; non-finite inputs are skipped, not spread.
    """

    def __init__(self, weight: float = 0.9) -> None:
        self.weight = min(max(weight, 0.0), 0.999)
        self.values = Series(("value",))
        self._biased = 0.0
        self._count = 0

    def set_weight(self, weight: float) -> None:
        weight = min(max(weight, 0.0), 0.999)
        if weight != self.weight:
            self.weight = weight
            self.values = Series(("value",))
            self._biased, self._count = 0.0, 0

    def update(self, source: np.ndarray) -> np.ndarray:
        """Extend the average over the new tail of ``source``; returns the whole smoothed column."""
        done = len(self.values)
        if done < len(source):
            self.values.extend(self._run(source[done:]))
        return self.values.column("value")

    def _run(self, xs: np.ndarray) -> np.ndarray:
        w, biased, count = self.weight, self._biased, self._count
        out = np.empty(len(xs))
        for i, x in enumerate(xs.tolist()):
            if x == x and abs(x) != float("inf"):
                biased = w * biased + (1.0 - w) * x
                count += 1
            out[i] = biased / (1.0 - w**count) if count else np.nan
        self._biased, self._count = biased, count
        return out
