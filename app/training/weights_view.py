"""The current weights of a run: one layer's filters as a mosaic, every layer's histogram.

The arrays are host copies taken between iterations (or while paused, or after the run), so
this view never touches the training net. While a run trains and the view is visible it asks
for fresh weights every ``LIVE_MS``. Backgrounds, axes and titles follow the application palette.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.plot_palette import follow_palette

LIVE_MS = 2000
MAX_TILES = 2048
BINS = 60
WEIGHT_COLOR = "#1f77b4"


NO_WEIGHTS = "No weights yet: train, then look here."


def mosaic(weights: np.ndarray, gap: int = 1) -> np.ndarray:
    """A 2-D picture of a blob, NaN between tiles: conv (N, C, H, W) as tiles, a matrix as itself.

    One input channel: the N filters in a near-square grid. Several: a row per filter, a column
    per channel (both capped so the picture stays readable).
    """
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim <= 2:
        return w.reshape(1, -1) if w.ndim == 1 else w
    w = w.reshape(w.shape[0], -1, *w.shape[-2:]) if w.ndim != 4 else w
    n, c, h, k = w.shape
    if c == 1:
        cols = math.ceil(math.sqrt(n))
        rows = math.ceil(n / cols)
        tiles = [(i // cols, i % cols, w[i, 0]) for i in range(n)]
    else:
        rows, cols = min(n, MAX_TILES // min(c, 64)), min(c, 64)
        tiles = [(i, j, w[i, j]) for i in range(rows) for j in range(cols)]
    out = np.full((rows * (h + gap) - gap, cols * (k + gap) - gap), np.nan, dtype=np.float32)
    for r, col, tile in tiles:
        out[r * (h + gap) : r * (h + gap) + h, col * (k + gap) : col * (k + gap) + k] = tile
    return out


def symmetric_level(values: np.ndarray) -> float:
    """A colour range +-level that a few outliers do not wash out."""
    finite = np.abs(values[np.isfinite(values)])
    level = float(np.percentile(finite, 99.5)) if finite.size else 0.0
    return level if level > 0 else 1.0


class WeightsView(QWidget):
    refresh_requested = Signal()
    save_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layer = QComboBox()
        self.layer.setMinimumContentsLength(10)
        self.live = QCheckBox("Live", checked=True)
        self.live.setToolTip(f"While training, refresh every {LIVE_MS / 1000:g} s when this tab is visible")
        refresh = QToolButton(text="Refresh", autoRaise=True)
        self.save = QToolButton(text="Save .caffemodel…", autoRaise=True)
        self.info = QLabel(NO_WEIGHTS)
        self.info.setStyleSheet("color: palette(placeholder-text)")
        refresh.clicked.connect(self.refresh_requested)
        self.save.clicked.connect(self.save_requested)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 0)
        for widget in (QLabel("Filters of"), self.layer, refresh, self.live, self.info):
            bar.addWidget(widget)
        bar.addStretch(1)
        bar.addWidget(self.save)

        self.mosaic_widget = pg.GraphicsLayoutWidget()
        self.mosaic_view = self.mosaic_widget.addViewBox(lockAspect=True, invertY=True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get("CET-D1"))
        self.mosaic_view.addItem(self.image)
        self.histograms = pg.GraphicsLayoutWidget()
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.mosaic_widget)
        splitter.addWidget(self.histograms)
        splitter.setSizes([300, 500])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)

        self.weights: dict[str, list[np.ndarray]] = {}
        self._hist_plots: dict[str, pg.PlotItem] = {}
        self.layer.currentTextChanged.connect(self._draw_mosaic)
        self.live_timer = QTimer(self, interval=LIVE_MS, timeout=self._live_tick)
        self.training = False
        self._follow_palette()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "histograms"):
            self._follow_palette()
            self._draw_histograms()  # the titles' colour is set when they are written

    def _follow_palette(self) -> None:
        self.mosaic_widget.setBackground(self.palette().color(QPalette.ColorRole.Base))
        follow_palette(self.histograms, self._hist_plots.values(), self.palette())

    def set_training(self, training: bool) -> None:
        self.training = training
        if training and self.live.isChecked():
            self.live_timer.start()
        else:
            self.live_timer.stop()

    def _live_tick(self) -> None:
        if self.isVisible() and self.live.isChecked() and self.training:
            self.refresh_requested.emit()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refresh_requested.emit()

    def clear(self) -> None:
        """Another net: the last run's (or model's) weights say nothing of it."""
        self.weights = {}
        self.layer.blockSignals(True)
        self.layer.clear()
        self.layer.blockSignals(False)
        self.info.setText(NO_WEIGHTS)
        self._draw_mosaic()
        self._draw_histograms()

    # ---- drawing --------------------------------------------------------------------------
    def show_weights(self, title: str, iteration: int, weights: dict[str, list[np.ndarray]]) -> None:
        self.weights = weights
        self.info.setText(f"{title}, after iteration {iteration}")
        names = list(weights)
        if names != [self.layer.itemText(i) for i in range(self.layer.count())]:
            keep = self.layer.currentText()
            self.layer.blockSignals(True)
            self.layer.clear()
            self.layer.addItems(names)
            conv = next((n for n in names if weights[n][0].ndim == 4), names[0] if names else "")
            self.layer.setCurrentText(keep if keep in names else conv)
            self.layer.blockSignals(False)
        self._draw_mosaic()
        self._draw_histograms()

    def _draw_mosaic(self) -> None:
        blobs = self.weights.get(self.layer.currentText())
        if not blobs:
            self.image.clear()
            return
        picture = mosaic(blobs[0])
        level = symmetric_level(picture)
        self.image.setImage(picture, levels=(-level, level), autoLevels=False)
        self.mosaic_view.autoRange(padding=0.02)

    def _draw_histograms(self) -> None:
        if list(self._hist_plots) != list(self.weights):
            self.histograms.clear()
            self._hist_plots = {}
            for i, name in enumerate(self.weights):
                plot = self.histograms.addPlot(row=i // 2, col=i % 2)
                plot.setMenuEnabled(False)
                plot.hideAxis("left")
                self._hist_plots[name] = plot
            follow_palette(self.histograms, self._hist_plots.values(), self.palette())
        title = self.palette().color(QPalette.ColorRole.Text).name()
        for name, blobs in self.weights.items():
            plot = self._hist_plots[name]
            plot.clear()
            w = blobs[0]
            plot.setTitle(f"{name} {'×'.join(map(str, w.shape))}  σ={w.std():.3g}", size="9pt", color=title)
            counts, edges = np.histogram(w[np.isfinite(w)], bins=BINS)
            brush = pg.mkColor(WEIGHT_COLOR)
            brush.setAlpha(90)
            plot.addItem(
                pg.PlotDataItem(edges, counts, stepMode="center", fillLevel=0, brush=brush, pen=WEIGHT_COLOR)
            )
