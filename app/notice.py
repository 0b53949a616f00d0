"""The status bar's lasting notice: what opening a file had to say, on one line however long.

Each notice is a line of its own ("Upgraded from a legacy Caffe format ...", "Solver: ..."); the bar
shows them joined and cut to its width with an ellipsis, the tooltip shows them whole. It never
asks for more width than it gets, so a long notice cannot widen the window or grow the bar.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

STYLE = "QLabel#notice { background: #fff4ce; color: #3d3100; border: 1px solid #e8d48a; padding: 2px 8px; }"
SEPARATOR = "  ·  "


class NoticeLabel(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.setStyleSheet(STYLE)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.full = ""
        self.hide()

    def show_notice(self, text: str) -> None:
        """``text``: one notice per line; empty hides the label."""
        self.full = text
        self.setToolTip(text)
        self.setVisible(bool(text))
        self._elide()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        line = SEPARATOR.join(part for part in self.full.splitlines() if part.strip())
        room = max(self.contentsRect().width() - 16, 20)  # the padding of the style sheet
        super().setText(self.fontMetrics().elidedText(line, Qt.TextElideMode.ElideRight, room))
