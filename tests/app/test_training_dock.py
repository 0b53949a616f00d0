"""The training dock on the MLP example: F5, runs kept and overlaid, exports, weights, failures.

Every run trains a copy: the document is compared byte for byte before and after.
"""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest
from gestures import retype
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest

from app.commands import SetLayerField, SetSolverField
from app.files import EXAMPLES
from app.main_window import MainWindow
from engine import backend
from proto import binaryio

TIMEOUT_MS = 30000


def write_example(folder, solver_edits: dict[str, str] | None = None, net_text: str | None = None):
    """The MLP example copied into ``folder``, with solver fields replaced; returns the solver path."""
    shutil.copy(EXAMPLES / "mlp.prototxt", folder)
    if net_text is not None:
        (folder / "mlp.prototxt").write_text(net_text)
    lines = (EXAMPLES / "mlp_solver.prototxt").read_text().splitlines()
    edits = dict(solver_edits or {})
    kept = [line for line in lines if line.split(":")[0].strip() not in edits]
    (folder / "mlp_solver.prototxt").write_text(
        "\n".join(kept + [f"{k}: {v}" for k, v in edits.items()]) + "\n"
    )
    return folder / "mlp_solver.prototxt"


@pytest.fixture
def window(qtbot):
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: None
    yield w
    w.training.shutdown()


def open_shown(qtbot, window, path):
    assert window.open_file(path)
    window.show()
    qtbot.waitExposed(window)
    return window.training


def wait_ended(qtbot, dock):
    qtbot.waitUntil(
        lambda: dock.controller.current is not None and not dock.controller.current.active, timeout=TIMEOUT_MS
    )
    return dock.controller.current


def snapshot_of(doc):
    return doc.net.SerializeToString(), doc.solver.SerializeToString(), doc.dirty


def test_f5_trains_a_copy_while_the_document_keeps_changing(qtbot, window, tmp_path):
    dock = open_shown(qtbot, window, write_example(tmp_path, {"max_iter": "1000000", "snapshot": "0"}))
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    QTest.keyClick(window, Qt.Key.Key_F5)
    run = dock.controller.current
    assert run is not None and not dock.train_action.isEnabled()
    qtbot.waitUntil(lambda: run.iter > 20, timeout=TIMEOUT_MS)
    hidden1 = window.doc.index_of("hidden1")
    window.push(SetLayerField(hidden1, "inner_product_param.num_output", 8))  # the editor stays usable
    assert window.doc.layer(hidden1).inner_product_param.num_output == 8
    at_edit = run.iter
    qtbot.waitUntil(lambda: run.iter > at_edit + 20, timeout=TIMEOUT_MS)  # and the run goes on
    dock.buttons["stop"].click()
    assert wait_ended(qtbot, dock).status == "stopped"
    trained = dock.controller._worker.trainer.solver.net.layer_by_name("hidden1").blobs[0].shape
    assert list(trained) == [64, 20]  # the run kept the net it started with
    assert run.job.solver.net_param.layer[hidden1].inner_product_param.num_output == 64
    assert dock.train_action.isEnabled()


def test_runs_are_kept_and_two_overlay_with_csv_and_png_exports(qtbot, window, tmp_path):
    dock = open_shown(qtbot, window, write_example(tmp_path, {"max_iter": "200", "snapshot": "0"}))
    dock.buttons["train"].click()
    first = wait_ended(qtbot, dock)
    window.push(SetSolverField("base_lr", 0.001))
    dock.buttons["train"].click()
    second = wait_ended(qtbot, dock)
    assert [r.status for r in dock.controller.runs] == ["finished", "finished"]
    assert first.job.solver.base_lr == pytest.approx(0.05)
    assert second.job.solver.base_lr == pytest.approx(0.001)
    assert dock.plots.shown == [second]  # a new run is shown alone
    dock.runs.set_shown(first, True)
    assert dock.plots.shown == [first, second]
    for run in (first, second):
        x, y = dock.plots.curve(run)
        assert len(x) == 200 and np.isfinite(y).all()
    assert "base_lr: 0.001" in second.diff_from(first)

    dock.plots.smoothing.setValue(0.0)  # no smoothing: the smoothed curve is the raw loss
    np.testing.assert_allclose(dock.plots.curve(second)[1], second.train.column("loss"))
    dock.plots.x_axis.setCurrentText("Wall time (s)")
    np.testing.assert_array_equal(dock.plots.curve(first)[0], first.train.column("seconds"))
    np.testing.assert_array_equal(
        dock.plots.curve(first, "lr")[1], first.train.column("lr")
    )  # never smoothed
    dock.plots.log_y.setChecked(True)
    assert dock.plots.loss_plot.getAxis("left").logMode and not dock.plots.loss_plot.getAxis("right").logMode

    exported = {}
    dock.ask_save_path = lambda title, default, kind: str(tmp_path / ("c.csv" if "CSV" in kind else "p.png"))
    exported["csv"], exported["png"] = dock.export_csv(), dock.export_png()
    with open(exported["csv"], newline="") as f:
        table = list(csv.DictReader(f))
    for run in (first, second):
        rows = [r for r in table if r["run"] == run.name and r["series"] == "train loss"]
        assert [float(r["value"]) for r in rows] == pytest.approx(list(run.train.column("loss")), rel=1e-6)
    image = QImage(exported["png"])
    assert not image.isNull() and image.width() > 100


