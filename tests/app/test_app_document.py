"""The Qt-free document: commands do/undo/redo, change events, the dirty flag, names and defaults."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tiny_net import NET
from undo_history import History

from app.commands import (
    AddLayer,
    CommandError,
    Compound,
    Connect,
    Disconnect,
    MoveLayer,
    RemoveLayer,
    RenameBlob,
    RenameLayer,
    ReplaceLayer,
    ReplaceNet,
    SetLayerField,
    SetNetField,
    SetSolverField,
)
from app.document import Document, Kind
from app.layer_defaults import default_layer, unique_name
from proto import caffe_pb2
from proto.errors import FormatError


@pytest.fixture
def events(doc) -> list:
    seen: list = []
    doc.changed.connect(seen.append)
    return seen


def kinds(events) -> list[str]:
    return [str(e.kind) for e in events]


def test_open_keeps_the_users_text_and_is_clean(doc):
    assert doc.layer_names() == ["data", "conv1", "relu1"]
    assert doc.net_text() == NET
    assert not doc.dirty and doc.net_path.endswith("tiny.prototxt")


def test_add_layer_do_undo_redo(doc, history, events):
    before = doc.net.SerializeToString()
    history.push(AddLayer(doc.new_layer("Convolution")))
    assert doc.layer_names()[-1] == "conv2"
    assert doc.dirty
    assert kinds(events) == ["layer_added", "dirty_changed"]
    assert events[0].index == 3
    events.clear()
    history.undo()
    assert doc.net.SerializeToString() == before and not doc.dirty
    assert kinds(events) == ["layer_removed", "dirty_changed"]
    assert events[0].old.name == "conv2"
    assert doc.net_text() == NET  # the comment comes back with the text it belonged to
    history.redo()
    assert doc.layer_names()[-1] == "conv2" and doc.dirty


def test_an_edit_rewrites_only_its_value_in_the_users_text(doc, history):
    history.push(SetLayerField(1, "convolution_param.num_output", 16))
    assert doc.net_text() == NET.replace("num_output: 4", "num_output: 16")  # comment and layout kept
    history.undo()
    assert doc.net_text() == NET


def test_a_new_net_with_no_text_of_its_own_is_rendered(history):
    doc = Document(caffe_pb2.NetParameter(name="n"))
    History(doc).push(AddLayer(doc.new_layer("ReLU")))
    assert doc.net_text() == 'name: "n"\nlayer {\n  name: "relu1"\n  type: "ReLU"\n  top: "relu1"\n}\n'


def test_add_renames_a_taken_name_and_its_own_top(doc, history):
    history.push(AddLayer(caffe_pb2.LayerParameter(name="conv1", type="ReLU", top=["conv1", "x"]), index=1))
    layer = doc.layer(1)
    assert layer.name == "conv2" and list(layer.top) == ["conv2", "x"]


def test_remove_and_move(doc, history, events):
    history.push(RemoveLayer(2))
    assert doc.layer_names() == ["data", "conv1"]
    history.undo()
    assert doc.layer_names() == ["data", "conv1", "relu1"]
    events.clear()
    history.push(MoveLayer(0, 2))
    assert doc.layer_names() == ["conv1", "relu1", "data"]
    assert (events[0].kind, events[0].old_index, events[0].index) == (Kind.LAYER_MOVED, 0, 2)
    history.undo()
    assert doc.layer_names() == ["data", "conv1", "relu1"]


def test_set_field_connect_disconnect(doc, history, events):
    history.push(SetLayerField(1, "convolution_param.kernel_size", [5]))
    history.push(SetLayerField(1, "param.0.lr_mult", 2.0))
    history.push(SetLayerField(1, "include.0.phase", "TEST"))
    conv = doc.layer(1)
    assert list(conv.convolution_param.kernel_size) == [5]
    assert conv.param[0].lr_mult == 2 and conv.include[0].phase == caffe_pb2.TEST
    assert events[0].kind == Kind.LAYER_CHANGED and events[0].old.convolution_param.kernel_size == [3]
    history.push(Connect(2, "data"))
    assert list(doc.layer(2).bottom) == ["conv1", "data"]
    history.push(Connect(2, "x", slot=0))
    history.push(Disconnect(2, 1))
    assert list(doc.layer(2).bottom) == ["x"]
    for _ in range(6):
        history.undo()
    assert doc.net_text() == NET and not doc.dirty


@pytest.mark.parametrize(
    "command, message",
    [
        (SetLayerField(1, "convolution_param.num_output", "many"), "num_output"),
        (SetLayerField(1, "convolution_param.nope", 1), "no field 'nope'"),
        (SetLayerField(1, "include.0.phase", "VALIDATE"), "not one of TRAIN, TEST"),
        (SetLayerField(9, "name", "x"), "no layer at index 9"),
        (RenameLayer(1, "relu1"), "already exists"),
        (RenameLayer(1, "  "), "needs a name"),
        (Connect(2, "data", slot=5), "no bottom 5"),
        (Disconnect(0, 0), "no bottom 0"),
        (RenameBlob("nothing", "x"), "no blob named"),
        (RenameBlob("conv1", "data"), "already exists"),
        (SetNetField("layer", []), "layer commands"),
        (SetSolverField("lr_policy", 3), "lr_policy"),
    ],
)
def test_invalid_edits_are_refused_and_change_nothing(doc, history, events, command, message):
    with pytest.raises(CommandError, match=message):
        history.push(command)
    assert events == [] and not doc.dirty and not history.can_undo


def test_rename_layer_and_blob(doc, history):
    history.push(RenameLayer(1, "first"))
    assert doc.layer_names() == ["data", "first", "relu1"]
    history.push(RenameBlob("conv1", "features"))
    assert [list(layer.top) for layer in doc.net.layer] == [["data"], ["features"], ["features"]]
    assert list(doc.layer(2).bottom) == ["features"]
    history.undo()
    history.undo()
    assert doc.net_text() == NET


def test_replace_net_from_text_keeps_text_and_undoes(doc, history, events):
    text = NET.replace("num_output: 4", "num_output: 8") + "# trailing note\n"
    history.push(ReplaceNet.from_text(text))
    assert doc.layer(1).convolution_param.num_output == 8
    assert doc.net_text() == text
    assert kinds(events) == ["net_replaced", "dirty_changed"]
    history.undo()
    assert doc.layer(1).convolution_param.num_output == 4 and doc.net_text() == NET


def test_replace_net_from_bad_text_raises_with_location():
    with pytest.raises(FormatError) as info:
        ReplaceNet.from_text('name: "x"\nlayer {\n  nme: "y"\n}\n', "edit.prototxt")
    assert (info.value.line, info.value.column) == (3, 3)


def test_replace_layer_and_net_field(doc, history):
    history.push(ReplaceLayer(2, default_layer("Sigmoid", "sig")))
    assert doc.layer(2).type == "Sigmoid"
    history.push(SetNetField("force_backward", True))
    assert doc.net.force_backward
    history.undo()
    assert not doc.net.force_backward and doc.layer(2).type == "Sigmoid"


def test_solver_commands(doc, history, events):
    history.push(SetSolverField("base_lr", 0.1))
    history.push(SetSolverField("lr_policy", "step"))
    history.push(SetSolverField("solver_mode", "GPU"))
    assert doc.solver.base_lr == pytest.approx(0.1)
    assert doc.solver.solver_mode == caffe_pb2.SolverParameter.GPU
    assert doc.solver_dirty and not doc.net_dirty
    assert kinds(events)[:2] == ["solver_changed", "dirty_changed"]
    for _ in range(3):
        history.undo()
    assert doc.solver == caffe_pb2.SolverParameter() and not doc.dirty


def test_compound_is_one_step_and_validated_as_a_whole(doc, history):
    layer = doc.new_layer("Pooling")
    history.push(Compound([AddLayer(layer), Connect(3, "conv1"), RenameLayer(3, "p")], "Paste"))
    assert doc.layer(3).name == "p" and list(doc.layer(3).bottom) == ["conv1"]
    history.undo()
    assert doc.layer_names() == ["data", "conv1", "relu1"] and not doc.dirty
    with pytest.raises(CommandError):
        history.push(Compound([AddLayer(layer), Connect(7, "conv1")]))
    assert doc.layer_names() == ["data", "conv1", "relu1"]


def test_dirty_follows_the_saved_state(doc, history, tmp_path):
    history.push(SetLayerField(1, "convolution_param.num_output", 16))
    doc.save_net()
    assert not doc.dirty
    history.undo()
    assert doc.dirty  # the file on disk has 16
    history.redo()
    assert not doc.dirty
    history.push(SetLayerField(1, "convolution_param.num_output", 32))
    assert doc.dirty


def test_save_as_changes_path_and_round_trips(doc, history, tmp_path, events):
    history.push(AddLayer(doc.new_layer("InnerProduct")))
    target = tmp_path / "out" / "saved.prototxt"
    target.parent.mkdir()
    assert doc.save_net(target) == str(target)
    assert "path_changed" in kinds(events) and not doc.dirty
    again = Document()
    again.open_net(target)
    assert again.net == doc.net
    assert not list(target.parent.glob(".*tmp"))  # the atomic write left no temporary behind


def test_open_failure_leaves_the_document(doc, tmp_path):
    bad = tmp_path / "bad.prototxt"
    bad.write_text("layer { name: }")
    with pytest.raises(FormatError):
        doc.open_net(bad)
    assert doc.layer_names() == ["data", "conv1", "relu1"]


def test_loading_clears_history(doc, history):
    history.push(RemoveLayer(0))
    doc.load_net(caffe_pb2.NetParameter(name="empty"))
    assert not history.can_undo and not doc.dirty


def test_a_new_document_needs_a_path_to_save():
    with pytest.raises(ValueError, match="no file"):
        Document().save_net()


def test_unique_names():
    assert unique_name({"conv1", "conv2"}, "conv1") == "conv3"
    assert unique_name(set(), "conv1") == "conv1"
    assert unique_name({"loss"}, "loss") == "loss2"
    assert unique_name({"loss", "loss2"}, "loss") == "loss3"
    doc = Document()
    names = []
    for _ in range(3):
        layer = doc.new_layer("ReLU")
        names.append(layer.name)
        History(doc).push(AddLayer(layer))
    assert names == ["relu1", "relu2", "relu3"]


def test_default_layers():
    conv = default_layer("Convolution", "conv1")
    p = conv.convolution_param
    assert (p.num_output, list(p.kernel_size), p.weight_filler.type, p.bias_filler.type) == (
        32,
        [3],
        "xavier",
        "constant",
    )
    assert list(conv.top) == ["conv1"] and not conv.bottom
    pool = default_layer("Pooling", "pool1").pooling_param
    assert (pool.pool, pool.kernel_size, pool.stride) == (caffe_pb2.PoolingParameter.MAX, 2, 2)
    assert list(default_layer("Data", "d").top) == ["data", "label"]
    assert not default_layer("Silence", "s").top
    assert default_layer("SomethingNew", "x").type == "SomethingNew"


def test_the_document_is_qt_free():
    import subprocess

    modules = "app.document, app.commands, app.files, app.layer_defaults"
    code = f"import sys, {modules}; print(any('PySide6' in m for m in sys.modules))"
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo)
    assert out.stdout.strip() == "False"
