"""One selection across the canvas, the inspector and the prototxt text.

A layer selected anywhere tints its block in the text and scrolls it into view (the caret stays
where the user left it); the caret moved into a layer's block (by a click, the arrow keys, or Find)
selects that layer, so its box and its fields follow. The text's blocks are only trusted while the
text is the document's own: while typed text waits to be applied, the caret selects nothing.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QTextEdit

from app.find_bar import qt_positions
from app.layer_spans import layer_spans, span_at

_TAG = QTextCharFormat.Property.UserProperty + 11  # marks our tint among the editor's selections
_LIGHT, _DARK = QColor(245, 158, 11, 38), QColor(245, 158, 11, 56)


class TextSelection(QObject):
    def __init__(self, editor, selection, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.editor, self.selection, self.edit = editor, selection, editor.edit
        self._spans: tuple[str, list[tuple[int, int]]] = ("", [])
        self._from_caret = False
        selection.changed.connect(self._selection_changed)
        self.edit.cursorPositionChanged.connect(self._caret_moved)
        self.edit.textChanged.connect(self._retint)

    def spans(self) -> list[tuple[int, int]]:
        """Each document layer's block, as Qt positions; [] when the text is not the document's."""
        text = self.editor.text
        if self._spans[0] != text:
            found = layer_spans(text) if not self.editor.has_pending_text() else []
            if len(found) != len(self.editor.doc.net.layer):
                found = []  # the text and the net disagree: better no mark than a wrong one
            at = qt_positions(text)
            self._spans = (text, [(at(a), at(b)) for a, b in found])
        return self._spans[1]

    # ---- caret -> selection ------------------------------------------------------------------
    def _caret_moved(self) -> None:
        self._retint()
        if self.editor._rendering:  # the document rewrote the text: not the user's caret
            return
        index = span_at(self.spans(), self.edit.textCursor().position())
        if index is not None and index != self.selection.current:
            self._from_caret = True
            try:
                self.selection.select(index)
            finally:
                self._from_caret = False

    # ---- selection -> text ---------------------------------------------------------------------
    def _selection_changed(self, indices) -> None:
        self._retint()
        current = self.selection.current
        spans = self.spans()
        if self._from_caret or current is None or current >= len(spans):
            return
        self.reveal(spans[current][0])

    def reveal(self, position: int) -> None:
        """Scroll so the line at ``position`` shows, a few lines from the top; the caret stays put."""
        block = self.edit.document().findBlock(position)
        first = self.edit.firstVisibleBlock().blockNumber()
        rows = max(self.edit.viewport().height() // max(self.edit.fontMetrics().height(), 1), 1)
        number = block.blockNumber()
        if not first <= number < first + rows - 2:
            self.edit.verticalScrollBar().setValue(max(number - 2, 0))

    def _retint(self) -> None:
        kept = [s for s in self.edit.extraSelections() if not s.format.property(_TAG)]
        spans = self.spans()
        dark = self.edit.palette().color(self.edit.palette().ColorRole.Base).lightness() < 128
        marks = []
        for index in self.selection.layers:
            if index < len(spans):
                mark = QTextEdit.ExtraSelection()
                mark.format.setBackground(_DARK if dark else _LIGHT)
                mark.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
                mark.format.setProperty(_TAG, True)
                mark.cursor = QTextCursor(self.edit.document())
                mark.cursor.setPosition(spans[index][0])
                mark.cursor.setPosition(spans[index][1], QTextCursor.MoveMode.KeepAnchor)
                marks.append(mark)
        self.edit.setExtraSelections(kept + marks)
