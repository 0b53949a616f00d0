"""Arrays as pictures for the model dialogs: an image, a mosaic of channels or filters (grey,
NaN gaps shown as the window's background), and a small histogram plot."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage, QPalette, QPixmap

from app.plot_palette import follow_palette
from app.training.weights_view import mosaic
from engine.model_use.inspect import Stats

GAP_GREY = 200
HIST_COLOR = "#1f77b4"


def image_pixmap(image: np.ndarray) -> QPixmap:
    """An H x W x K image in [0, 1] (RGB, or one grey channel)."""
    pixels = np.clip(np.asarray(image) * 255 + 0.5, 0, 255).astype(np.uint8)
    if pixels.shape[2] == 1:
        return grey_pixmap(pixels[:, :, 0])
    data = np.ascontiguousarray(pixels[:, :, :3])
    h, w, _ = data.shape
    return QPixmap.fromImage(QImage(data.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy())


def grey_pixmap(pixels: np.ndarray) -> QPixmap:
    data = np.ascontiguousarray(pixels, np.uint8)
    h, w = data.shape
    return QPixmap.fromImage(QImage(data.data, w, h, w, QImage.Format.Format_Grayscale8).copy())


def channels_mosaic(activation: np.ndarray) -> np.ndarray:
    """(C, H, W) as C tiles in a near-square grid; (D,) as one row; NaN between tiles."""
    a = np.asarray(activation, np.float32)
    if a.ndim >= 3:
        return mosaic(a.reshape(-1, 1, *a.shape[-2:]))
    return mosaic(a.reshape(1, -1) if a.ndim == 1 else a)


def weights_mosaic(weights: np.ndarray) -> np.ndarray:
    return mosaic(np.asarray(weights, np.float32))


def array_pixmap(picture: np.ndarray, symmetric: bool = False) -> QPixmap:
    """A 2-D array in grey: min..max (or -m..m around mid-grey when ``symmetric``)."""
    finite = picture[np.isfinite(picture)]
    if finite.size == 0:
        return grey_pixmap(np.full(picture.shape, GAP_GREY, np.uint8))
    if symmetric:
        level = float(np.abs(finite).max()) or 1.0
        low, high = -level, level
    else:
        low, high = float(finite.min()), float(finite.max())
    span = high - low or 1.0
    scaled = np.where(np.isfinite(picture), (picture - low) / span * 255, GAP_GREY)
    return grey_pixmap(np.clip(scaled + 0.5, 0, 255).astype(np.uint8))


def histogram_plot(palette: QPalette) -> pg.PlotWidget:
    """A small histogram in the window's colours (light or dark theme)."""
    plot = pg.PlotWidget()
    follow_palette(plot, [plot.getPlotItem()], palette)
    plot.setMenuEnabled(False)
    plot.hideAxis("left")
    plot.setMouseEnabled(False, False)
    plot.setFixedHeight(110)
    return plot


def draw_histogram(plot: pg.PlotWidget, stats: Stats | None) -> None:
    plot.clear()
    if stats is None:
        return
    brush = pg.mkColor(HIST_COLOR)
    brush.setAlpha(90)
    plot.addItem(
        pg.PlotDataItem(
            stats.edges, stats.counts, stepMode="center", fillLevel=0, brush=brush, pen=HIST_COLOR
        )
    )
