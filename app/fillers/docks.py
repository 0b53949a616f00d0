"""The two initialisation panels, tabs of the right column (declared in app/panel_list.py).

They compute nothing until their tab is shown, and assume the input shapes the window's canvas
assumes (a shape typed for the data, say, is re-checked when the canvas rebuilds).
"""

from __future__ import annotations

from typing import Any

from app.assumed_shape import assumptions
from app.fillers.panel import FillerPanel
from app.fillers.start_panel import NetStartPanel


def _assumed(window: Any) -> Any:
    graph = getattr(window, "graph", None)
    return (lambda phase: assumptions(graph, phase)) if graph is not None else None


def filler_panel(window: Any) -> FillerPanel:
    panel = FillerPanel(window.doc, window.push, window.selection, window, _assumed(window))
    if getattr(window, "graph", None) is not None:
        window.graph.scene.rebuilt.connect(panel.check_assumed)
    return panel


def net_start_panel(window: Any) -> NetStartPanel:
    panel = NetStartPanel(window.doc, window, _assumed(window))
    if getattr(window, "graph", None) is not None:
        window.graph.scene.rebuilt.connect(panel.check_assumed)
    return panel
