"""The new layer types in the app, used as a user would: an LSTM net built from the palette, wired on
the canvas and set in the inspector; a Python layer kept beside its prototxt; Filter, HDF5Output and
WindowData on the canvas; HDF5 snapshots from the training dock."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest
from gestures import retype
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox, QToolButton

from app.main_window import MainWindow
from engine.cli.fill import initial_parameters
from graph_view.wires import BlobLabel
from proto import caffe_pb2
from proto.textio import parse_net, read_net

LEFT, NO_MOD = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
TIMEOUT_MS = 20000


@pytest.fixture
def window(qtbot, tmp_path) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: pytest.fail(f"error dialog: {args}")
    w.workbench.new_document()
    w.resize(1500, 950)
    w.show()
    qtbot.waitExposed(w)
    return w


# ---- gestures ------------------------------------------------------------------------------------


def add_from_palette(window: MainWindow, layer_type: str) -> int:
    """Double-click ``layer_type`` in the palette: added after the selection, fed by its first top."""
    palette = window.workbench.palette
    item = next(i for i in palette._type_items() if i.data(0, Qt.ItemDataRole.UserRole) == layer_type)
    palette.tree.scrollToItem(item)
    at = palette.tree.visualItemRect(item).center()
    before = len(window.doc.net.layer)
    QTest.mouseClick(palette.tree.viewport(), LEFT, NO_MOD, at)
    QTest.mouseDClick(palette.tree.viewport(), LEFT, NO_MOD, at)
    assert len(window.doc.net.layer) == before + 1
    return window.selection.current


def set_dims(qtbot, window: MainWindow, shape: int, dims: list[int]) -> None:
    """Type the dims of an Input's shape ``shape`` in the inspector: add, retype and remove values."""
    inspector = window.workbench.inspector

    def dim_list():
        return inspector.editor(f"input_param.shape.{shape}.dim")

    def click(button) -> None:  # laid out and scrolled into the inspector's view, as a user sees it
        qtbot.waitUntil(lambda: button.height() > 0)
        inspector.scroll.ensureWidgetVisible(button)
        QTest.mouseClick(button, LEFT)

    for _ in range(len(dims) - len(dim_list().value())):
        click(dim_list().add_button)
    for k, d in enumerate(dims):
        retype(qtbot, inspector.editor(f"input_param.shape.{shape}.dim.{k}"), str(d))
    for _ in range(len(dim_list().value()) - len(dims)):
        row = dim_list().items[-1].parentWidget()
        remove = next(b for b in row.findChildren(QToolButton) if b.objectName() == "formRemoveButton")
        click(remove)
    assert list(window.doc.layer(0).input_param.shape[shape].dim) == dims


def at(window: MainWindow, point: QPointF) -> QPoint:
    return window.graph.view.mapFromScene(point)


def drag(viewport, start: QPoint, end: QPoint, steps: int = 6) -> None:
    QTest.mousePress(viewport, LEFT, NO_MOD, start)
    for i in range(1, steps + 1):
        QTest.mouseMove(viewport, start + (end - start) * i / steps)
    QTest.mouseRelease(viewport, LEFT, NO_MOD, end)


def wire(window: MainWindow, source: str, slot: int, target: str) -> None:
    """Drag from ``source``'s top port ``slot`` onto ``target``'s box: a new bottom of ``target``."""
    graph = window.graph
    graph.sync()
    graph.view.fit()
    port = graph.scene.nodes[source].top_ports[slot]
    node = graph.scene.nodes[target]
    drag(
        graph.view.viewport(),
        at(window, port.scenePos()),
        at(window, node.mapToScene(node.header_rect().center())),
    )


# ---- the LSTM net ---------------------------------------------------------------------------------
T, N, D, H = 5, 2, 3, 4


