"""The graph editor driven as a user drives it: real mouse presses, moves and releases on the canvas,
real key presses; every edit lands in the document as one undoable command."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from graph_view_support import FORK, LOOSE, net_of
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLineEdit

from app import commands
from app.document import Document
from app.selection import Selection
from app.undo import UndoStack
from graph_view.editor import GraphEditor
from graph_view.view import MIME_LAYER_TYPE

LEFT, NO_MOD = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier


@dataclass
class Rig:
    editor: GraphEditor
    doc: Document
    stack: UndoStack
    selection: Selection

    @property
    def view(self):
        return self.editor.view

    @property
    def scene(self):
        return self.editor.scene

    def at(self, scene_point: QPointF) -> QPoint:
        return self.view.mapFromScene(scene_point)

    def header(self, key: str) -> QPoint:
        node = self.scene.nodes[key]
        return self.at(node.mapToScene(node.header_rect().center()))

    def names(self) -> list[str]:
        return [layer.name for layer in self.doc.net.layer]

    def settle(self) -> None:
        self.editor.sync()


@pytest.fixture
def rig(qtbot):
    def make(text: str = LOOSE, path=None) -> Rig:
        doc = Document()
        if path is not None:
            doc.open_net(path)
        else:
            doc.load_net(net_of(text))
        stack = UndoStack(doc)
        selection = Selection(doc)
        editor = GraphEditor(doc, stack.push_command, selection, commands.GraphCommands())
        qtbot.addWidget(editor)
        editor.resize(1100, 760)
        editor.show()
        qtbot.waitExposed(editor)
        editor.activateWindow()
        qtbot.waitActive(editor)  # key shortcuts need the active window
        editor.view.setFocus()
        editor.sync()
        editor.view.fit()
        return Rig(editor, doc, stack, selection)

    return make


def drag(viewport, start: QPoint, end: QPoint, steps: int = 6) -> None:
    """A real mouse drag: press, several moves with the button held, release."""
    QTest.mousePress(viewport, LEFT, NO_MOD, start)
    for i in range(1, steps + 1):
        QTest.mouseMove(viewport, start + (end - start) * i / steps)
    QTest.mouseRelease(viewport, LEFT, NO_MOD, end)


def drop_layer_type(rig: Rig, layer_type: str, where: QPoint) -> None:
    """What a drag from the palette delivers to the canvas (see the note in the test)."""
    data = QMimeData()
    data.setData(MIME_LAYER_TYPE, layer_type.encode())
    viewport = rig.view.viewport()
    action = Qt.DropAction.CopyAction
    for event in (
        QDragEnterEvent(where, action, data, LEFT, NO_MOD),
        QDragMoveEvent(where, action, data, LEFT, NO_MOD),
        QDropEvent(QPointF(where), action, data, LEFT, NO_MOD),
    ):
        QApplication.sendEvent(viewport, event)
        assert event.isAccepted()


def test_dropping_a_layer_type_adds_it_where_dropped_and_undoes(rig):
    # A real QDrag cannot run offscreen (QDrag.exec waits for the platform's own drag loop), so the
    # canvas gets the palette's drag events themselves: enter, move, drop, with the palette's mime type.
    r = rig()
    where = r.at(r.scene.nodes["conv1"].sceneBoundingRect().topRight() + QPointF(220, 0))
    dropped_at = r.view.mapToScene(where)
    drop_layer_type(r, "Convolution", where)
    assert r.names() == ["input", "conv1", "ip1", "conv2"]
    added = r.doc.net.layer[3]
    assert added.convolution_param.num_output == 32 and added.top[:] == ["conv2"]  # the defaults
    assert r.selection.layers == (3,)
    r.settle()
    box = r.scene.nodes["conv2"]
    assert (box.pos() - dropped_at).manhattanLength() < 2  # centred where it was dropped
    assert box.isSelected()
    r.stack.undo()
    assert r.names() == ["input", "conv1", "ip1"]
    r.stack.redo()
    assert r.names()[-1] == "conv2"


def test_dropping_is_refused_in_the_split_overlay(rig):
    r = rig(FORK)
    r.editor.toolbar.splits.click()
    data = QMimeData()
    data.setData(MIME_LAYER_TYPE, b"ReLU")
    event = QDragEnterEvent(QPoint(10, 10), Qt.DropAction.CopyAction, data, LEFT, NO_MOD)
    QApplication.sendEvent(r.view.viewport(), event)
    assert event.isAccepted()  # taken, only to say why nothing is added
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data, LEFT, NO_MOD)
    QApplication.sendEvent(r.view.viewport(), drop)
    assert len(r.doc.net.layer) == 5 and "read-only" in r.editor.status.text()


def test_dragging_from_a_top_port_to_a_box_connects_and_undoes(rig):
    r = rig()
    port = r.scene.nodes["conv1"].top_ports[0]
    drag(r.view.viewport(), r.at(port.scenePos()), r.header("ip1"))
    assert list(r.doc.net.layer[2].bottom) == ["conv1"]
    assert r.stack.undoText() == "Connect 'conv1'"
    r.settle()
    assert [(w.edge.src, w.edge.dst) for w in r.scene.wires] == [("input", "conv1"), ("conv1", "ip1")]
    r.stack.undo()
    assert list(r.doc.net.layer[2].bottom) == []
    r.stack.redo()
    assert list(r.doc.net.layer[2].bottom) == ["conv1"]


def test_connecting_into_an_earlier_layer_moves_it_after_the_producer(rig):
    r = rig()
    source = r.scene.nodes["ip1"].top_ports[0]
    target = r.scene.nodes["conv1"].bottom_ports[0]
    drag(r.view.viewport(), r.at(source.scenePos()), r.at(target.scenePos()))
    assert r.names() == ["input", "ip1", "conv1"]  # Caffe runs layers in order: conv1 now after ip1
    assert list(r.doc.net.layer[2].bottom) == ["ip1"]
    r.stack.undo()  # one step: the move and the wire
    assert r.names() == ["input", "conv1", "ip1"] and list(r.doc.net.layer[1].bottom) == ["data"]
    r.stack.redo()
    assert r.names() == ["input", "ip1", "conv1"]


def test_delete_a_wire_then_a_box_with_its_in_place_band(rig, qtbot):
    r = rig(FORK)
    wire = next(w for w in r.scene.wires if w.edge.dst == "sum" and w.edge.dst_slot == 1)
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.at(wire.path().pointAtPercent(0.5)))
    assert wire.isSelected()
    QTest.keyClick(r.view.viewport(), Qt.Key.Key_Delete)
    assert list(r.doc.net.layer[4].bottom) == ["conv_a"]
    r.settle()
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.header("conv_b"))
    assert r.selection.layers == (2,)
    QTest.keyClick(r.view.viewport(), Qt.Key.Key_Delete)
    assert r.names() == ["input", "conv_a", "sum"]  # relu_b went with the box it is drawn in
    r.stack.undo()
    assert r.names() == ["input", "conv_a", "conv_b", "relu_b", "sum"]
    r.stack.undo()
    assert list(r.doc.net.layer[4].bottom) == ["conv_a", "conv_b"]


def test_rename_in_place_renames_the_layer_and_its_blob(rig, qtbot):
    r = rig(FORK)
    QTest.mouseDClick(r.view.viewport(), LEFT, NO_MOD, r.header("conv_b"))
    edit = r.view.viewport().findChild(QLineEdit, "renameEdit")
    assert edit is not None and edit.isVisible() and edit.text() == "conv_b"
    edit.selectAll()
    QTest.keyClicks(edit, "branch")
    QTest.keyClick(edit, Qt.Key.Key_Return)
    layers = r.doc.net.layer
    assert layers[2].name == "branch" and list(layers[2].top) == ["branch"]
    assert list(layers[3].bottom) == ["branch"] and list(layers[4].bottom) == ["conv_a", "branch"]
    r.stack.undo()
    assert layers[2].name == "conv_b" and list(layers[4].bottom) == ["conv_a", "conv_b"]
    r.settle()
    QTest.mouseDClick(r.view.viewport(), LEFT, NO_MOD, r.header("conv_b"))
    edit = r.view.viewport().findChild(QLineEdit, "renameEdit")
    edit.selectAll()
    QTest.keyClicks(edit, "conv_a")  # taken: the document refuses, the canvas says why
    QTest.keyClick(edit, Qt.Key.Key_Return)
    assert layers[2].name == "conv_b" and "already exists" in r.editor.status.text()


def test_in_place_bands_unfold_and_select_their_own_layer(rig):
    r = rig(
        FORK.replace(
            'layer { name: "sum"',
            'layer { name: "bn_b" type: "BatchNorm" bottom: "conv_b" top: "conv_b" }\nlayer { name: "sum"',
        )
    )
    box = r.scene.nodes["conv_b"]
    assert box.chips is not None and box.band_items == []  # two in-place layers: folded into chips
    folded = box.height
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.at(box.chips.mapToScene(box.chips.rect.center())))
    box = r.scene.nodes["conv_b"]
    assert [b.band.layer.name for b in box.band_items] == ["relu_b", "bn_b"] and box.height > folded
    band = box.band_items[1]
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.at(band.mapToScene(band.rect.center())))
    assert r.selection.layers == (4,)  # bn_b itself, not its box
    fold = next(c for c in box.childItems() if type(c).__name__ == "FoldItem")
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.at(fold.mapToScene(fold.rect.center())))
    assert r.scene.nodes["conv_b"].chips is not None  # folded again


def test_rubber_band_selects_boxes_and_the_selection_is_shared(rig):
    r = rig(FORK)
    a, b = r.scene.nodes["conv_a"], r.scene.nodes["conv_b"]
    box = a.sceneBoundingRect().united(b.sceneBoundingRect())
    start = r.at(box.topLeft() + QPointF(-30, -12))
    drag(r.view.viewport(), start, r.at(box.bottomRight() + QPointF(30, 12)))
    assert set(r.selection.layers) == {1, 2, 3}  # conv_a, conv_b and its band relu_b
    r.selection.select(4)
    assert r.scene.nodes["sum"].isSelected() and not a.isSelected()


def test_duplicate_copy_paste_and_cut_rename_and_undo_as_one_step(rig):
    r = rig(FORK)
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.header("conv_b"))
    QTest.keyClick(r.view.viewport(), Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert r.names()[-2:] == ["conv_b2", "relu_b2"]
    dup, relu = r.doc.net.layer[5], r.doc.net.layer[6]
    assert list(dup.bottom) == ["data"] and list(dup.top) == ["conv_b2"]  # hangs off the same input
    assert list(relu.bottom) == list(relu.top) == ["conv_b2"]  # still in place, on the copy
    assert r.selection.layers == (5, 6)
    r.stack.undo()
    assert len(r.doc.net.layer) == 5
    r.settle()
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.header("conv_a"))
    QTest.keyClick(r.view.viewport(), Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert 'name: "conv_a"' in QApplication.clipboard().text()  # plain prototxt for any text editor
    QTest.keyClick(r.view.viewport(), Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert r.names()[-1] == "conv_a2"
    r.settle()
    QTest.mouseClick(r.view.viewport(), LEFT, NO_MOD, r.header("conv_a2"))
    QTest.keyClick(r.view.viewport(), Qt.Key.Key_X, Qt.KeyboardModifier.ControlModifier)
    assert "conv_a2" not in r.names()
    r.stack.undo()
    assert "conv_a2" in r.names()


def test_split_overlay_shows_caffes_split_layer(rig):
    r = rig(FORK)
    assert "data_input_0_split" not in r.scene.nodes
    r.editor.toolbar.splits.click()
    split = r.scene.nodes["data_input_0_split"]
    assert split.node.generated and split.node.layer.type == "Split"
    wires = {(w.edge.src, w.edge.blob, w.edge.dst) for w in r.scene.wires}
    assert ("data_input_0_split", "data_input_0_split_0", "conv_a") in wires
    assert ("data_input_0_split", "data_input_0_split_1", "conv_b") in wires
    note = r.editor.mode_note  # a badge on the canvas, clear of the toolbar row
    assert not r.scene.editable and note.isVisible() and "read-only" in note.text()
    r.editor.toolbar.splits.click()
    assert "data_input_0_split" not in r.scene.nodes and r.scene.editable and not note.isVisible()


def test_train_test_switch(rig):
    from graph_view_support import EXAMPLES

    r = rig(path=EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    assert "accuracy" not in r.scene.nodes
    r.editor.toolbar.test.click()
    assert "accuracy" in r.scene.nodes and r.scene.nodes["mnist"].index == 1
    r.editor.toolbar.train.click()
    assert "accuracy" not in r.scene.nodes and r.scene.nodes["mnist"].index == 0


def test_problem_badge_tooltip_and_list_click_selects(rig, qtbot):
    r = rig(FORK.replace('bottom: "conv_a" bottom: "conv_b"', 'bottom: "conv_a" bottom: "conv_c"'))
    node = r.scene.nodes["sum"]
    assert "bottom 'conv_c' is not produced" in node.toolTip() and node.bottom_ports[1].dangling
    listing = r.editor.problems
    assert listing.isVisible() and listing.count() == 1
    item = listing.item(0)
    QTest.mouseClick(listing.viewport(), LEFT, NO_MOD, listing.visualItemRect(item).center())
    assert r.selection.layers == (4,) and node.isSelected()


def test_moved_boxes_are_document_state_written_only_on_save(rig, tmp_path):
    path = tmp_path / "fork.prototxt"
    path.write_text(FORK)
    r = rig(path=path)
    box = r.scene.nodes["conv_a"]
    before = box.pos()
    drag(r.view.viewport(), r.header("conv_a"), r.header("conv_a") + QPoint(-90, 40))
    moved = box.pos()
    assert (moved - before).manhattanLength() > 60
    sidecar = tmp_path / "fork.prototxt.layout.json"
    assert not sidecar.exists() and r.doc.dirty  # a drag is an edit: modified, nothing written
    assert r.stack.count() == 1 and r.stack.undoText() == "Move boxes"
    r.stack.undo()  # one undo step puts the box back
    r.settle()
    assert (r.scene.nodes["conv_a"].pos() - before).manhattanLength() < 1 and not r.doc.dirty
    r.stack.redo()
    r.settle()
    assert (r.scene.nodes["conv_a"].pos() - moved).manhattanLength() < 1
    r.doc.save_net()
    assert sidecar.is_file() and "conv_a" in sidecar.read_text() and not r.doc.dirty
    assert path.read_text() == FORK  # the prototxt stays pure Caffe
    again = rig(path=path)
    assert (again.scene.nodes["conv_a"].pos() - moved).manhattanLength() < 1
    again.editor.toolbar.relayout.click()  # forget it: the automatic layout again, one undo step
    assert (again.scene.nodes["conv_a"].pos() - before).manhattanLength() < 1
    assert again.doc.dirty and again.stack.undoText() == "Auto layout"
    assert '"conv_a"' in sidecar.read_text()  # not written until Save
    again.stack.undo()
    again.settle()
    assert (again.scene.nodes["conv_a"].pos() - moved).manhattanLength() < 1 and not again.doc.dirty
    again.stack.redo()
    again.doc.save_net()
    assert '"conv_a"' not in sidecar.read_text()


def test_the_flow_direction_is_one_undoable_edit(rig, tmp_path):
    path = tmp_path / "fork.prototxt"
    path.write_text(FORK)
    r = rig(path=path)
    up = r.scene.nodes["conv_a"].pos().y()
    r.editor.toolbar.direction_action.trigger()
    assert r.scene.downward and r.doc.layout.downward and r.doc.dirty
    assert r.stack.undoText() == "Top-down layout" and r.scene.nodes["conv_a"].pos().y() != up
    assert not (tmp_path / "fork.prototxt.layout.json").exists()
    r.stack.undo()
    r.settle()
    assert not r.scene.downward and not r.doc.dirty and not r.editor.toolbar.direction_action.isChecked()
    assert r.scene.nodes["conv_a"].pos().y() == pytest.approx(up)


def test_a_dropped_layer_keeps_its_place_once_the_net_is_saved(rig, tmp_path):
    path = tmp_path / "loose.prototxt"
    path.write_text(LOOSE)
    r = rig(path=path)
    drop_layer_type(r, "ReLU", r.header("ip1") + QPoint(0, 120))
    sidecar = tmp_path / "loose.prototxt.layout.json"
    assert not sidecar.exists()  # nothing saved yet
    r.doc.save_net()
    assert '"relu1"' in sidecar.read_text() and "relu1" in path.read_text()


def test_pasting_prototxt_text_from_anywhere(rig):
    r = rig()
    QApplication.clipboard().setText('layer { name: "drop" type: "Dropout" bottom: "ip1" top: "ip1" }')
    QTest.keyClick(r.view.viewport(), Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert r.names() == ["input", "conv1", "ip1", "drop"]
    r.settle()
    assert [b.layer.name for b in r.scene.nodes["ip1"].node.bands] == ["drop"]  # in place on ip1
