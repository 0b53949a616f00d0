"""Real nets without their data, in the window: a GoogLeNet-like train_val whose LMDB is absent shows
a shape on every wire, marked "assumed"; a CIFAR-like net with no mean file asks, in the inspector,
for the shape to assume, and once it is typed (kept in the layout sidecar, never in the prototxt)
every wire, parameter count and FLOP figure follows. The warnings' full text is reachable."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gestures import retype
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

from app.main_window import MainWindow
from graph_view.wires import BlobLabel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "graph_view"))
from real_nets import CIFAR_DEPLOY, CIFAR_TRAIN_TEST, write_cifar, write_googlenet

LEFT, NO_MOD = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch) -> MainWindow:
    monkeypatch.chdir(tmp_path)  # the nets' relative sources are absent, as after a download
    monkeypatch.setenv("BARISTA_DATA_ROOT", str(tmp_path / "no-data-here"))
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: pytest.fail(f"error dialog: {args}")
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    return w


def _open(qtbot, window: MainWindow, path: Path) -> None:
    assert window.open_file(path)
    window.graph.sync()
    qtbot.waitUntil(lambda: "data" in window.graph.scene.nodes or "cifar" in window.graph.scene.nodes)


def _labels(window: MainWindow) -> list[BlobLabel]:
    return [i for i in window.graph.scene.items() if isinstance(i, BlobLabel)]


def _click_box(qtbot, window: MainWindow, key: str) -> None:
    graph = window.graph
    node = graph.scene.nodes[key]
    graph.view.centerOn(node)
    point = graph.view.mapFromScene(node.mapToScene(node.header_rect().center() + QPointF(-20, 0)))
    QTest.mouseClick(graph.view.viewport(), LEFT, NO_MOD, point)
    qtbot.waitUntil(lambda: window.selection.current == graph.scene.graph.index_of(key))


def test_a_googlenet_like_train_val_without_its_lmdb_shows_every_shape(qtbot, window, tmp_path):
    _open(qtbot, window, write_googlenet(tmp_path, deploy=False))
    scene = window.graph.scene
    labels = _labels(window)
    assert labels and all(label.shape_text for label in labels)  # a shape on every wire
    data = {label.name: label for label in labels if label.port.node.key == "data"}
    assert data["data"].text() == "data  32×3×224×224 assumed" and data["label"].assumed
    assert not any(label.assumed for label in labels if label.port.node.key != "data")
    assert ("assumed", "shapes assumed from its fields") in scene.nodes["data"].lines
    totals = window.graph.totals.text()
    assert "shapes unknown" not in totals and "without shapes" not in totals and "params" in totals
    problem = next(p for p in window.graph.problems.problems if p.key == "data")
    assert problem.message.endswith(
        "shapes assumed from the layer's 3 mean_values, crop_size 224 and batch_size 32"
    )
    tip = scene.nodes["data"].toolTip()
    assert "ilsvrc12_train_lmdb" in tip and "assumed from the layer's 3 mean_values" in tip
    # the status bar's totals (an engine Net) follow the same assumption
    status = window.workbench.totals
    qtbot.waitUntil(lambda: "assumed input: data" in status.text(), timeout=30000)
    assert status.totals is not None and status.totals.params == scene.graph.total_params


def test_a_cifar_like_net_takes_the_shape_typed_in_the_inspector(qtbot, window, tmp_path):
    path = write_cifar(tmp_path, deploy=False)
    _open(qtbot, window, path)
    scene = window.graph.scene
    assert scene.graph.shapes["conv1"].tops == [None]
    box = window.workbench.assumed_shape
    assert not box.isVisible()
    _click_box(qtbot, window, "cifar")
    qtbot.waitUntil(box.isVisible)
    assert "--input-shape data=N,C,H,W" in box.why.text() and "cannot read the mean file" in box.why.text()
    retype(qtbot, box.fields["data"], "100,3,32,32")
    qtbot.waitUntil(lambda: scene.graph.shapes["conv1"].tops == [(100, 32, 32, 32)])
    assert all(None not in s.tops for s in scene.graph.shapes.values())
    assert scene.graph.total_params == 145578
    status = window.workbench.totals
    qtbot.waitUntil(lambda: status.totals is not None and status.totals.params == 145578, timeout=30000)
    assert "145.6 k params" in window.graph.totals.text() or "146 k params" in window.graph.totals.text()
    assert ("assumed", "shapes assumed (typed)") in scene.nodes["cifar"].lines
    # one undoable edit of the layout, never of the net; written beside the net only on Save
    assert window.isWindowModified() and window.undo_action.text() == "&Undo Assume an input shape"
    assert not Path(f"{path}.layout.json").exists()
    assert "100,3,32,32" not in window.doc.net_text() and window.doc.net_text().count("dim:") == 0
    assert window.save()
    assert path.read_text().strip() == CIFAR_TRAIN_TEST.strip()  # the user's own net, as it was
    kept = json.loads(Path(f"{path}.layout.json").read_text())
    assert kept["input_shapes"] == {"data": [100, 3, 32, 32]}
    window.undo()
    qtbot.waitUntil(lambda: scene.graph.shapes["conv1"].tops == [None])
    window.redo()
    qtbot.waitUntil(lambda: scene.graph.shapes["conv1"].tops == [(100, 32, 32, 32)])
    # a shape that is not one is refused in words, and changes nothing
    retype(qtbot, box.fields["data"], "100,3,x")
    assert "is not a list of whole numbers" in box.error.text() and box.error.isVisible()
    assert scene.data_hints.typed == {"data": (100, 3, 32, 32)}


def test_the_typed_shape_comes_back_with_the_net(qtbot, window, tmp_path):
    path = write_cifar(tmp_path, deploy=False)
    Path(f"{path}.layout.json").write_text(
        json.dumps({"version": 1, "input_shapes": {"data": [8, 3, 32, 32]}})
    )
    _open(qtbot, window, path)
    assert window.graph.scene.graph.shapes["ip2"].tops == [(8, 10)]


def test_a_deploy_net_beside_gives_the_shapes_and_says_so(qtbot, window, tmp_path):
    _open(qtbot, window, write_cifar(tmp_path))
    scene = window.graph.scene
    assert all(None not in s.tops for s in scene.graph.shapes.values())
    assert ("assumed", "shapes assumed from cifar10_quick.prototxt") in scene.nodes["cifar"].lines


def test_the_leveldb_warning_is_complete_in_the_problems_list(qtbot, window, tmp_path):
    path = tmp_path / "siamese.prototxt"
    path.write_text(
        'layer { name: "pair_data" type: "Data" top: "pair_data" top: "sim"\n'
        '  data_param { source: "examples/siamese/mnist_siamese_train_leveldb" batch_size: 64\n'
        "    backend: LEVELDB } }\n"
        'layer { name: "ip" type: "InnerProduct" bottom: "pair_data" top: "ip"\n'
        "  inner_product_param { num_output: 2 } }\n"
    )
    assert window.open_file(path)
    window.graph.sync()
    problems = window.graph.problems
    row = next(problems.item(i) for i in range(problems.count()) if "LEVELDB" in problems.item(i).text())
    advice = "copy its records into an LMDB, key by key"  # not convert_imageset: that reads images
    assert advice in row.toolTip() and advice in row.text()


def test_bvlcs_cifar10_solver_opens_with_its_net_named_from_the_caffe_root(qtbot, window, tmp_path):
    net = write_cifar(tmp_path / "caffe")
    assert window.open_file(net.parent / "cifar10_quick_solver.prototxt")
    assert window.doc.net_path == str(net) and window.doc.net.name == "CIFAR10_quick"
    window.graph.sync()
    assert all(None not in s.tops for s in window.graph.scene.graph.shapes.values())  # its deploy net


def test_a_solver_whose_net_is_nowhere_says_where_it_looked(qtbot, window, tmp_path):
    net = write_cifar(tmp_path / "caffe")
    net.unlink()
    errors: list[tuple[str, str]] = []
    window.show_error = lambda title, text: errors.append((title, text))
    assert not window.open_file(net.parent / "cifar10_quick_solver.prototxt")
    ((_title, text),) = errors
    assert "net 'examples/cifar10/cifar10_quick_train_test.prototxt' not found: tried " in text
    assert str(net) in text and "Errno" not in text and "\n" not in text


def test_the_status_totals_need_no_mean_file_and_take_the_assumed_inputs(tmp_path, monkeypatch):
    import lmdb

    from app.net_stats import net_totals
    from proto import caffe_pb2, textio

    monkeypatch.chdir(tmp_path)
    net = textio.read_net(write_cifar(tmp_path, deploy=False))
    with pytest.raises(Exception, match="cannot open the LMDB"):
        net_totals(net)  # no data, no assumption: the engine's own reason
    assert net_totals(net, {"cifar": [(100, 3, 32, 32), (100,)]}).params == 145578
    env = lmdb.open(str(tmp_path / "examples/cifar10/cifar10_train_lmdb"), map_size=1 << 22)
    datum = caffe_pb2.Datum(channels=3, height=32, width=32, data=bytes(3 * 32 * 32), label=1)
    with env.begin(write=True) as txn:
        txn.put(b"00000000", datum.SerializeToString())
    env.close()
    totals = net_totals(net)  # the LMDB is read; the missing mean file costs nothing
    assert totals.params == 145578 and totals.flops > 0


def test_shapes_read_from_the_data_are_kept_on_save_and_used_when_it_is_gone(qtbot, window, tmp_path):
    import lmdb

    from proto import caffe_pb2

    path = write_cifar(tmp_path, deploy=False)
    source = tmp_path / "examples/cifar10/cifar10_train_lmdb"
    env = lmdb.open(str(source), map_size=1 << 22)
    datum = caffe_pb2.Datum(channels=3, height=32, width=32, data=bytes(3 * 32 * 32), label=1)
    with env.begin(write=True) as txn:
        txn.put(b"00000000", datum.SerializeToString())
    env.close()
    _open(qtbot, window, path)
    assert window.graph.scene.graph.shapes["cifar"].assumed is None  # read from the LMDB
    retype(qtbot, window.workbench.inspector.editor("name"), "CIFAR10 quick, here")  # any edit, then Save
    assert window.doc.net.name == "CIFAR10 quick, here"
    window.undo_stack.undo()
    assert not window.doc.net_dirty and not Path(f"{path}.layout.json").exists()  # nothing unasked
    window.undo_stack.redo()
    assert window.save()
    kept = json.loads(Path(f"{path}.layout.json").read_text())
    assert kept["data_shapes"]["TRAIN/cifar"] == [[100, 3, 32, 32], [100]]
    (source / "data.mdb").unlink()
    _open(qtbot, window, path)
    cifar = window.graph.scene.graph.shapes["cifar"]
    assert cifar.tops == [(100, 3, 32, 32), (100,)] and cifar.assumed.origin == "recorded"
    assert ("assumed", "shapes as last read (data absent)") in window.graph.scene.nodes["cifar"].lines


def test_cifar_quick_never_takes_its_shapes_from_cifar10_full(qtbot, window, tmp_path):
    """Issue 31 case 13: cifar10_full.prototxt (beside it, first by name) feeds its data to a conv1 too,
    but it is another net (norm1, norm2): only a deploy net whose layers are all this net's counts."""
    net = write_cifar(tmp_path / "caffe")  # with cifar10_quick.prototxt, its own deploy net
    full = CIFAR_DEPLOY.replace("dim: 32 dim: 32", "dim: 24 dim: 24").replace("CIFAR10_quick_test", "full")
    full += 'layer { name: "norm1" type: "LRN" bottom: "pool1" top: "norm1" }\n'
    (net.parent / "cifar10_full.prototxt").write_text(full)
    _open(qtbot, window, net)
    shapes = window.graph.scene.graph.shapes["cifar"]
    assert shapes.tops[0] == (100, 3, 32, 32) and shapes.assumed is not None
    assert shapes.assumed.reason.startswith("cifar10_quick.prototxt")
    assert "cifar10_full" not in window.graph.scene.nodes["cifar"].toolTip()

    (net.parent / "cifar10_quick.prototxt").unlink()
    window.doc.load_net(window.doc.net, window.doc.net_path)  # reopened: the shapes are looked for again
    window.graph.sync()
    assert "cifar10_full" not in window.graph.scene.nodes["cifar"].toolTip()
    assert window.graph.scene.graph.shapes["cifar"].tops[0] != (100, 3, 24, 24)