def build_lstm_net(qtbot, window: MainWindow) -> None:
    """Input (x, cont, target) -> LSTM -> InnerProduct (axis 2) -> EuclideanLoss, by hand."""
    inspector = window.workbench.inspector
    add_from_palette(window, "Input")
    retype(qtbot, inspector.editor("name"), "input")
    set_dims(qtbot, window, 0, [T, N, D])
    for name, dims in (("cont", [T, N]), ("target", [T, N, 1])):
        QTest.mouseClick(inspector.forms["input_param"].rows["shape"].add_button, LEFT)
        set_dims(qtbot, window, len(window.doc.layer(0).input_param.shape) - 1, dims)
        QTest.mouseClick(inspector.editor("top").add_button, LEFT)
        retype(qtbot, inspector.editor(f"top.{len(window.doc.layer(0).top) - 1}"), name)
    retype(qtbot, inspector.editor("top.0"), "x")

    lstm = add_from_palette(window, "LSTM")  # fed by x, the input's first top
    retype(qtbot, inspector.editor("recurrent_param.num_output"), str(H))
    wire(window, "input", 1, "lstm1")  # cont
    window.selection.select(lstm)
    add_from_palette(window, "InnerProduct")
    retype(qtbot, inspector.editor("inner_product_param.num_output"), "1")
    retype(qtbot, inspector.editor("inner_product_param.axis"), "2")
    add_from_palette(window, "EuclideanLoss")
    wire(window, "input", 2, "loss1")  # target
    window.graph.sync()


def test_an_lstm_net_built_by_hand_shows_its_shapes_fillers_and_start(qtbot, window, tmp_path):
    build_lstm_net(qtbot, window)
    net = window.doc.net
    assert [(l.type, list(l.bottom), list(l.top)) for l in net.layer] == [
        ("Input", [], ["x", "cont", "target"]),
        ("LSTM", ["x", "cont"], ["lstm1"]),
        ("InnerProduct", ["lstm1"], ["ip1"]),
        ("EuclideanLoss", ["ip1", "target"], ["loss1"]),
    ]
    scene = window.graph.scene
    assert scene.problems == []
    assert scene.graph.nodes["lstm1"].top_shapes == [(T, N, H)]  # T×N×H
    assert scene.graph.nodes["ip1"].top_shapes == [(T, N, 1)]
    labels = {item.port.key: item.text() for item in scene.items() if isinstance(item, BlobLabel)}
    assert labels["lstm1"] == "lstm1  5×2×4" and labels["ip1"] == "ip1  5×2×1"

    # The inspector shows the LSTM's recurrent_param.
    window.selection.select(1)
    inspector = window.workbench.inspector
    assert inspector.editor("recurrent_param.num_output").value() == H
    assert inspector.editor("recurrent_param.weight_filler.type").currentText() == "xavier"

    # Saved as prototxt and opened again: the same net.
    path = tmp_path / "seq.prototxt"
    window.ask_save_path = lambda: str(path)
    assert window.save_as()
    built = caffe_pb2.NetParameter()
    built.CopyFrom(window.doc.net)
    assert read_net(path) == built
    window.workbench.new_document()
    assert window.open_file(path)
    assert window.doc.net == built

    # The filler panel lists W_xc, b_c, W_hc with their shapes and previews what `fill` draws.
    window.filler_dock.raise_()
    panel = window.filler_dock.widget()
    window.selection.select(1)
    qtbot.waitUntil(lambda: panel.initial is not None and panel.initial.covers(1), timeout=TIMEOUT_MS)
    assert [row.radio.text() for row in panel.rows] == ["W_xc", "b_c", "W_hc"]
    assert [row.shape.text().split("  (")[0] for row in panel.rows] == ["16 × 3", "16", "16 × 4"]
    assert [row.type_combo.currentText() for row in panel.rows] == ["xavier", "constant", "xavier"]
    QTest.mouseClick(panel.rows[2].radio, LEFT)
    qtbot.waitUntil(
        lambda: panel.preview.current is not None and panel.preview.current.values.shape == (4 * H, H),
        timeout=TIMEOUT_MS,
    )
    expected = initial_parameters(str(path), caffe_pb2.TRAIN, panel.seed)["lstm1/2"]
    np.testing.assert_array_equal(panel.preview.current.values, expected)
    assert np.abs(expected).max() <= math.sqrt(3 / H) and expected.std() > 0  # xavier, fan_in H

    # How the net starts: one batch through it, with cont marking one sequence per stream.
    window.net_start_dock.raise_()
    start = window.net_start_dock.widget()
    qtbot.waitUntil(lambda: start.results is not None, timeout=TIMEOUT_MS)
    own, msra = start.results
    assert own.error is None and msra.error is None, (own.error, msra.error)
    assert own.names == ["input", "lstm1", "ip1"]
    assert all(s > 0 for s in own.act_std) and own.loss > 0
    assert "cont 5×2" in start.source.text()


