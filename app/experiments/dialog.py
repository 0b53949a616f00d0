"""Compare Initialisations: train the document's net under 2-6 weight fillers side by side.

The setup on the left (the variants, iterations, seed, layers, test batches) and Start, Pause and
Stop (both for every variant at once); the curves on the right as the variants train, and a verdict
line per variant when they end. Each variant is a run of the Runs tab from its start, followed as it
trains (app/experiments/runs.py); a stopped experiment keeps the runs it made. Each Start
trains a fresh copy of the document: editing the net meanwhile changes nothing in the running
experiment. Closing the window stops it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app import trust
from app.experiments.curves_view import CurvesView, verdict_line
from app.experiments.runner import Runner
from app.experiments.runs import VariantRuns
from app.experiments.setup import Setup
from app.training.run import Run
from engine import events
from engine.errors import EngineError
from engine.experiments import events as exp

_PAUSING = events.RunStatus.PAUSING


class CompareInitDialog(QDialog):
    def __init__(
        self,
        doc,
        parent: QWidget | None = None,
        add_runs: Callable[[list[Run]], None] | None = None,
        update_runs: Callable[[list[Run]], None] | None = None,
    ) -> None:
        """``add_runs``: where the variants go as runs when they start (the Runs tab); ``update_runs``,
        told when their status changes (their points grow unannounced, as a training run's)."""
        super().__init__(parent)
        self.add_runs, self.update_runs = add_runs, update_runs
        self.runs: VariantRuns | None = None  # the runs of the last experiment, once its variants started
        self.setWindowTitle("Compare Initialisations")
        self.setObjectName("compareInitDialog")
        self.doc = doc
        self.runner = Runner(self)
        self.runner.reported.connect(self.on_event)
        self.setup = Setup(self)
        self.setup.changed.connect(self._update_buttons)
        self.buttons = {
            "start": QPushButton("Start", self),
            "pause": QPushButton("Pause", self),
            "stop": QPushButton("Stop", self),
        }
        self.buttons["start"].setToolTip("Train a copy of the net once per variant, on the same batches")
        self.buttons["pause"].setToolTip("Pause (or resume) every variant")
        self.buttons["stop"].setToolTip("Stop every variant; each gets its verdict on what it did")
        self.buttons["start"].clicked.connect(self.start)
        self.buttons["pause"].clicked.connect(self.toggle_pause)
        self.buttons["stop"].clicked.connect(self.stop)
        self.status = QLabel("Pick the variants and press Start.", self)
        self.status.setObjectName("experimentStatus")
        self.status.setWordWrap(True)
        self.curves = CurvesView(self)
        self.curves.timer.timeout.connect(self._feed_runs)
        self.verdicts = QLabel(self)
        self.verdicts.setObjectName("experimentVerdicts")
        self.verdicts.setTextFormat(Qt.TextFormat.RichText)
        self.verdicts.setWordWrap(True)
        self.verdicts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict_lines: dict[int, str] = {}

        left = QWidget(self)
        column = QVBoxLayout(left)
        column.addWidget(self.setup)
        row = QHBoxLayout()
        for button in self.buttons.values():
            row.addWidget(button)
        column.addLayout(row)
        column.addWidget(self.status)
        column.addStretch(1)
        right = QWidget(self)
        right_column = QVBoxLayout(right)
        right_column.setContentsMargins(0, 0, 0, 0)
        right_column.addWidget(self.curves, 1)
        right_column.addWidget(self.verdicts)
        split = QSplitter(self)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([260, 860])
        QVBoxLayout(self).addWidget(split)
        self.resize(1180, 720)
        self._update_buttons()

    # ---- commands -----------------------------------------------------------------------------
    def start(self) -> bool:
        if self.runner.running:
            return False
        guard = trust.guard_of(self.doc)
        if guard is not None and not guard.ensure(then=self.start):
            return False  # its Python layers' folder is not trusted: asked, as Train asks; starts once it is
        try:
            variants = self.setup.variants()
            experiment = self.runner.start(
                self.doc,
                variants,
                self.setup.iterations.value(),
                self.setup.seed.value(),
                self.setup.chosen_layers(),
                self.setup.test_iter.value(),
            )
        except EngineError as exc:  # a filler, a layer name, the count: one line, nothing started
            self.status.setText(str(exc))
            return False
        self.verdict_lines = {}
        self.runs = None
        self.verdicts.setText("")
        self.curves.show_experiment(experiment)
        self.curves.timer.start()
        self.status.setText(f"Building {len(variants)} copies of the net…")
        self._update_buttons()
        return True

    def toggle_pause(self) -> None:
        experiment = self.runner.experiment
        if experiment is None:
            return
        if experiment.status in (_PAUSING, events.RunStatus.PAUSED):
            experiment.resume()
            self.status.setText("Running")
        else:
            experiment.pause()
        self._update_buttons()

    def stop(self) -> None:
        if self.runner.experiment is not None:
            self.runner.experiment.stop()
            if self.runs is not None and self.runner.experiment.status is events.RunStatus.STOPPING:
                self._runs_changed(self.runs.set_status(events.RunStatus.STOPPING))
            self._update_buttons()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.stop()
        super().closeEvent(event)

    # ---- what the experiment says ---------------------------------------------------------------
    @Slot(object)
    def on_event(self, event: exp.Event) -> None:
        experiment = self.runner.experiment
        if isinstance(event, exp.Ready):
            self.curves.set_layers(event.layers, event.relu)
            self.status.setText(f"Running {len(event.variants)} variants for {event.iterations} iterations")
            self._start_runs()
        elif isinstance(event, events.Paused):
            self.status.setText(f"Paused at iteration {event.iter}")
            self._runs_status(events.RunStatus.PAUSED)
        elif isinstance(event, events.Resumed):
            self._runs_status(events.RunStatus.RUNNING)
        elif isinstance(event, exp.VariantFailed) and experiment is not None:
            self._verdict(event.variant, f"failed: {event.message}")
            if self.runs is not None:
                self._runs_changed([self.runs.fail(event.variant, event.message)])
        elif isinstance(event, exp.Judged):
            self._verdict(event.variant, event.verdict.text)
        elif isinstance(event, events.Finished):
            self.curves.timer.stop()
            self.curves.refresh()
            if self.runs is not None:
                self._runs_changed(self.runs.end(event.status))
            self.status.setText(f"{event.status.value.capitalize()} after {event.iter} iterations")
        elif isinstance(event, events.Failed):
            self.curves.timer.stop()
            if self.runs is not None:
                self._runs_changed(self.runs.end(events.RunStatus.FAILED, event.message))
            self.status.setText(f"Failed: {event.message}")
        self._update_buttons()

    def run_number(self) -> int:
        """The number the first variant's run gets: after the runs the window knows."""
        controller = getattr(getattr(self.parent(), "training", None), "controller", None)
        return len(controller.runs) + 1 if controller is not None else 1

    # ---- the variants' runs -----------------------------------------------------------------------
    def _start_runs(self) -> None:
        experiment, job = self.runner.experiment, self.runner.job
        if self.add_runs is None or experiment is None or job is None:
            return
        self.runs = VariantRuns(experiment, self.run_number(), job.base_dir)
        self.add_runs(self.runs.runs)

    def _feed_runs(self) -> None:
        if self.runs is not None:
            self.runs.feed()

    def _runs_status(self, status: events.RunStatus) -> None:
        if self.runs is not None:
            self._runs_changed(self.runs.set_status(status))

    def _runs_changed(self, runs: list[Run]) -> None:
        if self.update_runs is not None and runs:
            self.update_runs(runs)

    def _verdict(self, k: int, text: str) -> None:
        experiment = self.runner.experiment
        if experiment is None:
            return
        self.verdict_lines[k] = verdict_line(k, experiment.curves[k], text)
        self.verdicts.setText("<br>".join(self.verdict_lines[i] for i in sorted(self.verdict_lines)))

    def _update_buttons(self) -> None:
        experiment = self.runner.experiment
        active = experiment is not None and experiment.status.active
        paused = experiment is not None and experiment.status in (
            events.RunStatus.PAUSING,
            events.RunStatus.PAUSED,
        )
        self.buttons["start"].setEnabled(not active and not self.runner.running and self.setup.ready)
        self.buttons["pause"].setEnabled(active)
        self.buttons["pause"].setText("Resume" if paused else "Pause")
        self.buttons["stop"].setEnabled(active)
