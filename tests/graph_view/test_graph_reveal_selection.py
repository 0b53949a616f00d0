"""A layer selected outside the canvas (inspector, filler panel) scrolls into view; a click on the
canvas selects without moving the view."""

from __future__ import annotations

from graph_view_support import EXAMPLES
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app import commands
from app.document import Document
from app.selection import Selection
from app.undo import UndoStack
from graph_view.editor import GraphEditor


def test_selection_from_elsewhere_scrolls_the_layer_into_view(qtbot):
    doc = Document()
    doc.open_net(EXAMPLES / "resnet.prototxt")
    selection = Selection(doc)
    editor = GraphEditor(doc, UndoStack(doc).push_command, selection, commands.GraphCommands())
    qtbot.addWidget(editor)
    editor.resize(700, 500)
    editor.show()
    qtbot.waitExposed(editor)
    editor.sync()
    view = editor.view
    view.zoom_by(1.0 / view.zoom())  # 1:1: a ResNet is many screens tall
    names = [layer.name for layer in doc.net.layer]
    shown = editor.scene.graph.keys_of_index  # the layers of the phase shown
    first, last = names.index("conv1"), max(shown)
    view.centerOn(editor.scene.nodes[editor.scene.graph.keys_of_index[first]])
    far = editor.scene.item_of(editor.scene.graph.keys_of_index[last])
    assert not view.visible_scene_rect().contains(far.sceneBoundingRect())

    selection.select(last)
    assert far.isSelected() and view.visible_scene_rect().contains(far.sceneBoundingRect())

    near = next(
        editor.scene.nodes[shown[i]] for i in range(last - 1, 0, -1) if shown.get(i) in editor.scene.nodes
    )
    before = view.visible_scene_rect()
    point = view.mapFromScene(near.mapToScene(near.header_rect().center()))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    assert selection.current == near.index and view.visible_scene_rect() == before
