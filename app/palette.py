"""The palette: every registered layer type, grouped by family, with a search box.

Drag a type onto the canvas (the drag carries ``application/x-barista-layer-type`` with the
type string), or double-click it (or press Enter) to add it to the net: after the selected layer
and fed by its first top when one is selected, else at the end. New layers start from
``app.layer_defaults``. Searching matches the type, its family, its description and common
synonyms ("fc" finds InnerProduct); Enter in the search box adds the best match.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QMimeData, QPoint, QSize, Qt, Signal
from PySide6.QtGui import QColor, QDrag, QIcon, QKeyEvent, QPainter, QPixmap
from PySide6.QtWidgets import QLabel, QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from app.commands import AddLayer, Command, CommandError
from app.document import Document
from app.layer_families import DESCRIPTIONS, colour_of, grouped, matches
from engine.layers import NeuronLayer, find_layer_class, layer_types

MIME_TYPE = "application/x-barista-layer-type"
TYPE_ROLE = Qt.ItemDataRole.UserRole


def swatch(colour: str, size: int = 12) -> QIcon:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor(colour))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawRoundedRect(1, 1, size - 2, size - 2, 3, 3)
    painter.end()
    return QIcon(pixmap)


def mime_data(layer_type: str) -> QMimeData:
    mime = QMimeData()
    mime.setData(MIME_TYPE, layer_type.encode())
    mime.setText(layer_type)  # a drop into a text field writes the type
    return mime


class PaletteTree(QTreeWidget):
    """The grouped list; a drag from a type item carries the type string."""

    enter_pressed = Signal(QTreeWidgetItem)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("paletteTree")
        self.setHeaderHidden(True)
        self.setRootIsDecorated(True)
        self.setIndentation(12)
        self.setIconSize(QSize(12, 12))
        self.setDragEnabled(True)
        self.setDragDropMode(QTreeWidget.DragDropMode.DragOnly)
        self.setUniformRowHeights(True)
        self.setAnimated(False)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        item = self.currentItem()
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and item is not None:
            self.enter_pressed.emit(item)
            return
        super().keyPressEvent(event)

    def mimeTypes(self) -> list[str]:
        return [MIME_TYPE, "text/plain"]

    def mimeData(self, items) -> QMimeData:
        types = [item.data(0, TYPE_ROLE) for item in items if item.data(0, TYPE_ROLE)]
        return mime_data(types[0]) if types else QMimeData()

    def startDrag(self, supported_actions) -> None:
        item = self.currentItem()
        layer_type = item.data(0, TYPE_ROLE) if item is not None else None
        if not layer_type:
            return
        drag = QDrag(self)
        drag.setMimeData(mime_data(layer_type))
        drag.setPixmap(self._drag_pixmap(layer_type))
        drag.setHotSpot(QPoint(10, 12))
        self.exec_drag(drag)

    def exec_drag(self, drag: QDrag) -> Qt.DropAction:
        """Run the drag (a nested event loop until the drop); tests replace this to inspect it."""
        return drag.exec(Qt.DropAction.CopyAction, Qt.DropAction.CopyAction)

    def _drag_pixmap(self, layer_type: str) -> QPixmap:
        metrics = self.fontMetrics()
        width, height = metrics.horizontalAdvance(layer_type) + 30, metrics.height() + 10
        pixmap = QPixmap(width, height)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setBrush(QColor(colour_of(layer_type)))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawRoundedRect(0, 0, width, height, 6, 6)
        painter.setPen(QColor("white"))
        painter.drawText(pixmap.rect(), Qt.AlignmentFlag.AlignCenter, layer_type)
        painter.end()
        return pixmap


class _Search(QLineEdit):
    """Down moves into the list; Enter adds the best match."""

    def __init__(self, tree: PaletteTree, parent: QWidget) -> None:
        super().__init__(parent)
        self.tree = tree

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Down:
            self.tree.setFocus()
            return
        super().keyPressEvent(event)


class Palette(QWidget):
    """``added(index)`` fires after a double-click (or Enter) added a layer at ``index``."""

    added = Signal(int)

    def __init__(
        self,
        doc: Document,
        selection,
        push: Callable[[Command], None],
        parent: QWidget | None = None,
        before_edit: Callable[[], object] | None = None,
    ):
        """``before_edit()`` runs before an edit is worked out (the window applies typed text)."""
        super().__init__(parent)
        self.doc, self.selection, self._push = doc, selection, push
        self._before_edit = before_edit or (lambda: None)
        self.tree = PaletteTree(self)
        self.search = _Search(self.tree, self)
        self.search.setObjectName("paletteSearch")
        self.search.setPlaceholderText("Search layers  (conv, fc, loss…)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.filter)
        self.search.returnPressed.connect(self._add_best_match)
        self.hint = QLabel("Drag onto the canvas, or double-click to add after the selection", self)
        self.hint.setObjectName("paletteHint")
        self.hint.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 4, 0)
        layout.setSpacing(6)
        layout.addWidget(self.search)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.hint)
        self.tree.itemDoubleClicked.connect(self._activated)
        self.tree.enter_pressed.connect(lambda item: self._activated(item, 0))
        self.populate()

    def populate(self) -> None:
        self.tree.clear()
        for family, types in grouped(layer_types()):
            group = QTreeWidgetItem(self.tree, [family.title])
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            font = group.font(0)
            font.setBold(True)
            group.setFont(0, font)
            group.setToolTip(0, f"{len(types)} layer types")
            for layer_type in types:
                item = QTreeWidgetItem(group, [layer_type])
                item.setData(0, TYPE_ROLE, layer_type)
                item.setIcon(0, swatch(colour_of(layer_type)))
                item.setToolTip(0, f"<b>{layer_type}</b><br>{DESCRIPTIONS.get(layer_type, family.title)}")
                item.setFlags(
                    Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsDragEnabled
                )
            group.setExpanded(True)

    # ---- search -------------------------------------------------------------------------
    def filter(self, query: str) -> None:
        for g in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(g)
            shown = 0
            for i in range(group.childCount()):
                item = group.child(i)
                visible = matches(item.data(0, TYPE_ROLE), query)
                item.setHidden(not visible)
                shown += visible
            group.setHidden(shown == 0)
            if query:
                group.setExpanded(True)
        best = self.best_match()
        if best is not None and query:
            self.tree.setCurrentItem(best)

    def visible_types(self) -> list[str]:
        return [
            item.data(0, TYPE_ROLE)
            for item in self._type_items()
            if not item.isHidden() and not item.parent().isHidden()
        ]

    def best_match(self) -> QTreeWidgetItem | None:
        """A visible type whose name starts with the query, else the first visible one."""
        query = self.search.text().strip().lower()
        visible = [i for i in self._type_items() if not i.isHidden() and not i.parent().isHidden()]
        starts = [i for i in visible if i.data(0, TYPE_ROLE).lower().startswith(query)]
        exact = [i for i in visible if i.data(0, TYPE_ROLE).lower() == query]
        return (exact or starts or visible or [None])[0]  # type: ignore[list-item]

    def _type_items(self) -> list[QTreeWidgetItem]:
        items = []
        for g in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(g)
            items += [group.child(i) for i in range(group.childCount())]
        return items  # type: ignore[return-value]

    # ---- adding -------------------------------------------------------------------------
    def add_layer(self, layer_type: str) -> int | None:
        """Add a default ``layer_type`` layer after the selection, wired to it; its index, or None."""
        self._before_edit()
        layer = self.doc.new_layer(layer_type)
        current = self.selection.current if self.selection is not None else None
        index = None
        if current is not None and current < len(self.doc.net.layer):
            index = current + 1
            source = self.doc.layer(current)
            cls = find_layer_class(layer_type)
            if source.top and (cls is None or cls.exact_num_bottom != 0):  # a source reads no bottom
                del layer.bottom[:]
                layer.bottom.append(source.top[0])
                if cls is not None and issubclass(cls, NeuronLayer):  # ReLU on conv1 writes conv1
                    layer.top[:] = [source.top[0]]
        try:
            self._push(AddLayer(layer, index))
        except CommandError as e:
            self.hint.setText(f"⚠ {e}")
            return None
        at = len(self.doc.net.layer) - 1 if index is None else index
        if self.selection is not None:
            self.selection.select(at)
        self.added.emit(at)
        return at

    def _activated(self, item: QTreeWidgetItem, _column: int) -> None:
        layer_type = item.data(0, TYPE_ROLE)
        if layer_type:
            self.add_layer(layer_type)

    def _add_best_match(self) -> None:
        best = self.best_match()
        if best is not None and self.search.text().strip():
            self.add_layer(best.data(0, TYPE_ROLE))
