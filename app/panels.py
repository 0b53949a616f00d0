"""The window's panels as the View menu shows them: one key each (Alt+1...), one key to hide them all.

``Panels(window, docks, settings)`` gives every dock a checkable toggle with its shortcut, and
``canvas_only`` (F12) hides every panel at once and brings back the same ones on the second press.
It also remembers whether the user chose to fold or unfold the training dock (a preference kept in
the settings, when there are any).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QSettings
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow

TRAINING_EXPANDED = "view/trainingExpanded"
CANVAS_ONLY_KEY = "F12"


class Panels(QObject):
    def __init__(self, window: QMainWindow, docks: list[QDockWidget], settings: QSettings | None) -> None:
        super().__init__(window)
        self.window, self.docks, self.settings = window, docks, settings  # the training dock last
        self.toggles: list[QAction] = []
        for number, dock in enumerate(docks, start=1):
            toggle = dock.toggleViewAction()
            toggle.setShortcut(QKeySequence(f"Alt+{number}"))
            toggle.setToolTip(f"Show or hide the {dock.windowTitle()} panel")
            self.toggles.append(toggle)
        self._hidden: list[QDockWidget] = []
        self.canvas_only_action = QAction("Hide &Panels", window)
        self.canvas_only_action.setCheckable(True)
        self.canvas_only_action.setShortcut(QKeySequence(CANVAS_ONLY_KEY))
        self.canvas_only_action.setToolTip(
            "Give the whole window to the canvas; press again to bring the panels back"
        )
        self.canvas_only_action.toggled.connect(self.canvas_only)
        window.addAction(self.canvas_only_action)  # its key works with the menu bar hidden too

    def canvas_only(self, on: bool) -> None:
        """Hide every shown panel (on), or show again the ones that were hidden (off)."""
        if self.canvas_only_action.isChecked() != on:
            self.canvas_only_action.setChecked(on)  # comes back here through toggled
            return
        if on:
            self._hidden = [d for d in self.docks if d.isVisible()]
            for dock in self._hidden:
                dock.hide()
        else:
            for dock in self._hidden:
                dock.show()
            self._hidden = []

    # ---- the training dock's fold, remembered -------------------------------------------------
    def restore_training(self) -> None:
        dock: Any = self.docks[-1]  # the training dock comes last
        value = self.settings.value(TRAINING_EXPANDED) if self.settings is not None else None
        if value is not None:
            chosen = str(value).lower() in ("true", "1")
            dock.user_expanded = chosen
            dock.set_expanded(chosen)

    def save_training(self) -> None:
        dock: Any = self.docks[-1]
        if self.settings is not None and dock.user_expanded is not None:
            self.settings.setValue(TRAINING_EXPANDED, bool(dock.user_expanded))
