"""One training run as the app remembers it: its settings, its curves, its log and how it ended.

Qt-free. The controller feeds it from the worker's signals (in the GUI thread); the plots read
its ``Series`` views on their timer and redraw when ``version`` moved.
"""

from __future__ import annotations

import difflib
from datetime import datetime

import numpy as np

from app.training.job import TrainingJob
from app.training.series import Series
from engine.events import RunStatus

TRAIN_COLUMNS = ("iter", "seconds", "loss", "lr")
TEST_COLUMNS = ("iter", "seconds", "value")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


class Run:
    def __init__(self, number: int, job: TrainingJob) -> None:
        self.number = number
        self.name = f"Run {number}"
        self.job = job
        self.color = PALETTE[(number - 1) % len(PALETTE)]
        self.started = datetime.now()
        self.status = RunStatus.STARTING
        self.max_iter = job.solver.max_iter
        self.iter = 0
        self.seconds = 0.0
        self.train = Series(TRAIN_COLUMNS)
        self.tests: dict[str, Series] = {}
        self.log: list[tuple[float, str]] = []  # (seconds since the run began, line)
        self.snapshots: list[str] = []
        self.error: str | None = None
        self.weights: tuple[int, dict[str, list[np.ndarray]]] | None = None  # (iter, layer -> blobs)
        self.version = 0

    # ---- fed by the controller ---------------------------------------------------------------
    def add_points(self, rows: np.ndarray) -> None:
        if len(rows):
            self.train.extend(rows)
            self.iter = int(rows[-1][0]) + 1
            self.seconds = max(self.seconds, float(rows[-1][1]))
            self.version += 1

    def add_test(self, iteration: int, seconds: float, net: int, scores: dict[str, float]) -> None:
        for name, value in scores.items():
            key = name if net == 0 else f"{name} (test net #{net})"
            self.tests.setdefault(key, Series(TEST_COLUMNS, 64)).append(iteration, seconds, value)
        self.version += 1

    # ---- read by the views ---------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.status.active

    def rate(self, window_s: float = 3.0) -> float | None:
        """Iterations per second over the last ``window_s`` seconds of points."""
        n = len(self.train)
        if n < 2:
            return None
        t = self.train.column("seconds")
        it = self.train.column("iter")
        first = int(np.searchsorted(t, t[-1] - window_s))
        first = min(first, n - 2)
        dt = t[-1] - t[first]
        return float(it[-1] - it[first]) / dt if dt > 0 else None

    def eta_s(self) -> float | None:
        rate = self.rate()
        return (self.max_iter - self.iter) / rate if rate else None

    def last_loss(self) -> float | None:
        return self.train.last("loss")

    def best(self, name: str) -> float | None:
        series = self.tests.get(name)
        return float(np.nanmax(series.column("value"))) if series is not None and len(series) else None

    def settings_text(self) -> str:
        return f"# solver\n{self.job.solver_text.rstrip()}\n\n# net\n{self.job.net_text.rstrip()}\n"

    def diff_from(self, other: Run) -> str:
        """What changed in the settings since ``other`` (a unified diff of solver and net text)."""
        lines = difflib.unified_diff(
            other.job.canonical.splitlines(),
            self.job.canonical.splitlines(),
            other.name,
            self.name,
            n=1,
            lineterm="",
        )
        return "\n".join(lines)

    def fillers(self) -> str:
        """The weight fillers of the net in one short phrase ("xavier x4", "conv1 gaussian, ...")."""
        kinds = []
        for net in self.job.nets():
            for layer in net.layer:
                for field, value in layer.ListFields():
                    if field.name.endswith("_param") and any(
                        f.name == "weight_filler" for f, _ in value.ListFields()
                    ):
                        kinds.append((layer.name, value.weight_filler.type))
        types = sorted({t for _, t in kinds})
        if len(types) == 1:
            return f"{types[0]} ×{len(kinds)}"
        return ", ".join(f"{name} {t}" for name, t in kinds)
