"""The canvas: zoom (wheel, at the cursor), pan (middle drag, Space + drag, trackpad), fit,
rubber-band selection, dropping a layer type from the palette, and renaming a box or a blob (its
wire label) in place: Enter (or clicking away) applies, Escape cancels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QWheelEvent,
)
from PySide6.QtWidgets import QGraphicsView, QLineEdit, QWidget

from graph_view.items import SIMPLE_ZOOM
from graph_view.scene import GraphScene

MIME_LAYER_TYPE = "application/x-barista-layer-type"
MIN_ZOOM, MAX_ZOOM, FIT_MAX = 0.03, 4.0, 1.1
READABLE = 0.75  # the first view never goes below this: every box's text reads (12 px names: 9 px)
FIRST_MAX = 1.0  # nor above it (a three-layer net is not blown up)
FIRST_MARGIN = 12  # scene px around a net the first view shows whole (Fit keeps 30)
DETAIL_ZOOM = SIMPLE_ZOOM  # below this, boxes draw as blocks with their names (semantic zoom)


class GraphView(QGraphicsView):
    layer_dropped = Signal(str, QPointF)  # layer type, scene position
    rename_finished = Signal(str, str)  # node key, new name
    blob_rename_finished = Signal(str, str)  # old blob name, new name (as typed: may be empty)
    viewport_changed = Signal()
    drop_refused = Signal(str)  # why a layer dropped here is not added

    def __init__(self, scene: GraphScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        self.setRubberBandSelectionMode(Qt.ItemSelectionMode.IntersectsItemShape)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing)
        self.setFrameShape(QGraphicsView.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the minimap navigates
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAcceptDrops(True)
        self._pan_from: QPointF | None = None
        self._space = False
        self._rename: QLineEdit | None = None
        self._rename_done: Callable[[str], None] = lambda name: None
        self._keys: list[tuple[QKeySequence, Callable[[], object]]] = []
        self.minimap_width: Callable[[], float] = lambda: 0.0  # the minimap replaces this
        scene.rename_requested.connect(self.begin_rename)
        scene.blob_rename_requested.connect(self.begin_blob_rename)
        self.horizontalScrollBar().valueChanged.connect(self.viewport_changed)
        self.verticalScrollBar().valueChanged.connect(self.viewport_changed)

    @property
    def graph_scene(self) -> GraphScene:
        return self.scene()  # type: ignore[return-value]

    # ---- zoom and pan ---------------------------------------------------------------------
    def zoom(self) -> float:
        return self.transform().m11()

    def zoom_by(self, factor: float) -> None:
        factor = max(MIN_ZOOM / self.zoom(), min(MAX_ZOOM / self.zoom(), factor))
        self.scale(factor, factor)
        self._zoomed()

    def actual_size(self) -> None:
        """Zoom 1:1 about the view's centre."""
        centre = self.visible_scene_rect().center()
        self.zoom_by(1.0 / self.zoom())
        self.centerOn(centre)
        self.viewport_changed.emit()

    def _zoomed(self) -> None:
        self.graph_scene.set_detail(self.zoom() >= DETAIL_ZOOM)
        self.viewport_changed.emit()

    def fit(self, margin: float = 30) -> None:
        """The whole net in view, never magnified past ~1:1 (a three-layer net stays readable)."""
        rect = self.graph_scene.itemsBoundingRect().adjusted(-margin, -margin, margin, margin)
        if rect.isEmpty():
            return
        self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        if self.zoom() > FIT_MAX:
            self.zoom_by(FIT_MAX / self.zoom())
        self.centerOn(rect.center())
        self._zoomed()

    def fit_readable(self) -> None:
        """The first view of a net: all of it when that reads; else its width at a zoom one can read
        (never below READABLE), scrolled to where the data enters. The picture keeps clear of the
        minimap's strip at the right edge; the minimap shows the rest."""
        rect = self.graph_scene.itemsBoundingRect().adjusted(-30, -30, 30, 30)
        if rect.isEmpty():
            return
        viewport = self.viewport().rect()
        tight = rect.adjusted(30 - FIRST_MARGIN, 30 - FIRST_MARGIN, FIRST_MARGIN - 30, FIRST_MARGIN - 30)
        for margin, shown in ((30, rect), (FIRST_MARGIN, tight)):  # Fit's margin, else a narrower one
            inner = viewport.adjusted(2, 2, -2, -2)  # fitInView keeps 2 px clear
            if min(inner.width() / shown.width(), inner.height() / shown.height()) >= READABLE:
                self.fit(margin)  # all of it reads: all of it
                return
        room = max(viewport.width() - self.minimap_width(), viewport.width() * 0.5)
        zoom = max(READABLE, min(FIRST_MAX, room / rect.width(), viewport.height() / rect.height()))
        self.zoom_by(zoom / self.zoom())
        half = viewport.height() / 2 / zoom
        y = rect.top() + half if self.graph_scene.downward else rect.bottom() - half
        if rect.width() * zoom <= room:
            x = rect.center().x()
        else:  # the boxes of the first screenful centred, as far as the data layer stays in view
            shown = QRectF(rect.left(), y - half, rect.width(), 2 * half)
            first = self.graph_scene.boxes_within(shown)
            entry = self.graph_scene.entry_rect()
            x = first.center().x() if not first.isNull() else rect.center().x()
            if entry is not None:
                reach = room / 2 / zoom - 12  # half the room, less a margin
                x = min(max(x, entry.right() - reach), entry.left() + reach)
        x += (viewport.width() - room) / 2 / zoom  # the centre of the room left of the minimap
        self.centerOn(QPointF(x, y))
        self.viewport_changed.emit()

    def visible_scene_rect(self) -> QRectF:
        return self.mapToScene(self.viewport().rect()).boundingRect()

    def wheelEvent(self, event: QWheelEvent) -> None:
        trackpad = (
            not event.pixelDelta().isNull() and not event.modifiers() & Qt.KeyboardModifier.ControlModifier
        )
        if trackpad:
            super().wheelEvent(event)  # two-finger scrolling pans
            return
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_by(1.15**steps)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.MiddleButton or (
            self._space and event.button() == Qt.MouseButton.LeftButton
        ):
            self._pan_from = event.position()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._pan_from is not None:
            delta = event.position() - self._pan_from
            self._pan_from = event.position()
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - int(delta.x()))
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - int(delta.y()))
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._pan_from is not None:
            self._pan_from = None
            self.viewport().unsetCursor()
            return
        super().mouseReleaseEvent(event)

    # ---- keys ---------------------------------------------------------------------------------
    def bind(
        self, keys: Sequence[QKeySequence | QKeySequence.StandardKey | str], action: Callable[[], object]
    ) -> None:
        """Run ``action`` on these keys while the canvas has the focus (before any window shortcut)."""
        for key in keys:
            for sequence in (
                QKeySequence.keyBindings(key)
                if isinstance(key, QKeySequence.StandardKey)
                else [QKeySequence(key)]
            ):
                self._keys.append((sequence, action))

    def _bound(self, event: QKeyEvent) -> Callable[[], object] | None:
        pressed = QKeySequence(event.keyCombination())
        return next((action for sequence, action in self._keys if sequence == pressed), None)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and self._bound(event) is not None:  # type: ignore[arg-type]
            event.accept()  # ours: Delete, Ctrl+C... act on the canvas, not on the window's menus
            return True
        return super().event(event)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:  # the application's theme changed
            self.graph_scene.follow_palette()
        super().changeEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        action = self._bound(event)
        if action is not None:
            action()
            event.accept()
            return
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = True
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = False
            self.viewport().unsetCursor()
            return
        super().keyReleaseEvent(event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.viewport_changed.emit()

    # ---- dropping a layer type --------------------------------------------------------------
    def _takes(self, event: QDragEnterEvent | QDragMoveEvent | QDropEvent) -> bool:
        """A layer type, over a canvas that edits (the Splits view takes it only to say why not)."""
        return event.mimeData().hasFormat(MIME_LAYER_TYPE) and self.graph_scene.editing

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if self._takes(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if self._takes(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        data = event.mimeData()
        if not self._takes(event):
            event.ignore()
            return
        if not self.graph_scene.editable:
            event.ignore()
            self.drop_refused.emit(
                "The Splits view shows the net as Caffe runs it and is read-only: "
                "switch Splits off to add a layer"
            )
            return
        layer_type = bytes(data.data(MIME_LAYER_TYPE).data()).decode("utf-8").strip()
        event.acceptProposedAction()
        if layer_type:
            self.layer_dropped.emit(layer_type, self.mapToScene(event.position().toPoint()))

    # ---- renaming in place ------------------------------------------------------------------
    def begin_rename(self, key: str) -> None:
        node = self.graph_scene.nodes.get(key)
        if node is None or not self.graph_scene.editable:
            return
        rect = self.mapFromScene(node.mapRectToScene(node.header_rect())).boundingRect()

        def done(name: str) -> None:
            if name:
                self.rename_finished.emit(key, name)

        self._open_editor("renameEdit", node.node.layer.name, rect.adjusted(2, 1, -2, -1), done)

    def begin_blob_rename(self, key: str, slot: int) -> None:
        """An editor over the wire label of top ``slot`` of box ``key``; it reports even an empty
        name (the controller says why that is refused)."""
        label = self.graph_scene.label_of(key, slot)
        if label is None or not self.graph_scene.editable:
            return
        rect = self.mapFromScene(label.mapRectToScene(label.boundingRect())).boundingRect()
        rect.setWidth(max(rect.width() + 16, 140))
        rect.setHeight(max(rect.height(), self.fontMetrics().height() + 8))
        old = label.name

        def done(name: str) -> None:
            if name != old:
                self.blob_rename_finished.emit(old, name)

        self._open_editor("blobRenameEdit", old, rect, done)

    def _open_editor(self, name: str, text: str, rect, done: Callable[[str], None]) -> None:
        self.cancel_rename()
        edit = QLineEdit(text, self.viewport())
        edit.setObjectName(name)
        edit.setGeometry(rect)
        edit.selectAll()
        edit.installEventFilter(self)
        edit.returnPressed.connect(self._finish_rename)
        edit.show()
        edit.setFocus()
        self._rename, self._rename_done = edit, done

    def _finish_rename(self) -> None:
        if self._rename is None:
            return
        name, done = self._rename.text().strip(), self._rename_done
        self.cancel_rename()
        done(name)

    def cancel_rename(self) -> None:
        if self._rename is not None:
            edit, self._rename = self._rename, None
            edit.removeEventFilter(self)
            edit.hide()
            edit.setParent(None)  # gone from the canvas now, deleted when Qt is done with it
            edit.deleteLater()
            self.setFocus()

    def eventFilter(self, watched, event) -> bool:
        if watched is self._rename:
            if event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_Escape:
                self.cancel_rename()
                return True
            if event.type() == QEvent.Type.FocusOut:
                self._finish_rename()
        return super().eventFilter(watched, event)
