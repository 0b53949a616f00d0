"""File > New Dataset from Images…, added to the window's File menu by ``install``."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from app.commands import CommandError
from app.dataset.dialog import NewDatasetDialog
from app.dataset.use_with_net import use_with_net


class DatasetActions:
    def __init__(self, window) -> None:
        self.window = window
        self.dialog: NewDatasetDialog | None = None
        self.new_action = QAction("New &Dataset from Images…", window)
        self.new_action.triggered.connect(self.open_dialog)

    def install(self) -> None:
        for action in self.window.menuBar().actions():
            menu = action.menu()
            if action.text().replace("&", "") == "File" and isinstance(menu, QMenu):
                first = menu.actions()[0] if menu.actions() else None
                menu.insertAction(first, self.new_action) if first else menu.addAction(self.new_action)

    def open_dialog(self) -> NewDatasetDialog:
        self.dialog = NewDatasetDialog(self.window, self.use_with_net)
        self.dialog.show()
        return self.dialog

    def use_with_net(self, folder: Path, classes: int) -> str | None:
        """Point the open net at the data set (one undo step); the reason when it cannot."""
        try:
            self.window.push(use_with_net(self.window.doc.net, folder, classes))
        except CommandError as exc:
            return str(exc)
        return None


def install(window) -> DatasetActions:
    actions = DatasetActions(window)
    actions.install()
    return actions
