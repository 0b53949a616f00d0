"""Run a solver to the end in the calling thread, steerable from another thread.

The GUI starts ``Trainer.run`` in a worker thread and asks from its own: ``pause``, ``resume``,
``stop``, ``snapshot`` and ``submit`` (work on the solver: copy the weights, write a
.caffemodel). Every request goes into one queue that the training thread takes between two
iterations (and between test batches). While the run is paused the training thread waits on that
queue and touches nothing, and once it is over nothing runs: then a snapshot or submitted work is
done at once, in the caller's thread (holding the lock, so no resume overtakes it).

``status`` is the run's RunStatus; what the run reports goes to the listener as typed events
(engine/events.py): the solver's Iteration, Tested and Snapshotted, and Started, Paused, Resumed,
Finished and Failed from here. Nothing here knows Qt.
"""

from __future__ import annotations

import enum
import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from engine import rng
from engine.errors import EngineError
from engine.events import Event, Failed, Finished, Paused, Resumed, RunStatus, Started
from engine.solvers.base import Solver

Listener = Callable[[Event], None]
Work = Callable[[Solver], Any]
Answer = Callable[[Any, "str | None"], None]  # (result, error message)


class Request(enum.Enum):
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    SNAPSHOT = "snapshot"


class Trainer:
    def __init__(self, build: Callable[[], Solver], listener: Listener | None = None) -> None:
        """``build`` makes the solver (in the worker thread, so set-up errors are reported too)."""
        self._build = build
        self._listeners: list[Listener] = [listener] if listener else []
        self._requests: queue.SimpleQueue[Request | tuple[Work, Answer]] = queue.SimpleQueue()
        self._lock = threading.RLock()  # status, whether the training thread takes requests, work here
        self._status = RunStatus.STARTING
        self._taking = True
        self.solver: Solver | None = None

    def _emit(self, event: Event) -> None:
        for listener in self._listeners:
            listener(event)

    @property
    def status(self) -> RunStatus:
        return self._status

    @property
    def paused(self) -> bool:
        return self._status in (RunStatus.PAUSING, RunStatus.PAUSED)

    # --- requests from other threads ---------------------------------------------------------
    def pause(self) -> None:
        self._ask(Request.PAUSE, {RunStatus.STARTING, RunStatus.RUNNING}, RunStatus.PAUSING)

    def resume(self) -> None:
        self._ask(Request.RESUME, {RunStatus.PAUSING, RunStatus.PAUSED}, RunStatus.RUNNING)

    def stop(self) -> None:
        self._ask(Request.STOP, _ACTIVE - {RunStatus.STOPPING}, RunStatus.STOPPING)

    def snapshot(self) -> None:
        """Write PREFIX_iter_N.caffemodel/.solverstate after the current iteration (at once when paused)."""
        with self._lock:
            if self._status is RunStatus.PAUSED and self.solver is not None:
                self.solver.snapshot()
                return
        self._ask(Request.SNAPSHOT, _ACTIVE - {RunStatus.STOPPING}, None)

    def submit(self, work: Work, answer: Answer) -> None:
        """``answer(work(solver), None)`` between two iterations, or now in this thread while the run
        is paused or over; ``answer(None, message)`` when the work raised or there is no solver."""
        with self._lock:
            if self._taking and self._status is not RunStatus.PAUSED:
                self._requests.put((work, answer))
                return
            self._do(work, answer)

    def _ask(self, request: Request, when: set[RunStatus], status: RunStatus | None) -> None:
        with self._lock:
            if not self._taking or self._status not in when:
                return
            if status is not None:
                self._status = status
            self._requests.put(request)

    # --- the training thread, between two iterations ------------------------------------------
    def _between_iterations(self) -> str | None:
        """Take every request; 'stop' or 'snapshot' for the solver (Caffe's SolverAction), or None."""
        answer: str | None = None
        paused = False
        while True:
            try:
                item = self._requests.get(block=paused)
            except queue.Empty:
                return answer
            if isinstance(item, tuple):
                self._do(*item)
            elif item is Request.STOP:
                return "stop"
            elif item is Request.PAUSE and not paused:
                paused = self._set(RunStatus.PAUSED, only_from=RunStatus.PAUSING)
                if paused:
                    self._emit(Paused(self._iter()))
            elif item is Request.RESUME and paused:
                paused = False
                self._emit(Resumed(self._iter()))
            elif item is Request.SNAPSHOT:
                if paused and self.solver is not None:
                    self.solver.snapshot()  # now: the run is waiting between two iterations
                else:
                    answer = "snapshot"

    def _set(self, status: RunStatus, only_from: RunStatus | None = None) -> bool:
        with self._lock:
            if only_from is not None and self._status is not only_from:
                return False
            self._status = status
            return True

    def _iter(self) -> int:
        return self.solver.iter if self.solver else 0

    def _do(self, work: Work, answer: Answer) -> None:
        if self.solver is None:
            answer(None, "the run has no net (it failed before it was built)")
            return
        try:
            result = work(self.solver)
        except Exception as exc:  # a failed request is an answer, not a dead run
            answer(None, f"{type(exc).__name__}: {exc}")
        else:
            answer(result, None)

    # --- the run -----------------------------------------------------------------------------
    def run(self, resume_file: str | None = None, weights: Callable[[Solver], None] | None = None) -> bool:
        """Train to max_iter (or until stopped); True when it ended without error."""
        start = time.perf_counter()
        with rng.seeded(None):  # this run's draws are its own, whatever other threads draw
            try:
                return self._run(resume_file, weights, start)
            finally:
                self._close_requests()

    def _run(self, resume_file: str | None, weights: Callable[[Solver], None] | None, start: float) -> bool:
        try:
            solver = self._build()
            self.solver = solver
            solver.listeners.append(self._emit)
            solver.action = self._between_iterations
            if weights is not None:
                weights(solver)
            self._set(RunStatus.RUNNING, only_from=RunStatus.STARTING)
            self._emit(Started(solver.iter, solver.param.max_iter))
            solver.solve(resume_file)
        except EngineError as exc:
            self._end(RunStatus.FAILED)
            self._emit(Failed(str(exc)))
            return False
        except Exception as exc:  # a worker must report, never die silently
            self._end(RunStatus.FAILED)
            self._emit(Failed(f"{type(exc).__name__}: {exc}", traceback.format_exc()))
            return False
        status = RunStatus.STOPPED if solver.requested_early_exit else RunStatus.FINISHED
        self._end(status)
        self._emit(Finished(solver.iter, status, time.perf_counter() - start))
        return True

    def _end(self, status: RunStatus) -> None:
        with self._lock:
            self._status = status
            self._taking = False  # from here `submit` works in its caller's thread

    def _close_requests(self) -> None:
        """Work still queued when the run ended is done now; pause/stop requests have no effect."""
        with self._lock:
            self._taking = False
        while True:
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, tuple):
                self._do(*item)


_ACTIVE = {status for status in RunStatus if status.active}
