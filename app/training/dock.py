"""The training dock: Train (F5), pause/resume, stop, snapshot, the device, progress, and four tabs.

Curves, Console, Runs and Weights are small widgets of their own; this file wires them to one
``TrainingController``. Dialogs are methods (``ask_save_path``) so tests can replace them.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable

from google.protobuf import text_format
from PySide6.QtCore import QBuffer, QIODevice, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QStyle,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app import train_checks, trust
from app.training.console import Console
from app.training.controller import TrainingController
from app.training.export import write_csv
from app.training.job import DEFAULT_SOLVER
from app.training.plots import TrainingPlots
from app.training.run import Run
from app.training.runs_view import RunsView
from app.training.weights_view import WeightsView
from engine import backend
from engine.events import RunStatus
from proto import caffe_pb2
from proto.atomic import write_bytes_atomic

ERROR_STYLE = "QFrame#trainingError { background: #fdecea; border: 1px solid #f5c2c0; border-radius: 3px; }"


def _snapshot_tip(solver: caffe_pb2.SolverParameter) -> str:
    """What "Snapshot" writes: the files follow the solver's snapshot_format, as Caffe's do."""
    hdf5 = solver.snapshot_format == caffe_pb2.SolverParameter.HDF5
    ending = ".h5" if hdf5 else ""
    return f"Write .caffemodel{ending} and .solverstate{ending} now"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else (f"{seconds // 60}:{seconds % 60:02d}")
    )


class TrainingDock(QDockWidget):
    """Folded to its bar while nothing trains (the canvas keeps the room); Train unfolds it, unless
    the user folded it during a run: ``user_expanded`` remembers that choice (None: never chosen)."""

    expanded_changed = Signal(bool)

    def __init__(
        self, doc, parent: QWidget | None = None, before_train: Callable[[], object] | None = None
    ) -> None:
        super().__init__("Training", parent)
        self.setObjectName("trainingDock")
        self.doc = doc
        self._before_train = before_train
        self.vet: Callable[[], bool] | None = None  # the window's checks before a run (False: no run)
        self.controller = TrainingController(doc, self)
        self._make_actions()

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(self._make_bar())
        layout.addWidget(self._make_error_banner())
        layout.addWidget(self._make_tabs(), 1)
        self.setWidget(body)
        self._no_title = QWidget(self)
        self._no_title.hide()
        self.expanded = True
        self.user_expanded: bool | None = None
        self.set_expanded(False)

        c = self.controller
        c.run_added.connect(self._on_run_added)
        c.run_changed.connect(self._on_run_changed)
        c.lines_added.connect(lambda run, lines: self.console.append_lines(lines))
        c.failed.connect(self._on_failed)
        c.weights_ready.connect(self._on_weights)
        self.runs.shown_changed.connect(self.plots.set_shown)
        self.plots.export_csv_requested.connect(self.export_csv)
        self.plots.export_png_requested.connect(self.export_png)
        self._model_shown = False  # the Weights view holds a model opened with the net, not a run's
        self._weights_of_run = False  # the current run trained the net open now: its weights may show
        self.weights.refresh_requested.connect(self._request_weights)
        self.weights.save_requested.connect(self.save_weights)
        doc.changed.connect(self._on_doc_change)
        self.status_timer = QTimer(self, interval=500, timeout=self._update_progress)
        self._update_actions()

    # ---- construction ------------------------------------------------------------------
    def _make_bar(self) -> QHBoxLayout:
        """Train, Pause/Resume, Stop, Snapshot, the device, the progress bar and the speed."""
        self.device = QComboBox()
        self.device.addItems(["CPU", "GPU"])
        reason = backend.gpu_unavailable_reason()
        if reason:
            self.device.model().item(1).setEnabled(False)  # type: ignore[attr-defined]
            self.device.setItemData(1, f"GPU unavailable: {reason}", Qt.ItemDataRole.ToolTipRole)
            self.device.setToolTip(f"GPU unavailable: {reason}")
        self.gpu_reason = reason
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        self._idle_progress()
        self.rate = QLabel("Ready")
        self.rate.setMinimumWidth(110)  # under a narrow canvas it may cut "paused at …": whole on hover

        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        self.buttons: dict[str, QToolButton] = {}
        for name, action in zip(("train", "pause", "stop", "snapshot"), self.training_actions()):
            button = QToolButton()
            button.setDefaultAction(action)
            # Train named, the others as icons (their names on hover): the bar fits under the canvas
            # of a small window (the right column runs the window's height beside it).
            style = Qt.ToolButtonStyle
            button.setToolButtonStyle(
                style.ToolButtonTextBesideIcon if name == "train" else style.ToolButtonIconOnly
            )
            button.setAutoRaise(True)
            bar.addWidget(button)
            self.buttons[name] = button
        bar.addSpacing(8)
        bar.addWidget(QLabel("on"))
        bar.addWidget(self.device)
        bar.addSpacing(8)
        bar.addWidget(self.progress, 1)
        bar.addWidget(self.rate)
        self.fold = QToolButton(autoRaise=True, objectName="trainingFold")
        self.fold.setCheckable(True)
        self.fold.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.fold.clicked.connect(lambda on: self.set_expanded(on, by_user=True))
        bar.addWidget(self.fold)
        return bar

    # ---- folding ------------------------------------------------------------------------
    def set_expanded(self, expanded: bool, by_user: bool = False) -> None:
        """Show the tabs (curves, console, runs, weights) or only the bar; the user's choice is kept."""
        if by_user:
            self.user_expanded = expanded
        self.fold.setChecked(expanded)
        self.fold.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.UpArrow)
        self.fold.setText("Hide curves" if expanded else "Curves")
        self.fold.setToolTip(
            "Fold the training panel to this bar"
            if expanded
            else "Show the curves, console, runs and weights"
        )
        if expanded == self.expanded:
            return
        self.expanded = expanded
        self.tabs.setVisible(expanded)
        # Folded, the bar is the whole panel: no title row above it (its Curves button unfolds it).
        if expanded:
            self.setTitleBarWidget(None)  # type: ignore[arg-type]  # None: Qt's own title bar again
        else:
            self.setTitleBarWidget(self._no_title)
        window = self.parentWidget()
        if expanded:
            self.setMaximumHeight(16777215)
            if isinstance(window, QMainWindow):
                # Two fifths of the window: at 1280x800 each curve plot ~100 px tall, not ~60 (#31 case 4).
                window.resizeDocks([self], [max(window.height() * 2 // 5, 300)], Qt.Orientation.Vertical)
        else:
            self.setMaximumHeight(self.minimumSizeHint().height())
        self.expanded_changed.emit(expanded)

    def _make_error_banner(self) -> QFrame:
        self.error = QFrame(objectName="trainingError")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error_text = QLabel(
            wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse
        )
        self.error_text.setStyleSheet("color: #8b1a1a")
        close = QToolButton(text="✕", autoRaise=True, clicked=self.error.hide)
        row = QHBoxLayout(self.error)
        row.setContentsMargins(8, 4, 4, 4)
        row.addWidget(self.error_text, 1)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.error.hide()
        return self.error

    def _make_tabs(self) -> QTabWidget:
        self.plots = TrainingPlots()
        self.console = Console()
        self.runs = RunsView()
        self.weights = WeightsView()
        self.tabs = QTabWidget(documentMode=True)
        self.tabs.addTab(self.plots, "Curves")
        self.tabs.addTab(self.console, "Console")
        self.tabs.addTab(self.runs, "Runs")
        self.tabs.addTab(self.weights, "Weights")
        self.tabs.setCornerWidget(self.plots.controls, Qt.Corner.TopRightCorner)
        self.tabs.currentChanged.connect(
            lambda i: self.plots.controls.setVisible(self.tabs.widget(i) is self.plots)
        )
        return self.tabs

    # ---- actions -----------------------------------------------------------------------
    def _make_actions(self) -> None:
        icon = self.style().standardIcon
        pix = QStyle.StandardPixmap

        def action(text: str, slot, tip: str, pixmap, key: str | None = None) -> QAction:
            a = QAction(icon(pixmap), text, self)
            a.setToolTip(tip)
            if key:
                a.setShortcut(QKeySequence(key))
            a.triggered.connect(slot)
            return a

        self.train_action = action(
            "Train", self.train, "Train a copy of this net with its solver (F5)", pix.SP_MediaPlay, "F5"
        )
        self.pause_action = action("Pause", self.toggle_pause, "Pause or resume the run", pix.SP_MediaPause)
        self.stop_action = action(
            "Stop", self.controller.stop, "Stop the run (it snapshots, as Caffe does)", pix.SP_MediaStop
        )
        self.snapshot_action = action(
            "Snapshot", self.controller.snapshot, _snapshot_tip(self.doc.solver), pix.SP_DialogSaveButton
        )

    def training_actions(self) -> list[QAction]:
        """For the window's menu and toolbar."""
        return [self.train_action, self.pause_action, self.stop_action, self.snapshot_action]

    def train(self) -> Run | None:
        if self.controller.busy:
            return None
        if self._before_train is not None:
            self._before_train()  # text typed in the editor but not yet applied goes in first
        guard = trust.guard_of(self.doc)
        if guard is not None and not guard.ensure(then=self.train):
            return None  # its Python layers' folder is not trusted: asked; trains once it is
        self.error.hide()
        if self.vet is not None and not self.vet():
            return None
        self.show()
        self.raise_()
        if self.user_expanded is not False:
            self.set_expanded(True)
        device = "gpu" if self.device.currentIndex() == 1 and not self.gpu_reason else "cpu"
        try:
            return self.controller.start(device)
        except Exception as exc:  # a document the engine cannot even copy: say so, keep the app
            self.error_text.setText(
                f"<b>Cannot start training</b>: {html.escape(f'{type(exc).__name__}: {exc}')}"
            )
            self.error.show()
            self.set_expanded(True)  # a failure is always shown whole
            return None

    def refuse(self, message: str) -> None:
        """Train will not start: say why (and what to add) in the dock's banner and the console."""
        self.show()
        self.raise_()
        self.error_text.setText(f"<b>Cannot train</b>: {html.escape(message)}")
        self.error.show()
        self.set_expanded(True)  # the reason is read whole, not clipped to the folded bar
        self.console.append_lines([f"Cannot train: {message}"], "#c62828")

    def toggle_pause(self) -> None:
        run = self.controller.current
        if run is not None and run.status in (RunStatus.PAUSING, RunStatus.PAUSED):
            self.controller.resume()
        else:
            self.controller.pause()

    def shutdown(self, snapshot: bool = False) -> None:
        """Stop a run for good (the window closes); a snapshot first only with ``snapshot``."""
        self.controller.shutdown(snapshot=snapshot)

    def _update_actions(self) -> None:
        run = self.controller.current
        busy = self.controller.busy
        self.train_action.setEnabled(not busy)
        self.device.setEnabled(not busy)
        paused = run is not None and run.status in (RunStatus.PAUSING, RunStatus.PAUSED)
        self.pause_action.setEnabled(busy and run.status is not RunStatus.STOPPING)
        self.pause_action.setText("Resume" if paused else "Pause")
        pix = QStyle.StandardPixmap.SP_MediaPlay if paused else QStyle.StandardPixmap.SP_MediaPause
        self.pause_action.setIcon(self.style().standardIcon(pix))
        self.stop_action.setEnabled(busy and run.status is not RunStatus.STOPPING)
        self.snapshot_action.setEnabled(busy and run.status in (RunStatus.RUNNING, RunStatus.PAUSED))

    # ---- from the controller ------------------------------------------------------------
    def _on_run_added(self, run: Run) -> None:
        self.console.append_lines([f"—— {run.name} · {run.started:%H:%M:%S} · {run.job.summary} ——"], "#555")
        self.runs.add_run(run)
        if run is not self.controller.current:  # read from a log, or an experiment's: not this bar's
            return
        self._model_shown = False  # the new run's weights from now on
        self._weights_of_run = True
        self.progress.setRange(0, max(1, run.max_iter))
        self.progress.setValue(0)
        self.weights.set_training(True)
        self.status_timer.start()
        self._on_run_changed(run)

    def _on_run_changed(self, run: Run) -> None:
        self.runs.update_run(run)
        if run is self.controller.current:
            self._update_actions()
            self._update_progress()
            if not run.active:
                self.status_timer.stop()
                self.weights.set_training(False)
                if self.weights.isVisible():
                    self._request_weights()

    def _on_failed(self, run: Run, message: str, traceback: str) -> None:
        nets = run.job.nets()
        cause = train_checks.explain_failure(message, nets[0]) if nets else None
        because = f"<br>{html.escape(cause)}" if cause else ""
        self.error_text.setText(
            f"<b>{run.name} stopped with an error</b> (the document is unchanged):<br>"
            f"{html.escape(message)}{because}"
        )
        self.error.show()
        self.set_expanded(True)
        self.console.append_lines([f"Error: {message}", *([cause] if cause else [])], "#c62828")
        if traceback:
            self.console.append_lines(traceback.rstrip().splitlines(), "#8a8a8a")

    def _update_progress(self) -> None:
        run = self.controller.current
        if run is None:
            return
        self.progress.setMaximum(max(1, run.max_iter))
        self.progress.setValue(min(run.iter, run.max_iter))
        if run.status in (RunStatus.RUNNING, RunStatus.STARTING):
            rate, eta = run.rate(), run.eta_s()
            text = f"{rate:,.1f} it/s · ETA {_duration(eta)}" if rate and eta is not None else "starting…"
        elif run.status in (RunStatus.PAUSING, RunStatus.PAUSED):
            text = f"{run.status} at iteration {run.iter}"
        elif run.status is RunStatus.STOPPING:
            text = "stopping…"
        else:
            text = f"{run.status} in {_duration(run.seconds)}"
        self.rate.setText(text)
        self.rate.setToolTip(text)

    # ---- weights -----------------------------------------------------------------------------
    def show_model_weights(self, title: str, weights: dict) -> None:
        """A trained model opened with the net: the Weights view shows it (not the last run's) until
        the next run starts."""
        self._model_shown = True
        self.weights.show_weights(title, 0, weights)
        self.weights.info.setText(f"{title} (opened with the net)")

    def forget_runs(self) -> None:
        """Another net is open and nothing trains: the last run's refusal or failure, curves, "stopped
        in 0:28" and weights (or a model opened with the last net) are not this net's. The runs stay
        listed in the Runs tab, unticked, to tick and compare again."""
        self.error.hide()
        for run in self.runs.shown():
            self.runs.set_shown(run, False)
        self.rate.setText("Ready")
        self.rate.setToolTip("")
        self._model_shown = False
        self._weights_of_run = False
        self.weights.clear()

    def _request_weights(self) -> None:
        if self._model_shown or not self._weights_of_run:
            return
        run = self.controller.current
        if run is not None and not self.controller.request_weights(run) and run.weights:
            self._on_weights(run)

    def _on_weights(self, run: Run) -> None:
        if run.weights is not None:
            self.weights.show_weights(run.name, run.weights[0], run.weights[1])

    def save_weights(self) -> None:
        run = self.controller.current
        if run is None:
            return
        hdf5 = run.job.solver.snapshot_format == caffe_pb2.SolverParameter.HDF5  # as its snapshots
        ending = ".caffemodel.h5" if hdf5 else ".caffemodel"
        default = os.path.join(
            run.job.base_dir, f"{run.job.solver.snapshot_prefix}_trained_iter_{run.iter}{ending}"
        )
        kinds = ["Caffe model (*.caffemodel)", "Caffe model, HDF5 (*.caffemodel.h5)"]
        path = self.ask_save_path("Save trained weights", default, ";;".join(kinds[::-1] if hdf5 else kinds))
        if not path:
            return

        def done(error: str | None) -> None:
            line = f"Save failed: {error}" if error else f"Saved the weights of {run.name} to {path}"
            self.console.append_lines([line], "#c62828" if error else "#2e7d32")

        self.controller.save_weights(path, done)

    # ---- export ----------------------------------------------------------------------------
    def export_csv(self) -> str | None:
        runs = self.plots.shown or ([self.controller.current] if self.controller.current else [])
        if not runs:
            return None
        path = self.ask_save_path("Export curves", self._default_path("curves.csv"), "CSV (*.csv)")
        if not path:
            return None
        try:
            write_csv(path, runs, self.plots.smoothing.value())
        except OSError as exc:
            self.show_export_error("Cannot export the curves", str(exc))
            return None
        return path

    def export_png(self) -> str | None:
        path = self.ask_save_path("Export plot", self._default_path("curves.png"), "PNG image (*.png)")
        if not path:
            return None
        buffer = QBuffer()  # encoded in memory, then written by the one atomic writer
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        try:
            if not self.plots.graphics.grab().save(buffer, "PNG"):
                raise OSError(f"cannot write {path}: the plot could not be encoded as PNG")
            write_bytes_atomic(path, bytes(buffer.data().data()))
        except OSError as exc:
            self.show_export_error("Cannot export the plot", str(exc))
            return None
        return path

    def show_export_error(self, title: str, message: str) -> None:
        QMessageBox.warning(self, title, message)

    def _default_path(self, name: str) -> str:
        run = self.controller.current
        folder = (run.job.output_dir or run.job.base_dir) if run else os.getcwd()
        prefix = f"{run.name.lower().replace(' ', '')}_" if run else ""
        return os.path.join(folder, prefix + name)

    def ask_save_path(self, title: str, default: str, file_filter: str) -> str:
        return QFileDialog.getSaveFileName(self, title, default, file_filter)[0]

    def _idle_progress(self) -> None:
        """Before a run the bar reads 0 / max_iter of the solver that Train would run (with no
        solver open: the default one Train uses, not a meaningless "0 / 1")."""
        solver = self.doc.solver
        if self.doc.solver_path is None and solver.ByteSize() == 0:
            solver = text_format.Parse(DEFAULT_SOLVER, caffe_pb2.SolverParameter())
        self.progress.setRange(0, max(1, solver.max_iter))
        self.progress.setValue(0)

    def _on_doc_change(self, change) -> None:
        if change.kind == "net_loaded" and not self.controller.busy:
            self.forget_runs()
        if change.kind in ("solver_loaded", "solver_changed", "net_loaded"):
            self.snapshot_action.setToolTip(_snapshot_tip(self.doc.solver))
            if not self.controller.busy:
                self._idle_progress()
        # A solver file that says solver_mode: GPU picks the GPU, when there is one.
        if change.kind == "solver_loaded" and not self.controller.busy:
            gpu = self.doc.solver.solver_mode == caffe_pb2.SolverParameter.GPU and not self.gpu_reason
            self.device.setCurrentIndex(1 if gpu else 0)
