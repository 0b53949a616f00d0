"""What a model is built from in the window: the document's net, and the weights to use: the
model opened with it, the last snapshot of a run of this session, or the fillers' (none)."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QComboBox

from proto import caffe_pb2

INITIAL = "Initial weights (the fillers')"


def weight_choices(window) -> list[tuple[str, str | None]]:
    """(label, .caffemodel path or None) in the order offered, the likeliest first."""
    choices: list[tuple[str, str | None]] = []
    controller = getattr(getattr(window, "training", None), "controller", None)
    for run in reversed(getattr(controller, "runs", [])):
        models = [p for p in run.snapshots if p.endswith((".caffemodel", ".caffemodel.h5"))]
        if models:
            choices.append((f"Last run: {os.path.basename(models[-1])}", models[-1]))
            break
    path = window.doc.weights_path
    if path:
        choices.append((f"Opened model: {os.path.basename(path)}", path))
    choices.append((INITIAL, None))
    return choices


def fill_combo(combo: QComboBox, window) -> None:
    combo.clear()
    for label, path in weight_choices(window):
        combo.addItem(label, path)
        combo.setItemData(combo.count() - 1, path or "", role=3)  # the path as its tooltip


def document_net(window) -> tuple[caffe_pb2.NetParameter, str | None]:
    """A copy of the document's net (edits made later never reach a running model) and its file."""
    net = caffe_pb2.NetParameter()
    net.CopyFrom(window.doc.net)
    return net, window.doc.net_path