# ---- training the LSTM net, HDF5 snapshots, finetuning from one --------------------------------------
SEQ_NET = f"""name: "seq"
layer {{ name: "input" type: "DummyData" top: "x" top: "cont" top: "target"
  dummy_data_param {{
    shape {{ dim: {T} dim: {N} dim: {D} }} shape {{ dim: {T} dim: {N} }} shape {{ dim: {T} dim: {N} dim: 1 }}
    data_filler {{ type: "gaussian" std: 1 }} data_filler {{ type: "constant" value: 1 }}
    data_filler {{ type: "constant" value: 0.7 }} }} }}
layer {{ name: "lstm1" type: "LSTM" bottom: "x" bottom: "cont" top: "lstm1"
  recurrent_param {{ num_output: {H} weight_filler {{ type: "xavier" }} bias_filler {{ type: "constant" }} }}
}}
layer {{ name: "ip1" type: "InnerProduct" bottom: "lstm1" top: "ip1"
  inner_product_param {{ num_output: 1 axis: 2 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "loss1" type: "EuclideanLoss" bottom: "ip1" bottom: "target" top: "loss1" }}
"""
SEQ_SOLVER = """net: "seq.prototxt"
type: "SGD"
base_lr: 0.2
momentum: 0.9
lr_policy: "fixed"
max_iter: 100000
display: 0
snapshot_prefix: "seq"
random_seed: 7
"""


@pytest.fixture
def seq_solver(tmp_path):
    (tmp_path / "seq.prototxt").write_text(SEQ_NET)
    solver = tmp_path / "seq_solver.prototxt"
    solver.write_text(SEQ_SOLVER)
    return solver


def open_solver(qtbot, window: MainWindow, solver) -> None:
    assert window.open_file(solver)
    window.graph.sync()
    assert window.graph.scene.problems == []
    assert window.graph.scene.graph.nodes["lstm1"].top_shapes == [(T, N, H)]


def choose(qtbot, combo: QComboBox, text: str) -> None:
    """Open the combo's list and click ``text``, as a user does."""
    combo.showPopup()
    view = combo.view()
    qtbot.waitUntil(view.isVisible)
    rect = view.visualRect(view.model().index(combo.findText(text), 0))
    QTest.mouseClick(view.viewport(), LEFT, NO_MOD, rect.center())
    assert combo.currentText() == text


def test_the_lstm_net_trains_with_a_falling_loss_and_hdf5_snapshots(qtbot, window, seq_solver):
    open_solver(qtbot, window, seq_solver)
    folder = seq_solver.parent
    panel = window.workbench.solver_panel
    choose(qtbot, panel.editor("snapshot_format"), "HDF5")
    assert window.doc.solver.snapshot_format == caffe_pb2.SolverParameter.HDF5
    dock = window.training
    assert ".h5" in dock.snapshot_action.toolTip()

    dock.buttons["train"].click()
    run = dock.controller.current
    qtbot.waitUntil(lambda: len(run.train) >= 60, timeout=TIMEOUT_MS)
    dock.buttons["pause"].click()
    qtbot.waitUntil(lambda: run.status == "paused", timeout=TIMEOUT_MS)
    losses = run.train.column("loss")
    assert losses[-10:].mean() < 0.2 * losses[:5].mean(), (losses[:5], losses[-10:])

    dock.buttons["snapshot"].click()  # paused: written at once, as HDF5
    at = run.iter
    assert (folder / f"seq_iter_{at}.caffemodel.h5").is_file()
    assert (folder / f"seq_iter_{at}.solverstate.h5").is_file()
    assert not (folder / f"seq_iter_{at}.caffemodel").exists()
    dock.buttons["stop"].click()
    qtbot.waitUntil(lambda: run.status == "stopped", timeout=TIMEOUT_MS)
    assert all(path.endswith(".caffemodel.h5") for path in run.snapshots) and run.snapshots
    asked = []
    dock.ask_save_path = lambda title, default, kinds: asked.append((default, kinds)) or default
    dock.tabs.setCurrentWidget(dock.weights)
    QTest.mouseClick(dock.weights.save, LEFT)  # the run is over: written at once, as its snapshots are
    ((saved, kinds),) = asked
    assert saved.endswith(f"seq_trained_iter_{run.iter}.caffemodel.h5")
    assert kinds.startswith("Caffe model, HDF5")  # the dialog offers HDF5 first
    with h5py.File(saved, "r") as f:
        assert f["data/lstm1/2"].shape == (4 * H, H)

    # Finetune from the .caffemodel.h5: the solver's weights field, then Train again.
    weights = panel.editor("weights")
    QTest.mouseClick(weights.add_button, LEFT)
    retype(qtbot, panel.editor("weights.0"), f"seq_iter_{at}.caffemodel.h5")
    assert list(window.doc.solver.weights) == [f"seq_iter_{at}.caffemodel.h5"]
    dock.buttons["train"].click()
    second = dock.controller.current
    qtbot.waitUntil(lambda: len(second.train) >= 3, timeout=TIMEOUT_MS)
    dock.buttons["stop"].click()
    qtbot.waitUntil(lambda: second.status == "stopped", timeout=TIMEOUT_MS)
    assert f"Finetuning from seq_iter_{at}.caffemodel.h5" in dock.console.text()
    assert second.train.column("loss")[0] < 0.5 * losses[0]  # it starts where the first run was


