"""The window's side of opening a file: the questions (which net goes with a model, open without a
fork's unknown fields?) and what the user is told afterwards (upgraded, solver found, dropped fields).

``open_into(window, path, weights)`` uses the window's replaceable dialogs (``ask_net_for_model``,
``ask_drop_unknown_fields``, ``show_error``) and its ``show_notice``; a file that cannot be opened
leaves the document as it was.
"""

from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from app import models
from proto import hdf5io
from proto.errors import FormatError, UnknownFieldsError

NET_FILTER = "Caffe prototxt (*.prototxt *.pt);;All files (*)"
OPEN_FILTER = (
    "Caffe files (*.prototxt *.pt *.txt *.caffemodel *.caffemodel.h5 *.h5);;"
    "Caffe prototxt (*.prototxt *.pt *.txt);;"
    "Trained models (*.caffemodel *.caffemodel.h5 *.h5);;All files (*)"
)


def open_into(window, path: str | os.PathLike[str], weights: str | os.PathLike[str] | None = None) -> bool:
    """Open ``path`` (and, for a net, ``weights`` to start from) in ``window``; True when it opened."""
    name = os.path.basename(os.fspath(path))
    try:
        try:
            opened = models.open_any(window.doc, path, pick_net=window.ask_net_for_model)
        except FormatError as e:
            if not isinstance(e, UnknownFieldsError):
                raise
            if not window.ask_drop_unknown_fields(e):
                return False
            opened = models.open_any(window.doc, path, drop_unknown=True, pick_net=window.ask_net_for_model)
        if weights:
            models.load_weights_into(window.doc, os.fspath(weights))
            opened.notices.append(f"Weights: {os.path.basename(os.fspath(weights))} (Train starts from them)")
    except models.Cancelled:
        return False
    except (OSError, FormatError) as e:
        window.show_error("Cannot open", str(e))
        return False
    window.statusBar().showMessage(f"Opened {opened.kind} {name}", 4000)
    window.show_notice("\n".join(opened.notices))
    return True


def net_question(model_path: str) -> tuple[str, str]:
    """What the window says when a model's net must be asked for: (the question, the explanation)."""
    name = os.path.basename(model_path)
    stem = models.snapshot_prefix(model_path)
    question = f"Which net goes with {name}?"
    why = (
        f"{name} holds trained weights. Barista looked beside it for {stem}.prototxt, and there and "
        f"one folder up for a solver whose snapshot_prefix names it, and found neither.\n\n"
        "Pick the net prototxt it was trained with (the train/test or the deploy net)"
    )
    why += "." if hdf5io.is_hdf5(model_path) else ", or rebuild the net from the layer list inside the model."
    return question, why


def ask_net_for_model(parent: QWidget, model_path: str) -> str | None:
    """The net prototxt that goes with a model; '' to rebuild the net from the model itself; None
    to open nothing. Says why it asks before any file dialog."""
    question, why = net_question(model_path)
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("The model's net")
    box.setText(question)
    box.setInformativeText(why)
    pick = box.addButton("Pick the Net…", QMessageBox.ButtonRole.AcceptRole)
    rebuild = None
    if not hdf5io.is_hdf5(model_path):  # an HDF5 model carries only blobs, no layer list
        rebuild = box.addButton("Rebuild from the Model", QMessageBox.ButtonRole.ActionRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(pick)
    box.exec()
    if rebuild is not None and box.clickedButton() is rebuild:
        return ""
    if box.clickedButton() is not pick:
        return None
    title = f"The net {os.path.basename(model_path)} was trained with"
    picked = QFileDialog.getOpenFileName(parent, title, os.path.dirname(model_path), NET_FILTER)[0]
    return picked or None


def ask_drop_unknown_fields(parent: QWidget, error: FormatError) -> bool:
    """Say which fields the schema lacks (file:line:col each) and offer to open without them."""
    fields = getattr(error, "fields", [])
    where = os.path.basename(os.fspath(error.path))
    lines = [f"{where}:{f.line}:{f.column}  {f.describe()}" for f in fields]
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Fields BVLC Caffe lacks")
    box.setText(
        f"{where} sets {len(fields)} field{'s' * (len(fields) != 1)} that BVLC Caffe's schema lacks "
        "(a Caffe fork's additions):"
    )
    box.setInformativeText("\n".join(lines[:20]) + ("\n…" if len(lines) > 20 else ""))
    drop = box.addButton("Open without them", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(drop)
    box.exec()
    return box.clickedButton() is drop
