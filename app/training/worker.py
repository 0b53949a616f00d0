"""One run of ``engine.trainer.Trainer`` in a Python thread; only a QObject's signals cross back.

Iteration points and log lines are batched in the worker and sent at most every ``FLUSH_S``
(and before any other event, so order holds), so a net that runs thousands of iterations a
second costs the GUI a few queued signals a second. The GUI asks for work on the solver itself
(copy the weights, write a .caffemodel) with ``submit``: the Trainer's one request queue takes it
between two iterations (at once while paused); once the run is over the GUI thread does it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from app.training.job import TrainingJob, provide_bundled_data
from app.training.run_files import save_beside_snapshots
from engine import backend, pymodules
from engine.events import Event, Failed, Iteration, Snapshotted
from engine.solvers import Solver, create_solver
from engine.trainer import Trainer, Work

FLUSH_S = 0.1  # the plots redraw at most 10 times a second: sooner buys nothing
# A small net runs thousands of iterations a second in pure Python and numpy calls too short to let
# go of the GIL for long: the GUI thread would wait for it for seconds. Every YIELD_S of training
# the worker sleeps YIELD_SLEEP_S, so the window stays responsive (a cost of about 2%).
YIELD_S, YIELD_SLEEP_S = 0.025, 0.0005
Answer = Callable[[Any, str | None], None]  # (result, error message)


class Bridge(QObject):
    """Lives in the GUI thread; emitting from the worker queues the call to the GUI's slots."""

    batch = Signal(object)  # {"points": (k, 4) array of iter, seconds, loss, lr; "lines": [(seconds, line)]}
    event = Signal(object, float)  # type: ignore[assignment]  # a Trainer's event (engine.events), seconds
    answered = Signal(object, object, object)  # (answer callable, result, error message)


class Worker:
    def __init__(self, job: TrainingJob) -> None:
        self.job = job
        self.bridge = Bridge()  # no parent: this object keeps it alive while the thread may emit
        self.trainer = Trainer(self._build, self._listen)
        self._lock = threading.Lock()
        self._points: list[tuple[float, float, float, float]] = []
        self._lines: list[tuple[float, str]] = []
        self._flushed = self._yielded = 0.0
        self._made_folder = False  # this run made its output folder (removed again if left empty)
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._main, name="barista-training", daemon=True)

    # ---- GUI thread ----------------------------------------------------------------------
    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def submit(self, work: Work, answer: Answer) -> None:
        """``work(solver)`` between iterations, or now in this thread once the run is over; ``answer``
        is called in the GUI thread."""
        self.trainer.submit(work, lambda result, error: self.bridge.answered.emit(answer, result, error))

    def release(self) -> None:
        """Drop the solver (its nets and arrays) once the run is over and nothing will ask for it."""
        solver, self.trainer.solver = self.trainer.solver, None
        if solver is not None:
            solver.close()  # its data threads stop and its databases close now, not at exit

    # ---- the worker thread ------------------------------------------------------------------
    def _main(self) -> None:
        try:
            with pymodules.importing_from(self.job.module_dirs, self.job.python_modules()):
                self.trainer.run()
        except BaseException as exc:  # only when reporting the error itself failed
            with contextlib.suppress(Exception):  # the GUI is gone; nothing is left to tell
                self.bridge.event.emit(Failed(f"{type(exc).__name__}: {exc}"), 0.0)
        finally:
            self._drop_empty_folder()

    def _drop_empty_folder(self) -> None:
        """A run that failed to start (or wrote nothing) leaves no empty run folder behind."""
        if self._made_folder:
            with contextlib.suppress(OSError):  # not empty, or gone: nothing to do
                os.rmdir(self.job.output_dir)

    def _build(self) -> Solver:
        say = self._log
        for note in self.job.notes:
            say(note)
        gpu = self.job.device == "gpu"
        xp = backend.array_module("gpu" if gpu else "cpu")
        say(f"Using {'GPU' if gpu else 'CPU'}")
        data_paths = provide_bundled_data(self.job.nets(), say, self.job.data_paths)
        if self.job.output_dir and not os.path.isdir(self.job.output_dir):
            os.makedirs(self.job.output_dir)
            self._made_folder = True
        solver = create_solver(
            self.job.solver, xp=xp, log_fn=say, base_dir=self.job.base_dir, data_paths=data_paths
        )
        say("Starting Optimization")
        return solver

    def _log(self, line: str) -> None:
        now = time.perf_counter() - self._t0
        with self._lock:
            self._lines.append((now, line))
        self._maybe_flush(now)

    def _listen(self, event: Event) -> None:
        now = time.perf_counter() - self._t0
        if isinstance(event, Iteration):
            with self._lock:
                self._points.append((event.iter, now, event.loss, event.lr))
            self._maybe_flush(now)
            if now - self._yielded >= YIELD_S:
                time.sleep(YIELD_SLEEP_S)  # the GUI thread takes the GIL meanwhile
                self._yielded = time.perf_counter() - self._t0
            return
        if isinstance(event, Snapshotted) and self.job.output_dir:
            self._save_net_beside(event.model)
        self._flush(now)
        self.bridge.event.emit(event, now)

    def _save_net_beside(self, model: str) -> None:
        """A runs folder's snapshot gets its net and solver beside it, so that opening it finds them."""
        try:
            for path in save_beside_snapshots(self.job.solver, os.path.dirname(model)):
                self._log(f"Saved {os.path.basename(path)} beside the snapshots (opening them finds it)")
        except OSError as e:
            self._log(f"Could not save the net beside the snapshots: {e}")

    def _maybe_flush(self, now: float) -> None:
        if now - self._flushed >= FLUSH_S:
            self._flush(now)

    def _flush(self, now: float) -> None:
        with self._lock:
            points, self._points = self._points, []
            lines, self._lines = self._lines, []
        self._flushed = now
        if points or lines:
            self.bridge.batch.emit(
                {"points": np.array(points, dtype=np.float64).reshape(-1, 4), "lines": lines}
            )
