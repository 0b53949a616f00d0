"""The two initialisation docks, tabbed with the prototxt editor on the right of the main window."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from app.fillers.panel import FillerPanel
from app.fillers.start_panel import NetStartPanel

if TYPE_CHECKING:
    from app.main_window import MainWindow


def add_initialisation_docks(window: MainWindow) -> tuple[QDockWidget, QDockWidget]:
    """The fillers dock and the how-the-net-starts dock; ``dock.widget()`` is the panel.

    They sit behind the prototxt tab and compute nothing until their tab is shown.
    """
    panels = (
        ("Initialisation", "fillerDock", FillerPanel(window.doc, window.push, window.selection, window)),
        ("How the net starts", "netStartDock", NetStartPanel(window.doc, window)),
    )
    docks = []
    for title, name, panel in panels:
        dock = QDockWidget(title, window)
        dock.setObjectName(name)
        dock.setWidget(panel)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        window.tabifyDockWidget(window.editor_dock, dock)
        docks.append(dock)
    window.editor_dock.raise_()
    return docks[0], docks[1]
