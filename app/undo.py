"""The Qt side of the commands: one QUndoStack for every view, driving Qt-free ``app.commands``.

A view that must not import app/ (graph_view) is handed the document and ``stack.push_command``.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QUndoCommand, QUndoStack

from app.commands import Command
from app.document import Document, Kind


class UndoCommand(QUndoCommand):
    """A QUndoCommand around one document command; Qt calls ``redo`` once when it is pushed."""

    def __init__(self, doc: Document, command: Command) -> None:
        super().__init__(command.text)
        self.doc, self.command = doc, command

    def redo(self) -> None:
        self.command.do(self.doc)

    def undo(self) -> None:
        self.command.undo(self.doc)


class UndoStack(QUndoStack):
    def __init__(self, doc: Document, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        doc.changed.connect(self._on_change)

    def push_command(self, command: Command) -> None:
        """Validate, then push (which does it). Raises CommandError, changing nothing, if invalid."""
        command.validate(self.doc)
        self.push(UndoCommand(self.doc, command))

    def _on_change(self, change) -> None:
        if change.kind in (Kind.NET_LOADED, Kind.SOLVER_LOADED):
            self.clear()  # commands address layers of the old net
