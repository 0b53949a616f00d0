"""One long computation off the GUI thread, with progress and Cancel.

``start(work)`` runs ``work(progress, cancelled)`` on a pool thread: ``progress(done, total)``
reaches the GUI as the ``progress`` signal, ``cancelled()`` turns True once ``cancel()`` is called.
The answer arrives on the GUI thread as ``done(result)`` or ``failed(message)``; an answer of a run
that a newer start has replaced is dropped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

Work = Callable[[Callable[[int, int], None], Callable[[], bool]], Any]


class _Carrier(QObject):
    progress = Signal(int, int, int)  # ticket, done, total
    finished = Signal(int, object)  # ticket, (result, error message or None)


class _Task(QRunnable):
    def __init__(self, ticket: int, work: Work, stop: threading.Event) -> None:
        super().__init__()
        self.setAutoDelete(False)
        self.ticket, self.work, self.stop, self.carrier = ticket, work, stop, _Carrier()

    def run(self) -> None:
        def progress(done: int, total: int) -> None:
            with contextlib.suppress(RuntimeError):
                self.carrier.progress.emit(self.ticket, done, total)

        try:
            result, error = self.work(progress, self.stop.is_set), None
        except Exception as e:  # shown to the user in one line, never a crash of the thread
            result, error = None, str(e) or type(e).__name__
        with contextlib.suppress(RuntimeError):  # the app is closing: nobody waits for it
            self.carrier.finished.emit(self.ticket, (result, error))


class Worker(QObject):
    progress = Signal(int, int)
    done = Signal(object)
    failed = Signal(str)
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)  # the model lives on one thread: its nets are not shared
        self._ticket = 0
        self._tasks: dict[int, _Task] = {}
        self._stop = threading.Event()

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def start(self, work: Work) -> None:
        self._ticket += 1
        self._stop = threading.Event()
        task = _Task(self._ticket, work, self._stop)
        task.carrier.progress.connect(self._progress)
        task.carrier.finished.connect(self._finished)
        was_busy = self.busy
        self._tasks[self._ticket] = task
        self.pool.start(task)
        if not was_busy:
            self.busy_changed.emit(True)

    def cancel(self) -> None:
        """Ask the running computation to stop (it stops at its next check)."""
        self._stop.set()

    def wait(self, msecs: int = -1) -> bool:
        return self.pool.waitForDone(msecs)

    def _progress(self, ticket: int, done: int, total: int) -> None:
        if ticket == self._ticket:
            self.progress.emit(done, total)

    def _finished(self, ticket: int, answer: tuple[Any, str | None]) -> None:
        result, error = answer
        self._tasks.pop(ticket, None)
        if not self._tasks:
            self.busy_changed.emit(False)
        if ticket != self._ticket:
            return
        if error is None:
            self.done.emit(result)
        else:
            self.failed.emit(error)
