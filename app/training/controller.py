"""The runs since the app started, and the one that is training: start, pause, resume, stop, snapshot.

Views never see the worker: they watch ``run_added`` / ``run_changed`` / ``lines_added`` /
``failed`` and read the ``Run`` objects; curves they poll on their own timer. Everything here
runs in the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from app.training.job import make_job
from app.training.run import Run
from app.training.worker import Worker
from engine import backend
from engine.events import Event, Failed, Finished, Paused, RunStatus, Snapshotted, Started, Tested
from engine.weights import write_net_binary, write_net_hdf5

Answer = Callable[[Any, str | None], None]


def copy_weights(solver) -> tuple[int, dict[str, list[np.ndarray]]]:
    """Host copies of every layer's blobs (runs where the solver is safe to read)."""
    net = solver.net
    weights = {
        name: [backend.to_host(blob.data).copy() for blob in layer.blobs]
        for name, layer in zip(net.layer_names, net.layers)
        if layer.blobs
    }
    return solver.iter, weights


class _Relay(QObject):
    """One run's receiver: a GUI-thread object, so the worker's emits arrive queued in this thread."""

    def __init__(self, controller: TrainingController, run: Run) -> None:
        super().__init__(controller)
        self.controller, self.run = controller, run

    @Slot(object)
    def on_batch(self, batch: dict) -> None:
        self.controller._on_batch(self.run, batch)

    @Slot(object, float)
    def on_event(self, event: Event, seconds: float) -> None:
        self.controller._on_event(self.run, event, seconds)

    @Slot(object, object, object)
    def on_answered(self, answer: Answer, result: Any, error: str | None) -> None:
        answer(result, error)


