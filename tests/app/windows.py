"""The app tests' window: a MainWindow opened on a file, shown at a size with its canvas's boxes made."""

from __future__ import annotations

from pathlib import Path

import pytest
from answers import Asked
from PySide6.QtCore import QSettings

from app.main_window import MainWindow


def open_window(
    qtbot,
    path: Path,
    size: tuple[int, int] | None = (1280, 800),
    settings: QSettings | None = None,
    errors_fail: bool = False,
) -> MainWindow:
    """``path`` opened in a new window whose unsaved-changes question answers "discard" (and whose
    error dialogs fail the test, with ``errors_fail``); with a ``size``, shown at it and waited on
    until the canvas holds the net's boxes (without one, never shown)."""
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    if errors_fail:
        w.show_error = lambda *args: pytest.fail(f"error dialog: {args}")
    assert w.open_file(path)
    if size is not None:
        w.resize(*size)
        w.show()
        qtbot.waitExposed(w)
        qtbot.waitUntil(lambda: bool(w.graph.scene.nodes))
    return w


def asked_window(qtbot, **answers) -> MainWindow:
    """A new, empty window shown at 1280x800 whose questions get stand-in answers (tests/app/answers.py):
    no error dialog, "discard" for unsaved changes and for unparsable text, and ``answers`` (the
    method's name: its answer) for the rest, so that no test ever waits on a real dialog."""
    w = MainWindow()
    qtbot.addWidget(w)
    w.show_error = Asked(None)
    w.ask_unsaved_changes = Asked("discard")
    w.ask_unparsable_text = Asked("discard")
    for name, answer in answers.items():
        setattr(w, name, Asked(answer))
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    return w
