"""The data set written off the GUI thread: the engine's build_dataset in a QThread, its progress
and its end as signals; ``cancel`` (safe from any thread) stops it at the next image, and the
engine then removes everything it had written."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from PySide6.QtCore import QThread, Signal

from engine.data.dataset_builder import Cancelled, build_dataset
from engine.data.dataset_plan import DatasetPlan
from engine.errors import EngineError
from proto.errors import FormatError


class DatasetWorker(QThread):
    progress = Signal(int, int, float)  # done, total, seconds left (-1: not known yet)
    succeeded = Signal(dict)  # what dataset.json holds
    failed = Signal(str)  # one line
    cancelled = Signal()

    def __init__(self, plan: DatasetPlan, out_dir: Path, force: bool = False) -> None:
        super().__init__()
        self.plan, self.out_dir, self.force = plan, out_dir, force
        self._stop = threading.Event()
        self._start = 0.0

    def cancel(self) -> None:
        self._stop.set()

    def _report(self, done: int, total: int) -> None:
        elapsed = time.monotonic() - self._start
        left = (total - done) * elapsed / done if done and elapsed > 0 else -1.0
        self.progress.emit(done, total, left)

    def run(self) -> None:
        self._start = time.monotonic()
        try:
            summary = build_dataset(self.plan, self.out_dir, self.force, self._report, self._stop.is_set)
        except Cancelled:
            self.cancelled.emit()
        except (EngineError, FormatError, OSError) as exc:
            self.failed.emit(str(exc))
        else:
            self.succeeded.emit(summary)
