"""Caffe's log lines as the solver writes them, one block per run, errors in red."""

from __future__ import annotations

from PySide6.QtGui import QBrush, QColor, QFontDatabase, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QWidget

MAX_LINES = 20000


class Console(QPlainTextEdit):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(MAX_LINES)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(8.0, font.pointSizeF() - 1))
        self.setFont(font)
        self.setPlaceholderText("Press Train (F5): the solver's log appears here.")

    def append_lines(self, lines: list[str], color: str | None = None) -> None:
        """Add lines at the end; keep following the end only if the user was already there."""
        if not lines:
            return
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        fmt = QTextCharFormat()
        if color:
            fmt.setForeground(QBrush(QColor(color)))
        if not self.document().isEmpty():
            cursor.insertBlock()
        cursor.insertText("\n".join(lines), fmt)  # one edit for the whole batch
        if at_end:
            bar.setValue(bar.maximum())

    def text(self) -> str:
        return self.toPlainText()
