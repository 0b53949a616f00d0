"""Issue 31 case 5: nothing stale survives a net or run change. The status bar's totals follow a
wire made on the canvas; File > New from Example drops the last run's curves, its "stopped in 0:28"
and the weights (a run's, or a model opened with the last net); a run that fails to start leaves
no empty run folder."""

from __future__ import annotations

import os

from test_app_new_layers import wire
from test_training_dock import TIMEOUT_MS, write_example
from windows import asked_window

from app.commands import Disconnect
from app.files import EXAMPLES
from proto.textio import parse_net


def test_the_totals_follow_a_wire_made_on_the_canvas(qtbot):
    w = asked_window(qtbot)
    assert w.workbench.new_from_example(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    totals = w.workbench.totals
    qtbot.waitUntil(lambda: totals.totals is not None, timeout=TIMEOUT_MS)
    w.push(Disconnect(w.doc.index_of("ip1"), 0))
    qtbot.waitUntil(lambda: "shapes unavailable: ip1: layer 'ip1'" in totals.text(), timeout=TIMEOUT_MS)
    wire(w, "pool2", 0, "ip1")  # a drag from pool2's top onto ip1, as a user wires it
    assert list(w.doc.layer(w.doc.index_of("ip1")).bottom) == ["pool2"]
    qtbot.waitUntil(lambda: totals.totals is not None and totals.totals.params == 431080, timeout=TIMEOUT_MS)
    assert "shapes unavailable" not in totals.text()
    w.training.shutdown()


def test_new_from_example_drops_the_last_runs_curves_time_and_weights(qtbot, tmp_path):
    w = asked_window(qtbot)
    dock = w.training
    assert w.open_file(write_example(tmp_path, {"max_iter": "30", "snapshot": "0", "display": "10"}))
    run = dock.train()
    assert run is not None
    qtbot.waitUntil(lambda: run.status == "finished", timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: "finished in" in dock.rate.text())
    dock.tabs.setCurrentWidget(dock.weights)  # the Weights tab shows the run's filters
    qtbot.waitUntil(lambda: bool(dock.weights.weights), timeout=TIMEOUT_MS)
    assert dock.plots.shown == [run]

    assert w.workbench.new_from_example(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    assert dock.plots.shown == [] and "finished" not in dock.rate.text()
    assert dock.weights.weights == {} and "Run 1" not in dock.weights.info.text()
    dock.weights.refresh_requested.emit()  # the tab asks again (shown, or its Refresh): still nothing
    assert dock.weights.weights == {}
    assert [r.name for r in dock.runs._runs] == ["Run 1"]  # still listed, to tick and compare

    model = tmp_path / "mlp_iter_30.caffemodel"  # written after training (snapshot_after_train)
    assert model.is_file()
    assert w.open_file(tmp_path / "mlp.prototxt", model)
    assert "(opened with the net)" in dock.weights.info.text()
    assert w.workbench.new_from_example(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    assert "opened with the net" not in dock.weights.info.text() and dock.weights.weights == {}
    dock.shutdown()


NO_DATA = """name: "nodata"
layer { name: "d" type: "Data" top: "data" top: "label"
  data_param { source: "nowhere_lmdb" batch_size: 2 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


def test_a_run_that_fails_to_start_leaves_no_empty_run_folder(qtbot, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BARISTA_DATA_ROOT", str(tmp_path / "no-data-here"))
    runs = tmp_path / "runs"
    monkeypatch.setenv("BARISTA_RUNS_DIR", str(runs))
    w = asked_window(qtbot)
    w.ask_default_solver = lambda: True
    w.doc.load_net(parse_net(NO_DATA.encode(), "nodata.prototxt"), None)  # untitled: a run folder
    run = w.training.train()
    assert run is not None and run.job.output_dir.startswith(str(runs))
    qtbot.waitUntil(lambda: run.status == "failed", timeout=TIMEOUT_MS)
    assert "nowhere_lmdb" in (run.error or "")
    w.training.controller._worker.join(TIMEOUT_MS / 1000)
    assert not os.path.exists(run.job.output_dir)  # made for the run, removed when it failed
    assert not runs.exists() or list(runs.iterdir()) == []
    w.training.shutdown()
