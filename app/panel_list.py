"""Every panel of the main window, declared once: title, object name, what makes it, where it docks,
which tabs it joins and its place in the View menu. app/panels.py docks, tabs, toggles and restores
them from this list; adding a panel is one line here (and its factory).

The object name is the key of the remembered layout (app/session.py): renaming one, or changing
the list's docks, is a new ``STATE_VERSION`` there.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from app.fillers.docks import filler_panel, net_start_panel
from app.inspector import Inspector
from app.palette import Palette
from app.panels import Panel
from app.solver_panel import SolverPanel
from app.training import TrainingDock

RIGHT, BOTTOM = "right", "bottom"
COLUMN = "column"  # the right column's tabs, down its edge
TRAINING = "trainingDock"


def _palette(w: Any) -> QWidget:
    return Palette(w.doc, w.selection, w.push, w, before_edit=w.editor.commit)


def _inspector(w: Any) -> QWidget:
    return Inspector(w.doc, w.selection, w.push, w, before_edit=w.editor.commit)


def _training(w: Any) -> QWidget:
    return TrainingDock(w.doc, w, before_train=w.editor.commit)


# In docking order: a tab group's tabs in the order they show; the first panel of the column raised
# is the Prototxt (``front``). ``menu`` is the View menu's order and the Alt+N key.
PANELS = (
    Panel("Layers", "paletteDock", _palette, RIGHT, COLUMN, menu=1),
    Panel("Prototxt", "prototxtDock", lambda w: w.editor, RIGHT, COLUMN, menu=2, front=True),
    Panel("Initialisation", "fillerDock", filler_panel, RIGHT, COLUMN, menu=5),
    Panel("How the net starts", "netStartDock", net_start_panel, RIGHT, COLUMN, menu=6),
    Panel("Solver", "solverDock", lambda w: SolverPanel(w.doc, w.push, w), RIGHT, COLUMN, menu=4),
    Panel("Inspector", "inspectorDock", _inspector, RIGHT, menu=3),  # below the column's tabs
    Panel("Training", TRAINING, _training, BOTTOM, menu=7),
)
