"""Save never drops what the user typed, and a solver without a file goes beside its net.

With prototxt text that does not parse, Save (and Quit/Close) asks: keep editing, save the text
as typed (the file then holds exactly the editor's text), or save the last valid net. The answer
words are what ``MainWindow.ask_unparsable_text`` returns (tests replace that method).
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

EDIT, TEXT, NET, DISCARD = "edit", "text", "net", "discard"


def ask_unparsable_text(parent: QWidget, error: object, closing: bool = False) -> str:
    """EDIT, TEXT or NET (and DISCARD when ``closing``)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("The prototxt text does not parse")
    box.setText(f"The Prototxt tab holds text that does not parse:\n{error}")
    box.setInformativeText(
        "Save the text as you typed it (the file will not open until it is fixed), "
        "or save the last net that parsed (the typed text is not saved)?"
    )
    edit = box.addButton("Keep Editing", QMessageBox.ButtonRole.RejectRole)
    text = box.addButton("Save Text as Typed", QMessageBox.ButtonRole.AcceptRole)
    net = box.addButton("Save Last Valid Net", QMessageBox.ButtonRole.AcceptRole)
    discard = box.addButton(QMessageBox.StandardButton.Discard) if closing else None
    box.setDefaultButton(edit)
    box.setEscapeButton(edit)
    box.exec()
    clicked = box.clickedButton()
    if clicked is text:
        return TEXT
    if clicked is net:
        return NET
    if discard is not None and clicked is discard:
        return DISCARD
    return EDIT


def solver_path_beside(net_path: str) -> str:
    """Where a solver without a file is saved: ``NET_solver.prototxt`` beside the net (a free name)."""
    net = Path(net_path)
    candidate = net.with_name(f"{net.stem}_solver.prototxt")
    n = 2
    while candidate.exists():
        candidate = net.with_name(f"{net.stem}_solver{n}.prototxt")
        n += 1
    return os.fspath(candidate)
