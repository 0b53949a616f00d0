"""The problems list under the canvas: one row per problem; clicking a row selects its layer."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QWidget

from graph_view import style
from graph_view.validation import ERROR, Problem

KEY_ROLE = Qt.ItemDataRole.UserRole


class ProblemList(QListWidget):
    problem_clicked = Signal(str)  # the node or band key

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("problemList")
        self.setFrameShape(QListWidget.Shape.NoFrame)
        self.setUniformItemSizes(True)
        self.setStyleSheet(
            "QListWidget#problemList { background: #fffaf0; border-top: 1px solid #e5d3b3; }"
            "QListWidget#problemList::item { padding: 3px 8px; }"
        )
        self.itemClicked.connect(lambda item: self.problem_clicked.emit(item.data(KEY_ROLE)))
        self.itemActivated.connect(lambda item: self.problem_clicked.emit(item.data(KEY_ROLE)))

    def show_problems(self, problems: list[Problem]) -> None:
        self.clear()
        for p in sorted(problems, key=lambda p: p.severity != ERROR):
            mark = "⛔" if p.severity == ERROR else "⚠"
            item = QListWidgetItem(f"{mark}  {p.name}: {p.message}")
            item.setData(KEY_ROLE, p.key)
            item.setToolTip(p.message)
            item.setForeground(QColor(style.ERROR if p.severity == ERROR else "#8a5a00"))
            self.addItem(item)
        rows = min(len(problems), 5)
        self.setFixedHeight(rows * 24 + 6 if rows else 0)
        self.setVisible(bool(problems))
