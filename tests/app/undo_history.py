"""A Qt-free undo history for the tests of app/: ``app.undo``'s QUndoStack without Qt."""

from __future__ import annotations

from app.commands import Command
from app.document import Document, Kind


class History:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self._done: list[Command] = []
        self._undone: list[Command] = []
        doc.changed.connect(self._on_change)

    def push(self, command: Command) -> None:
        """Validate (CommandError leaves everything as it was), then do; clears the redo list."""
        command.validate(self.doc)
        command.do(self.doc)
        self._done.append(command)
        self._undone.clear()

    def undo(self) -> None:
        if self._done:
            command = self._done.pop()
            command.undo(self.doc)
            self._undone.append(command)

    def redo(self) -> None:
        if self._undone:
            command = self._undone.pop()
            command.do(self.doc)
            self._done.append(command)

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    def clear(self) -> None:
        self._done.clear()
        self._undone.clear()

    def _on_change(self, change) -> None:
        if change.kind in (Kind.NET_LOADED, Kind.SOLVER_LOADED):
            self.clear()  # commands address layers of the old net
