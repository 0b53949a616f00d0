"""An initialisation experiment in a Python thread; only a QObject's signal crosses back.

The experiment (engine/experiments/compare_init.py) is made in the GUI thread from a training copy
of the document (app/training/job.py: the net inlined, data paths made absolute), so bad settings
are refused at once; it runs in the worker, which first finds the bundled MNIST when the net reads
it. Its events arrive in the GUI thread through ``reported``, except the per-iteration ones (Step,
Stats, Scored): the views read the curves the experiment records, on their own timer.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal

from app.training.job import TrainingJob, make_job, provide_bundled_data
from engine import pymodules
from engine.events import Failed
from engine.experiments import events as exp
from engine.experiments.compare_init import CompareInit, Variant

# As the training worker does: a pure-Python loop lets go of the GIL for the GUI now and then.
YIELD_S, YIELD_SLEEP_S = 0.025, 0.0005
_POLLED = (exp.Step, exp.Stats, exp.Scored)


class Runner(QObject):
    reported = Signal(object)  # an experiment event (engine/experiments/events.py), in the GUI thread

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.experiment: CompareInit | None = None
        self.job: TrainingJob | None = None  # the training copy of the document the experiment runs
        self._thread: threading.Thread | None = None
        self._yielded = 0.0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(
        self,
        doc,
        variants: Sequence[Variant],
        iterations: int,
        seed: int,
        layers: Sequence[str],
        test_iter: int,
    ) -> CompareInit:
        """Start on a copy of ``doc``; SpecError (one line) when the settings cannot be used."""
        job = self.job = make_job(doc)
        experiment = CompareInit(
            job.solver, variants, iterations, seed, layers, self._listen, test_iter=test_iter
        )
        self.experiment = experiment
        self._thread = threading.Thread(
            target=self._main, args=(experiment, job), name="barista-compare-init", daemon=True
        )
        self._thread.start()
        return experiment

    def join(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    # ---- the worker thread --------------------------------------------------------------------
    def _main(self, experiment: CompareInit, job) -> None:
        try:
            experiment.data_paths = provide_bundled_data(job.nets(), lambda _line: None, job.data_paths)
            with pymodules.importing_from(job.module_dirs, job.python_modules()):
                experiment.run()
        except BaseException as exc:  # the experiment reports its own errors; this is the rest
            with contextlib.suppress(Exception):
                self.reported.emit(Failed(f"{type(exc).__name__}: {exc}"))

    def _listen(self, event: exp.Event) -> None:
        if isinstance(event, _POLLED):
            now = time.perf_counter()
            if now - self._yielded >= YIELD_S:
                time.sleep(YIELD_SLEEP_S)  # the GUI thread takes the GIL meanwhile
                self._yielded = time.perf_counter()
            return
        self.reported.emit(event)
