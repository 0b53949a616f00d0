"""Find / replace in the prototxt editor: Ctrl+F and Ctrl+H, counts, next and previous, replace (all)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.main_window import MainWindow

NET = """name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 1 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
        convolution_param { num_output: 4 kernel_size: 3 } }
"""


@pytest.fixture
def window(qtbot, tmp_path) -> MainWindow:
    path = tmp_path / "tiny.prototxt"
    path.write_text(NET)
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    assert w.open_file(path)
    w.show()
    qtbot.waitExposed(w)
    w.activateWindow()
    return w


def test_ctrl_f_finds_and_steps_through_matches(qtbot, window):
    bar = window.workbench.find_bar
    edit = window.editor.edit
    edit.setFocus()
    qtbot.keyClick(edit, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert bar.isVisible() and bar.find_field.hasFocus() and not bar.replace_field.isVisible()
    qtbot.keyClicks(bar.find_field, "conv")
    found = bar.matches()
    assert len(found) == 9 and bar.count.text() == "1 of 9 · 2 boxes"  # text; conv1, conv2 ringed
    assert edit.textCursor().selectedText() == "conv" and edit.textCursor().selectionStart() == found[0][0]
    qtbot.keyClick(bar.find_field, Qt.Key.Key_Return)
    assert bar.count.text() == "2 of 9 · 2 boxes"
    qtbot.keyClick(bar.find_field, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count.text() == "1 of 9 · 2 boxes"
    qtbot.keyClick(bar.find_field, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)  # wraps to the last
    assert bar.count.text() == "9 of 9 · 2 boxes"
    highlighted = [s for s in edit.extraSelections() if s.format.property(bar_tag())]
    assert len(highlighted) == 9

    bar.words.setChecked(True)
    assert len(bar.matches()) == 0 and bar.count.text() == "no match" and bar.find_field.property("notFound")
    bar.words.setChecked(False)
    bar.case.setChecked(True)
    qtbot.keyClicks(bar.find_field, "1")  # "conv1", case-sensitive: a name, its top, a bottom
    assert len(bar.matches()) == 3
    qtbot.keyClick(bar.find_field, Qt.Key.Key_Escape)
    assert not bar.isVisible() and edit.hasFocus()
    assert not [s for s in edit.extraSelections() if s.format.property(bar_tag())]


def bar_tag():
    from app.find_bar import _TAG

    return _TAG


def test_ctrl_h_replaces_and_the_net_follows_as_one_undo_step(qtbot, window):
    bar = window.workbench.find_bar
    window.editor.edit.setFocus()
    qtbot.keyClick(window.editor.edit, Qt.Key.Key_H, Qt.KeyboardModifier.ControlModifier)
    assert bar.isVisible() and bar.replace_field.isVisible()
    qtbot.keyClicks(bar.find_field, "num_output: 4")
    qtbot.keyClicks(bar.replace_field, "num_output: 16")
    assert bar.replace()  # the selected match, then on to the next
    assert window.editor.text.count("num_output: 16") == 1 and bar.count.text() == "1 of 1"
    qtbot.waitUntil(lambda: window.doc.layer(1).convolution_param.num_output == 16)
    assert window.doc.layer(2).convolution_param.num_output == 4

    qtbot.mouseClick(bar.replace_all_button, Qt.MouseButton.LeftButton)
    assert bar.count.text() == "replaced 1" and "num_output: 4" not in window.editor.text
    qtbot.waitUntil(lambda: window.doc.layer(2).convolution_param.num_output == 16)
    window.undo_action.trigger()
    assert window.doc.layer(2).convolution_param.num_output == 4
    assert window.doc.layer(1).convolution_param.num_output == 16


def test_replace_all_is_one_edit_of_the_text(qtbot, window):
    bar = window.workbench.find_bar
    window.workbench.find(replace=True)
    bar.case.setChecked(True)  # not "Convolution"
    bar.find_field.setText('"conv')
    bar.replace_field.setText('"c')
    assert bar.replace_all() == 5
    qtbot.waitUntil(lambda: window.doc.layer_names() == ["data", "c1", "c2"])
    assert list(window.doc.layer(2).bottom) == ["c1"]
    window.undo_action.trigger()
    assert window.doc.layer_names() == ["data", "conv1", "conv2"] and window.editor.text == NET
