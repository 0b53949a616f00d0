"""A layer's box: a coloured header (name, type), its key settings, its size, and the in-place
layers that act on its output drawn as bands below. Items only draw and report gestures.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from google.protobuf import text_format
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSceneMouseEvent, QStyleOptionGraphicsItem

from graph_view import style, summary
from graph_view.graph import Band, Node, Shape
from graph_view.ports import BOTTOM, TOP, PortItem
from graph_view.validation import ERROR, Problem

PAD = 8
FOUND = "#facc15"  # the ring of a box matching Find
SIMPLE_ZOOM = 0.55  # below this zoom a box draws as a block with its name (semantic zoom)
FAR_NAME_PX = 11.0  # the on-screen size of that name
SPILL = 0.45  # how far into the gaps between boxes a far-out name may reach (of the gap)


def far_name(name: str, width: float, px: float) -> str:
    """What of ``name`` fits ``width`` at ``px``: all of it, else its last ``/`` part (a branch of a
    module, ``inception_3a/3x3`` -> ``3x3``), elided in the middle; '' when not even that reads."""
    f = QFont(font("name"))
    f.setPixelSize(max(int(px), 1))
    text = QFontMetricsF(f)
    if text.horizontalAdvance(name) <= width:
        return name
    tail = name.rsplit("/", 1)[-1]
    elided = text.elidedText(tail, Qt.TextElideMode.ElideMiddle, width)
    return elided if len(elided.replace("…", "")) >= 2 else ""


@cache
def font(role: str) -> QFont:
    f = QFont(style.FONT_FAMILY)
    # Pixel sizes, not points: the scene is drawn on screens, PNGs and SVGs of different DPIs.
    f.setPixelSize({"name": 12, "type": 10, "body": 11, "small": 10, "band": 10}[role])
    f.setBold(role == "name")
    return f


@cache
def metrics(role: str) -> QFontMetricsF:
    return QFontMetricsF(font(role))


@cache
def advance(role: str, text: str) -> float:
    """The width of ``text``: measured once (a ResNet repeats the same words hundreds of times)."""
    return metrics(role).horizontalAdvance(text)


def _lod(painter: QPainter) -> float:
    return painter.worldTransform().m11()


def _badge(painter: QPainter, centre: QPointF, problems: list[Problem]) -> None:
    worst = ERROR if any(p.severity == ERROR for p in problems) else "warning"
    painter.setPen(QPen(QColor(style.CARD), 1.5))
    painter.setBrush(QColor(style.ERROR if worst == ERROR else style.WARNING))
    painter.drawEllipse(centre, 8, 8)
    painter.setPen(QColor("white"))
    painter.setFont(font("name"))
    painter.drawText(QRectF(centre.x() - 8, centre.y() - 8, 16, 16), Qt.AlignmentFlag.AlignCenter, "!")


def problem_tip(problems: list[Problem]) -> str:
    return "\n".join(("⛔ " if p.severity == ERROR else "⚠ ") + p.message for p in problems)


class BandItem(QGraphicsItem):
    """One in-place layer (ReLU, Dropout, BatchNorm, Scale...) as a strip of its producer's box."""

    def __init__(self, parent: NodeItem, band: Band, rect: QRectF, problems: list[Problem]) -> None:
        super().__init__(parent)
        self.band, self.key, self.rect, self.problems = band, band.key, rect, problems
        self.family = style.family(band.layer.type)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        tip = f"{band.layer.name} ({band.layer.type}, in place on '{band.blob}')"
        stats = summary.stats(band.params, band.flops)
        self.setToolTip("\n".join(t for t in (tip, stats, problem_tip(problems)) if t))

    @property
    def index(self) -> int | None:
        return self.band.index

    def boundingRect(self) -> QRectF:
        return self.rect.adjusted(0, 0, 10, 0)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        r = self.rect
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(self.family.tint))
        painter.drawRect(r)
        painter.setBrush(QColor(self.family.colour))
        painter.drawRect(QRectF(r.left(), r.top(), 4, r.height()))
        if self.isSelected():
            painter.setPen(QPen(QColor(style.SELECTED), 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(r.adjusted(1, 1, -1, -1))
        if _lod(painter) < 0.45:
            return
        layer = self.band.layer
        painter.setFont(font("band"))
        painter.setPen(QColor(self.family.colour))
        text_rect = r.adjusted(PAD + 2, 0, -PAD, 0)
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, layer.type)
        type_w = advance("band", layer.type) + 6
        painter.setPen(QColor(style.TEXT))
        rest = "  ".join(t for t in (layer.name, summary.settings(layer)) if t)
        rest = metrics("band").elidedText(rest, Qt.TextElideMode.ElideRight, text_rect.width() - type_w)
        painter.drawText(text_rect.adjusted(type_w, 0, 0, 0), Qt.AlignmentFlag.AlignVCenter, rest)
        if self.problems:
            _badge(painter, QPointF(r.right() + 2, r.center().y()), self.problems)


class ChipsItem(QGraphicsItem):
    """Several in-place layers folded into one row of coloured chips; a click unfolds them."""

    def __init__(self, parent: NodeItem, bands: list[Band], rect: QRectF) -> None:
        super().__init__(parent)
        self.bands, self.rect = bands, rect
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(
            "In place: " + ", ".join(f"{b.layer.name} ({b.layer.type})" for b in bands) + "\nClick to unfold"
        )

    def boundingRect(self) -> QRectF:
        return self.rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor("#f3f4f6"))
        painter.drawRect(self.rect)
        if _lod(painter) < 0.45:
            return
        x = self.rect.left() + PAD - 2
        painter.setFont(font("band"))
        for band in self.bands:
            fam = style.family(band.layer.type)
            w = advance("band", band.layer.type) + 10
            if x + w > self.rect.right() - 14:
                painter.setPen(QColor(style.MUTED))
                painter.drawText(QPointF(x, self.rect.center().y() + 4), "…")
                break
            chip = QRectF(x, self.rect.top() + 3, w, self.rect.height() - 6)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(fam.colour))
            painter.drawRoundedRect(chip, 3, 3)
            painter.setPen(QColor("white"))
            painter.drawText(chip, Qt.AlignmentFlag.AlignCenter, band.layer.type)
            x += w + 4
        painter.setPen(QColor(style.MUTED))
        painter.drawText(
            self.rect.adjusted(0, 0, -6, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, "▸"
        )

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self.parentItem().scene().toggle_expanded(self.parentItem().key)  # type: ignore[attr-defined]


class FoldItem(QGraphicsItem):
    """The ▾ on unfolded in-place bands: a click folds them back into chips."""

    def __init__(self, parent: NodeItem, rect: QRectF) -> None:
        super().__init__(parent)
        self.rect = rect
        self.setZValue(1)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Fold the in-place layers into one row")

    def boundingRect(self) -> QRectF:
        return self.rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        if _lod(painter) >= 0.45:
            painter.setFont(font("band"))
            painter.setPen(QColor(style.MUTED))
            painter.drawText(self.rect, Qt.AlignmentFlag.AlignCenter, "▾")

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self.parentItem().scene().toggle_expanded(self.parentItem().key)  # type: ignore[attr-defined]


_IDENTITY = ("name", "type", "bottom", "top")


def _scalar(field, value) -> str:
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name
    if isinstance(value, bool):
        return "true" if value else "false"
    return (
        f'"{value}"' if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else str(value)
    )


def set_fields(message, width: int = 100, indent: str = "") -> list[str]:
    """One line per field set in the prototxt (a layer's name, type, bottom and top aside), as the
    text reads; a layer's parameter messages list their own fields below them, indented."""
    lines = []
    for field, value in message.ListFields():
        if not indent and field.name in _IDENTITY:
            continue
        values = value if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else [value]
        for item in values:
            if field.message_type is not None and not indent and field.name.endswith("_param"):
                lines.append(f"{field.name}:")
                lines += set_fields(item, width, "  ")
                continue
            if field.message_type is not None:
                text = f"{indent}{field.name} {{ {text_format.MessageToString(item, as_one_line=True)} }}"
            else:
                text = f"{indent}{field.name}: {_scalar(field, item)}"
            lines.append(text if len(text) <= width else text[: width - 1] + "…")
    return lines


def node_lines(node: Node) -> list[tuple[str, str]]:
    """(role, text) lines of the body: settings, weight sharing and lr, parameters and FLOPs."""
    layer = node.layer
    lines = [("body", summary.settings(layer)), ("note", summary.param_notes(layer))]
    if node.generated:
        lines.append(("note", "added by Caffe (InsertSplits)"))
    if node.assumed is not None:  # its data was not read: every shape below rests on this
        lines.append(("note" if node.assumed.fact else "assumed", node.assumed.label))
    lines.append(("small", summary.stats(node.params, node.flops)))
    return [(role, text) for role, text in lines if text]


def measure(node: Node, expanded: bool) -> tuple[float, float]:
    """The box's size: wide enough for its text (within limits), tall enough for its lines and bands."""
    lines = node_lines(node)
    widths = [advance("name", node.layer.name) + advance("type", node.layer.type) + 3 * PAD]
    widths += [advance("body" if role == "body" else "small", text) + 2 * PAD for role, text in lines]
    for band in node.bands:
        text = f"{band.layer.type}  {band.layer.name}  {summary.settings(band.layer)}"
        widths.append(advance("band", text) + 2 * PAD + 8)
    if len(node.bands) > 1:  # the folded row of chips
        widths.append(sum(advance("band", b.layer.type) + 14 for b in node.bands) + 2 * PAD + 12)
    width = min(
        max(max(widths), style.NODE_MIN_W, 28.0 * (max(len(node.tops), len(node.bottoms)) + 1)),
        style.NODE_MAX_W,
    )
    height = style.HEADER_H + (len(lines) * style.LINE_H + 8 if lines else 0)
    height += _bands_height(node, expanded)  # type: ignore[assignment]
    return width, height


def _bands_height(node: Node, expanded: bool) -> float:
    if not node.bands:
        return 0.0
    if len(node.bands) == 1 or expanded:
        return len(node.bands) * style.BAND_H
    return style.CHIPS_H


class FarNameItem(QGraphicsItem):
    """A box's name far out (semantic zoom): ~11 px on screen whatever the zoom, over the block and,
    when the block alone is too small to hold it, into the gaps around it. Shown only far out."""

    def __init__(self, parent: NodeItem) -> None:
        super().__init__(parent)
        self.node_item = parent
        self.setVisible(False)
        self.setZValue(2)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # clicks go to the box

    def room(self) -> QRectF:
        dx, dy = style.NODE_GAP * SPILL, style.RANK_GAP * SPILL
        return self.node_item.rect.adjusted(-dx, -dy, dx, dy)

    def boundingRect(self) -> QRectF:
        return self.room()

    def shape(self) -> QPainterPath:
        return QPainterPath()  # never hit: the box beneath takes clicks and rubber bands

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = _lod(painter)
        if lod >= SIMPLE_ZOOM:
            return
        r, room = self.node_item.rect, self.room()
        px = min(FAR_NAME_PX / lod, room.height() * 0.9)
        name = far_name(self.node_item.node.layer.name, room.width(), px)
        if not name:
            return
        f = QFont(font("name"))
        f.setPixelSize(max(int(px), 1))
        painter.setFont(f)
        text = QFontMetricsF(f)
        box = QRectF(0, 0, min(text.horizontalAdvance(name) + px * 0.4, room.width()), text.height())
        box.moveCenter(r.center())
        colour = QColor(self.node_item.family.colour)
        if box.width() > r.width() or box.height() > r.height():  # the name needs more than the block
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(colour.red(), colour.green(), colour.blue(), 215))
            painter.drawRoundedRect(box, px * 0.2, px * 0.2)
        painter.setPen(QColor("white"))
        painter.drawText(box, Qt.AlignmentFlag.AlignCenter, name)


