"""File > Export Picture: the net, or the selected boxes, as PNG or SVG.

The picture is drawn as ``main.py draw`` draws it (graph_view.render), from a copy of the canvas's
scene: the phase, the split overlay, the direction, the unfolded bands and the boxes where the user
put them, without the selection's outline.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QFileDialog

from app import files
from graph_view import render

PICTURE_FILTER = "PNG image (*.png);;SVG drawing (*.svg)"


def default_folder(doc) -> str:
    """Beside the net, else beside the solver, else the user's documents (never the program's folder)."""
    for path in (doc.net_path, doc.solver_path):
        if path:
            return os.path.dirname(os.path.abspath(path))
    origin = getattr(doc, "origin", None)  # an untitled copy: beside its file, unless an example's
    if origin and not files.is_installed(origin):
        return os.path.dirname(os.path.abspath(origin))
    documents = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return documents if documents and os.path.isdir(documents) else os.path.expanduser("~")


def ask_picture_path(window, default: str) -> str:
    return QFileDialog.getSaveFileName(window, "Export picture", default, PICTURE_FILTER)[0]


def export_picture(window, selection_only: bool = False) -> str | None:
    """Ask where, then write the picture; the path written, or None (cancelled, or it failed)."""
    scene = window.graph.scene
    keys = [k for k in scene.selected_keys() if k in scene.nodes] if selection_only else []
    if selection_only and not keys:
        window.statusBar().showMessage("Select the boxes to export first", 4000)
        return None
    net = window.doc.net
    stem = (net.name or "net").replace(os.sep, "_") + ("_selection" if keys else "")
    path = window.ask_picture_path(os.path.join(default_folder(window.doc), f"{stem}.png"))
    if not path:
        return None
    if os.path.splitext(path)[1].lower() not in (".png", ".svg"):
        path += ".png"
    try:
        size = render.save(render.copy_of(scene), path, title=net.name, keys=keys or None)
    except (OSError, ValueError) as e:
        window.show_error("Cannot export the picture", str(e))
        return None
    window.statusBar().showMessage(f"Wrote {os.path.basename(path)} ({size.width()}×{size.height()})", 6000)
    return path
