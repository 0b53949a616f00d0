"""First launch at 1280x800: LeNet shows whole (data to loss) at a zoom where its text reads; a long
net still opens at its data end, readable, and scrolls."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF
from windows import open_window

from app.files import DEFAULT_SOLVER, EXAMPLES
from app.main_window import MainWindow
from graph_view.view import READABLE


def first_launch(qtbot, path) -> MainWindow:
    w = open_window(qtbot, path)
    qtbot.waitUntil(lambda: not w.graph._fit_pending)
    return w


def shown(window: MainWindow) -> QRectF:
    view = window.graph.view
    return view.mapToScene(view.viewport().rect()).boundingRect()


def test_lenet_shows_whole_and_readable_on_first_launch(qtbot):
    window = first_launch(qtbot, DEFAULT_SOLVER)  # what the app opens with no file named
    view, scene = window.graph.view, window.graph.scene
    names = {item.node.layer.name for item in scene.nodes.values()}
    assert {"mnist", "conv1", "pool1", "conv2", "pool2", "ip1", "ip2", "loss"} <= names
    assert view.zoom() >= READABLE, view.zoom()
    visible = shown(window)
    for item in scene.nodes.values():  # every box, data to loss, whole in the viewport
        assert visible.contains(item.sceneBoundingRect()), (item.key, item.sceneBoundingRect(), visible)
    minimap = window.graph.minimap
    if minimap.isVisible():  # nothing under it either
        for item in scene.nodes.values():
            box = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
            assert not minimap.geometry().intersects(box), item.key
    window.training.shutdown()


@pytest.mark.parametrize("name", ["resnet.prototxt", "inception.prototxt"])
def test_a_long_net_starts_at_its_data_end_readable_and_scrolls(qtbot, name):
    window = first_launch(qtbot, EXAMPLES / name)
    view, scene = window.graph.view, window.graph.scene
    assert view.zoom() >= READABLE, view.zoom()
    visible = shown(window)
    entry = scene.entry_rect()
    assert entry is not None and visible.contains(entry)  # where the data enters
    assert not all(visible.contains(item.sceneBoundingRect()) for item in scene.nodes.values())
    assert window.graph.minimap.isVisible()  # the rest is reached by scrolling, the minimap shows it
    window.training.shutdown()
