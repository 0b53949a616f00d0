"""Every run since the app started, with its settings; tick runs to overlay their curves.

A new run is shown alone; tick an older one to compare (two fillers, two learning rates). The
panel below names the selected run's settings and what changed since the run before it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFontDatabase, QIcon, QPixmap
from PySide6.QtWidgets import (
    QHeaderView,
    QPlainTextEdit,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.training.run import Run
from engine.events import RunStatus

COLUMNS = ("Run", "Status", "Iter", "Loss", "Best test", "Fillers", "Settings")
STATUS_COLORS = {RunStatus.FAILED: "#c62828", RunStatus.FINISHED: "#2e7d32", RunStatus.STOPPED: "#8d6e00"}


def _swatch(color: str) -> QIcon:
    pixmap = QPixmap(10, 10)
    pixmap.fill(QColor(color))
    return QIcon(pixmap)


def best_test(run: Run) -> str:
    """The best non-loss test output ("accuracy 0.912"), or the lowest test loss."""
    for name in run.tests:
        if "loss" not in name.lower():
            return f"{name} {run.best(name):.4g}"
    for name, series in run.tests.items():
        return f"{name} {series.column('value').min():.4g}"
    return ""


class RunsView(QWidget):
    shown_changed = Signal(list)  # [Run] ticked, oldest first
    current_changed = Signal(object)  # Run

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()  # the short columns follow their text as a run goes on ("167/10000")
        for column in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details.setPlaceholderText(
            "Select a run to see its settings and what changed since the run before."
        )
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.tree)
        splitter.addWidget(self.details)
        splitter.setSizes([160, 120])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self._runs: list[Run] = []
        self._items: dict[int, QTreeWidgetItem] = {}
        self._detailed: tuple | None = None  # what the details show: run number, status, error, snapshots
        self.tree.itemChanged.connect(self._on_item_changed)
        self.tree.currentItemChanged.connect(self._on_current)
        self._ticker = QTimer(self, interval=1000, timeout=self._refresh_active)
        self._ticker.start()

    # ---- from the controller -----------------------------------------------------------
    def add_run(self, run: Run) -> None:
        self.tree.blockSignals(True)
        for item in self._items.values():
            item.setCheckState(0, Qt.CheckState.Unchecked)
        item = QTreeWidgetItem([run.name])
        item.setIcon(0, _swatch(run.color))
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(0, Qt.CheckState.Checked)
        item.setToolTip(6, run.job.solver_text)
        self.tree.insertTopLevelItem(0, item)  # newest on top
        self._runs.append(run)
        self._items[run.number] = item
        self.update_run(run)
        self.tree.blockSignals(False)
        self.tree.setCurrentItem(item)
        self.shown_changed.emit(self.shown())

    def update_run(self, run: Run) -> None:
        item = self._items.get(run.number)
        if item is None:
            return
        loss = run.last_loss()
        values = (
            run.status,
            f"{run.iter}/{run.max_iter}",
            "" if loss is None else f"{loss:.4g}",
            best_test(run),
        )
        for column, text in enumerate(values, start=1):
            item.setText(column, text)
        item.setText(5, run.fillers())
        item.setText(6, run.job.summary)
        color = STATUS_COLORS.get(run.status)
        item.setForeground(1, QBrush(QColor(color)) if color else QBrush())
        shown = (run.number, run.status, run.error, len(run.snapshots))
        if self.current() is run and shown != self._detailed:  # it failed or snapshotted since shown
            self._show_details(run)
        if run.error:
            item.setToolTip(1, run.error)

    # ---- ticks -----------------------------------------------------------------------------
    def shown(self) -> list[Run]:
        return [r for r in self._runs if self._items[r.number].checkState(0) == Qt.CheckState.Checked]

    def set_shown(self, run: Run, shown: bool) -> None:
        state = Qt.CheckState.Checked if shown else Qt.CheckState.Unchecked
        self._items[run.number].setCheckState(0, state)

    def current(self) -> Run | None:
        item = self.tree.currentItem()
        return next((r for r in self._runs if self._items[r.number] is item), None)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column == 0:
            self.shown_changed.emit(self.shown())

    def _on_current(self) -> None:
        run = self.current()
        if run is None:
            return
        self._show_details(run)
        self.current_changed.emit(run)

    def _show_details(self, run: Run) -> None:
        self._detailed = (run.number, run.status, run.error, len(run.snapshots))
        index = self._runs.index(run)
        folder = run.job.output_dir or run.job.base_dir
        text = f"{run.name} · started {run.started:%H:%M:%S} · {run.job.summary}\nfolder: {folder}\n"
        if run.snapshots:
            text += "snapshots: " + ", ".join(run.snapshots) + "\n"
        if run.error:
            text += f"Error: {run.error}\n"  # as the console says it (a command line says "error:")
        if index > 0:
            diff = run.diff_from(self._runs[index - 1])
            text += f"\nChanges since {self._runs[index - 1].name}:\n" + (diff or "(same settings)") + "\n"
        text += "\n" + run.settings_text()
        self.details.setPlainText(text)

    def _refresh_active(self) -> None:
        for run in self._runs:
            if run.active:
                self.update_run(run)
