"""Model > Evaluate on Data Set…: the document's net scored on a labelled set, off the GUI thread.

The data is the net's TEST data layer's, or an LMDB, an image list or a folder of class folders
(engine/model_use/evaluate.py). While it runs: a progress bar and Cancel. Then: top-1 and top-5
accuracy, the confusion matrix as a heat map (a cell's click lists its images), per-class
precision and recall, the most confident mistakes, and Export CSV (the matrix, and the per-class
table beside it).
"""

from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QBrush, QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.model_use import pictures, sources
from app.model_use.worker import Worker
from engine.model_use import datasets, metrics
from engine.model_use import evaluate as scoring
from proto.atomic import write_text_atomic

MISTAKES = 20
CELL_THUMBNAILS = 60  # pictures read for a cell's list; the rest show by name
THUMB = 40
HEAT = QColor("#1f77b4")


class EvaluateDialog(QDialog):
    def __init__(self, window) -> None:
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle("Evaluate on Data Set")
        self.resize(1100, 720)
        self.evaluation: metrics.Evaluation | None = None
        self.worker = Worker(self)
        self.worker.progress.connect(self._progress)
        self.worker.done.connect(self._show)
        self.worker.failed.connect(self._failed)
        self.worker.busy_changed.connect(self._busy)
        self.data_set: datasets.LMDBData | datasets.ImageData | None = None  # gives the thumbnails
        self.thumbnails = {"cell": Worker(self), "mistakes": Worker(self)}
        for which, worker in self.thumbnails.items():
            worker.done.connect(lambda pictures, w=which: self._set_icons(w, pictures))

        self.weights = QComboBox()
        sources.fill_combo(self.weights, window)
        self.data = QLineEdit()
        self.data.setPlaceholderText(
            "the net's TEST data layer (or an LMDB, an image list, a folder of class folders)"
        )
        folder = QPushButton("Folder…")
        folder.clicked.connect(lambda: self._browse(folder=True))
        listing = QPushButton("List…")
        listing.clicked.connect(lambda: self._browse(folder=False))
        self.run_button = QPushButton("Evaluate")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.export_button = QPushButton("Export CSV…")
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self._ask_and_export)
        row1 = QHBoxLayout()
        widgets: tuple[QWidget, ...] = (QLabel("Weights:"), self.weights, QLabel("Data:"))
        for widget in widgets:
            row1.addWidget(widget)
        row1.addWidget(self.data, 1)
        row1.addWidget(folder)
        row1.addWidget(listing)
        self.progress = QProgressBar()
        self.status = QLabel("")
        row2 = QHBoxLayout()
        widgets = (self.run_button, self.cancel_button, self.progress, self.export_button)
        for widget in widgets:
            row2.addWidget(widget)
        self.summary = QLabel("")

        self.matrix = QTableWidget()
        self.matrix.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.matrix.cellClicked.connect(self.show_cell)
        self.per_class = QTableWidget()
        self.per_class.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.per_class.verticalHeader().hide()
        self.cell_items = QListWidget()
        self.mistakes = QListWidget()
        for view in (self.cell_items, self.mistakes):
            view.setIconSize(QSize(THUMB, THUMB))
        side = QVBoxLayout()
        parts: tuple[tuple[str, QWidget], ...] = (
            ("Per class", self.per_class),
            ("Images of the chosen cell", self.cell_items),
            ("Most confident mistakes", self.mistakes),
        )
        for caption, widget in parts:
            side.addWidget(QLabel(f"<b>{caption}</b>"))
            side.addWidget(widget, 1)
        side_widget = QWidget()
        side_widget.setLayout(side)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        matrix_box = QWidget()
        matrix_layout = QVBoxLayout(matrix_box)
        matrix_layout.setContentsMargins(0, 0, 0, 0)
        matrix_layout.addWidget(QLabel("<b>Confusion matrix</b> (rows: true class, columns: predicted)"))
        matrix_layout.addWidget(self.matrix, 1)
        splitter.addWidget(matrix_box)
        splitter.addWidget(side_widget)
        splitter.setSizes([650, 450])

        layout = QVBoxLayout(self)
        layout.addLayout(row1)
        layout.addLayout(row2)
        layout.addWidget(self.status)
        layout.addWidget(self.summary)
        layout.addWidget(splitter, 1)
        self.finished.connect(lambda _result: self._stop_all())

    # ---- asking (tests replace these) --------------------------------------------------------
    def ask_data_path(self, folder: bool) -> str:
        if folder:
            return QFileDialog.getExistingDirectory(self, "An LMDB or a folder of class folders")
        return QFileDialog.getOpenFileName(self, "An image list (path label lines)")[0]

    def ask_csv_path(self) -> str:
        return QFileDialog.getSaveFileName(
            self, "Export the Confusion Matrix", "confusion.csv", "CSV (*.csv)"
        )[0]

    def _browse(self, folder: bool) -> None:
        path = self.ask_data_path(folder)
        if path:
            self.data.setText(path)

    def _ask_and_export(self) -> None:
        path = self.ask_csv_path()
        if path:
            self.export(path)

    # ---- running -----------------------------------------------------------------------------
    def run(self) -> None:
        net, net_path = sources.document_net(self.window_)
        weights = self.weights.currentData()
        data = self.data.text().strip() or None

        def work(progress, cancelled):
            evaluator = scoring.Evaluator(net, weights, net_path=net_path)
            try:
                paths = scoring.default_paths(net_path)
                found = scoring.open_data(evaluator, net, data, None, None, paths, net_path)
                result = scoring.evaluate(evaluator, found, progress=progress, cancelled=cancelled)
                return result, found
            finally:
                evaluator.close()

        self.status.setText("Evaluating…")
        self.progress.setValue(0)
        self.worker.start(work)

    def _stop_all(self) -> None:
        for worker in (self.worker, *self.thumbnails.values()):
            worker.cancel()

    def cancel(self) -> None:
        self.worker.cancel()
        self.status.setText("Cancelling…")

    def _busy(self, busy: bool) -> None:
        self.run_button.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)

    def _progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.status.setText(f"Evaluated {done}/{total}")

    def _failed(self, message: str) -> None:
        self.status.setText("Cancelled." if message == "evaluation cancelled" else message)

    # ---- results -----------------------------------------------------------------------------
    def _show(self, answer: tuple[metrics.Evaluation, datasets.LMDBData | datasets.ImageData]) -> None:
        result, self.data_set = answer
        self.evaluation = result
        n = result.count
        self.status.setText(f"Evaluated {n} items.")
        self.summary.setText(
            f"<b>Top-1 accuracy {result.accuracy(1):.2%}</b> ({result.top_k_hits(1)}/{n}) · "
            f"top-5 {result.accuracy(5):.2%} ({result.top_k_hits(5)}/{n})"
        )
        self._fill_matrix(result)
        self._fill_per_class(result)
        self.mistakes.clear()
        predicted = result.predicted
        wrong = result.mistakes(MISTAKES)
        for i in wrong:
            guess = int(predicted[i])
            self.mistakes.addItem(
                f"{os.path.basename(result.names[i])}: {result.classes[guess]} "
                f"({result.probs[i, guess]:.3f}), is {result.classes[result.labels[i]]}"
            )
        self._fetch_thumbnails("mistakes", wrong)
        self.export_button.setEnabled(True)

    def _fill_matrix(self, result: metrics.Evaluation) -> None:
        matrix = result.confusion()
        size = len(result.classes)
        self.matrix.clear()
        self.matrix.setRowCount(size)
        self.matrix.setColumnCount(size)
        self.matrix.setHorizontalHeaderLabels(result.classes)
        self.matrix.setVerticalHeaderLabels(result.classes)
        totals = np.maximum(matrix.sum(axis=1, keepdims=True), 1)
        share = matrix / totals  # each true class's row as fractions: the heat
        for r in range(size):
            for c in range(size):
                item = QTableWidgetItem(str(int(matrix[r, c])))
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                colour = QColor(HEAT)
                colour.setAlphaF(float(np.sqrt(share[r, c])) * 0.85)  # a few mistakes still show
                item.setBackground(QBrush(colour))
                if share[r, c] > 0.5:
                    item.setForeground(QBrush(QColor("white")))
                self.matrix.setItem(r, c, item)
        self.matrix.resizeColumnsToContents()
        for column in range(size):  # square-ish cells: a heat map, not a spreadsheet
            self.matrix.setColumnWidth(column, max(self.matrix.columnWidth(column), 40))

    def _fill_per_class(self, result: metrics.Evaluation) -> None:
        precision, recall = result.precision_recall()
        counts = result.confusion().sum(axis=1)
        self.per_class.clear()
        self.per_class.setColumnCount(4)
        self.per_class.setHorizontalHeaderLabels(["class", "items", "precision", "recall"])
        self.per_class.setRowCount(len(result.classes))
        for r, (name, count, p, rc) in enumerate(zip(result.classes, counts, precision, recall)):
            values = [
                name,
                str(int(count)),
                "-" if np.isnan(p) else f"{p:.4f}",
                "-" if np.isnan(rc) else f"{rc:.4f}",
            ]
            for c, value in enumerate(values):
                self.per_class.setItem(r, c, QTableWidgetItem(value))
        self.per_class.resizeColumnsToContents()

    def matrix_counts(self) -> np.ndarray:
        """The counts the heat map shows, read back from its cells."""
        rows, cols = self.matrix.rowCount(), self.matrix.columnCount()
        return np.array([[int(self.matrix.item(r, c).text()) for c in range(cols)] for r in range(rows)])

    def show_cell(self, row: int, column: int) -> None:
        self.cell_items.clear()
        if self.evaluation is None:
            return
        items = self.evaluation.items(row, column)
        for i in items:
            self.cell_items.addItem(self.evaluation.names[i])
        self._fetch_thumbnails("cell", items[:CELL_THUMBNAILS])

    def _fetch_thumbnails(self, which: str, indices: list[int]) -> None:
        """The items' pictures, read off the GUI thread; they become the list's icons."""
        data, result = self.data_set, self.evaluation
        if data is None or result is None or not indices:
            return
        names = [result.names[i] for i in indices]

        def work(progress, cancelled):
            pictures = []
            for row, (index, name) in enumerate(zip(indices, names)):
                if cancelled():
                    break
                try:
                    pictures.append((row, data.fetch(index, name)))
                except Exception:
                    continue
            return pictures

        self.thumbnails[which].start(work)

    def _set_icons(self, which: str, pictures: list[tuple[int, np.ndarray]]) -> None:
        listing = self.cell_items if which == "cell" else self.mistakes
        for row, item in pictures:
            if row < listing.count():
                listing.item(row).setIcon(QIcon(thumbnail(item)))

    def export(self, path: str) -> None:
        """The matrix to ``path``, the per-class table beside it (``*_per_class.csv``)."""
        assert self.evaluation is not None
        try:
            write_text_atomic(path, metrics.matrix_csv(self.evaluation))
            stem, ext = os.path.splitext(path)
            write_text_atomic(f"{stem}_per_class{ext or '.csv'}", metrics.per_class_csv(self.evaluation))
        except OSError as exc:
            self.status.setText(f"{path}: {exc.strerror or exc}")
            return
        self.status.setText(f"Exported {path}")


def thumbnail(item: np.ndarray) -> QPixmap:
    """A C x H x W item (BGR bytes as Caffe stores them, or floats) as a small picture."""
    data = np.asarray(item)
    if data.dtype != np.uint8:
        low, high = float(data.min()), float(data.max())
        data = ((data - low) / ((high - low) or 1.0) * 255).astype(np.uint8)
    if data.shape[0] == 1:
        pixmap = pictures.grey_pixmap(data[0])
    else:
        pixmap = pictures.image_pixmap(data[2::-1].transpose(1, 2, 0) / 255.0)
    return pixmap.scaled(THUMB, THUMB, Qt.AspectRatioMode.KeepAspectRatio)
