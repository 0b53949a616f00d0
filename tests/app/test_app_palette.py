"""The palette: every registered type by family, search, drag with the layer-type mime data, add."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from undo_history import History

from app.commands import AddLayer
from app.document import Document
from app.palette import MIME_TYPE, Palette, PaletteTree
from app.selection import Selection
from engine.layers import layer_types
from proto.textio import parse_net

NET = """name: "n"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 } }
"""


@pytest.fixture
def palette(qtbot):
    doc = Document(parse_net(NET))
    history = History(doc)
    widget = Palette(doc, Selection(doc), history.push)
    widget.history = history
    qtbot.addWidget(widget)
    widget.resize(240, 700)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def item_for(palette: Palette, layer_type: str):
    return next(i for i in palette._type_items() if i.data(0, Qt.ItemDataRole.UserRole) == layer_type)


def double_click(palette: Palette, item) -> None:
    """A press and release, then the double click (item views act on the second press's index)."""
    at = palette.tree.visualItemRect(item).center()
    QTest.mouseClick(palette.tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)
    QTest.mouseDClick(palette.tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)


def test_every_registered_type_appears_once_under_its_family(palette):
    tree = palette.tree
    families = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
    assert families[:3] == ["Data", "Vision", "Pooling"] and "Loss & output" in families
    assert sorted(palette.visible_types()) == sorted(layer_types())
    vision = tree.topLevelItem(1)
    assert [vision.child(i).text(0) for i in range(vision.childCount())][:3] == [
        "Convolution",
        "Deconvolution",
        "InnerProduct",
    ]
    assert "fully connected" in item_for(palette, "InnerProduct").toolTip(0).lower()


def test_search_filters_as_you_type(qtbot, palette):
    qtbot.keyClicks(palette.search, "fc")
    assert palette.visible_types() == ["InnerProduct"]
    assert palette.tree.currentItem().text(0) == "InnerProduct"
    palette.search.clear()
    qtbot.keyClicks(palette.search, "loss")
    shown = palette.visible_types()
    assert "SoftmaxWithLoss" in shown and "EuclideanLoss" in shown and "Convolution" not in shown
    hidden_groups = [palette.tree.topLevelItem(i).isHidden() for i in range(palette.tree.topLevelItemCount())]
    assert hidden_groups.count(False) == 1  # only "Loss & output" is left
    palette.search.clear()
    qtbot.keyClicks(palette.search, "no such layer")
    assert palette.visible_types() == []
    palette.search.clear()
    assert len(palette.visible_types()) == len(layer_types())


def test_a_drag_carries_the_layer_type(qtbot, palette, monkeypatch):
    drags = []
    monkeypatch.setattr(
        PaletteTree, "exec_drag", lambda self, drag: drags.append(drag) or Qt.DropAction.CopyAction
    )
    tree = palette.tree
    item = item_for(palette, "Pooling")
    tree.scrollToItem(item)
    start = tree.visualItemRect(item).center()
    viewport = tree.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    end = start + QPoint(QApplication.startDragDistance() * 3, 4)
    for point in (start + QPoint(2, 1), end):  # QTest.mouseMove sends no buttons: post real moves
        move = QMouseEvent(
            QEvent.Type.MouseMove,
            QPointF(point),
            QPointF(viewport.mapToGlobal(point)),
            Qt.MouseButton.NoButton,
            Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.NoModifier,
        )
        QApplication.sendEvent(viewport, move)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)
    assert len(drags) == 1
    mime = drags[0].mimeData()
    assert mime.hasFormat(MIME_TYPE) and bytes(mime.data(MIME_TYPE)).decode() == "Pooling"
    assert mime.text() == "Pooling" and not drags[0].pixmap().isNull()
    assert len(palette.doc.net.layer) == 2  # a drag adds nothing by itself: the canvas does, on drop


def test_double_click_adds_after_the_selection_wired_to_it(qtbot, palette):
    palette.selection.select(1)
    item = item_for(palette, "ReLU")
    palette.tree.scrollToItem(item)
    double_click(palette, item)
    doc = palette.doc
    assert [layer.name for layer in doc.net.layer] == ["data", "conv1", "relu1"]
    assert list(doc.layer(2).bottom) == list(doc.layer(2).top) == ["conv1"]  # in place, as Caffe's nets do
    assert palette.selection.current == 2

    item = item_for(palette, "Convolution")
    palette.tree.scrollToItem(item)
    double_click(palette, item)
    conv = doc.layer(3)
    assert conv.name == "conv2" and list(conv.bottom) == ["conv1"] and list(conv.top) == ["conv2"]
    param = conv.convolution_param
    assert (param.num_output, list(param.kernel_size)) == (32, [3])
    assert (param.weight_filler.type, param.bias_filler.type) == ("xavier", "constant")
    palette.history.undo()
    palette.history.undo()
    assert [layer.name for layer in doc.net.layer] == ["data", "conv1"]


def test_enter_in_the_search_adds_the_best_match_at_the_end(qtbot, palette):
    qtbot.keyClicks(palette.search, "pool")
    qtbot.keyClick(palette.search, Qt.Key.Key_Return)
    assert palette.doc.layer(2).type == "Pooling" and palette.doc.layer(2).pooling_param.kernel_size == 2
    assert not palette.doc.layer(2).bottom  # nothing was selected: left to wire
    assert isinstance(palette.history._done[-1], AddLayer)
