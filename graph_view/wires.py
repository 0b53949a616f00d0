"""Wires (a top port to a bottom port, through the layout's bend points) and their blob labels.

A blob is labelled once, where it leaves its producer: ``conv1  64×20×24×24``. A blob read by
several layers fans out from that one label, so names and shapes never fight for edge midpoints.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPainterPathStroker, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem, QStyleOptionGraphicsItem

from graph_view import canvas_colours, style, summary
from graph_view.graph import Edge, Shape
from graph_view.items import advance, font, metrics
from graph_view.ports import PortItem

ARROW = 7.0


def curve(points: list[QPointF], downward: bool) -> QPainterPath:
    """A smooth path through ``points`` leaving and entering each one vertically."""
    path = QPainterPath(points[0])
    sign = 1.0 if downward else -1.0
    for a, b in zip(points, points[1:]):
        if a.x() == b.x():
            path.lineTo(b)  # through a rank: straight
            continue
        bend = max(abs(b.y() - a.y()) * 0.5, 12.0)
        path.cubicTo(QPointF(a.x(), a.y() + sign * bend), QPointF(b.x(), b.y() - sign * bend), b)
    return path


class WireItem(QGraphicsPathItem):
    def __init__(
        self, edge: Edge, src: PortItem, dst: PortItem, bends: list[QPointF], downward: bool
    ) -> None:
        super().__init__()
        self.edge, self.src, self.dst, self.bends, self.downward = edge, src, dst, bends, downward
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.setAcceptHoverEvents(True)
        self.setZValue(0)
        self.hover = False
        shape = summary.dims(edge.shape) if edge.shape is not None else "shape unknown"
        late = "\nproduced only later: Caffe runs layers in file order" if edge.late else ""
        self.setToolTip(
            f"blob {edge.blob}: {shape}{late}\nfrom {src.node.node.layer.name} (top {edge.src_slot}) "
            f"to {dst.node.node.layer.name} (bottom {edge.dst_slot})"
        )
        self.update_path()

    @property
    def dst_index(self) -> int | None:
        return self.dst.node.index

    def update_path(self, straight: bool = False) -> None:
        """Recompute after a node moved; ``straight`` drops the layout's bends (they no longer fit)."""
        if straight:
            self.bends = []
        a, b = self.src.centre(), self.dst.centre()
        sign = 1.0 if self.downward else -1.0
        end = QPointF(b.x(), b.y() - sign * (ARROW + style.PORT_R))
        self.prepareGeometryChange()
        self.setPath(curve([a, *self.bends, end], self.downward))

    def shape(self) -> QPainterPath:
        stroker = QPainterPathStroker()
        stroker.setWidth(10)
        return stroker.createStroke(self.path())

    def boundingRect(self) -> QRectF:
        grow = ARROW + style.PORT_R
        return super().boundingRect().adjusted(-grow, -grow, grow, grow)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        long = len(self.bends) > 2
        colour = QColor(
            style.SELECTED
            if self.isSelected()
            else style.ERROR
            if self.edge.late
            else "#4b5563"
            if self.hover
            else style.WIRE_LONG
            if long
            else style.WIRE
        )
        width = 2.4 if self.isSelected() or self.hover else 1.4
        pen = QPen(colour, width)
        if self.edge.late:
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        far = painter.worldTransform().m11() < 0.35
        if far:  # hairlines far out: antialiasing would cost more than it shows
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        painter.drawPath(self.path())
        if far:
            return
        sign = 1.0 if self.downward else -1.0
        tip = self.dst.centre() - QPointF(0, sign * style.PORT_R)  # touching the port's rim
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawPolygon(
            QPolygonF(
                [
                    tip,
                    QPointF(tip.x() - 4, tip.y() - sign * ARROW),
                    QPointF(tip.x() + 4, tip.y() - sign * ARROW),
                ]
            )
        )

    def hoverEnterEvent(self, event) -> None:
        self.hover = True
        self.update()

    def hoverLeaveEvent(self, event) -> None:
        self.hover = False
        self.update()


class BlobLabel(QGraphicsItem):
    """``name  N×C×H×W`` beside a top port, on the outside of the box; a child of the node.

    A double-click on it renames the blob (the scene catches it: see ``GraphScene.label_at``).
    """

    def __init__(
        self,
        port: PortItem,
        shape: Shape | None,
        downward: bool,
        stagger: int,
        assumed: bool = False,
        short: str | None = None,
    ) -> None:
        """``short``: the words shown instead of the blob's name (a Split's copies, side by side)."""
        super().__init__(port.node)
        self.port, self.assumed = port, assumed and shape is not None
        self.name, self.shape_text = short or port.blob, summary.dims(shape) if shape is not None else ""
        if self.assumed:  # not read from the data: say so where the shape is read
            self.shape_text += " assumed"
        self.name_w = advance("small", self.name)
        width = self.name_w + (advance("small", self.shape_text) + 6 if self.shape_text else 0) + 8
        height = metrics("small").height() + 2
        x = port.pos().x() + 6
        y = port.pos().y() + (4 + stagger * height if downward else -4 - height - stagger * height)
        self.rect = QRectF(x, y, width, height)
        self.setZValue(3)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setToolTip(f"blob {port.blob}" if short else f"blob {self.name}: double-click to rename it")

    def text(self) -> str:
        return f"{self.name}  {self.shape_text}".strip()

    def boundingRect(self) -> QRectF:
        return self.rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        if painter.worldTransform().m11() < 0.5:
            return
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(canvas_colours.label_background())
        painter.drawRoundedRect(self.rect, 3, 3)
        painter.setFont(font("small"))
        r = self.rect.adjusted(4, 0, -4, 0)
        painter.setPen(canvas_colours.muted())
        painter.drawText(r, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, self.name)
        painter.setPen(QColor(style.ASSUMED) if self.assumed else canvas_colours.text())
        painter.drawText(r, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, self.shape_text)
