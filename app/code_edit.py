"""A plain-text editor for code: monospace, line numbers, current line, and one marked error line."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

# Light colours, and their dark counterparts for a dark palette (a dark Base role).
_LIGHT = {"gutter_bg": "#f3f4f6", "gutter_fg": "#9aa3ae", "current": "#f5f8fc", "error_line": "#fde8e8"}
_DARK = {"gutter_bg": "#1d1f24", "gutter_fg": "#6b7380", "current": "#23262c", "error_line": "#3d2224"}
_ERROR_MARK = QColor("#d93025")


def _is_shift_undo(event: QKeyEvent) -> bool:
    mods = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    return event.key() == Qt.Key.Key_Z and event.modifiers() == mods


class _Gutter(QWidget):
    def __init__(self, edit: CodeEdit) -> None:
        super().__init__(edit)
        self._edit = edit

    def sizeHint(self) -> QSize:
        return QSize(self._edit.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self._edit.paint_gutter(event)


class CodeEdit(QPlainTextEdit):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(font.pointSizeF(), 10.0))
        self.setFont(font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * 2)
        self.setFrameShape(QPlainTextEdit.Shape.NoFrame)
        self._error: tuple[int, int] | None = None  # (line, column), 1-based
        self._gutter = _Gutter(self)
        self.blockCountChanged.connect(self._update_margins)
        self.updateRequest.connect(self._scroll_gutter)
        self.cursorPositionChanged.connect(self._update_selections)
        self._update_margins()
        self._update_selections()

    def colour(self, name: str) -> QColor:
        """``gutter_bg``, ``gutter_fg``, ``current`` or ``error_line``, for the palette in use."""
        dark = self.palette().color(QPalette.ColorRole.Base).lightness() < 128
        return QColor((_DARK if dark else _LIGHT)[name])

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "_gutter"):
            self._update_selections()
            self._gutter.update()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Enter keeps the line's indent, one step more after an opening brace."""
        plain = not event.modifiers() & ~(
            Qt.KeyboardModifier.KeypadModifier | Qt.KeyboardModifier.ShiftModifier
        )
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and plain:
            cursor = self.textCursor()
            line = cursor.block().text()[: cursor.positionInBlock()]
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            if line.rstrip().endswith("{"):
                indent += "  "
            cursor.insertText("\n" + indent)
            self.setTextCursor(cursor)
            self.ensureCursorVisible()
            return
        super().keyPressEvent(event)

    def event(self, event: QEvent) -> bool:
        # Undo and redo belong to the window's one undo stack, not to this widget: let them through.
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent):
            keys = QKeySequence.StandardKey
            if event.matches(keys.Undo) or event.matches(keys.Redo) or _is_shift_undo(event):
                event.ignore()
                return False
        return super().event(event)

    # ---- the error mark ---------------------------------------------------------------
    @property
    def error_line(self) -> int | None:
        return self._error[0] if self._error else None

    def set_error(self, line: int | None, column: int | None = None) -> None:
        """Mark ``line`` (1-based): a tinted line, a wavy underline at ``column``."""
        self._error = (line, column or 1) if line else None
        self._update_selections()
        self._gutter.update()

    def clear_error(self) -> None:
        self.set_error(None)

    def _update_selections(self) -> None:
        current = QTextEdit.ExtraSelection()
        current.format.setBackground(self.colour("current"))
        current.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        current.cursor = self.textCursor()
        current.cursor.clearSelection()
        selections = [current]
        block = self.document().findBlockByNumber(self._error[0] - 1) if self._error else None
        if block is not None and block.isValid():
            line = QTextEdit.ExtraSelection()
            line.format.setBackground(self.colour("error_line"))
            line.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            line.cursor = QTextCursor(block)
            selections.append(line)
            mark = QTextEdit.ExtraSelection()
            mark.format.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            mark.format.setUnderlineColor(_ERROR_MARK)
            mark.cursor = self._error_span(block, self._error[1] - 1)  # type: ignore[index]
            selections.append(mark)
        self.setExtraSelections(selections)

    @staticmethod
    def _error_span(block, column: int) -> QTextCursor:
        """The word at ``column``, else the character there (or the line's last one)."""
        keep = QTextCursor.MoveMode.KeepAnchor
        length = len(block.text())
        column = max(0, min(column, length))
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + column)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfWord, keep)
        if not cursor.hasSelection() or cursor.position() > block.position() + length:
            start = column if column < length else max(column - 1, 0)
            cursor.setPosition(block.position() + start)
            cursor.setPosition(block.position() + min(start + 1, length), keep)
        return cursor

    # ---- the gutter ---------------------------------------------------------------------
    def gutter_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return 20 + self.fontMetrics().horizontalAdvance("9") * max(digits, 2)

    def _update_margins(self, _count: int = 0) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        r = self.contentsRect()
        self._gutter.setGeometry(QRect(r.left(), r.top(), self.gutter_width(), r.height()))

    def paint_gutter(self, event: QPaintEvent) -> None:
        painter = QPainter(self._gutter)
        painter.fillRect(event.rect(), self.colour("gutter_bg"))
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        width = self._gutter.width() - 6
        gutter_fg = self.colour("gutter_fg")
        while block.isValid() and top <= event.rect().bottom():
            number = block.blockNumber() + 1
            if block.isVisible():
                if number == self.error_line:
                    painter.setPen(_ERROR_MARK)
                    painter.setBrush(_ERROR_MARK)
                    painter.drawEllipse(3, top + height // 2 - 3, 6, 6)
                painter.setPen(_ERROR_MARK if number == self.error_line else gutter_fg)
                painter.drawText(0, top, width, height, Qt.AlignmentFlag.AlignRight, str(number))
            top += round(self.blockBoundingRect(block).height())
            block = block.next()
        painter.end()
