"""Opening shows the net readably: its width at a zoom where box text reads, from where the data
enters, clear of the minimap; far out, boxes become blocks with their names (semantic zoom); the
minimap follows every change and never shows for an empty canvas."""

from __future__ import annotations

import pytest
from graph_view_support import EXAMPLES, write
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtTest import QTest

from app import commands
from app.document import Document
from app.selection import Selection
from app.undo import UndoStack
from graph_view.editor import GraphEditor
from graph_view.items import FAR_NAME_PX, SIMPLE_ZOOM, far_name
from graph_view.view import READABLE


def editor_on(qtbot, path, size=(760, 620)) -> GraphEditor:
    doc = Document()
    doc.open_net(path)
    editor = GraphEditor(doc, UndoStack(doc).push_command, Selection(doc), commands)
    qtbot.addWidget(editor)
    editor.resize(*size)
    editor.show()
    qtbot.waitExposed(editor)
    qtbot.waitUntil(lambda: bool(editor.scene.nodes) and not editor._fit_pending)
    return editor


def on_screen(editor, item) -> bool:
    return editor.view.visible_scene_rect().contains(item.sceneBoundingRect().adjusted(4, 10, -10, -4))


@pytest.mark.parametrize("name", ["resnet.prototxt", "caffenet.prototxt", "mnist/lenet_train_test.prototxt"])
def test_a_tall_net_opens_readable_at_its_data_end_clear_of_the_minimap(qtbot, name):
    editor = editor_on(qtbot, EXAMPLES / name)
    view, scene = editor.view, editor.scene
    assert view.zoom() >= READABLE  # box text is legible
    entry = next(item for item in scene.nodes.values() if not item.node.bottoms)
    assert on_screen(editor, entry)  # where the data enters
    assert editor.minimap.isVisible()  # the rest is one click away
    corner = editor.minimap.geometry()
    for item in scene.nodes.values():
        box = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
        assert not corner.intersects(box), item.key  # the first picture keeps clear of the minimap


def test_a_small_net_opens_whole_and_without_a_minimap(qtbot, tmp_path):
    text = 'name: "s"\nlayer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 4 } } }\n'
    editor = editor_on(qtbot, write(tmp_path, text))
    assert all(on_screen(editor, item) for item in editor.scene.nodes.values())
    assert not editor.minimap.isVisible()


def test_an_empty_canvas_shows_no_minimap(qtbot, tmp_path):
    editor = editor_on(qtbot, EXAMPLES / "inception.prototxt")
    assert editor.minimap.isVisible()
    editor.document.load_net(type(editor.document.net)(name="untitled"), None)
    editor.sync()
    assert not editor.scene.nodes and not editor.minimap.isVisible()
    editor.view.zoom_by(3.0)
    assert not editor.minimap.isVisible()


def test_the_minimap_follows_a_box_moved_by_hand(qtbot, tmp_path):
    # A copy: a box moved by hand is written to the layout file beside the net.
    editor = editor_on(qtbot, write(tmp_path, (EXAMPLES / "inception.prototxt").read_text()))
    before = QImage(editor.minimap._image)
    shown = editor.view.visible_scene_rect()
    item = next(item for item in editor.scene.nodes.values() if shown.contains(item.pos()))
    start = editor.view.mapFromScene(item.mapToScene(item.header_rect().center()))
    viewport = editor.view.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for step in range(1, 6):
        QTest.mouseMove(viewport, start + QPoint(-40 * step, -10 * step))
    end = start + QPoint(-200, -50)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)
    qtbot.waitUntil(lambda: editor.minimap._image != before)


def test_the_minimap_can_be_switched_off(qtbot):
    editor = editor_on(qtbot, EXAMPLES / "inception.prototxt")
    editor.minimap.set_wanted(False)
    assert not editor.minimap.isVisible() and editor.minimap.reserved_width() == 0
    editor.minimap.set_wanted(True)
    assert editor.minimap.isVisible()


def test_fit_far_out_draws_blocks_with_names_that_read(qtbot):
    editor = editor_on(qtbot, EXAMPLES / "resnet.prototxt")
    editor.view.fit()
    zoom = editor.view.zoom()
    assert zoom < SIMPLE_ZOOM  # far out: the simple drawing
    nodes = editor.scene.nodes
    named = [
        k for k, item in nodes.items() if far_name(item.node.layer.name, item.width * 1.3, FAR_NAME_PX / zoom)
    ]
    assert len(named) >= 0.8 * len(editor.scene.nodes)  # (nearly) every block keeps a name
    # the picture really holds them: white text on the dark blocks (bare blocks have no white)
    image = QImage(editor.view.viewport().size(), QImage.Format.Format_RGB32)
    painter = QPainter(image)
    editor.view.render(painter)
    painter.end()
    view = editor.view
    lettered = 0
    for key in named:
        item = editor.scene.nodes[key]
        box = view.mapFromScene(item.mapRectToScene(item.rect)).boundingRect() & image.rect()
        white = sum(
            image.pixelColor(x, y).lightness() > 240
            for x in range(box.left(), box.right())
            for y in range(box.top(), box.bottom())
        )
        lettered += white >= 3
    assert lettered >= 0.6 * len(named), (lettered, len(named))


def test_far_name_keeps_a_module_branch_when_the_whole_name_is_too_long():
    assert far_name("conv1", 400, 11) == "conv1"
    assert far_name("inception_3a/3x3_reduce", 70, 11).startswith("3x")
    assert far_name("a_very_long_layer_name_that_cannot_fit", 8, 40) == ""


def wide_net() -> str:
    """GoogLeNet train_val's shape: data with a label that runs up beside a wide, tall net."""
    text = [
        'name: "wide"',
        'layer { name: "data" type: "Input" top: "data" top: "label"',
        "  input_param { shape { dim: 2 dim: 3 dim: 32 dim: 32 } shape { dim: 2 } } }",
    ]
    below = "data"
    for stage in range(6):
        branches = []
        for b in range(6):
            name = f"s{stage}b{b}"
            text.append(
                f'layer {{ name: "{name}" type: "Convolution" bottom: "{below}" top: "{name}"'
                " convolution_param { num_output: 4 kernel_size: 1 } }"
            )
            branches.append(name)
        tops = " ".join(f'bottom: "{b}"' for b in branches)
        text.append(f'layer {{ name: "cat{stage}" type: "Concat" {tops} top: "cat{stage}" }}')
        below = f"cat{stage}"
    text.append(
        f'layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "{below}" bottom: "label" top: "loss" }}'
    )
    return "\n".join(text)


def test_a_wide_net_opens_with_its_data_box_and_what_it_feeds_in_view(qtbot, tmp_path):
    editor = editor_on(qtbot, write(tmp_path, wide_net()), size=(620, 620))
    view, scene = editor.view, editor.scene
    assert view.zoom() >= READABLE
    data = scene.nodes["data"]
    assert on_screen(editor, data)
    row = scene.nodes["s0b0"].sceneBoundingRect().united(scene.nodes["s0b5"].sceneBoundingRect())
    assert not row.center().x() - 40 < data.sceneBoundingRect().center().x() < row.center().x() + 40
    # The picture leans from the data box (put aside by its label's long wire) towards the net.
    room = view.viewport().width() - view.minimap_width()
    middle = view.mapToScene(room // 2, view.viewport().height() // 2).x()
    assert abs(middle - row.center().x()) < abs(data.sceneBoundingRect().center().x() - row.center().x()) - 40
