"""Run a solver to the end in the calling thread, steerable from another thread.

The GUI starts ``Trainer.run`` in a worker thread and calls ``pause``, ``resume``, ``stop`` and
``request_snapshot`` from its own; requests take effect between iterations. Events go to plain
callbacks as ``(kind, payload)``: the solver's "iteration", "test" and "snapshot", plus
"started", "paused", "resumed", "finished" and "error" from here. Nothing here knows Qt.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from engine import rng
from engine.errors import EngineError
from engine.solvers.base import Solver

Listener = Callable[[str, dict[str, Any]], None]


class Trainer:
    def __init__(self, build: Callable[[], Solver], listener: Listener | None = None) -> None:
        """``build`` makes the solver (in the worker thread, so set-up errors are reported too)."""
        self._build = build
        self._listeners: list[Listener] = [listener] if listener else []
        self._running = threading.Event()
        self._running.set()
        self._stop = threading.Event()
        self._snapshot = threading.Event()
        self.solver: Solver | None = None

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _emit(self, kind: str, payload: dict[str, Any]) -> None:
        for listener in self._listeners:
            listener(kind, payload)

    # --- requests from other threads ---------------------------------------------------------
    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        self._stop.set()
        self._running.set()

    def request_snapshot(self) -> None:
        self._snapshot.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def _next_action(self) -> str | None:
        if not self._running.is_set():
            self._emit("paused", {"iter": self.solver.iter if self.solver else 0})
            self._running.wait()
            if not self._stop.is_set():
                self._emit("resumed", {"iter": self.solver.iter if self.solver else 0})
        if self._stop.is_set():
            return "stop"
        if self._snapshot.is_set():
            self._snapshot.clear()
            return "snapshot"
        return None

    # --- the run -----------------------------------------------------------------------------
    def run(self, resume_file: str | None = None, weights: Callable[[Solver], None] | None = None) -> bool:
        """Train to max_iter (or until stopped); True when it ended without error."""
        start = time.perf_counter()
        with rng.seeded(None):  # this run's draws are its own, whatever other threads draw
            return self._run(resume_file, weights, start)

    def _run(self, resume_file: str | None, weights: Callable[[Solver], None] | None, start: float) -> bool:
        try:
            solver = self._build()
            self.solver = solver
            solver.listeners.append(self._emit)
            solver.action = self._next_action
            if weights is not None:
                weights(solver)
            self._emit("started", {"iter": solver.iter, "max_iter": solver.param.max_iter})
            solver.solve(resume_file)
        except EngineError as exc:
            self._emit("error", {"message": str(exc)})
            return False
        except Exception as exc:  # a worker must report, never die silently
            self._emit(
                "error", {"message": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            )
            return False
        self._emit(
            "finished",
            {
                "iter": solver.iter,
                "stopped": solver.requested_early_exit,
                "seconds": time.perf_counter() - start,
            },
        )
        return True
