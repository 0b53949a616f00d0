"""The line a form panel shows when it refuses an edit, hidden again after a while."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QWidget


class RefusalLabel(QLabel):
    def __init__(self, parent: QWidget | None = None, hide_after_ms: int = 8000) -> None:
        super().__init__(parent)
        self.setObjectName("inspectorMessage")
        self.setWordWrap(True)
        self.hide()
        self._timer = QTimer(self, singleShot=True, interval=hide_after_ms)
        self._timer.timeout.connect(self.hide)

    def refuse(self, message: str) -> None:
        self.setText(f"⚠  Not applied: {message}")
        self.show()
        self._timer.start()
