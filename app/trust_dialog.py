"""File > Trusted Folders…: the folders whose Python layers may run, each one to be taken back."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.trust import TrustedFolders


class TrustedFoldersDialog(QDialog):
    def __init__(self, folders: TrustedFolders, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Trusted Folders")
        self.folders = folders
        layout = QVBoxLayout(self)
        layout.addWidget(
            QLabel(
                "Nets kept in these folders run their Python layers' code (shapes, fillers, training).\n"
                "Remove a folder to stop that: its Python layers are then not run until you trust it again."
            )
        )
        self.list = QListWidget(self)
        layout.addWidget(self.list)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.remove_button = QPushButton("Remove", self)
        buttons.addButton(self.remove_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.remove_button.clicked.connect(self._remove)
        self.list.currentRowChanged.connect(self._update)
        folders.changed.connect(self._fill)
        self._fill()
        self.resize(640, 300)

    def _fill(self) -> None:
        self.list.clear()
        self.list.addItems(self.folders.folders())
        if self.list.count():
            self.list.setCurrentRow(0)
        self._update()

    def _update(self, *_args) -> None:
        self.remove_button.setEnabled(self.list.currentItem() is not None)

    def _remove(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.folders.remove(item.text())
