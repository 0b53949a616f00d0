"""One document, three views: edits in the inspector and the text reach the graph, errors leave it be,
and undo works across all three. Drives the real main window on the LeNet example."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSpinBox

from app.files import DEFAULT_SOLVER
from app.main_window import MainWindow

CONV1 = 2


@pytest.fixture
def window(qtbot) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: None
    assert w.open_file(DEFAULT_SOLVER)
    w.show()
    qtbot.waitExposed(w)
    w.graph.sync()
    return w


def node_text(window: MainWindow, name: str) -> list[str]:
    window.graph.sync()
    return [text for _, text in window.graph.scene.nodes[name].lines]


def type_after(qtbot, window: MainWindow, anchor: str, keys: str) -> None:
    """Click the caret just after ``anchor`` in the prototxt editor and type ``keys``."""
    edit = window.editor.edit
    cursor = edit.textCursor()
    cursor.setPosition(window.editor.text.index(anchor) + len(anchor))
    edit.setTextCursor(cursor)
    edit.setFocus()
    qtbot.keyClicks(edit, keys)


def test_inspector_edit_reaches_text_and_graph_and_undoes_everywhere(qtbot, window):
    assert node_text(window, "conv1")[0].startswith("20 · 5×5")
    window.selection.select(CONV1)
    spin = window.workbench.inspector.editor("convolution_param.num_output")
    assert isinstance(spin, QSpinBox)
    spin.setFocus()
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "64")
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert "num_output: 64" in window.editor.text
    assert node_text(window, "conv1")[0].startswith("64 · 5×5")
    window.undo_action.trigger()
    assert "num_output: 20" in window.editor.text and node_text(window, "conv1")[0].startswith("20 · 5×5")


def test_typing_in_the_text_changes_the_graph_and_a_syntax_error_leaves_it(qtbot, window):
    type_after(qtbot, window, 'name: "ip1', "_wide")
    qtbot.waitUntil(lambda: window.doc.index_of("ip1_wide") is not None, timeout=3000)
    window.graph.sync()
    assert "ip1_wide" in window.graph.scene.nodes
    assert "ip1" not in window.graph.scene.nodes
    type_after(qtbot, window, 'name: "ip1_wide"', " bogus_field: 1")
    qtbot.waitUntil(lambda: window.editor.error is not None, timeout=3000)
    window.graph.sync()
    assert "ip1_wide" in window.graph.scene.nodes  # the graph keeps the last good net
    lines = window.editor.text.splitlines()
    bad_line = 1 + next(n for n, line in enumerate(lines) if "bogus_field" in line)
    assert window.editor.edit.error_line == bad_line  # the error is marked at its line
    assert "bogus_field" in window.editor.text  # nothing typed is lost
