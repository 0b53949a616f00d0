"""Find and replace for a QPlainTextEdit: a slim bar above the text (Ctrl+F, Ctrl+H).

Every match is tinted and the current one selected; Enter finds the next, Shift+Enter the
previous, Escape closes and gives the text its focus back. Replacing edits the text as typing
would: the prototxt editor then parses it and applies it as one undoable step, and Replace all
is one edit of the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QToolButton,
    QWidget,
)

_MATCH = QColor(255, 200, 0, 90)


class _Field(QLineEdit):
    escape = Signal()
    previous = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.escape.emit()
            return
        if (
            event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        ):
            self.previous.emit()
            return
        super().keyPressEvent(event)


class FindBar(QFrame):
    """``searched(pattern)``: the pattern searched for (None once cleared or closed), so the canvas
    can mark the layers whose names or types match; ``also_found(pattern)`` adds its count."""

    searched = Signal(object)

    def __init__(self, edit: QPlainTextEdit, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.also_found: Callable[[re.Pattern[str]], str] | None = None
        self.setObjectName("findBar")
        self.edit = edit
        self.find_field = _Field(self)
        self.find_field.setPlaceholderText("Find")
        self.find_field.setClearButtonEnabled(True)
        self.replace_field = _Field(self)
        self.replace_field.setPlaceholderText("Replace with")
        self.count = QLabel(self)
        self.count.setObjectName("findCount")
        self.count.hide()  # until there is a count to show (_say)
        self.case = QCheckBox("Aa", self)
        self.case.setToolTip("Match case")
        self.words = QCheckBox("Word", self)
        self.words.setToolTip("Whole words only")
        previous, following = (
            self._tool("↑", "Previous match (Shift+Enter)"),
            self._tool("↓", "Next match (Enter)"),
        )
        close = self._tool("×", "Close (Esc)")
        self.replace_button = QPushButton("Replace", self)
        self.replace_all_button = QPushButton("All", self)
        self.replace_all_button.setToolTip("Replace every match")

        grid = QGridLayout(self)
        grid.setContentsMargins(8, 5, 6, 5)
        grid.setHorizontalSpacing(4)
        grid.setVerticalSpacing(4)
        # The count ("2 of 6 · 1 box") has a line of its own under the field: beside it, the right
        # column's width (320 px at 1280x800) cut it to "2 of 6 · 1 b".
        grid.addWidget(self.find_field, 0, 0)
        grid.addWidget(previous, 0, 1)
        grid.addWidget(following, 0, 2)
        grid.addWidget(self.case, 0, 3)
        grid.addWidget(self.words, 0, 4)
        grid.addWidget(close, 0, 5)
        grid.addWidget(self.count, 1, 0, 1, 6)
        grid.addWidget(self.replace_field, 2, 0)
        grid.addWidget(self.replace_button, 2, 1, 1, 2)
        grid.addWidget(self.replace_all_button, 2, 3, 1, 2)
        grid.setColumnStretch(0, 1)

        self.find_field.textChanged.connect(lambda _text: self._search(from_start=True))
        self.find_field.returnPressed.connect(self.find_next)
        self.find_field.previous.connect(self.find_previous)
        self.replace_field.returnPressed.connect(self.replace)
        for field in (self.find_field, self.replace_field):
            field.escape.connect(self.close_bar)
        self.case.toggled.connect(lambda _on: self._search(from_start=True))
        self.words.toggled.connect(lambda _on: self._search(from_start=True))
        previous.clicked.connect(self.find_previous)
        following.clicked.connect(self.find_next)
        close.clicked.connect(self.close_bar)
        self.replace_button.clicked.connect(self.replace)
        self.replace_all_button.clicked.connect(self.replace_all)
        self._cache: tuple[tuple | None, list[tuple[int, int]]] = (None, [])
        self.edit.textChanged.connect(self._highlight_all)
        # The editor resets its extra selections (current line, error mark) as the cursor moves.
        self.edit.cursorPositionChanged.connect(self._highlight_all)
        self.hide()

    def _tool(self, text: str, tip: str) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        return button

    # ---- opening and closing ----------------------------------------------------------------
    def open_find(self, replace: bool = False) -> None:
        selected = self.edit.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.find_field.setText(selected)
        for widget in (self.replace_field, self.replace_button, self.replace_all_button):
            widget.setVisible(replace)
        self.show()
        field = self.replace_field if replace and self.find_field.text() else self.find_field
        field.setFocus()
        field.selectAll()
        self._highlight_all()

    def close_bar(self) -> None:
        self.hide()
        self.searched.emit(None)
        self.edit.setExtraSelections([s for s in self.edit.extraSelections() if not s.format.property(_TAG)])
        self.edit.setFocus()

    # ---- searching --------------------------------------------------------------------------
    def pattern(self) -> re.Pattern[str] | None:
        text = self.find_field.text()
        if not text:
            return None
        body = re.escape(text)
        if self.words.isChecked():
            body = rf"\b{body}\b"
        return re.compile(body, 0 if self.case.isChecked() else re.IGNORECASE)

    def matches(self) -> list[tuple[int, int]]:
        """(start, end) of every match, as Qt text positions (UTF-16 code units)."""
        pattern = self.pattern()
        if pattern is None:
            return []
        key = (self.edit.document().revision(), pattern.pattern, pattern.flags)
        if key != self._cache[0]:
            text = self.edit.toPlainText()
            position = qt_positions(text)
            spans = [
                (position(m.start()), position(m.end()))
                for m in pattern.finditer(text)
                if m.end() > m.start()
            ]
            self._cache = (key, spans)
        return list(self._cache[1])

    def find_next(self) -> bool:
        return self._step(forward=True)

    def find_previous(self) -> bool:
        return self._step(forward=False)

    def _step(self, forward: bool) -> bool:
        found = self.matches()
        if not found:
            self._show_count(found)
            return False
        cursor = self.edit.textCursor()
        if forward:
            after = cursor.selectionEnd() if cursor.hasSelection() else cursor.position()
            target = next((m for m in found if m[0] >= after), found[0])
        else:
            before = cursor.selectionStart()
            target = next((m for m in reversed(found) if m[1] <= before), found[-1])
        self._select(target)
        self._show_count(found)
        return True

    def _search(self, from_start: bool) -> None:
        found = self.matches()
        if found:
            position = self.edit.textCursor().selectionStart() if from_start else 0
            self._select(next((m for m in found if m[0] >= position), found[0]))
        self._show_count(found)
        self._highlight_all()
        self.searched.emit(self.pattern())

    def _select(self, span: tuple[int, int]) -> None:
        cursor = self.edit.textCursor()
        cursor.setPosition(span[0])
        cursor.setPosition(span[1], QTextCursor.MoveMode.KeepAnchor)
        self.edit.setTextCursor(cursor)
        self.edit.centerCursor()

    def _show_count(self, found: list[tuple[int, int]]) -> None:
        missing = bool(self.find_field.text()) and not found
        if self.find_field.property("notFound") != missing:
            self.find_field.setProperty("notFound", missing)
            self.find_field.style().unpolish(self.find_field)
            self.find_field.style().polish(self.find_field)
        if not self.find_field.text():
            self._say("")
            return
        cursor = self.edit.textCursor()
        current = next((i for i, m in enumerate(found) if m[0] == cursor.selectionStart()), None)
        text = (
            f"{current + 1} of {len(found)}"
            if current is not None
            else f"{len(found)} found"
            if found
            else "no match"
        )
        pattern = self.pattern()
        if self.also_found is not None and pattern is not None:
            text += self.also_found(pattern)
        self._say(text)

    def _say(self, text: str) -> None:
        """The count's line, shown only when it has something to say."""
        self.count.setText(text)
        self.count.setVisible(bool(text))

    def _highlight_all(self) -> None:
        kept = [s for s in self.edit.extraSelections() if not s.format.property(_TAG)]
        if not self.isVisible():
            self.edit.setExtraSelections(kept)
            return
        marks = []
        for start, end in self.matches()[:2000]:
            mark = QTextEdit.ExtraSelection()
            mark.format.setBackground(_MATCH)
            mark.format.setProperty(_TAG, True)
            mark.cursor = QTextCursor(self.edit.document())
            mark.cursor.setPosition(start)
            mark.cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            marks.append(mark)
        self.edit.setExtraSelections(kept + marks)

    # ---- replacing --------------------------------------------------------------------------
    def replace(self) -> bool:
        """Replace the selected match and move to the next one; False when nothing matched."""
        pattern = self.pattern()
        cursor = self.edit.textCursor()
        if pattern is None:
            return False
        if not (cursor.hasSelection() and pattern.fullmatch(cursor.selectedText())):
            return self.find_next() and False
        cursor.insertText(self.replace_field.text())
        self.edit.setTextCursor(cursor)
        self.find_next()
        return True

    def replace_all(self) -> int:
        """Replace every match in one edit of the text; how many were replaced."""
        found = self.matches()
        if not found:
            self._show_count(found)
            return 0
        cursor = QTextCursor(self.edit.document())
        cursor.beginEditBlock()
        for start, end in reversed(found):  # from the end, so earlier positions stay valid
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(self.replace_field.text())
        cursor.endEditBlock()
        self._say(f"replaced {len(found)}")
        return len(found)


_TAG = QTextCharFormat.Property.UserProperty + 7  # marks our highlights among the editor's selections


def qt_positions(text: str):
    """Python string index -> Qt text position (UTF-16 units): the same unless the text has astral
    characters (the find bar and the selection tint share it)."""
    if all(ord(c) < 0x10000 for c in text):
        return lambda index: index
    offsets, total = [], 0
    for c in text:
        offsets.append(total)
        total += 2 if ord(c) >= 0x10000 else 1
    offsets.append(total)
    return offsets.__getitem__
