"""The problems list under the canvas: one row per problem; clicking a row selects its layer.

Its colours follow the application palette (a light or a dark theme), as the canvas does.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QWidget

from graph_view import canvas_colours, style
from graph_view.graph import Graph
from graph_view.validation import ERROR, Problem
from proto import caffe10

# (background, border, error text, warning text) on a light and on a dark canvas
_LIGHT = ("#fffaf0", "#e5d3b3", style.ERROR, "#8a5a00")
_DARK = ("#2b2620", "#4a3f2e", "#ff8a80", "#f0c36a")

KEY_ROLE = Qt.ItemDataRole.UserRole
NEWER = caffe10.PROBLEM_KIND  # a warning kind of its own: what Caffe 1.0 would refuse


def caffe10_problems(graph: Graph) -> list[Problem]:
    """One ``NEWER`` warning per thing a layer uses that Caffe 1.0 lacks (the net still trains here)."""
    return [
        Problem(NEWER, key, graph.index_of(key), note)
        for key, layer in graph.layers.items()
        for note in caffe10.layer_notes(layer)
    ]


class ProblemList(QListWidget):
    problem_clicked = Signal(str)  # the node or band key

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("problemList")
        self.setFrameShape(QListWidget.Shape.NoFrame)
        self.setViewportMargins(8, 0, 8, 0)
        self.setWordWrap(True)  # a long message wraps: the whole of it reads without scrolling sideways
        self.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.problems: list[Problem] = []
        self._colours = _LIGHT
        self._follow_palette()
        self.itemClicked.connect(lambda item: self.problem_clicked.emit(item.data(KEY_ROLE)))
        self.itemActivated.connect(lambda item: self.problem_clicked.emit(item.data(KEY_ROLE)))

    def _follow_palette(self) -> None:
        # The application's palette decides: this list's own palette carries the sheet set below.
        colours = _DARK if canvas_colours.is_dark() else _LIGHT
        sheet = (
            f"QListWidget#problemList {{ background: {colours[0]}; border-top: 1px solid {colours[1]}; }}"
            "QListWidget#problemList::item { padding: 3px 0px; }"  # the sides: the viewport's margins
        )
        if sheet != self.styleSheet():
            self.setStyleSheet(sheet)
        if colours != self._colours:
            self._colours = colours
            self.show_problems(self.problems)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "_colours"):
            self._follow_palette()

    def show_problems(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        self.clear()
        for p in sorted(problems, key=lambda p: (p.severity != ERROR, p.severity == NEWER)):
            mark = "✖" if p.severity == ERROR else "⚠"  # (⛔ is missing from common fonts)
            item = QListWidgetItem(f"{mark}  {p.name}: {p.message}")
            item.setData(KEY_ROLE, p.key)
            item.setToolTip(caffe10.TOOLTIP if p.severity == NEWER else p.message)
            item.setForeground(QColor(self._colours[2] if p.severity == ERROR else self._colours[3]))
            self.addItem(item)
        self.setVisible(bool(problems))
        self._fit_height()

    def _fit_height(self) -> None:
        """As tall as the first five problems, each wrapped to the list's width."""
        rows = min(self.count(), 5)
        room = QRect(0, 0, max(self.viewport().width() - 4, 100), 10000)
        metrics = self.fontMetrics()
        flags = int(Qt.TextFlag.TextWordWrap)
        height = sum(metrics.boundingRect(room, flags, self.item(i).text()).height() + 8 for i in range(rows))
        self.setFixedHeight(min(height + 6, 200) if rows else 0)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.doItemsLayout()  # the rows wrap again at the new width
            self._fit_height()
