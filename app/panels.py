"""The window's panels: docked, tabbed and toggled from one list (app/panel_list.py).

``dock_all(window, panels)`` makes each panel's dock (a panel that is a QDockWidget is docked as it
is), puts it in its area, tabs a group's panels together in list order and raises the ``front``
one; a panel with ``tab_shown(visible)`` hears its dock's visibilityChanged.
``Panels(window, docks, settings)`` gives every dock, in View-menu order, a checkable toggle with
its shortcut (Alt+1...), and ``canvas_only`` (F12) hides every panel at once and brings back the
same ones on the second press. It also remembers whether the user chose to fold or unfold the
training dock (a preference kept in the settings, when there are any).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

TRAINING_EXPANDED = "view/trainingExpanded"
CANVAS_ONLY_KEY = "F12"
AREAS = {"right": Qt.DockWidgetArea.RightDockWidgetArea, "bottom": Qt.DockWidgetArea.BottomDockWidgetArea}


@dataclass(frozen=True)
class Panel:
    title: str
    name: str  # the dock's object name: the remembered layout's key
    make: Callable[[Any], QWidget]  # the window -> the panel's widget (or its own dock)
    area: str  # a key of AREAS
    group: str = ""  # panels of one group are tabs of one another, in list order
    menu: int = 0  # its place in the View menu and its Alt+N key
    front: bool = False  # the tab raised in its group


def dock_all(window: QMainWindow, panels: Sequence[Panel]) -> dict[str, QDockWidget]:
    """Each panel made, docked and tabbed; the docks by object name, in list order."""
    docks: dict[str, QDockWidget] = {}
    last_of: dict[str, QDockWidget] = {}
    for panel in panels:
        made = panel.make(window)
        if isinstance(made, QDockWidget):
            dock = made
        else:
            dock = QDockWidget(panel.title, window)
            dock.setWidget(made)
        dock.setObjectName(panel.name)
        shown = getattr(made, "tab_shown", None)
        if shown is not None:  # a tabified panel gets no showEvent of its own when its tab is chosen
            dock.visibilityChanged.connect(shown)
        before = last_of.get(panel.group) if panel.group else None
        if before is None:
            window.addDockWidget(AREAS[panel.area], dock, Qt.Orientation.Vertical)
        else:
            window.tabifyDockWidget(before, dock)
        if panel.group:
            last_of[panel.group] = dock
        docks[panel.name] = dock
    for panel in panels:
        if panel.front:
            docks[panel.name].raise_()
    return docks


def in_menu_order(panels: Sequence[Panel], docks: dict[str, QDockWidget]) -> list[QDockWidget]:
    return [docks[p.name] for p in sorted(panels, key=lambda p: p.menu)]


class Panels(QObject):
    def __init__(
        self,
        window: QMainWindow,
        docks: list[QDockWidget],
        settings: QSettings | None,
        training: str = "trainingDock",
    ) -> None:
        super().__init__(window)
        self.window, self.docks, self.settings = window, docks, settings
        self.training_name = training  # the object name of the dock whose fold is remembered
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
    def _training(self) -> Any:
        return next((d for d in self.docks if d.objectName() == self.training_name), None)

    def restore_training(self) -> None:
        dock = self._training()
        value = self.settings.value(TRAINING_EXPANDED) if self.settings is not None else None
        if dock is not None and value is not None:
            chosen = str(value).lower() in ("true", "1")
            dock.user_expanded = chosen
            dock.set_expanded(chosen)

    def save_training(self) -> None:
        dock = self._training()
        if self.settings is not None and dock is not None and dock.user_expanded is not None:
            self.settings.setValue(TRAINING_EXPANDED, bool(dock.user_expanded))
