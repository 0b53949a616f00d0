"""The two initialisation docks, tabbed with the prototxt editor on the right of the main window."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow

from app.assumed_shape import assumptions, facts
from app.commands import Command
from app.document import Document
from app.fillers.panel import FillerPanel
from app.fillers.start_panel import NetStartPanel
from app.selection import Selection


def add_initialisation_docks(
    window: QMainWindow,
    behind: QDockWidget,
    doc: Document,
    push: Callable[[Command], None],
    selection: Selection,
    graph: Any = None,
) -> tuple[QDockWidget, QDockWidget]:
    """The fillers dock and the how-the-net-starts dock; ``dock.widget()`` is the panel.

    They sit behind the ``behind`` tab (the prototxt's) and compute nothing until their tab is shown.
    ``graph`` (the window's canvas): both tabs assume the input shapes it assumes.
    """
    assumed = (lambda phase: assumptions(graph, phase)) if graph is not None else None
    known = (lambda phase: facts(graph, phase)) if graph is not None else None
    fillers = FillerPanel(doc, push, selection, window, assumed, known)
    start = NetStartPanel(doc, window, assumed, known)
    if graph is not None:
        graph.scene.rebuilt.connect(fillers.check_assumed)  # a shape typed for the data, say
        graph.scene.rebuilt.connect(start.check_assumed)
    panels = (
        ("Initialisation", "fillerDock", fillers),
        ("How the net starts", "netStartDock", start),
    )
    docks = []
    for title, name, panel in panels:
        dock = QDockWidget(title, window)
        dock.setObjectName(name)
        dock.setWidget(panel)
        if panel is start:  # its tab chosen: a tabified panel gets no showEvent of its own
            dock.visibilityChanged.connect(start.tab_shown)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        window.tabifyDockWidget(behind, dock)
        docks.append(dock)
    behind.raise_()
    return docks[0], docks[1]
