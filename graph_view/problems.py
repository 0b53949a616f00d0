"""The problems list under the canvas: one row per problem; clicking a row selects its layer.

Its colours follow the application palette (a light or a dark theme), as the canvas does.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
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
        self.setUniformItemSizes(True)
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
            "QListWidget#problemList::item { padding: 3px 8px; }"
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
        rows = min(len(problems), 5)
        self.setFixedHeight(rows * 24 + 6 if rows else 0)
        self.setVisible(bool(problems))