# ---- a Python layer kept beside its prototxt ----------------------------------------------------------
TIMES_K = '''import numpy as np

import caffe


class TimesK(caffe.Layer):
    """Two copies of the bottom side by side, times k (param_str)."""

    def setup(self, bottom, top):
        self.k = float(self.param_str)

    def reshape(self, bottom, top):
        top[0].reshape(bottom[0].data.shape[0], 2 * bottom[0].data.shape[1])

    def forward(self, bottom, top):
        top[0].data[...] = self.k * np.concatenate([bottom[0].data, bottom[0].data], axis=1)

    def backward(self, top, propagate_down, bottom):
        half = top[0].diff.shape[1] // 2
        bottom[0].diff[...] = self.k * (top[0].diff[:, :half] + top[0].diff[:, half:])
'''
PY_NET = """name: "pynet"
layer { name: "data" type: "DummyData" top: "x" top: "t"
  dummy_data_param { shape { dim: 8 dim: 3 } shape { dim: 8 dim: 6 }
    data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 0.5 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "h"
  inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "times" type: "Python" bottom: "h" top: "y"
  python_param { module: "MODULE" layer: "TimesK" param_str: "3" } }
layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "t" top: "loss" }
"""
PY_SOLVER = """net: "net.prototxt"
base_lr: 0.005
momentum: 0.9
lr_policy: "fixed"
max_iter: 100000
display: 0
"""


def python_net(folder, module: str, source: str | None = TIMES_K):
    """A net whose Python layer imports ``module``, saved in ``folder`` (the module beside it)."""
    folder.mkdir(exist_ok=True)
    if source is not None:
        (folder / f"{module}.py").write_text(source)
    (folder / "net.prototxt").write_text(PY_NET.replace("MODULE", module))
    (folder / "solver.prototxt").write_text(PY_SOLVER)
    return folder / "solver.prototxt"


def problems_of(window: MainWindow, key: str) -> list[str]:
    window.graph.sync()
    return [p.message for p in window.graph.scene.problems if p.key == key]


def test_a_python_layer_beside_the_net_gets_shapes_from_its_reshape_and_trains(qtbot, window, tmp_path):
    solver = python_net(tmp_path / "beside", "times_k_beside")
    window.trust.folders.add(str(solver.parent))  # the user trusts the folder (tests/app/test_app_trust.py)
    assert window.open_file(solver)
    window.graph.sync()
    scene = window.graph.scene
    assert scene.problems == []
    assert scene.graph.nodes["times"].top_shapes == [(8, 6)]  # from the user's reshape
    assert ("body", "times_k_beside.TimesK · 3") in scene.nodes["times"].lines  # what its box reads

    dock = window.training
    dock.buttons["train"].click()
    run = dock.controller.current
    qtbot.waitUntil(lambda: len(run.train) >= 40 or run.status == "failed", timeout=TIMEOUT_MS)
    dock.buttons["stop"].click()
    qtbot.waitUntil(lambda: not run.active, timeout=TIMEOUT_MS)
    assert run.error is None, run.error
    losses = run.train.column("loss")
    assert losses[-5:].mean() < 0.3 * losses[:3].mean()
    text = dock.console.text()
    assert "Python layers (times_k_beside): modules are imported from" in text and str(solver.parent) in text


