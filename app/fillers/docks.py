"""The two initialisation panels, tabs of the right column (declared in app/panel_list.py).

They compute nothing until their tab is shown, and assume the input shapes the window's canvas
assumes (a shape typed for the data, say, is re-checked when the canvas rebuilds); the filler panel
also hears which shapes are known facts (the bundled MNIST's), not assumptions.
"""

from __future__ import annotations

from typing import Any

from app.assumed_shape import assumptions, facts
from app.fillers.panel import FillerPanel
from app.fillers.start_panel import NetStartPanel


def _graph(window: Any) -> Any:
    return getattr(window, "graph", None)


def filler_panel(window: Any) -> FillerPanel:
    graph = _graph(window)
    assumed = (lambda phase: assumptions(graph, phase)) if graph is not None else None
    known = (lambda phase: facts(graph, phase)) if graph is not None else None
    panel = FillerPanel(window.doc, window.push, window.selection, window, assumed, known)
    if graph is not None:
        graph.scene.rebuilt.connect(panel.check_assumed)
    return panel


def net_start_panel(window: Any) -> NetStartPanel:
    """Its dock calls ``tab_shown`` when its tab is chosen (app/panels.dock_all)."""
    graph = _graph(window)
    assumed = (lambda phase: assumptions(graph, phase)) if graph is not None else None
    known = (lambda phase: facts(graph, phase)) if graph is not None else None
    panel = NetStartPanel(window.doc, window, assumed, known)
    if graph is not None:
        graph.scene.rebuilt.connect(panel.check_assumed)
    return panel
