"""The net as prototxt text, live both ways.

Document -> text: every net change re-renders the text, replacing only the part that differs so
the cursor and the scroll position stay where they were. Text -> document: typing restarts a short
timer; when it fires and the text parses, one ``ReplaceNet`` command carries it (comments and all)
into the document. Text that does not parse stays as typed, its error line is marked and named
below, and the document keeps the last good net. The editor never drops what the user typed
because the net changed elsewhere: it says so, and offers to revert.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QPalette, QTextCursor
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.code_edit import CodeEdit
from app.commands import Command, ReplaceNet
from app.document import NET_KINDS, Change, Document, Kind
from app.prototxt_highlighter import PrototxtHighlighter
from proto.errors import FormatError

DEBOUNCE_MS = 400
_KEPT = "The net keeps its last valid form."


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def replace_changed_span(cursor: QTextCursor, old: str, new: str) -> None:
    """Turn ``old`` into ``new`` by rewriting only the span between their common prefix and suffix."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    cursor.setPosition(_utf16_len(old[:prefix]))
    cursor.setPosition(_utf16_len(old[: len(old) - suffix]), QTextCursor.MoveMode.KeepAnchor)
    cursor.insertText(new[prefix : len(new) - suffix])


class PrototxtEditor(QWidget):
    """``error_changed(str)``: the parse error shown ('' once the text parses again)."""

    error_changed = Signal(str)

    def __init__(
        self,
        doc: Document,
        push: Callable[[Command], None],
        parent: QWidget | None = None,
        delay_ms: int = DEBOUNCE_MS,
    ) -> None:
        super().__init__(parent)
        self.doc, self._push = doc, push
        self._error: FormatError | None = None
        self._rendering = False
        self._status_error = False

        self.edit = CodeEdit(self)
        self.edit.setUndoRedoEnabled(False)  # one history for every view: the window's undo stack
        self.highlighter = PrototxtHighlighter(self.edit.document())
        self.status = QLabel(self)
        self.status.setObjectName("editorStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.revert_button = QPushButton("Revert to document", self)
        self.revert_button.setToolTip("Throw away the text that does not parse and show the document's net")
        self.revert_button.clicked.connect(self.revert)

        footer = self.footer = QFrame(self)
        footer.setObjectName("editorFooter")
        self._follow_palette()
        bar = QHBoxLayout(footer)
        bar.setContentsMargins(10, 6, 8, 6)
        bar.addWidget(self.status, 1)
        bar.addWidget(self.revert_button, 0, Qt.AlignmentFlag.AlignVCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.edit, 1)
        layout.addWidget(footer)

        self._timer = QTimer(self, singleShot=True, interval=delay_ms)
        self._timer.timeout.connect(self.commit)
        self.edit.textChanged.connect(self._on_text_changed)
        doc.changed.connect(self._on_document_changed)
        self._render(self.doc.net_text())
        self._show_error(None)

    # ---- state ----------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return self.edit.toPlainText()

    @property
    def error(self) -> FormatError | None:
        """The parse error of the text as it stands, or None."""
        return self._error

    def has_pending_text(self) -> bool:
        """True when the text holds edits the document does not have (waiting, or not parsing)."""
        return self.text != self.doc.net_text()

    # ---- text -> document -----------------------------------------------------------------
    def commit(self) -> bool:
        """Parse the text now; if it parses and differs, push it. True when the document has it."""
        self._timer.stop()
        text = self.text
        if text == self.doc.net_text():
            self._show_error(None)
            return True
        try:
            command = ReplaceNet.from_text(text, self.doc.net_path or "<editor>")
        except FormatError as e:
            self._show_error(e)
            return False
        self._show_error(None)
        self._push(command)
        return True

    def revert(self) -> None:
        """Drop the typed text and show the document's net."""
        self._timer.stop()
        self._show_error(None)
        self._render(self.doc.net_text())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "footer"):
            self._follow_palette()
            self._colour_status(self._status_error)

    def _is_dark(self) -> bool:
        return self.palette().color(QPalette.ColorRole.Base).lightness() < 128

    def _follow_palette(self) -> None:
        """Footer and syntax colours for the palette in use (the View menu's light or dark theme)."""
        dark = self._is_dark()
        back, line = ("#1d1f24", "#33363d") if dark else ("#f9fafb", "#e5e7eb")
        self.footer.setStyleSheet(f"#editorFooter {{ background: {back}; border-top: 1px solid {line}; }}")
        self.highlighter.set_dark(dark)

    def _colour_status(self, error: bool) -> None:
        self._status_error = error
        colours = ("#8a929c", "#ff8a80") if self._is_dark() else ("#6b7280", "#b42318")
        self.status.setStyleSheet(f"color: {colours[error]};")

    def _on_text_changed(self) -> None:
        if not self._rendering:
            self._timer.start()

    # ---- document -> text -----------------------------------------------------------------
    def _on_document_changed(self, change: Change) -> None:
        if change.kind not in NET_KINDS:
            return
        if change.kind == Kind.NET_LOADED:
            self._timer.stop()
            self._show_error(None)
            self._render(self.doc.net_text(), reset=True)  # a new file: start at its top
        elif self._error is not None or self._timer.isActive():
            self._show_error(self._error, stale=True)  # keep what the user typed
        else:
            self._render(self.doc.net_text())

    def _render(self, text: str, reset: bool = False) -> None:
        old = self.text
        if old == text and not reset:
            return
        self._rendering = True
        try:
            if reset or not old:
                self.edit.setPlainText(text)
            else:
                replace_changed_span(QTextCursor(self.edit.document()), old, text)
        finally:
            self._rendering = False

    # ---- the status line ------------------------------------------------------------------
    def _show_error(self, error: FormatError | None, stale: bool = False) -> None:
        self._error = error
        self.revert_button.setVisible(error is not None or stale)
        if error is None and not stale:
            self.edit.clear_error()
            self.status.setText("Prototxt · changes apply as you type")
            self._colour_status(False)
        else:
            message = "Text not applied yet"
            if error is not None:
                self.edit.set_error(error.line, error.column)
                where = f"Line {error.line}, column {error.column}: " if error.line else ""
                message = f"{where}{error.message}"
            note = "The net changed elsewhere; your text is kept." if stale else _KEPT
            self.status.setText(f"⚠ {message}\n{note}")
            self._colour_status(True)
        self.error_changed.emit(error.message if error else "")