class NodeItem(QGraphicsItem):
    def __init__(
        self,
        node: Node,
        size: tuple[float, float],
        downward: bool,
        expanded: bool,
        problems: dict[str, list[Problem]],
        dangling: set[int],
    ) -> None:
        super().__init__()
        self.node, self.key = node, node.key
        self.family = style.family(node.layer.type, node.known)
        self.width, self.height = size
        self.problems = problems.get(node.key, [])
        self.lines = node_lines(node)
        self.setFlags(
            QGraphicsItem.GraphicsItemFlag.ItemIsSelectable | QGraphicsItem.GraphicsItemFlag.ItemIsMovable
        )
        self.setAcceptHoverEvents(True)
        self.setZValue(1)
        self._card, self._header = self._paths()
        self._ports(downward, dangling)
        self._bands(expanded, problems)
        self.far_name = FarNameItem(self)
        self.setToolTip(self.tooltip())

    @property
    def index(self) -> int | None:
        return self.node.index

    @property
    def rect(self) -> QRectF:
        return QRectF(-self.width / 2, -self.height / 2, self.width, self.height)

    def header_rect(self) -> QRectF:
        r = self.rect
        return QRectF(r.left(), r.top(), r.width(), style.HEADER_H)

    def _paths(self) -> tuple[QPainterPath, QPainterPath]:
        card = QPainterPath()
        card.addRoundedRect(self.rect, 6, 6)
        header = QPainterPath()
        header.addRoundedRect(self.header_rect(), 6, 6)
        if self.lines or self.node.bands:  # square lower corners where the body continues
            square = QPainterPath()
            square.addRect(QRectF(self.rect.left(), self.rect.top() + 8, self.width, style.HEADER_H - 8))
            header = header.united(square)
        return card, header

    def _ports(self, downward: bool, dangling: set[int]) -> None:
        top_y, bottom_y = (
            (self.height / 2, -self.height / 2) if downward else (-self.height / 2, self.height / 2)
        )
        self.top_ports = [PortItem(self, TOP, i, blob) for i, blob in enumerate(self.node.tops)]
        self.bottom_ports = [
            PortItem(self, BOTTOM, i, b, i in dangling) for i, b in enumerate(self.node.bottoms)
        ]
        for ports, y in ((self.top_ports, top_y), (self.bottom_ports, bottom_y)):
            for i, port in enumerate(ports):
                port.setPos(self.port_dx(i, len(ports)), y)

    def port_dx(self, slot: int, count: int) -> float:
        return self.width * ((slot + 1) / (count + 1) - 0.5)

    def _bands(self, expanded: bool, problems: dict[str, list[Problem]]) -> None:
        bands = self.node.bands
        top = self.height / 2 - _bands_height(self.node, expanded)
        self.band_items: list[BandItem] = []
        self.chips: ChipsItem | None = None
        if not bands:
            return
        if len(bands) == 1 or expanded:
            for i, band in enumerate(bands):
                rect = QRectF(-self.width / 2, top + i * style.BAND_H, self.width, style.BAND_H)
                self.band_items.append(BandItem(self, band, rect, problems.get(band.key, [])))
            if len(bands) > 1:
                FoldItem(self, QRectF(self.width / 2 - 18, top, 16, style.BAND_H))
        else:
            self.chips = ChipsItem(self, bands, QRectF(-self.width / 2, top, self.width, style.CHIPS_H))

    def tooltip(self, bottom_shapes: dict[int, Shape | None] | None = None) -> str:
        """Name and type; each bottom's and top's shape; params and FLOPs; every field set."""
        layer = self.node.layer
        where = (
            "added by Caffe (InsertSplits)" if self.node.generated else f"layer {(self.node.index or 0) + 1}"
        )
        lines = [f"{layer.name} ({layer.type}) · {where}"]
        shapes = bottom_shapes or {}
        for slot, blob in enumerate(self.node.bottoms):
            shape = shapes.get(slot)
            lines.append(f"bottom {blob}: {summary.dims(shape) if shape is not None else 'shape unknown'}")
        for blob, shape in zip(self.node.tops, self.node.top_shapes):
            lines.append(f"top {blob}: {summary.dims(shape) if shape is not None else 'shape unknown'}")
        stats = summary.stats(self.node.params, self.node.flops)
        if stats:
            lines.append(stats)
        lines += set_fields(layer)
        if self.node.bands:
            lines.append(
                "in place: " + ", ".join(f"{b.layer.name} ({b.layer.type})" for b in self.node.bands)
            )
        if self.node.assumed is not None:
            lines.append(f"shapes {self.node.assumed.describe()}")
        return "\n".join([*lines, problem_tip(self.problems)]).strip()

    # ---- drawing ----------------------------------------------------------------------------
    def boundingRect(self) -> QRectF:
        return self.rect.adjusted(-3, -10, 10, 3)

    def _paint_simple(self, painter: QPainter, r: QRectF, colour: QColor, lod: float) -> None:
        """Semantic zoom: the block in its family colour (its name is a FarNameItem, drawn over it)."""
        found = self.key in getattr(self.scene(), "found", ())
        ring = QColor(style.SELECTED) if self.isSelected() else QColor(FOUND) if found else None
        painter.setPen(QPen(ring, 4 / lod) if ring is not None else Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawRoundedRect(r, 6, 6)
        if self.problems:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(style.ERROR))
            painter.drawEllipse(QPointF(r.right(), r.top()), 5 / lod, 5 / lod)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        r = self.rect
        colour = QColor(self.family.colour)
        lod = _lod(painter)
        if lod < SIMPLE_ZOOM:  # far away: a coloured block and its name, in a font one can read
            self._paint_simple(painter, r, colour, lod)
            return
        outline = (
            QPen(QColor(style.SELECTED), 2.5) if self.isSelected() else QPen(QColor(style.CARD_BORDER), 1)
        )
        if self.node.generated:
            outline.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(0, 0, 0, 22))
        painter.drawPath(self._card.translated(0, 2))  # a soft shadow
        painter.setBrush(QColor(style.CARD))
        painter.drawPath(self._card)
        painter.setBrush(colour)
        painter.drawPath(self._header)
        self._text(painter, r)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(outline)
        painter.drawPath(self._card)
        if self.key in getattr(self.scene(), "found", ()):
            painter.setPen(QPen(QColor(FOUND), 3))
            painter.drawPath(self._card.translated(0, 0))
        if self.problems:
            _badge(painter, QPointF(r.right() - 2, r.top() + 2), self.problems)

    def _text(self, painter: QPainter, r: QRectF) -> None:
        layer, h = self.node.layer, self.header_rect().adjusted(PAD, 0, -PAD, 0)
        type_w = advance("type", layer.type)
        painter.setFont(font("type"))
        painter.setPen(QColor(255, 255, 255, 200))
        painter.drawText(h, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, layer.type)
        painter.setFont(font("name"))
        painter.setPen(QColor("white"))
        name = metrics("name").elidedText(layer.name, Qt.TextElideMode.ElideMiddle, h.width() - type_w - 6)
        painter.drawText(h, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, name)
        y = r.top() + style.HEADER_H + 4
        for role, text in self.lines:
            f = "body" if role == "body" else "small"
            painter.setFont(font(f))
            painter.setPen(
                QColor(
                    {"body": style.TEXT, "note": "#0f766e", "small": style.MUTED, "assumed": style.ASSUMED}[
                        role
                    ]
                )
            )
            text = metrics(f).elidedText(text, Qt.TextElideMode.ElideRight, r.width() - 2 * PAD)
            painter.drawText(
                QRectF(r.left() + PAD, y, r.width() - 2 * PAD, style.LINE_H),
                Qt.AlignmentFlag.AlignVCenter,
                text,
            )
            y += style.LINE_H

    # ---- gestures ---------------------------------------------------------------------------
    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        super().mouseMoveEvent(event)  # moves every selected box
        self.scene().boxes_dragged()  # type: ignore[attr-defined]

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self.header_rect().contains(event.pos()) and self.node.index is not None:
            self.scene().rename_requested.emit(self.key)  # type: ignore[attr-defined]
            event.accept()
            return
        super().mouseDoubleClickEvent(event)
