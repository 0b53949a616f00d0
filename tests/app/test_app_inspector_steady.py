"""The inspector's fields stay where they are while the user types: what appears because of an
edit (the "Assumed input shape" box, a refusal) appears below the fields, never above the caret,
so the next click lands in the field it was aimed at (issue 31, case 2)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from windows import open_window

LEFT, NO_MOD = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier

NET = """\
name: "images"
layer {{
  name: "data"
  type: "ImageData"
  top: "data"
  top: "label"
  image_data_param {{ source: "{source}" batch_size: 4 }}
}}
layer {{
  name: "ip"
  type: "InnerProduct"
  bottom: "data"
  top: "ip"
  inner_product_param {{ num_output: 2 }}
}}
"""


@pytest.fixture
def window(qtbot, tmp_path):
    Image.fromarray(np.zeros((32, 32, 3), np.uint8), "RGB").save(tmp_path / "a.png")
    (tmp_path / "list.txt").write_text(f"{tmp_path / 'a.png'} 0\n")
    path = tmp_path / "images.prototxt"
    path.write_text(NET.format(source=tmp_path / "list.txt"))
    w = open_window(qtbot, path)
    w.graph.sync()
    w.selection.select(0)
    yield w
    w.training.shutdown()


def _top_left(window, widget) -> QPoint:
    return widget.mapTo(window, QPoint(0, 0))


def _type(qtbot, widget, text: str) -> None:
    target = widget.lineEdit() if hasattr(widget, "lineEdit") else widget
    target.selectAll()
    qtbot.keyClicks(target, text)
    qtbot.keyClick(target, Qt.Key.Key_Tab)


def test_the_assumed_shape_box_appears_below_the_field_typed_in(qtbot, window):
    inspector, box = window.workbench.inspector, window.workbench.assumed_shape
    assert not box.isVisible()  # the list and its image are here: nothing to assume
    height = inspector.editor("image_data_param.new_height")
    width = inspector.editor("image_data_param.new_width")
    inspector.scroll.ensureWidgetVisible(width)
    aimed = _top_left(window, width)
    height.setFocus()
    _type(qtbot, height, "28")
    # new_height alone cannot be read: the box comes, saying why, and takes a shape
    qtbot.waitUntil(box.isVisible)
    assert "new_height and new_width" in box.why.text()
    width = inspector.editor("image_data_param.new_width")
    assert _top_left(window, width) == aimed  # the field the user aims at next has not moved
    assert _top_left(window, box).y() > aimed.y()  # the box came below it

    # the click aimed at new_width lands in new_width, and the pair is complete
    target = width.lineEdit()
    QTest.mouseClick(target, LEFT, NO_MOD, target.rect().center())
    assert target.hasFocus()
    _type(qtbot, width, "28")
    qtbot.waitUntil(lambda: window.doc.layer(0).image_data_param.new_width == 28)
    assert window.doc.layer(0).image_data_param.new_height == 28
    qtbot.waitUntil(lambda: not box.isVisible())


def test_a_refused_edit_says_so_below_the_fields(qtbot, window):
    inspector = window.workbench.inspector
    batch = inspector.editor("image_data_param.batch_size")
    inspector.scroll.ensureWidgetVisible(batch)
    aimed = _top_left(window, batch)
    batch.setFocus()
    _type(qtbot, batch, "0")
    assert inspector.message.isVisible() and "batch_size" in inspector.message.text()
    qtbot.waitUntil(lambda: inspector.editor("image_data_param.batch_size").value() == 4)
    assert _top_left(window, inspector.editor("image_data_param.batch_size")) == aimed
    assert _top_left(window, inspector.message).y() > aimed.y()
