"""File > New Dataset from Images…: DIGITS's choices in a dialog, the folder's class counts before
anything is written, then a progress bar with the time left and Cancel (the work runs off the GUI
thread; a cancelled or failed run leaves nothing). When it is done, Use with This Net points the
open net at the new data set (one undo step). An output folder that already holds a data set (or
is empty) is replaced only after a question, and only once the new one is complete (the command
line's --force); any other existing folder is refused. ``ask_folder`` is a method so tests can
answer it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.dataset.view import DatasetView
from app.dataset.worker import DatasetWorker
from engine.data.class_folders import SPLITS, ClassFolders, scan
from engine.data.dataset_plan import ENCODINGS, DatasetOptions, DatasetPlan, plan_dataset, replace_problem
from engine.data.resize_modes import MODES
from engine.errors import EngineError

UseWithNet = Callable[[Path, int], str | None]  # (data set folder, classes) -> why not, or None


def _spin(low: int, high: int, value: int, suffix: str = "") -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setValue(value)
    spin.setSuffix(suffix)
    return spin


def _seconds(left: float) -> str:
    if left < 0:
        return "estimating time left"
    minutes, seconds = divmod(int(round(left)), 60)
    return f"{minutes} min {seconds:02d} s left" if minutes else f"{seconds} s left"


class NewDatasetDialog(QDialog):
    def __init__(
        self,
        parent: QWidget | None = None,
        use_with_net: UseWithNet | None = None,
        new_net: Callable[[Path], str | None] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("New Dataset from Images")
        self.setMinimumWidth(640)
        self.use_with_net_callback, self.new_net_callback = use_with_net, new_net
        self.plan: DatasetPlan | None = None
        self.worker: DatasetWorker | None = None
        self.written: Path | None = None
        self._scanned: ClassFolders | None = None
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.folder, self.output = QLineEdit(), QLineEdit()
        self.folder.setPlaceholderText("a folder with one subfolder of images per class")
        form.addRow("Images", self._with_browse(self.folder, self._browse_folder))
        form.addRow("Save as", self._with_browse(self.output, self._browse_output))
        self.height_spin, self.width_spin = _spin(0, 4096, 0), _spin(0, 4096, 0)
        size = QHBoxLayout()
        hint = QLabel("(0 × 0: the first image's size)")
        for widget in (self.height_spin, QLabel("×"), self.width_spin, hint):
            size.addWidget(widget)
        size.addStretch()
        form.addRow("Height × width", size)
        self.resize_mode, self.colour, self.encoding = QComboBox(), QComboBox(), QComboBox()
        self.resize_mode.addItems(list(MODES))
        self.colour.addItems(["colour (3 channels)", "grayscale (1 channel)"])
        self.encoding.addItems(list(ENCODINGS))
        form.addRow("Resize", self.resize_mode)
        form.addRow("Channels", self.colour)
        self.val_spin, self.test_spin = _spin(0, 90, 25, " %"), _spin(0, 90, 0, " %")
        self.min_spin, self.max_spin = _spin(1, 10**7, 2), _spin(0, 10**7, 0)
        self.max_spin.setSpecialValueText("all")
        self.seed_spin = _spin(0, 2**31 - 1, 0)
        form.addRow("Validation", self.val_spin)
        form.addRow("Test", self.test_spin)
        form.addRow("Images per class: at least", self.min_spin)
        form.addRow("Images per class: at most", self.max_spin)
        form.addRow("Encoding", self.encoding)
        form.addRow("Seed", self.seed_spin)
        layout.addLayout(form)
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["class", "images", *SPLITS])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        layout.addWidget(self.table)
        self.summary = QLabel("Choose a folder of class subfolders.")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m images")
        self.progress.hide()
        layout.addWidget(self.progress)
        buttons = QHBoxLayout()
        self.create_button = QPushButton("Create")
        self.use_button = QPushButton("Use with This Net")
        self.view_button = QPushButton("View Dataset")
        self.new_net_button = QPushButton("New Net for This Dataset")
        self.view_button.setEnabled(False)
        self.new_net_button.setEnabled(False)
        self.new_net_button.setVisible(new_net is not None)
        self.close_button = QPushButton("Close")
        self.use_button.setEnabled(False)
        self.use_button.setVisible(use_with_net is not None)
        buttons.addStretch()
        for button in (
            self.create_button,
            self.view_button,
            self.new_net_button,
            self.use_button,
            self.close_button,
        ):
            buttons.addWidget(button)
        layout.addLayout(buttons)
        self.create_button.clicked.connect(self.start)
        self.use_button.clicked.connect(self.use_with_net)
        self.view_button.clicked.connect(self.view_dataset)
        self.new_net_button.clicked.connect(self.new_net)
        self.view: DatasetView | None = None
        self.close_button.clicked.connect(self.cancel_or_close)
        for edit in (self.folder, self.output):
            edit.textChanged.connect(self.refresh)
        for spin in (self.height_spin, self.width_spin, self.val_spin, self.test_spin, self.min_spin,
                     self.max_spin, self.seed_spin):  # fmt: skip
            spin.valueChanged.connect(self.refresh)
        for combo in (self.resize_mode, self.colour, self.encoding):
            combo.currentIndexChanged.connect(self.refresh)
        self.refresh()

    def _with_browse(self, edit: QLineEdit, slot: Callable[[], None]) -> QWidget:
        row = QWidget()
        box = QHBoxLayout(row)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(edit)
        button = QPushButton("Browse…")
        button.clicked.connect(slot)
        box.addWidget(button)
        return row

    def ask_folder(self, title: str, start: str) -> str:
        return QFileDialog.getExistingDirectory(self, title, start)

    def _browse_folder(self) -> None:
        chosen = self.ask_folder("Folder of Class Subfolders", self.folder.text())
        if chosen:
            self.folder.setText(chosen)
            if not self.output.text():
                self.output.setText(chosen.rstrip("/") + "_dataset")

    def _browse_output(self) -> None:
        chosen = self.ask_folder("Folder to Write the Data Set Into", str(Path(self.output.text()).parent))
        if chosen:
            self.output.setText(str(Path(chosen) / (Path(self.folder.text()).name + "_dataset")))

    def options(self) -> DatasetOptions:
        size = (self.height_spin.value(), self.width_spin.value())
        return DatasetOptions(
            size=size if min(size) > 0 else None, resize=self.resize_mode.currentText(),
            gray=self.colour.currentIndex() == 1,
            val_pct=self.val_spin.value(), test_pct=self.test_spin.value(),
            min_per_class=self.min_spin.value(), max_per_class=self.max_spin.value(),
            encoding=self.encoding.currentText(), seed=self.seed_spin.value(),
        )  # fmt: skip

    def refresh(self) -> None:
        """The plan for the choices as they stand: class counts, or the one line saying why not."""
        if self.worker is not None:
            return
        self.plan, problem = None, ""
        folder = self.folder.text().strip()
        if folder:
            try:
                if self._scanned is None or self._scanned.root != Path(folder):
                    self._scanned = None
                    self._scanned = scan(Path(folder), 1)  # walked once; options re-plan from it
                self.plan = plan_dataset(Path(folder), self.options(), self._scanned)
            except EngineError as exc:
                problem = str(exc)
        out = self.output.text().strip()
        note = ""
        if self.plan is not None and not out:
            problem = "Choose where to save the data set."
        elif self.plan is not None and (Path(out).exists() or Path(out).is_symlink()):
            problem = replace_problem(Path(out), Path(folder))
            note = "" if problem else f"{out} already holds a data set: Create asks before replacing it."
        self._show_plan(problem or note)
        self.create_button.setEnabled(self.plan is not None and not problem)

    def _show_plan(self, problem: str) -> None:
        plan = self.plan
        counts = plan.counts() if plan else {}
        labels = plan.labels if plan else []
        self.table.setRowCount(len(labels))
        for row, name in enumerate(labels):
            values = [name, sum(counts[s][row] for s in SPLITS), *(counts[s][row] for s in SPLITS)]
            for column, value in enumerate(values):
                item = QTableWidgetItem(str(value))
                if column:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        if plan is not None:
            h, w = plan.size
            splits = ", ".join(f"{s} {sum(counts[s])}" for s in SPLITS if sum(counts[s]))
            text = f"{len(labels)} classes, {plan.total} images → {h}×{w}×{plan.channels}: {splits}."
            if plan.dropped:
                text += " Dropped (too few images): " + ", ".join(plan.dropped) + "."
            self.summary.setText(text + (f" {problem}" if problem else ""))
        elif problem:
            self.summary.setText(problem)
        self.create_button.setEnabled(plan is not None and not problem)

    def ask_replace(self, out: Path) -> bool:
        box = QMessageBox(QMessageBox.Icon.Question, "Replace the Data Set?", f"Replace {out}?", parent=self)
        box.setInformativeText(
            "It already holds a data set. The old one is removed only once the new one is complete; "
            "Cancel keeps it."
        )
        replace = box.addButton("Replace", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(box.addButton(QMessageBox.StandardButton.Cancel))
        box.exec()
        return box.clickedButton() is replace

    def start(self) -> None:
        if self.plan is None or not self.create_button.isEnabled():
            return
        out = Path(self.output.text().strip())
        force = out.exists() or out.is_symlink()
        if force and (replace_problem(out, Path(self.folder.text().strip())) or not self.ask_replace(out)):
            return
        self.written = None
        self.worker = DatasetWorker(self.plan, out, force)
        self.worker.progress.connect(self._on_progress)
        self.worker.succeeded.connect(self._on_succeeded)
        self.worker.failed.connect(lambda message: self._finish(f"Not written: {message}"))
        self.worker.cancelled.connect(lambda: self._finish("Cancelled: nothing was written."))
        self.progress.setRange(0, self.plan.total)
        self.progress.setValue(0)
        self.progress.show()
        self.create_button.setEnabled(False)
        for button in (self.use_button, self.view_button, self.new_net_button):
            button.setEnabled(False)
        self.close_button.setText("Cancel")
        self.summary.setText("Writing…")
        self.worker.start()

    def _on_progress(self, done: int, total: int, left: float) -> None:
        self.progress.setValue(done)
        self.summary.setText(f"Writing: {done} of {total} images, {_seconds(left)}.")

    def _on_succeeded(self, summary: dict) -> None:
        self.written = Path(self.output.text().strip())
        counts = ", ".join(f"{name} {sum(c.values())}" for name, c in summary["counts"].items())
        skipped = f", {len(summary['skipped'])} skipped (see dataset.json)" if summary["skipped"] else ""
        self._finish(f"Wrote {self.written}: {counts}{skipped}.")
        for button in (self.use_button, self.view_button, self.new_net_button):
            button.setEnabled(True)

    def _finish(self, message: str) -> None:
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.wait()
        self.close_button.setText("Close")
        self.refresh()
        self.summary.setText(message)

    def cancel_or_close(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.summary.setText("Cancelling…")
        else:
            self.accept()

    def view_dataset(self) -> DatasetView | None:
        if self.written is None:
            return None
        self.view = DatasetView(self.written, self)
        self.view.show()
        return self.view

    def new_net(self) -> None:
        if self.written is None or self.new_net_callback is None:
            return
        problem = self.new_net_callback(self.written)
        self.summary.setText(
            problem or f"A new net for {self.written.name} is open, untitled: Train, or Save As."
        )

    def use_with_net(self) -> None:
        if self.written is None or self.use_with_net_callback is None:
            return
        classes = len((self.written / "labels.txt").read_text("utf-8").splitlines())
        problem = self.use_with_net_callback(self.written, classes)
        self.summary.setText(problem or f"The net now reads {self.written.name} ({classes} classes).")

    def closeEvent(self, event) -> None:
        if self.worker is not None:  # closing mid-run is a Cancel: wait for the worker to clean up
            self.worker.cancel()
            self.worker.wait()
        super().closeEvent(event)
