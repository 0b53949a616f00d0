"""One selection across the views: a box clicked scrolls the prototxt to its layer's block and tints
it; the caret put in a block selects that layer's box and fills the inspector; Find marks the boxes
whose names or types match and walks them with next/previous."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest

from app.layer_spans import layer_spans


@pytest.fixture
def window(lenet_window):
    return lenet_window


def names(window) -> list[str]:
    return [layer.name for layer in window.doc.net.layer]


def tinted(window) -> list[tuple[int, int]]:
    from app.text_selection import _TAG

    return [
        (s.cursor.selectionStart(), s.cursor.selectionEnd())
        for s in window.editor.edit.extraSelections()
        if s.format.property(_TAG)
    ]


def test_a_clicked_box_scrolls_the_text_to_its_block_and_tints_it(qtbot, window):
    view, scene = window.graph.view, window.graph.scene
    index = names(window).index("pool2")
    item = scene.nodes[scene.graph.keys_of_index[index]]
    view.centerOn(item)
    point = view.mapFromScene(item.mapToScene(item.header_rect().center()))
    edit = window.editor.edit
    caret = edit.textCursor().position()
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    assert window.selection.current == index
    start, end = layer_spans(window.editor.text)[index]
    assert tinted(window) == [(start, end)]
    first = edit.firstVisibleBlock().blockNumber()
    line = edit.document().findBlock(start).blockNumber()
    assert first <= line < first + 10  # the block's first lines are in view
    assert edit.textCursor().position() == caret  # the caret stays where the user left it
    assert window.workbench.inspector.header.title.text() == "pool2"


def test_the_caret_in_a_block_selects_its_box_and_its_fields(qtbot, window):
    index = names(window).index("ip2")
    start, end = layer_spans(window.editor.text)[index]
    edit = window.editor.edit
    edit.setFocus()
    cursor = edit.textCursor()
    cursor.setPosition((start + end) // 2)
    edit.setTextCursor(cursor)
    assert window.selection.current == index
    key = window.graph.scene.graph.keys_of_index[index]
    assert window.graph.scene.nodes[key].isSelected()
    assert window.workbench.inspector.header.title.text() == "ip2"
    assert window.graph.view.visible_scene_rect().intersects(
        window.graph.scene.nodes[key].sceneBoundingRect()
    )


def test_typed_text_not_yet_applied_selects_nothing(qtbot, window):
    edit = window.editor.edit
    edit.setFocus()
    before = window.selection.layers
    cursor = edit.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    edit.setTextCursor(cursor)
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    qtbot.keyClicks(edit, "layer { name: ")  # a layer half typed: the text no longer parses
    cursor.setPosition(layer_spans(window.editor.text)[3][0] + 5)
    edit.setTextCursor(cursor)
    assert window.selection.layers == before


def test_find_marks_matching_boxes_and_walks_them(qtbot, window):
    bench = window.workbench
    bench.find_action.trigger()
    bar = bench.find_bar
    bar.case.setChecked(True)  # (pooling_param would match too)
    bar.find_field.setText("Pooling")  # a type: every pooling layer's box is ringed
    pools = {k for k, item in window.graph.scene.nodes.items() if item.node.layer.type == "Pooling"}
    assert len(pools) == 2 and window.graph.scene.found == pools
    assert f"{len(pools)} boxes" in bar.count.text()
    seen = set()
    for _ in range(len(pools)):
        bar.find_next()
        current = window.selection.current
        assert current is not None and window.doc.net.layer[current].type == "Pooling"
        seen.add(current)
    assert len(seen) == len(pools)  # next walks every match
    last = window.selection.current
    bar.find_previous()
    assert window.selection.current != last
    bar.close_bar()
    assert window.graph.scene.found == set()
