"""Typing an unknown bottom keeps the boxes where they are: the canvas shows the problem on the
box without laying the whole net out again, and the boxes come back to the same places once the
bottom names a blob again."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt


@pytest.fixture
def window(lenet_window):
    return lenet_window


def places(window) -> dict[str, tuple[float, float]]:
    return {key: (item.pos().x(), item.pos().y()) for key, item in window.graph.scene.nodes.items()}


def type_bottom(qtbot, window, text: str) -> None:
    field = window.workbench.inspector.editor("bottom").items[0]
    field.setFocus()
    field.selectAll()
    qtbot.keyClicks(field, text)
    qtbot.keyClick(field, Qt.Key.Key_Return)


def test_an_unknown_bottom_typed_moves_no_box(qtbot, window):
    names = [layer.name for layer in window.doc.net.layer]
    window.selection.select(names.index("conv2"))
    before = places(window)
    type_bottom(qtbot, window, "poo")  # on the way to a name: no blob is called that
    qtbot.waitUntil(lambda: list(window.doc.net.layer[names.index("conv2")].bottom) == ["poo"])
    window.graph.sync()
    assert any("poo" in p.message for p in window.graph.scene.problems)
    assert places(window) == before
    type_bottom(qtbot, window, "pool1")
    qtbot.waitUntil(lambda: list(window.doc.net.layer[names.index("conv2")].bottom) == ["pool1"])
    window.graph.sync()
    assert not window.graph.scene.problems and places(window) == before
