"""The shared selection follows the document's edits."""

from __future__ import annotations

from google.protobuf import text_format
from undo_history import History

from app.commands import AddLayer, MoveLayer, RemoveLayer
from app.document import Document
from app.selection import Selection
from proto import caffe_pb2

NET = "".join(f'layer {{ name: "l{i}" type: "ReLU" }}\n' for i in range(5))


def setup():
    doc = Document(text_format.Parse(NET, caffe_pb2.NetParameter()))
    return doc, History(doc), Selection(doc)


def name(doc, index):
    return doc.net.layer[index].name


def test_select_emits_and_clamps():
    doc, _, sel = setup()
    seen = []
    sel.changed.connect(seen.append)
    sel.select([3, 1, 9])
    assert sel.layers == (3, 1) and sel.current == 1
    assert seen == [(3, 1)]
    sel.select([3, 1])
    assert len(seen) == 1  # no change, no signal


def test_selection_tracks_insertions_removals_and_moves():
    doc, history, sel = setup()
    sel.select([2, 4])
    history.push(AddLayer(caffe_pb2.LayerParameter(name="new", type="ReLU"), 0))
    assert [name(doc, i) for i in sel.layers] == ["l2", "l4"]
    history.push(RemoveLayer(doc.index_of("l4")))
    assert [name(doc, i) for i in sel.layers] == ["l2"]
    history.push(MoveLayer(doc.index_of("l2"), 0))
    assert [name(doc, i) for i in sel.layers] == ["l2"]
