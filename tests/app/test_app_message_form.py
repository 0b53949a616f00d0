"""The descriptor-driven form on its own: a widget per kind of field, paths out, values in, in place."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QSpinBox

from app.forms import FormOptions, MessageForm
from app.forms.editors import ChoiceEditor, EnumEditor, LineEditor
from app.forms.group import Group
from app.forms.list_editor import ListEditor
from proto import caffe_pb2


@pytest.fixture
def form(qtbot):
    edits = []
    widget = MessageForm(
        caffe_pb2.ConvolutionParameter.DESCRIPTOR,
        "convolution_param.",
        options=FormOptions(choices={"FillerParameter.type": lambda: ["xavier", "gaussian"]}),
    )
    widget.edited.connect(lambda path, value: edits.append((path, value)))
    widget.edits = edits
    qtbot.addWidget(widget)
    layer = caffe_pb2.LayerParameter(name="c", type="Convolution")
    layer.convolution_param.num_output = 8
    layer.convolution_param.kernel_size.extend([3])
    layer.convolution_param.weight_filler.type = "xavier"
    widget.set_message(layer)
    widget.layer = layer
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_each_kind_of_field_gets_its_editor(form):
    assert isinstance(form.editor("convolution_param.num_output"), QSpinBox)
    assert isinstance(form.editor("convolution_param.bias_term"), QCheckBox)
    assert isinstance(form.editor("convolution_param.engine"), EnumEditor)
    assert isinstance(form.editor("convolution_param.kernel_size"), ListEditor)
    assert isinstance(form.editor("convolution_param.weight_filler.type"), ChoiceEditor)
    assert isinstance(form.editor("convolution_param.weight_filler.std"), LineEditor)
    assert isinstance(form.group("weight_filler"), Group)
    assert form.editor("convolution_param.num_output").value() == 8
    assert form.editor("convolution_param.kernel_size").value() == [3]
    tip = form.rows["group"].label.toolTip()
    assert "default 1" in tip and "group" in tip.lower()


def test_edits_come_out_as_paths_and_values(qtbot, form):
    spin = form.editor("convolution_param.num_output")
    spin.setFocus()
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "16")
    assert form.edits == []  # not per keystroke
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert form.edits == [("convolution_param.num_output", 16)]
    qtbot.mouseClick(form.editor("convolution_param.kernel_size").add_button, Qt.MouseButton.LeftButton)
    assert form.edits[-1] == ("convolution_param.kernel_size", [3, 3])
    qtbot.mouseClick(form.group("weight_filler").clear_button, Qt.MouseButton.LeftButton)
    assert form.edits[-1] == ("convolution_param.weight_filler", None)
    engine = form.editor("convolution_param.engine")
    engine.setFocus()
    qtbot.keyClick(engine, Qt.Key.Key_Down)
    assert form.edits[-1] == ("convolution_param.engine", caffe_pb2.ConvolutionParameter.CAFFE)


def test_updates_happen_in_place_and_follow_presence(qtbot, form):
    spin = form.editor("convolution_param.num_output")
    spin.setFocus()
    layer = form.layer
    layer.convolution_param.num_output = 99
    layer.convolution_param.kernel_size.extend([5])
    layer.convolution_param.weight_filler.type = "gaussian"
    form.set_message(layer)
    assert form.editor("convolution_param.num_output") is spin and spin.hasFocus() and spin.value() == 99
    assert form.editor("convolution_param.kernel_size").value() == [3, 5]
    assert form.editor("convolution_param.weight_filler.std").isVisible()  # gaussian reads std
    assert form.group("weight_filler").summary.text() == "gaussian"
    assert not form.group("bias_filler").expanded and form.group("bias_filler").summary.text() == "default"
    assert form.edits == []  # showing values never reports an edit


def test_repeated_messages_get_a_group_each(qtbot):
    edits = []
    form = MessageForm(caffe_pb2.LayerParameter.DESCRIPTOR, "", ["param", "include"])
    form.edited.connect(lambda path, value: edits.append((path, value)))
    qtbot.addWidget(form)
    layer = caffe_pb2.LayerParameter(name="c", type="Convolution")
    layer.param.add(lr_mult=1)
    layer.param.add(lr_mult=2, decay_mult=0)
    form.set_message(layer)
    row = form.rows["param"]
    assert len(row.children) == 2 and row.children[1][0].summary.text() == "lr_mult 2.0, decay_mult 0.0"
    assert form.editor("param.1.lr_mult").text() == "2.0"
    qtbot.mouseClick(row.children[0][0].remove_button, Qt.MouseButton.LeftButton)
    path, value = edits[-1]
    assert path == "param" and [p.lr_mult for p in value] == [2.0]
    qtbot.mouseClick(form.rows["include"].add_button, Qt.MouseButton.LeftButton)
    path, value = edits[-1]
    assert path == "include" and len(value) == 1 and value[0] == caffe_pb2.NetStateRule()


def test_deprecated_fields_show_only_while_set(qtbot):
    form = MessageForm(
        caffe_pb2.DataParameter.DESCRIPTOR, "data_param.", options=FormOptions(relevance=lambda m: None)
    )
    qtbot.addWidget(form)
    form.show()
    layer = caffe_pb2.LayerParameter(name="d", type="Data")
    layer.data_param.batch_size = 4
    form.set_message(layer)
    deprecated = [name for name, row in form.rows.items() if row.deprecated]
    assert deprecated and all(not form.rows[name].widget.isVisible() for name in deprecated)
    setattr(layer.data_param, deprecated[0], type(getattr(layer.data_param, deprecated[0]))(1))
    form.set_message(layer)
    assert form.rows[deprecated[0]].widget.isVisible()
