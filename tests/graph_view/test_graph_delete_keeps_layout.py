"""Issue 31 case 13: deleting a middle layer leaves the other boxes where they were (it re-laid out the
whole net, so every box jumped); undo brings the layer back into its place."""

from __future__ import annotations

from graph_view_support import shown_editor
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.document import Document
from app.files import EXAMPLES

LEFT, NO_MOD = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier


def test_deleting_a_middle_layer_keeps_the_other_boxes_in_place(qtbot):
    doc = Document()
    doc.open_net(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    editor, stack = shown_editor(qtbot, doc)
    editor.sync()
    editor.view.fit()
    scene, view = editor.scene, editor.view
    before = {key: item.pos() for key, item in scene.nodes.items()}
    node = scene.nodes["pool1"]
    QTest.mouseClick(
        view.viewport(), LEFT, NO_MOD, view.mapFromScene(node.mapToScene(node.header_rect().center()))
    )
    QTest.keyClick(view.viewport(), Qt.Key.Key_Delete)
    editor.sync()
    assert "pool1" not in [layer.name for layer in doc.net.layer] and "pool1" not in scene.nodes
    after = {key: item.pos() for key, item in scene.nodes.items()}
    assert set(after) == set(before) - {"pool1"}
    for key, pos in after.items():  # the same layout's coordinates, untouched: within a pixel
        assert abs(pos.x() - before[key].x()) < 1 and abs(pos.y() - before[key].y()) < 1, key
    stack.undo()
    editor.sync()
    assert {key: (round(i.pos().x()), round(i.pos().y())) for key, i in scene.nodes.items()} == {
        key: (round(p.x()), round(p.y())) for key, p in before.items()
    }
