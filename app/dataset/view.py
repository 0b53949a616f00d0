"""The Dataset view: a data set folder, one LMDB, or what a data layer's source holds (an LMDB, an
ImageData image list, an HDF5Data file list: engine/data/source_browse.py) as its records are: class
counts as bars, a page of thumbnails per class (only that page is decoded), the image size and
channels, the mean image. Labels are named from the folder's labels.txt when there is one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QImage, QPainter, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.data.source_browse import Browsed, browse_lmdb
from engine.errors import EngineError
from proto.binaryio import read_blob

PAGE = 40
THUMB = 56


def to_pixmap(image: np.ndarray, size: int = THUMB) -> QPixmap:
    """(C, H, W) BGR or gray, uint8 or float, as a pixmap ``size`` pixels on its long side."""
    if (
        image.dtype != np.uint8 and image.size and (image.min() < 0 or image.max() <= 1)
    ):  # HDF5 rows: stretched
        low, high = float(image.min()), float(image.max())
        image = (image - low) * (255 / (high - low)) if high > low else np.zeros_like(image)
    pixels = np.clip(image, 0, 255).astype(np.uint8) if image.dtype != np.uint8 else image
    if pixels.shape[0] >= 3:
        rgb = np.ascontiguousarray(pixels[2::-1].transpose(1, 2, 0))
        qimage = QImage(rgb.data, rgb.shape[1], rgb.shape[0], 3 * rgb.shape[1], QImage.Format.Format_RGB888)
    else:
        gray = np.ascontiguousarray(pixels[0])
        qimage = QImage(
            gray.data, gray.shape[1], gray.shape[0], gray.shape[1], QImage.Format.Format_Grayscale8
        )
    return QPixmap.fromImage(qimage.copy()).scaled(
        size, size, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.FastTransformation
    )


class CountBars(QWidget):
    """One horizontal bar per class, its count written at its end."""

    def __init__(self) -> None:
        super().__init__()
        self.bars: list[tuple[str, int]] = []
        self.setMinimumHeight(60)

    def set_bars(self, bars: list[tuple[str, int]]) -> None:
        self.bars = bars
        self.setMinimumHeight(18 * len(bars) + 8)
        self.update()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        top = max((n for _, n in self.bars), default=1) or 1
        names = 120
        width = max(self.width() - names - 60, 10)
        for row, (name, count) in enumerate(self.bars):
            y = 4 + 18 * row
            painter.setPen(self.palette().text().color())
            painter.drawText(QRectF(0, y, names - 6, 16), Qt.AlignmentFlag.AlignRight, name)
            painter.fillRect(QRectF(names, y + 2, width * count / top, 12), QColor(70, 130, 200))
            painter.drawText(
                QRectF(names + width * count / top + 4, y, 56, 16), Qt.AlignmentFlag.AlignLeft, str(count)
            )
        painter.end()


class DatasetView(QDialog):
    def __init__(
        self,
        path: Path,
        parent: QWidget | None = None,
        browse: Callable[[], Browsed] | None = None,
        title: str = "",
        mean_file: Path | None = None,
    ) -> None:
        """``path``: a data set folder or one LMDB; with ``browse``, what it returns (a data layer's
        source: ``path`` names it, ``title`` says whose it is)."""
        super().__init__(parent)
        self.folder = path
        self._browse = browse
        self.setWindowTitle(title or f"Dataset: {path.name}")
        self.resize(760, 640)
        self.summary: Browsed | None = None
        self.page = 0
        labels = path / "labels.txt" if browse is None else path.parent / "labels.txt"
        self.names = labels.read_text("utf-8").splitlines() if labels.is_file() else []
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.split = QComboBox()
        self.databases = [
            p for p in (path / f"{s}_lmdb" for s in ("train", "val", "test")) if p.is_dir() and browse is None
        ] or [path]
        self.split.addItems([p.name for p in self.databases])
        self.info = QLabel()
        self.info.setWordWrap(True)  # a problem names its folders: it wraps rather than widen the window
        top.addWidget(self.split)
        top.addWidget(self.info, 1)
        self.mean = QLabel()
        top.addWidget(self.mean)
        layout.addLayout(top)
        self.bars = CountBars()
        layout.addWidget(self.bars)
        row = QHBoxLayout()
        self.class_box = QComboBox()
        self.prev_button, self.next_button = QPushButton("◀ Previous"), QPushButton("Next ▶")
        self.page_label = QLabel()
        for widget in (QLabel("Class"), self.class_box, self.prev_button, self.page_label, self.next_button):
            row.addWidget(widget)
        row.addStretch()
        layout.addLayout(row)
        self.thumbs = QListWidget()
        self.thumbs.setViewMode(QListWidget.ViewMode.IconMode)
        self.thumbs.setIconSize(QSize(THUMB, THUMB))
        self.thumbs.setResizeMode(QListWidget.ResizeMode.Adjust)
        layout.addWidget(self.thumbs, 1)
        self.split.currentIndexChanged.connect(self.load)
        self.class_box.currentIndexChanged.connect(lambda _i: self.show_page(0))
        self.prev_button.clicked.connect(lambda: self.show_page(self.page - 1))
        self.next_button.clicked.connect(lambda: self.show_page(self.page + 1))
        self._show_mean(mean_file or path / "mean.binaryproto")
        self.load()

    def name_of(self, label: int) -> str:
        return self.names[label] if 0 <= label < len(self.names) else str(label)

    def _show_mean(self, path: Path) -> None:
        if not path.is_file():
            return
        try:
            blob = read_blob(path)
            mean = np.asarray(blob.data, np.float32).reshape(blob.channels, blob.height, blob.width)
        except (OSError, ValueError, EngineError) as exc:
            self.mean.setText(f"mean: {exc}")
            return
        self.mean.setPixmap(to_pixmap(mean, 64))
        self.mean.setToolTip("the mean image (mean.binaryproto)")

    def load(self) -> None:
        path = self.databases[self.split.currentIndex()]
        try:
            self.summary = self._browse() if self._browse is not None else browse_lmdb(path)
        except EngineError as exc:
            self.summary = None
            self.info.setText(str(exc))
            self.bars.set_bars([])
            self.class_box.clear()
            return
        s = self.summary
        shape = "×".join(str(n) for n in s.shape)
        kind = "" if s.kind == "LMDB" else f"{s.kind} · "
        self.info.setText(f"{kind}{s.count} images · {shape} (C×H×W){f' · {s.note}' if s.note else ''}")
        self.info.setToolTip(str(s.path))
        counts = s.counts()
        self.bars.set_bars([(self.name_of(label), n) for label, n in counts.items()])
        self.class_box.blockSignals(True)
        self.class_box.clear()
        for label in counts:
            self.class_box.addItem(self.name_of(label), label)
        self.class_box.blockSignals(False)
        self.show_page(0)

    def pages(self) -> int:
        if self.summary is None or self.class_box.currentData() is None:
            return 0
        return -(-len(self.summary.indices_of(self.class_box.currentData())) // PAGE)

    def show_page(self, page: int) -> None:
        self.thumbs.clear()
        pages = self.pages()
        if self.summary is None or pages == 0:
            return
        self.page = max(0, min(page, pages - 1))
        indices = self.summary.indices_of(self.class_box.currentData())[
            self.page * PAGE : (self.page + 1) * PAGE
        ]
        try:
            records = self.summary.read([int(i) for i in indices])
        except EngineError as exc:
            self.page_label.setText(str(exc))
            return
        for index, (image, _label) in zip(indices, records):
            item = QListWidgetItem(QIcon(to_pixmap(image)), "")
            item.setToolTip(f"record {int(index)}")
            self.thumbs.addItem(item)
        self.page_label.setText(f"page {self.page + 1} of {pages}")
        self.prev_button.setEnabled(self.page > 0)
        self.next_button.setEnabled(self.page < pages - 1)
