"""The minimap: the whole net in a corner of the canvas, the visible part framed; click or drag to go.

The net is drawn into an image once per change (a rebuild, a box moved), as plain coloured blocks
and one-pixel wires, so panning costs one small blit, not a repaint of five hundred boxes. It is
translucent (boxes under it still show), shown only when the net does not fit in the view, never
for an empty canvas, and can be switched off (``set_wanted``). The view keeps its first picture
clear of it (``reserved_width``).
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from graph_view import canvas_colours, style
from graph_view.view import GraphView

MAX_W, MAX_H, MIN_W = 150, 240, 60
MARGIN = 12
OPACITY = 0.82


class Minimap(QWidget):
    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self.view = view
        self._image: QImage | None = None
        self._source = self._bounds = QRectF()
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Minimap: click or drag to move the view (View > Minimap hides it)")
        self.wanted = True
        view.viewport_changed.connect(self._follow)
        view.graph_scene.rebuilt.connect(self.refresh)
        view.graph_scene.positions_changed.connect(self.refresh)  # a box moved by hand
        view.minimap_width = self.reserved_width

    def set_wanted(self, wanted: bool) -> None:
        self.wanted = wanted
        self._follow()

    def reserved_width(self) -> float:
        """The strip at the view's right edge this minimap would cover (0 when switched off)."""
        return self.width() + 2 * MARGIN if self.wanted and self._image is not None else 0.0

    def refresh(self) -> None:
        scene = self.view.graph_scene
        self._bounds = scene.itemsBoundingRect() if scene.nodes else QRectF()
        self._source = self._bounds.adjusted(-20, -20, 20, 20)
        if not scene.nodes or self._source.isEmpty():
            self._image = None
            self._follow()
            return
        scale = min(MAX_W / self._source.width(), MAX_H / self._source.height())
        size = QSize(max(int(self._source.width() * scale), 8), max(int(self._source.height() * scale), 8))
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(canvas_colours.background())
        painter = QPainter(image)
        painter.scale(scale, scale)
        painter.translate(-self._source.topLeft())
        painter.setPen(QPen(QColor(style.WIRE_LONG), 0))  # cosmetic: one pixel whatever the scale
        for wire in scene.wires:
            painter.drawLine(wire.src.scenePos(), wire.dst.scenePos())
        painter.setPen(Qt.PenStyle.NoPen)
        for node in scene.nodes.values():
            painter.setBrush(QColor(node.family.colour))
            painter.drawRect(node.mapRectToScene(node.rect))
        painter.end()
        self._image = image
        self.resize(max(size.width(), MIN_W), size.height())  # a very tall net: a narrow strip, centred
        self._follow()

    def _follow(self) -> None:
        """Sit in the bottom-right corner; show only when the net does not fit in the view."""
        if self.view.scene() is None:
            return
        viewport = self.view.viewport().geometry()
        self.move(viewport.right() - self.width() - MARGIN, viewport.bottom() - self.height() - MARGIN)
        visible = self.view.visible_scene_rect()
        needed = self.wanted and self._image is not None and not visible.contains(self._bounds)
        self.setVisible(needed)
        self.update()

    def _image_rect(self) -> QRectF:
        assert self._image is not None
        w, h = self._image.width(), self._image.height()
        return QRectF((self.width() - w) / 2, 0, w, h)

    def _to_scene(self, point: QPointF) -> QPointF:
        s, r = self._source, self._image_rect()
        return QPointF(
            s.left() + (point.x() - r.left()) / r.width() * s.width(),
            s.top() + (point.y() - r.top()) / r.height() * s.height(),
        )

    def _from_scene(self, rect: QRectF) -> QRectF:
        s, r = self._source, self._image_rect()
        sx, sy = r.width() / s.width(), r.height() / s.height()
        return QRectF(
            r.left() + (rect.left() - s.left()) * sx,
            r.top() + (rect.top() - s.top()) * sy,
            rect.width() * sx,
            rect.height() * sy,
        )

    def paintEvent(self, event: QPaintEvent) -> None:
        if self._image is None:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setOpacity(OPACITY)
        painter.fillRect(self.rect(), canvas_colours.background())
        painter.drawImage(self._image_rect().topLeft(), self._image)
        painter.setPen(QPen(QColor(style.CARD_BORDER), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(QRectF(0.5, 0.5, self.width() - 1, self.height() - 1))
        painter.setOpacity(1.0)
        frame = self._from_scene(self.view.visible_scene_rect()).intersected(
            QRectF(0, 0, self.width(), self.height())
        )
        painter.setPen(QPen(QColor(style.SELECTED), 1.5))
        painter.setBrush(QColor(245, 158, 11, 40))
        painter.drawRect(frame)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if self._image is not None:
            self.view.centerOn(self._to_scene(event.position()))

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton and self._image is not None:
            self.view.centerOn(self._to_scene(event.position()))
