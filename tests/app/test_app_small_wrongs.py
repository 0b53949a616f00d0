"""The small wrongs of issue 13, each with the case that showed it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt
from PySide6.QtGui import QDropEvent, QTextCursor
from PySide6.QtTest import QTest
from windows import open_window

from app.examples import examples
from app.files import EXAMPLES
from graph_view import style
from graph_view.view import MIME_LAYER_TYPE


@pytest.fixture
def window(qtbot):
    w = open_window(qtbot, EXAMPLES / "mnist" / "lenet_train_test.prototxt", errors_fail=True)
    w.graph.sync()
    yield w
    w.training.shutdown()


def test_the_canvas_footer_counts_layers_as_the_status_bar_does(window):
    assert "11 layers" in window.summary.text()
    assert window.graph.totals.text().startswith("9 of 11 layers in TRAIN")  # two are TEST-only
    window.graph.set_splits(True)
    window.graph.set_phase(1)  # TEST: ip2 and label feed the accuracy and the loss: Caffe splits both
    assert window.graph.totals.text().startswith("10 of 11 layers in TEST + 2 Splits ·"), (
        window.graph.totals.text()
    )


def test_the_training_bar_reads_the_run_train_would_make_after_new_from_example(window):
    deploy = next(e for e in examples() if e.path.name == "lenet.prototxt")  # an example with no solver
    assert window.workbench.new_from_example(deploy.path)
    progress = window.training.progress
    assert progress.maximum() == 1000 and progress.text() == "0 / 1000"  # the default solver's run


def test_enter_keeps_the_indent_in_the_prototxt(qtbot, window):
    edit = window.editor.edit
    edit.setFocus()
    block = next(
        b for b in (edit.document().findBlockByNumber(i) for i in range(200)) if "num_output" in b.text()
    )
    cursor = QTextCursor(block)
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    edit.setTextCursor(cursor)
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    indent = block.text()[: len(block.text()) - len(block.text().lstrip())]
    assert edit.textCursor().block().text() == indent and indent
    brace = next(
        b for b in (edit.document().findBlockByNumber(i) for i in range(200)) if b.text().endswith("{")
    )
    cursor = QTextCursor(brace)
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    edit.setTextCursor(cursor)
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    opened = brace.text()[: len(brace.text()) - len(brace.text().lstrip())]
    assert edit.textCursor().block().text() == opened + "  "  # one step in, after an opening brace


def test_a_layer_dropped_on_the_splits_view_says_why_it_is_not_added(qtbot, window):
    window.graph.set_splits(True)
    count = len(window.doc.net.layer)
    data = QMimeData()
    data.setData(MIME_LAYER_TYPE, b"ReLU")
    view = window.graph.view
    drop = QDropEvent(
        QPointF(view.viewport().rect().center()),
        Qt.DropAction.CopyAction,
        data,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    view.dropEvent(drop)
    assert len(window.doc.net.layer) == count
    assert window.graph.status.isVisible() and "read-only" in window.graph.status.text()


def test_box_and_wire_tooltips_say_what_is_set_and_what_flows(window):
    scene = window.graph.scene
    conv = scene.nodes["conv1"]
    tip = conv.toolTip()
    for expected in (
        "conv1 (Convolution)",
        "bottom data: 64×1×28×28",
        "top conv1: 64×20×24×24",
        "params",
        "convolution_param:\n  num_output: 20",
        '  weight_filler { type: "xavier" }',
        "lr_mult",
    ):
        assert expected in tip, (expected, tip)
    wire = next(w for w in scene.wires if w.edge.dst == "conv1")
    assert "from mnist (top 0) to conv1 (bottom 0)" in wire.toolTip()
    assert "64×1×28×28" in wire.toolTip()


def test_open_recent_tells_files_of_one_name_apart_by_their_folders(qtbot, window, tmp_path):
    solver = (EXAMPLES / "mnist" / "lenet_solver.prototxt").read_text()
    net = (EXAMPLES / "mnist" / "lenet_train_test.prototxt").read_text()
    opened = []
    for folder in ("runs/one/mnist", "runs/two/mnist"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "lenet_solver.prototxt").write_text(solver)
        (tmp_path / folder / "lenet_train_test.prototxt").write_text(net)
        assert window.open_file(tmp_path / folder / "lenet_solver.prototxt")
        opened.append(str(tmp_path / folder / "lenet_solver.prototxt"))
    menu = window.workbench.recent_menu
    menu.popup(window.mapToGlobal(window.rect().center()))
    qtbot.waitUntil(menu.isVisible)
    labels = {a.data(): a.text() for a in menu.actions() if a.data()}
    menu.hide()
    assert labels[opened[1]] == "&1  lenet_solver.prototxt — two/mnist"
    assert labels[opened[0]] == "&2  lenet_solver.prototxt — one/mnist"
    assert labels[str(EXAMPLES / "mnist" / "lenet_train_test.prototxt")] == "&3  lenet_train_test.prototxt"


def test_a_split_box_clicked_shows_in_the_inspector_in_its_own_colour(qtbot, window):
    window.graph.set_splits(True)
    window.graph.set_phase(1)  # TEST: Caffe splits ip2 and label
    scene, view = window.graph.scene, window.graph.view
    qtbot.waitUntil(lambda: any(item.node.generated for item in scene.nodes.values()))
    split = next(item for item in scene.nodes.values() if item.node.layer.type == "Split")
    view.centerOn(split)
    point = view.mapFromScene(split.mapToScene(split.header_rect().center()))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    header = window.workbench.inspector.header
    assert header.title.text() == split.node.layer.name
    assert "added by Caffe" in header.subtitle.text()
    note = window.workbench.inspector.generated_text.text()
    assert "feeds 2 layers" in note and f'name: "{split.node.layer.name}"' in note
    assert split.family.colour != style.family("Concat").colour  # a copy, not a merge
    empty = view.mapFromScene(scene.itemsBoundingRect().topLeft()) - QPoint(20, 20)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, empty)
    assert header.title.text() == "LeNet"  # nothing selected: the net again


def test_the_inspectors_plus_for_a_new_top_proposes_a_name_nothing_uses(qtbot, window):
    names = [layer.name for layer in window.doc.net.layer]
    index = names.index("mnist")  # TRAIN data: tops data and label
    window.selection.select(index)
    inspector = window.workbench.inspector
    tops = inspector.editor("top")
    qtbot.mouseClick(tops.add_button, Qt.MouseButton.LeftButton)
    new = list(window.doc.net.layer[index].top)
    assert new[:2] == ["data", "label"] and len(new) == 3
    others = [layer for i, layer in enumerate(window.doc.net.layer) if i != index]
    used = {b for layer in others for b in [*layer.top, *layer.bottom]}
    assert new[2] == "label_1" and new[2] not in used and not inspector.message.isVisible()
    qtbot.mouseClick(inspector.editor("top").add_button, Qt.MouseButton.LeftButton)
    assert list(window.doc.net.layer[index].top)[3] == "label_2"


def test_how_the_net_starts_drops_the_last_nets_verdict_when_another_opens(qtbot, window, tmp_path):
    broken = tmp_path / "broken.prototxt"
    broken.write_text(
        'name: "broken"\n'
        'layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 4 } } }\n'
        'layer { name: "r" type: "ReLU" bottom: "nowhere" top: "r" }\n'
    )
    assert window.open_file(broken)
    window.net_start_dock.raise_()
    start = window.net_start_dock.widget()
    qtbot.waitUntil(lambda: "could not run" in start.summary.text(), timeout=60000)
    assert window.open_file(EXAMPLES / "mnist" / "lenet.prototxt")
    assert "could not run" not in start.summary.text() and "Running LeNet" in start.summary.text()
    qtbot.waitUntil(lambda: start.results is not None, timeout=60000)
    assert all(r.error is None for r in start.results) and "could not run" not in start.summary.text()


def test_the_status_bars_message_is_whole_on_hover(qtbot, window, tmp_path):
    long_name = "examples_siamese_mnist_siamese_train_test_with_a_long_name.prototxt"
    (tmp_path / long_name).write_text((EXAMPLES / "mnist" / "lenet.prototxt").read_text())
    assert window.open_file(tmp_path / long_name)
    bar = window.statusBar()
    assert bar.currentMessage() == f"Opened net {long_name}" and bar.toolTip() == bar.currentMessage()
