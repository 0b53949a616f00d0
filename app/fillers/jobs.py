"""Run a computation off the GUI thread and hand back only the newest answer.

A blob may hold tens of millions of values and a net may take seconds to build, so the panels
submit their work here and stay responsive. Requests made while one runs replace each other (only
the last still queued runs); an answer that a newer request has overtaken is dropped. Answers
arrive through ``done`` (the result) or ``failed`` (the message), on the GUI thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


class _Carrier(QObject):
    finished = Signal(int, object)  # ticket, (result, error message or None): one object, never a bare None


class _Task(QRunnable):
    def __init__(self, ticket: int, work: Callable[[], Any]) -> None:
        super().__init__()
        self.setAutoDelete(False)  # Python holds it until its answer is in
        self.ticket, self.work, self.carrier = ticket, work, _Carrier()

    def run(self) -> None:
        try:
            result, error = self.work(), None
        except Exception as e:  # shown to the user, never a crash of the worker thread
            result, error = None, str(e) or type(e).__name__
        with contextlib.suppress(RuntimeError):  # raised when the app is closing: nobody waits for it
            self.carrier.finished.emit(self.ticket, (result, error))


class Jobs(QObject):
    done = Signal(object)
    failed = Signal(str)
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._ticket = 0
        self._tasks: dict[int, _Task] = {}

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def submit(self, work: Callable[[], Any]) -> None:
        self._ticket += 1
        for ticket in [t for t, task in self._tasks.items() if self.pool.tryTake(task)]:
            del self._tasks[ticket]  # never started: replaced by this request
        task = _Task(self._ticket, work)
        task.carrier.finished.connect(self._finished)
        was_busy = self.busy
        self._tasks[self._ticket] = task
        self.pool.start(task)
        if not was_busy:
            self.busy_changed.emit(True)

    def cancel(self) -> None:
        """Forget every pending answer (a running computation finishes, unseen)."""
        self._ticket += 1

    def wait(self, msecs: int = -1) -> bool:
        return self.pool.waitForDone(msecs)

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