def test_a_missing_or_failing_python_module_is_a_problem_badge_not_a_crash(qtbot, window, tmp_path):
    solver = python_net(tmp_path / "missing", "times_k_nowhere", source=None)
    window.trust.folders.add(str(solver.parent))  # the user trusts the folder (tests/app/test_app_trust.py)
    assert window.open_file(solver)
    (message,) = problems_of(window, "times")
    assert "cannot import module 'times_k_nowhere'" in message
    assert f"put times_k_nowhere.py beside the net (looked in {solver.parent}" in message
    assert window.graph.scene.nodes["times"].problems  # the badge on its box
    assert window.graph.scene.graph.nodes["loss"].top_shapes == [None]  # unknown, not made up

    # The user writes the module beside the net, in another program: the canvas notices by itself.
    scene = window.graph.scene
    (solver.parent / "times_k_nowhere.py").write_text(TIMES_K)
    qtbot.waitUntil(lambda: not scene.problems, timeout=TIMEOUT_MS)
    assert scene.graph.nodes["loss"].top_shapes == [()]

    # Now it raises in setup: said in the user's words, the layer named.
    broken = TIMES_K.replace("self.k = float(self.param_str)", "raise ValueError('k must be set')")
    (solver.parent / "times_k_nowhere.py").write_text(broken)
    qtbot.waitUntil(lambda: bool(scene.problems), timeout=TIMEOUT_MS)
    (message,) = problems_of(window, "times")
    assert "setup() of times_k_nowhere.TimesK raised ValueError: k must be set" in message
    # Training it says the same, in the dock, and the app stays up.
    window.training.buttons["train"].click()
    run = window.training.controller.current
    qtbot.waitUntil(lambda: run.status == "failed", timeout=TIMEOUT_MS)
    assert "k must be set" in window.training.error_text.text()


def test_an_unsaved_net_with_a_python_layer_says_where_to_put_the_module(qtbot, window):
    window.doc.load_net(parse_net(PY_NET.replace("MODULE", "times_k_unsaved")), None)
    (message,) = problems_of(window, "times")
    assert "save the net in the folder that holds times_k_unsaved.py" in message


# ---- Filter, HDF5Output, WindowData --------------------------------------------------------------------
IO_NET = """name: "io"
layer { name: "input" type: "Input" top: "data" top: "keep"
  input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
layer { name: "filter" type: "Filter" bottom: "data" bottom: "keep" top: "kept" }
layer { name: "output" type: "HDF5Output" bottom: "kept" bottom: "kept"
  hdf5_output_param { file_name: "written.h5" } }
"""


def test_filter_hdf5output_and_windowdata_draw_edit_and_write_nothing(qtbot, window, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a careless build would write "written.h5"
    path = tmp_path / "io.prototxt"
    path.write_text(IO_NET)
    assert window.open_file(path)
    window.graph.sync()
    scene = window.graph.scene
    assert scene.problems == []
    assert scene.graph.nodes["filter"].top_shapes == [(4, 3)]  # N items until a forward reads the selector
    assert ("body", "written.h5") in scene.nodes["output"].lines

    # Its parameters edit in the inspector like any other layer's.
    window.selection.select(2)
    retype(qtbot, window.workbench.inspector.editor("hdf5_output_param.file_name"), "out/batch.h5")
    assert window.doc.layer(2).hdf5_output_param.file_name == "out/batch.h5"
    window.graph.sync()
    (message,) = problems_of(window, "output")  # its folder is missing: said, not created
    assert "does not exist" in message

    # How the net starts runs a batch through it, and still nothing is written.
    retype(qtbot, window.workbench.inspector.editor("hdf5_output_param.file_name"), "written.h5")
    window.net_start_dock.raise_()
    start = window.net_start_dock.widget()
    qtbot.waitUntil(lambda: start.results is not None, timeout=TIMEOUT_MS)
    assert start.results[0].error is None, start.results[0].error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["io.prototxt"]

    # WindowData from the palette: R-CNN's settings, a data warning until it has a window file (its
    # colour windows, crop_size and batch_size still give the shapes, marked as assumed).
    window.selection.select(0)
    add_from_palette(window, "WindowData")
    layer = window.doc.layer(1)
    assert (
        layer.type == "WindowData"
        and layer.window_data_param.batch_size == 128
        and layer.transform_param.crop_size == 227
    )
    retype(qtbot, window.workbench.inspector.editor("window_data_param.source"), "windows.txt")
    window.graph.sync()
    (problem,) = [p for p in window.graph.scene.problems if p.index == 1 and "data not read" in p.message]
    assert problem.severity == "warning" and "windows.txt" in problem.message
    assert problem.message.endswith(
        "shapes assumed from the layer's colour windows, crop_size 227 and batch_size 128"
    )
    assert list(layer.bottom) == [] and list(layer.top) == ["data", "label"]
    retype(qtbot, window.workbench.inspector.editor("window_data_param.fg_threshold"), "0.6")
    assert window.doc.layer(1).window_data_param.fg_threshold == pytest.approx(0.6)