class TrainingController(QObject):
    run_added = Signal(object)  # Run
    run_changed = Signal(object)  # Run: status, snapshots, error (not every point)
    lines_added = Signal(object, object)  # Run, [str]
    failed = Signal(object, str, str)  # Run, message, traceback ('' for the engine's own errors)
    weights_ready = Signal(object)  # Run, whose .weights were just refreshed

    def __init__(self, doc, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.runs: list[Run] = []
        self.current: Run | None = None
        self._worker: Worker | None = None

    @property
    def busy(self) -> bool:
        return self.current is not None and self.current.active

    # ---- commands ----------------------------------------------------------------------------
    def start(self, device: str = "cpu") -> Run | None:
        """Train a copy of the document; None when a run is already going."""
        if self.busy:
            return None
        if self._worker is not None:
            self._worker.release()
        run = Run(len(self.runs) + 1, make_job(self.doc, device))
        worker = Worker(run.job)
        relay = _Relay(self, run)
        worker.bridge.batch.connect(relay.on_batch)
        worker.bridge.event.connect(relay.on_event)
        worker.bridge.answered.connect(relay.on_answered)
        self.runs.append(run)
        self.current, self._worker = run, worker
        self.run_added.emit(run)
        worker.start()
        return run

    def add_run(self, run: Run) -> None:
        """A run that happened elsewhere (read from its log, or an experiment's variant, fed by the
        experiment): listed and plotted like the others."""
        self.runs.append(run)
        self.run_added.emit(run)
        self.run_changed.emit(run)

    def update_run(self, run: Run) -> None:
        """A run fed from elsewhere changed its status, error or log: the views follow."""
        self.run_changed.emit(run)

    def pause(self) -> None:
        if self._worker and self.current and self.current.status in (RunStatus.STARTING, RunStatus.RUNNING):
            self._worker.trainer.pause()
            self._set_status(self.current, RunStatus.PAUSING)

    def resume(self) -> None:
        if self._worker and self.current and self.current.status in (RunStatus.PAUSING, RunStatus.PAUSED):
            self._set_status(self.current, RunStatus.RUNNING)
            self._worker.trainer.resume()

    def stop(self) -> None:
        if self._worker and self.busy:
            self._set_status(self.current, RunStatus.STOPPING)  # type: ignore[arg-type]
            self._worker.trainer.stop()

    def snapshot(self) -> None:
        """Write PREFIX_iter_N.caffemodel/.solverstate now (after the current iteration)."""
        if not (self._worker and self.busy):
            return
        if self.current is not None and self.current.status is RunStatus.PAUSED:  # at once, errors said
            self._submit(lambda solver: solver.snapshot(), lambda result, error: self._answered(error))
        else:
            self._worker.trainer.snapshot()

    def request_weights(self, run: Run | None = None) -> bool:
        """Ask for the current run's weights; ``weights_ready`` follows. False if it has none to give."""
        run = run or self.current
        if run is None or run is not self.current or self._worker is None:
            return False

        def done(result, error) -> None:
            if error:
                self._answered(error)
                return
            run.weights = result
            self.weights_ready.emit(run)

        self._submit(copy_weights, done)
        return True

    def save_weights(self, path: str, done: Callable[[str | None], None]) -> bool:
        """Write the current run's weights as a .caffemodel (HDF5 when ``path`` ends in .h5, as Caffe
        names its HDF5 snapshots); ``done(error)`` follows."""
        if self.current is None or self._worker is None:
            return False

        def write(solver) -> str:
            if path.endswith(".h5"):
                write_net_hdf5(solver.net, path)
            else:
                write_net_binary(solver.net, path)
            return path

        self._submit(write, lambda result, error: done(error))
        return True

    def training_run(self) -> Run | None:
        """The run whose worker is training now (None once it ended, even before its last events
        reached this thread)."""
        if self.busy and self._worker is not None and self._worker.is_alive():
            return self.current
        return None

    def hold(self) -> bool:
        """Pause the current run while the user is asked something; True if it was going on (so
        ``resume`` takes it up again when the answer is Cancel)."""
        run = self.training_run()
        if run is None or run.status not in (RunStatus.STARTING, RunStatus.RUNNING):
            return False
        self.pause()
        return True

    def shutdown(self, timeout_s: float = 5.0, snapshot: bool = False) -> None:
        """Stop a run (the app is closing) and wait a little for the worker to end. It writes a
        snapshot only with ``snapshot`` (the user asked for one): not Caffe's snapshot_after_train."""
        if self._worker is not None:
            if self.busy:
                trainer = self._worker.trainer

                def last_words(solver) -> None:
                    if snapshot:
                        solver.snapshot()
                    solver.param.snapshot_after_train = False

                trainer.submit(last_words, lambda result, error: None)  # before the stop: in order
                trainer.stop()
            if self._worker.join(timeout_s):
                self._worker.release()  # a finished run's data threads stop with the window

    # ---- from the worker -------------------------------------------------------------------------
    def _submit(self, work, answer: Answer) -> None:
        assert self._worker is not None
        self._worker.submit(work, answer)

    def _answered(self, error: str | None) -> None:
        if error and self.current is not None:
            self.lines_added.emit(self.current, [f"Request failed: {error}"])

    def _on_batch(self, run: Run, batch: dict) -> None:
        run.add_points(batch["points"])
        if batch["lines"]:
            run.log.extend(batch["lines"])
            self.lines_added.emit(run, [line for _, line in batch["lines"]])

    def _on_event(self, run: Run, event: Event, seconds: float) -> None:
        run.seconds = max(run.seconds, seconds)
        if isinstance(event, Started):
            run.iter, run.max_iter = event.iter, event.max_iter
            if run.status is RunStatus.STARTING:
                self._set_status(run, RunStatus.RUNNING)
        elif isinstance(event, Tested):
            run.add_test(event.iter, seconds, event.net, event.scores)
        elif isinstance(event, Snapshotted):
            run.snapshots.append(event.model)
            self.run_changed.emit(run)
        elif isinstance(event, Paused):
            if run.status is RunStatus.PAUSING:
                self._set_status(run, RunStatus.PAUSED)
        elif isinstance(event, Finished):
            run.iter = event.iter
            self._set_status(run, event.status)
        elif isinstance(event, Failed):
            run.error = event.message
            run.log.append((seconds, f"Error: {run.error}"))
            self._set_status(run, RunStatus.FAILED)
            self.failed.emit(run, run.error, event.traceback)

    def _set_status(self, run: Run, status: RunStatus) -> None:
        if run.status != status:
            run.status = status
            run.version += 1
            self.run_changed.emit(run)
