"""Issue 12 case 4 through the window: trained models open (with the net beside them, the one the user
picks, or the net rebuilt from the model), their weights show and Train starts from them; files
dropped on the window open the same way."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from answers import Asked
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from windows import asked_window

import engine
from app.files import EXAMPLES
from app.training.job import make_job

DEPLOY = EXAMPLES / "mnist" / "lenet.prototxt"


@pytest.fixture
def trained(tmp_path):
    """LeNet's deploy net beside ``lenet.caffemodel`` (seeded fillers stand in for training)."""
    net = tmp_path / "lenet.prototxt"
    shutil.copy(DEPLOY, net)
    model = tmp_path / "lenet.caffemodel"
    engine.Net(str(net), engine.TEST).save(str(model))
    return net, model


@pytest.fixture
def window(qtbot):
    return asked_window(qtbot, ask_net_for_model="")


def test_a_model_opens_with_the_net_beside_it_and_train_starts_from_its_weights(window, trained):
    net, model = trained
    assert window.open_file(model)
    assert window.doc.net_path == str(net) and window.ask_net_for_model.count == 0
    assert window.windowTitle() == "Barista — lenet.prototxt[*]" and not window.isWindowModified()
    assert window.doc.weights_path == str(model)
    assert window.doc.weights["conv1"][0].shape == (20, 1, 5, 5)
    expected = engine.Net(str(net), engine.TEST, weights=str(model)).params["conv1"][0].data
    np.testing.assert_array_equal(window.doc.weights["conv1"][0], expected)
    combo = window.training.weights.layer
    assert [combo.itemText(i) for i in range(combo.count())] == ["conv1", "conv2", "ip1", "ip2"]
    assert "lenet.caffemodel" in window.training.weights.info.text()
    assert "weights: lenet.caffemodel" in window.notice.full
    window.selection.select([window.doc.index_of("conv1")])  # the inspector's line for its blobs
    trained = window.workbench.inspector.trained
    assert trained.isVisible() and trained.text().startswith("Trained (lenet.caffemodel): 20×1×5×5 σ ")
    assert trained.text().endswith(" · 20 σ 0")  # conv1's bias: constant 0 as its filler drew it
    job = make_job(window.doc)
    assert list(job.solver.weights) == [str(model)]
    assert any("Starting from the weights" in note for note in job.notes)


def test_a_model_alone_asks_for_its_net_then_rebuilds_it_from_its_layers(window, trained, tmp_path):
    _, model = trained
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    shutil.move(model, alone / "snapshot_iter_500.caffemodel")
    assert window.open_file(alone / "snapshot_iter_500.caffemodel")
    assert window.ask_net_for_model.count == 1  # cancelled: the net comes from the model itself
    assert window.doc.net_path is None and "(from snapshot_iter_500.caffemodel)" in window.windowTitle()
    assert [layer.name for layer in window.doc.net.layer] == [
        "data",
        "conv1",
        "pool1",
        "conv2",
        "pool2",
        "ip1",
        "relu1",
        "ip2",
        "prob",
    ]
    assert not any(layer.blobs for layer in window.doc.net.layer)  # the weights are not in the text
    assert "rebuilt from the model's own layer list" in window.notice.full
    assert window.doc.weights["ip2"][1].shape == (10,)


def test_a_model_with_a_picked_net(window, trained, tmp_path):
    net, model = trained
    picked = tmp_path / "picked" / "my_deploy.prototxt"
    picked.parent.mkdir()
    shutil.move(net, picked)
    window.ask_net_for_model = Asked(str(picked))
    assert window.open_file(model)
    assert window.ask_net_for_model.count == 1 and window.doc.net_path == str(picked)
    assert window.doc.weights_path == str(model)


def test_an_hdf5_model_without_its_net_is_refused_and_changes_nothing(window, trained, tmp_path):
    net, _ = trained
    assert window.open_file(net)
    h5 = tmp_path / "other" / "w.caffemodel.h5"
    h5.parent.mkdir()
    engine.Net(str(net), engine.TEST).save_hdf5(str(h5))
    assert not window.open_file(h5)
    assert window.show_error.count == 1 and window.doc.net_path == str(net)


def _drop(window, *paths) -> QDropEvent:
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    action = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(
        window.rect().center(), action, data, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(
        QPointF(window.rect().center()),
        action,
        data,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(window, drop)
    return drop


def test_dropping_files_on_the_window_opens_them(window, trained, tmp_path):
    net, model = trained
    _drop(window, model)
    assert window.doc.net_path == str(net) and window.doc.weights_path == str(model)
    other = tmp_path / "mlp.prototxt"
    shutil.copy(EXAMPLES / "mlp.prototxt", other)
    _drop(window, other)
    assert window.doc.net_path == str(other) and window.doc.weights_path is None
    _drop(window, net, model)  # a net and a model together: the net, starting from the model
    assert window.doc.net_path == str(net) and window.doc.weights_path == str(model)


TINY = """name: "tiny"
layer { name: "data" type: "DummyData" top: "x" top: "y"
  dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 }
    data_filler { type: "gaussian" } data_filler { type: "constant" value: 1 } } }
layer { name: "fc" type: "InnerProduct" bottom: "x" top: "fc"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "y" top: "loss" }
"""


def test_an_opened_model_replaces_the_last_runs_weights_in_the_weights_view(qtbot, window, trained, tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "tiny.prototxt").write_text(TINY)
    (folder / "tiny_solver.prototxt").write_text(
        'net: "tiny.prototxt"\nbase_lr: 0.01\nmax_iter: 3\nlr_policy: "fixed"\nsnapshot_prefix: "tiny"\n'
    )
    assert window.open_file(folder / "tiny_solver.prototxt")
    dock = window.training
    dock.buttons["train"].click()
    run = dock.controller.current
    qtbot.waitUntil(lambda: run.status == "finished", timeout=120000)
    dock.weights.refresh_requested.emit()
    qtbot.waitUntil(lambda: list(dock.weights.weights) == ["fc"], timeout=30000)

    _, model = trained
    assert window.open_file(model)
    assert list(dock.weights.weights) == ["conv1", "conv2", "ip1", "ip2"]
    dock.weights.refresh_requested.emit()  # the view shown again: the model stays, not the run's
    assert list(dock.weights.weights) == ["conv1", "conv2", "ip1", "ip2"]
    assert "lenet.caffemodel" in dock.weights.info.text()
