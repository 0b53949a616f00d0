"""What the window remembers between runs (QSettings): geometry, dock layout and the theme.

The workbench restores the layout when the window is first shown, once every panel has been
made (a dock that does not exist yet cannot be put back); it is saved when the window closes. Tests hand in a
QSettings on a temporary file, so the user's settings are never touched.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QObject, QSettings
from PySide6.QtWidgets import QApplication, QMainWindow

from app.themes import LIGHT, THEMES, apply_theme, current_theme

GEOMETRY, STATE, THEME = "window/geometry", "window/state", "view/theme"
STATE_VERSION = 2  # raised when the docks change, so an old layout is not forced onto new panels
# (2: the Layers palette moved from the left into the right column's tabs)


class Session(QObject):
    def __init__(self, window: QMainWindow, settings: QSettings) -> None:
        super().__init__(window)
        self.window, self.settings = window, settings
        self.restored = False

    def restore(self) -> bool:
        """Put the remembered geometry, docks and theme back; True when a dock layout was restored."""
        self.restored = True
        geometry, state = self.settings.value(GEOMETRY), self.settings.value(STATE)
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.window.restoreGeometry(geometry)
        layout = False
        if isinstance(state, QByteArray) and not state.isEmpty():
            layout = self.window.restoreState(state, STATE_VERSION)
        theme = self.settings.value(THEME, LIGHT)
        app = QApplication.instance()
        if isinstance(app, QApplication) and theme in THEMES and theme != current_theme(app):
            apply_theme(app, theme)
        return layout

    def save(self) -> None:
        self.settings.setValue(GEOMETRY, self.window.saveGeometry())
        self.settings.setValue(STATE, self.window.saveState(STATE_VERSION))
        app = QApplication.instance()
        if isinstance(app, QApplication):
            self.settings.setValue(THEME, current_theme(app))
        self.settings.sync()
