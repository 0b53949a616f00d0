"""Ports: the small circles where blobs leave (tops) and enter (bottoms) a node.

A port only draws itself and reports a drag: press on a port, drag, release over another node's
port (or its box) and the scene is told ``connect_requested``; the controller makes the command.
"""

from __future__ import annotations

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsSceneMouseEvent,
    QStyleOptionGraphicsItem,
)

from graph_view import style

TOP, BOTTOM = "top", "bottom"


class PortItem(QGraphicsItem):
    def __init__(self, node, side: str, slot: int, blob: str, dangling: bool = False) -> None:
        super().__init__(node)
        self.node, self.side, self.slot, self.blob, self.dangling = node, side, slot, blob, dangling
        self.hot = False  # under a connection being dragged, and a valid target
        self._drag: QGraphicsPathItem | None = None
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.CursorShape.CrossCursor)
        self.setZValue(2)
        shape = f" · {node.node.top_shapes[slot]}" if side == TOP and slot < len(node.node.top_shapes) else ""
        self.setToolTip(f"{side} {slot}: {blob}{'' if shape == ' · None' else shape}")

    @property
    def key(self) -> str:
        return self.node.key

    def boundingRect(self) -> QRectF:
        r = style.PORT_R + 3  # a little larger than drawn: easier to hit
        return QRectF(-r, -r, 2 * r, 2 * r)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        if painter.worldTransform().m11() < 0.35:
            return
        r = style.PORT_R * (1.5 if self.hot else 1.0)
        colour = QColor(style.ERROR if self.dangling else self.node.family.colour)
        painter.setPen(QPen(colour, 1.4))
        painter.setBrush(QColor(style.SELECTED) if self.hot else QColor(style.CARD))
        painter.drawEllipse(QPointF(0, 0), r, r)

    def centre(self) -> QPointF:
        return self.scenePos()

    # ---- the connect gesture -------------------------------------------------------------
    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton or not self.scene().editable:  # type: ignore[attr-defined]
            event.ignore()
            return
        self._drag = QGraphicsPathItem()
        self._drag.setPen(QPen(QColor(style.SELECTED), 2, Qt.PenStyle.DashLine))
        self._drag.setZValue(10)
        self.scene().addItem(self._drag)
        event.accept()

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self._drag is None:
            return
        path = QPainterPath(self.centre())
        path.lineTo(event.scenePos())
        self._drag.setPath(path)
        self.scene().highlight_targets(self, event.scenePos())  # type: ignore[attr-defined]

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self._drag is None:
            return
        scene = self.scene()
        scene.removeItem(self._drag)
        self._drag = None
        target = scene.target_at(self, event.scenePos())  # type: ignore[attr-defined]
        scene.highlight_targets(None, event.scenePos())  # type: ignore[attr-defined]
        if (
            target is not None
            and QLineF(event.buttonDownScenePos(Qt.MouseButton.LeftButton), event.scenePos()).length() > 4
        ):
            scene.finish_connection(self, *target)  # type: ignore[attr-defined]


def accepts(source: PortItem, target: PortItem) -> bool:
    """A wire runs from a top to a bottom of another node."""
    return source.side != target.side and source.node is not target.node