def test_weights_during_and_after_training_and_saved_as_caffemodel(qtbot, window, tmp_path):
    dock = open_shown(qtbot, window, write_example(tmp_path, {"max_iter": "1000000", "snapshot": "0"}))
    controller = dock.controller
    dock.buttons["train"].click()
    run = controller.current
    qtbot.waitUntil(lambda: run.iter > 5, timeout=TIMEOUT_MS)
    with qtbot.waitSignal(controller.weights_ready, timeout=TIMEOUT_MS):
        assert controller.request_weights()  # served by the worker between two iterations
    iteration, weights = run.weights
    assert iteration > 0 and list(weights) == ["hidden1", "hidden2", "scores"]
    assert weights["hidden1"][0].shape == (64, 20) and weights["hidden1"][1].shape == (64,)
    dock.buttons["snapshot"].click()  # while running: after the current iteration
    qtbot.waitUntil(lambda: bool(run.snapshots), timeout=TIMEOUT_MS)
    assert (
        run.snapshots[0].startswith(str(tmp_path / "mlp_iter_")) and (tmp_path / run.snapshots[0]).is_file()
    )

    dock.buttons["stop"].click()
    wait_ended(qtbot, dock)
    with qtbot.waitSignal(controller.weights_ready, timeout=TIMEOUT_MS):
        dock.tabs.setCurrentWidget(dock.weights)  # showing the tab asks for the current weights
    assert dock.weights.layer.count() == 3 and len(dock.weights._hist_plots) == 3
    assert dock.weights.image.image.shape == (64, 20)
    final = run.weights[1]

    target = tmp_path / "trained.caffemodel"
    dock.ask_save_path = lambda *args: str(target)
    dock.weights.save.click()
    qtbot.waitUntil(target.exists, timeout=TIMEOUT_MS)
    saved = {layer.name: layer for layer in binaryio.read_caffemodel(target).layer}
    blob = saved["hidden1"].blobs[0]
    np.testing.assert_array_equal(np.array(blob.data, dtype=np.float32).reshape(64, 20), final["hidden1"][0])


def test_the_gpu_choice_says_why_it_is_off(qtbot, window):
    reason = backend.gpu_unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is usable here")
    dock = window.training
    assert not dock.device.model().item(1).isEnabled()
    assert reason in dock.device.toolTip()
    dock.device.setCurrentIndex(0)
    assert dock.device.currentText() == "CPU"


BROKEN_NETS = {
    "nan": (None, {"base_lr": "1e30"}, "loss is nan"),
    "missing data": (
        'layer { name: "d" type: "Data" top: "x" top: "y"\n'
        '        data_param { source: "no_such_lmdb" backend: LMDB batch_size: 4 } }\n'
        'layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"\n'
        "        inner_product_param { num_output: 2 } }\n"
        'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "z" bottom: "y" top: "loss" }\n',
        {},
        "no_such_lmdb",
    ),
    "shape": (
        'layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 4 dim: 3 } '
        "shape { dim: 5 } } }\n"
        'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "x" bottom: "y" top: "loss" }\n',
        {},
        "same first dimension",
    ),
}


@pytest.mark.parametrize("kind", list(BROKEN_NETS))
def test_a_failing_run_stops_shows_why_and_leaves_the_document_alone(qtbot, window, tmp_path, kind):
    net_text, edits, needle = BROKEN_NETS[kind]
    dock = open_shown(qtbot, window, write_example(tmp_path, {**edits, "snapshot": "0"}, net_text))
    before = snapshot_of(window.doc)
    window.ask_train_anyway = lambda traps: True  # "shape" has no weights before its loss: Train anyway
    with qtbot.waitSignal(dock.controller.failed, timeout=TIMEOUT_MS):
        dock.buttons["train"].click()
    run = dock.controller.current
    assert run.status == "failed" and run.error
    assert dock.error.isVisible() and needle in dock.error_text.text()
    assert f"Error: {run.error}" in dock.console.text()
    assert snapshot_of(window.doc) == before
    assert dock.train_action.isEnabled() and not dock.stop_action.isEnabled()
    assert dock.runs.tree.topLevelItem(0).text(1) == "failed"


def test_before_a_run_the_progress_reads_the_solvers_max_iter(qtbot, window, tmp_path):
    dock = open_shown(qtbot, window, write_example(tmp_path, {"max_iter": "321"}))
    assert (dock.progress.value(), dock.progress.maximum()) == (0, 321)
    assert dock.progress.text() == "0 / 321"
    window.push(SetSolverField("max_iter", 50))
    assert dock.progress.maximum() == 50


def test_the_runs_tab_shows_the_solver_an_example_trained_with(qtbot, window):
    """Issue 31 case 9: an example (an untitled copy, its snapshots in the runs folder) with base_lr
    changed in the Solver tab: the run's details show that solver, not the built-in default."""
    dock = open_shown(qtbot, window, EXAMPLES / "mlp.prototxt")
    assert window.doc.net_path is None  # the example is a copy: the case the default slipped in
    retype(qtbot, window.workbench.solver_panel.editor("base_lr"), "0.02")
    assert window.doc.solver.base_lr == pytest.approx(0.02)
    dock.buttons["train"].click()
    run = dock.controller.current
    dock.buttons["stop"].click()
    wait_ended(qtbot, dock)
    dock.runs.tree.setCurrentItem(dock.runs.tree.topLevelItem(0))
    details = dock.runs.details.toPlainText()
    assert "base_lr: 0.02" in details and 'type: "Nesterov"' in details and "max_iter: 2000" in details
    assert "# Solver for mlp.prototxt" in details  # the solver as the user's file has it
    assert run.job.solver.base_lr == pytest.approx(0.02)  # and what the run trained with
