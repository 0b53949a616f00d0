"""The inspector end to end: open an example, edit fields with the keyboard and mouse, see the text
and the document change, undo across views, and refused edits that leave the document alone."""

from __future__ import annotations

import pytest
from gestures import retype
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QSpinBox

from app.files import DEFAULT_SOLVER
from app.forms.editors import ChoiceEditor, EnumEditor, LineEditor
from app.forms.list_editor import ListEditor
from app.main_window import MainWindow
from proto import caffe_pb2

CONV1, POOL1, DATA = 2, 3, 0


@pytest.fixture
def window(qtbot) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: None
    assert w.open_file(DEFAULT_SOLVER)  # the LeNet example and its solver
    w.show()
    qtbot.waitExposed(w)
    return w


def test_editing_a_field_changes_the_document_and_the_text_and_undo_brings_both_back(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(CONV1)
    assert inspector.header.title.text() == "conv1" and "Convolution" in inspector.header.subtitle.text()
    spin = inspector.editor("convolution_param.num_output")
    assert isinstance(spin, QSpinBox) and spin.value() == 20
    retype(qtbot, spin, "64")
    assert window.doc.layer(CONV1).convolution_param.num_output == 64
    assert "num_output: 64" in window.editor.text and "num_output: 20" not in window.editor.text
    assert window.isWindowModified() and "num_output" in window.undo_action.text()

    window.undo_action.trigger()
    assert window.doc.layer(CONV1).convolution_param.num_output == 20
    assert spin.value() == 20 and "num_output: 20" in window.editor.text
    window.redo_action.trigger()
    assert spin.value() == 64


def test_typing_in_the_text_updates_the_inspector(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(CONV1)
    edit = window.editor.edit
    cursor = edit.textCursor()
    cursor.setPosition(window.editor.text.index("num_output: 20") + len("num_output: 20"))
    edit.setTextCursor(cursor)
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(edit, "8")
    qtbot.waitUntil(lambda: inspector.editor("convolution_param.num_output").value() == 28)
    assert window.doc.layer(CONV1).convolution_param.num_output == 28


def test_a_bad_value_is_refused_with_a_message_and_the_form_shows_the_document_again(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(CONV1)
    before = window.doc.net.SerializeToString()
    spin = inspector.editor("convolution_param.num_output")
    retype(qtbot, spin, "0")
    assert inspector.message.isVisible() and "num_output must be positive" in inspector.message.text()
    qtbot.waitUntil(lambda: inspector.editor("convolution_param.num_output").value() == 20)
    assert window.doc.net.SerializeToString() == before and not window.undo_stack.canUndo()

    window.selection.select(DATA)
    assert not inspector.message.isVisible()
    scale = inspector.editor("transform_param.scale")
    assert isinstance(scale, LineEditor) and scale.text() == "0.00390625"
    retype(qtbot, scale, "a lot")
    assert "not a number" in inspector.message.text() and scale.text() == "0.00390625"
    retype(qtbot, scale, "0.5")
    assert window.doc.layer(DATA).transform_param.scale == 0.5 and not inspector.message.isVisible()


def test_enums_nested_messages_and_checkboxes(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(POOL1)
    pool = inspector.editor("pooling_param.pool")
    assert isinstance(pool, EnumEditor) and pool.currentText() == "MAX"
    pool.setFocus()
    qtbot.keyClick(pool, Qt.Key.Key_Down)
    assert window.doc.layer(POOL1).pooling_param.pool == caffe_pb2.PoolingParameter.AVE
    assert "pool: AVE" in window.editor.text

    window.selection.select(CONV1)
    filler = inspector.forms["convolution_param"].group("weight_filler")
    assert filler.expanded and filler.summary.text() == "xavier"
    kind = inspector.editor("convolution_param.weight_filler.type")
    assert isinstance(kind, ChoiceEditor)
    retype(qtbot, kind, "gaussian")
    layer = window.doc.layer(CONV1)
    assert layer.convolution_param.weight_filler.type == "gaussian"
    std = inspector.editor("convolution_param.weight_filler.std")  # shown now that the type reads it
    assert std.isVisible()
    retype(qtbot, std, "0.01")
    assert window.doc.layer(CONV1).convolution_param.weight_filler.std == pytest.approx(0.01)

    bias = inspector.editor("convolution_param.bias_term")
    assert isinstance(bias, QCheckBox) and bias.isChecked()
    qtbot.mouseClick(bias, Qt.MouseButton.LeftButton)  # conv1 has a param { } for its bias: refused
    assert "too many param" in inspector.message.text()
    qtbot.waitUntil(bias.isChecked)
    assert window.doc.layer(CONV1).convolution_param.bias_term is True


def test_repeated_fields_are_lists_and_repeated_messages_are_groups(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(CONV1)
    kernel = inspector.editor("convolution_param.kernel_size")
    assert isinstance(kernel, ListEditor) and kernel.value() == [5]
    qtbot.mouseClick(kernel.add_button, Qt.MouseButton.LeftButton)
    assert list(window.doc.layer(CONV1).convolution_param.kernel_size) == [5, 5]
    retype(qtbot, inspector.editor("convolution_param.kernel_size.1"), "3")
    assert list(window.doc.layer(CONV1).convolution_param.kernel_size) == [5, 3]

    learning = inspector.sections["learning"]
    learning.set_expanded(True)
    params = inspector.forms["learning"].rows["param"]  # LeNet's conv1: lr_mult 1 (weights), 2 (bias)
    assert len(params.children) == 2 and params.group.summary.text() == "2"
    retype(qtbot, inspector.editor("param.1.lr_mult"), "3")
    assert window.doc.layer(CONV1).param[1].lr_mult == 3.0 and "lr_mult: 3" in window.editor.text
    qtbot.mouseClick(params.add_button, Qt.MouseButton.LeftButton)  # a third: conv has two blobs
    assert "too many param" in inspector.message.text() and len(window.doc.layer(CONV1).param) == 2
    qtbot.mouseClick(params.children[0][0].remove_button, Qt.MouseButton.LeftButton)
    assert [p.lr_mult for p in window.doc.layer(CONV1).param] == [3.0] and len(params.children) == 1
    qtbot.mouseClick(params.add_button, Qt.MouseButton.LeftButton)
    assert [p.lr_mult for p in window.doc.layer(CONV1).param] == [3.0, 1.0]


def test_the_type_the_name_and_the_net(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(POOL1)
    retype(qtbot, inspector.editor("name"), "conv1")  # taken
    assert "already exists" in inspector.message.text() and window.doc.layer(POOL1).name == "pool1"
    retype(qtbot, inspector.editor("name"), "pool_a")
    assert window.doc.layer(POOL1).name == "pool_a" and inspector.header.title.text() == "pool_a"

    retype(qtbot, inspector.editor("type"), "Convolution")
    layer = window.doc.layer(POOL1)
    assert layer.type == "Convolution" and not layer.HasField("pooling_param")
    assert layer.convolution_param.num_output == 32 and "convolution_param" in inspector.forms
    window.undo_action.trigger()
    assert window.doc.layer(POOL1).type == "Pooling" and "pooling_param" in inspector.forms

    window.selection.select(None)
    assert "Net" in inspector.header.subtitle.text()
    retype(qtbot, inspector.editor("name"), "LeNet-5")
    assert window.doc.net.name == "LeNet-5" and 'name: "LeNet-5"' in window.editor.text


def test_unset_fields_are_muted_and_reset_clears_a_field(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(CONV1)
    form = inspector.forms["convolution_param"]
    assert form.rows["num_output"].label.property("unset") is False
    assert form.rows["group"].label.property("unset") is True and form.rows["group"].input.value() == 1
    assert not form.rows["kernel_h"].widget.isVisible()  # an alternative few nets use: behind "more"
    qtbot.mouseClick(form.more, Qt.MouseButton.LeftButton)
    assert form.rows["kernel_h"].widget.isVisible()
    qtbot.mouseClick(form.rows["num_output"].reset, Qt.MouseButton.LeftButton)
    assert "num_output must be positive" in inspector.message.text()  # the default, 0, is refused
    retype(qtbot, form.rows["group"].input, "2")
    assert window.doc.layer(CONV1).convolution_param.group == 2
    qtbot.mouseClick(form.rows["group"].reset, Qt.MouseButton.LeftButton)
    assert not window.doc.layer(CONV1).convolution_param.HasField("group")


def test_undo_across_views(qtbot, window):
    inspector, palette = window.workbench.inspector, window.workbench.palette
    original = window.editor.text
    window.selection.select(CONV1)
    retype(qtbot, inspector.editor("convolution_param.num_output"), "30")
    palette.add_layer("ReLU")  # after conv1, in place
    relu = window.doc.layer(CONV1 + 1)  # LeNet has a relu1 already
    assert relu.type == "ReLU" and relu.name == "relu2" and inspector.header.title.text() == "relu2"
    assert list(relu.bottom) == list(relu.top) == ["conv1"]
    edit = window.editor.edit
    cursor = edit.textCursor()
    cursor.setPosition(window.editor.text.index('name: "LeNet"') + len('name: "LeNet'))
    edit.setTextCursor(cursor)
    qtbot.keyClicks(edit, "X")
    qtbot.waitUntil(lambda: window.doc.net.name == "LeNetX")
    for _ in range(3):
        window.undo_action.trigger()
    assert window.editor.text == original and not window.isWindowModified()
    window.selection.select(CONV1)
    assert inspector.editor("convolution_param.num_output").value() == 20


def test_text_typed_but_not_yet_applied_goes_in_before_an_inspector_edit(qtbot, window):
    inspector = window.workbench.inspector
    window.selection.select(POOL1)
    edit = window.editor.edit
    cursor = edit.textCursor()
    cursor.setPosition(window.editor.text.index('name: "pool1"') + len('name: "pool1'))
    edit.setTextCursor(cursor)
    qtbot.keyClicks(edit, "x")  # the debounce has not fired yet
    retype(qtbot, inspector.editor("type"), "Convolution")  # worked out from the net with "pool1x"
    layer = window.doc.layer(POOL1)
    assert layer.name == "pool1x" and layer.type == "Convolution"


def test_folded_sections_open_for_a_layer_that_uses_them(window):
    sections = window.workbench.inspector.sections
    window.selection.select(DATA)  # include { phase: TRAIN }
    assert sections["rules"].expanded and not sections["learning"].expanded
    assert window.workbench.inspector.header.badge.text() == "TRAIN only"
    window.selection.select(CONV1)  # param { lr_mult } x 2
    assert sections["learning"].expanded and not sections["rules"].expanded
    window.selection.select(POOL1)
    assert not sections["learning"].expanded and not sections["rules"].expanded
