"""One long computation off the GUI thread, with progress and Cancel: ``app.fillers.jobs.Jobs`` plus both.

``start(work)`` runs ``work(progress, cancelled)`` on a pool thread: ``progress(done, total)``
reaches the GUI as the ``progress`` signal, ``cancelled()`` turns True once ``cancel()`` is called.
The answer arrives on the GUI thread as ``done(result)`` or ``failed(message)``; an answer (or
progress) of a run that a newer start has replaced is dropped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.fillers.jobs import Jobs

Work = Callable[[Callable[[int, int], None], Callable[[], bool]], Any]


class _Reporter(QObject):
    moved = Signal(int, int, int)  # ticket, done, total: emitted on the pool thread, received on the GUI's


class Worker(Jobs):
    progress = Signal(int, int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)  # one pool thread: the model lives on it, its nets are not shared
        self._stop = threading.Event()
        self._reporter = _Reporter(self)
        self._reporter.moved.connect(self._progress)

    def start(self, work: Work) -> None:
        self._stop = stop = threading.Event()
        ticket, reporter = self._ticket + 1, self._reporter  # the ticket submit() gives this run

        def progress(done: int, total: int) -> None:
            with contextlib.suppress(RuntimeError):  # the app is closing
                reporter.moved.emit(ticket, done, total)

        self.submit(lambda: work(progress, stop.is_set))

    def cancel(self) -> None:
        """Ask the running computation to stop (it stops at its next check; its answer still comes)."""
        self._stop.set()

    def _progress(self, ticket: int, done: int, total: int) -> None:
        if ticket == self._ticket:
            self.progress.emit(done, total)
