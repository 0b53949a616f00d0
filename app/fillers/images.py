"""Weights as pictures: a diverging colour map (blue negative, white zero, red positive) on one scale.

One scale for every tile of a mosaic, so a kernel that is paler than its neighbours really holds
smaller weights. NaN (the gaps between tiles) is drawn in the panel's background colour.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

NEGATIVE = np.array([37, 99, 170], float)  # blue
POSITIVE = np.array([196, 48, 43], float)  # red
WHITE = np.array([255, 255, 255], float)
GAP = np.array([215, 219, 226], float)


def diverging(array: np.ndarray, limit: float | None = None) -> np.ndarray:
    """(h, w, 3) uint8 colours for a 2-D array, ±limit (default: the largest |value|) at full colour."""
    finite = np.isfinite(array)
    if limit is None:
        limit = float(np.abs(array[finite]).max()) if finite.any() else 1.0
    t = np.clip(np.where(finite, array, 0.0) / (limit or 1.0), -1.0, 1.0)[..., None]
    rgb = np.where(t < 0, WHITE + (NEGATIVE - WHITE) * -t, WHITE + (POSITIVE - WHITE) * t)
    rgb[~finite] = GAP
    return np.ascontiguousarray(rgb.round().astype(np.uint8))


def pixmap(rgb: np.ndarray, scale: int) -> QPixmap:
    h, w = rgb.shape[:2]
    image = QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
    return QPixmap.fromImage(
        image.scaled(w * scale, h * scale, mode=Qt.TransformationMode.FastTransformation)
    )


class KernelImage(QLabel):
    """Shows a 2-D array with square pixels, scaled by a whole factor to fit ``max_size`` and the
    label's own width (it never widens its panel: a narrow dock gets a smaller picture)."""

    def __init__(self, max_width: int = 440, max_height: int = 400, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_width, self.max_height = max_width, max_height
        self.array: np.ndarray | None = None
        self.limit = 0.0
        self._drawn_scale = 0
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def show_array(self, array: np.ndarray, limit: float | None = None) -> None:
        self.array = array
        finite = array[np.isfinite(array)]
        self.limit = limit if limit is not None else (float(np.abs(finite).max()) if finite.size else 0.0)
        self._draw()

    def _scale(self) -> int:
        h, w = self.array.shape if self.array is not None else (1, 1)
        room = min(self.max_width, self.width()) if self.width() > 0 else self.max_width
        return max(1, min(room // max(w, 1), self.max_height // max(h, 1), 48))

    def _draw(self) -> None:
        if self.array is None:
            return
        self._drawn_scale = scale = self._scale()
        self.setPixmap(pixmap(diverging(self.array, self.limit or None), scale))
        self.setFixedHeight(self.array.shape[0] * scale)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.array is not None and self._scale() != self._drawn_scale:
            self._draw()
