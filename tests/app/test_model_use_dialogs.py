"""Model > Classify Image… and Model > Evaluate on Data Set… driven as a user would: the top 5
shown, a layer's mosaic and statistics, the canvas choosing the layer; Evaluate's matrix counts equal
`main.py evaluate`'s on the same data, a cell's click lists its images, Export CSV, and Cancel."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

import main
from app.main_window import MainWindow
from engine.data.lmdb_writer import write_datum_lmdb
from engine.model_use import classify, inputs
from engine.model_use.inspect import stats
from engine.net import Net
from proto import caffe_pb2, textio
from proto.binaryio import read_caffemodel, write_caffemodel

NET = """name: "tiny"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  transform_param { mean_value: 120 scale: 0.02 }
  data_param { source: "items_lmdb" batch_size: 8 backend: LMDB } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 3 kernel_size: 3 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
  inner_product_param { num_output: 6 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy"
  include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


def make_model(folder: Path, count: int) -> tuple[Path, Path, np.ndarray]:
    rng = np.random.default_rng(6)
    labels = rng.integers(0, 6, count)
    write_datum_lmdb(folder / "items_lmdb", rng.integers(0, 256, (count, 3, 6, 6), dtype=np.uint8), labels)
    net_path = folder / "tiny_train_val.prototxt"
    net_path.write_text(NET)
    param = textio.read_net(net_path)
    param.state.phase = caffe_pb2.TEST
    param.layer[0].data_param.source = str(folder / "items_lmdb")
    net = Net(param)
    weights = folder / "tiny.caffemodel"
    write_caffemodel(weights, net.to_proto())
    net.close()
    return net_path, weights, labels


@pytest.fixture
def window(qtbot, tmp_path):
    net_path, weights, labels = make_model(tmp_path, 40)
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: pytest.fail(f"error dialog: {args}")
    assert w.open_file(net_path, weights)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    w.paths = (net_path, weights, labels)
    yield w
    for dialog in (w.model_menu.classify_dialog, w.model_menu.evaluate_dialog):
        if dialog is None:
            continue
        for worker in (dialog.worker, *getattr(dialog, "thumbnails", {}).values()):
            worker.cancel()
            worker.wait()
    w.training.shutdown()


def test_classify_shows_the_top_5_and_a_layers_mosaic_and_statistics(qtbot, window, tmp_path) -> None:
    net_path, weights, _ = window.paths
    picture = tmp_path / "picture.png"
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (9, 8, 3), dtype=np.uint8)).save(picture)
    window.model_menu.classify_action.trigger()
    dialog = window.model_menu.classify_dialog
    assert dialog.weights.currentData() == str(weights)  # the model opened with the net comes first
    dialog.ask_image_path = lambda: str(picture)
    qtbot.mouseClick(dialog.open_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.inspection is not None, timeout=10000)

    model = classify.open_classifier(net_path, str(weights))
    want = classify.predict(model, [inputs.load(str(picture), 3)], oversample=False)[0]
    order = np.argsort(-want)
    shown = [(n.text(), b.text()) for n, b in zip(dialog.top_names, dialog.top_bars)]
    assert shown == [(str(i), f"{want[i] * 100:.2f}%") for i in order[:5]]

    assert dialog.show_layer("conv")
    assert not dialog.activation_picture.pixmap().isNull()
    assert not dialog.weights_picture.pixmap().isNull()
    w = next(l for l in read_caffemodel(weights).layer if l.name == "conv").blobs[0]
    values = np.array(w.data, np.float32)
    assert dialog.weights_stats.text() == f"3×3×3×3: {stats(values).text()}"
    activation = dialog.current_layer().activation
    assert activation.shape == (3, 4, 4)
    assert dialog.activation_stats.text() == stats(activation).text()
    assert "mean" in dialog.activation_stats.text()

    # Selecting a box on the canvas shows its layer here.
    names = [l.name for l in window.doc.net.layer]
    window.selection.select(names.index("ip"))
    assert dialog.current_layer().name == "ip"
    dialog.close()


def test_an_image_dropped_on_the_window_is_classified(qtbot, window, tmp_path) -> None:
    picture = tmp_path / "dropped.png"
    Image.fromarray(np.zeros((6, 6, 3), np.uint8)).save(picture)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(picture))])
    drop = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)  # fmt: skip
    path_before = window.doc.net_path
    window.dropEvent(drop)
    dialog = window.model_menu.classify_dialog
    assert dialog is not None and dialog.isVisible()
    qtbot.waitUntil(lambda: dialog.inspection is not None, timeout=10000)
    assert window.doc.net_path == path_before  # the net stays open: the image was not "opened"
    dialog.close()


def read_csv(text: str) -> np.ndarray:
    rows = list(csv.reader(io.StringIO(text)))
    return np.array([[int(v) for v in row[1:]] for row in rows[1:]])


def test_evaluate_counts_equal_the_clis_and_a_cell_lists_its_images(qtbot, window, tmp_path) -> None:
    net_path, weights, labels = window.paths
    dialog = window.model_menu.open_evaluate()
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.evaluation is not None, timeout=10000)
    cli_csv = tmp_path / "cli.csv"
    assert (
        main.main(["evaluate", "--model", str(net_path), "--weights", str(weights), "--csv", str(cli_csv)])
        == 0
    )
    want = read_csv(cli_csv.read_text())
    np.testing.assert_array_equal(dialog.matrix_counts(), want)
    assert want.sum() == 40

    r, c = np.argwhere(want > 0)[-1]
    rect = dialog.matrix.visualItemRect(dialog.matrix.item(r, c))
    qtbot.mouseClick(dialog.matrix.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    listed = [dialog.cell_items.item(i).text() for i in range(dialog.cell_items.count())]
    assert len(listed) == want[r, c]
    assert all(labels[int(key)] == r for key in listed)  # LMDB keys: the item's index
    # Each listed image, and each of the most confident mistakes, gets its picture.
    qtbot.waitUntil(lambda: not dialog.cell_items.item(0).icon().isNull(), timeout=10000)
    assert dialog.mistakes.count() == min(20, 40 - int(np.trace(want)))
    qtbot.waitUntil(lambda: not dialog.mistakes.item(0).icon().isNull(), timeout=10000)

    out = tmp_path / "gui.csv"
    dialog.export(str(out))
    assert out.read_text() == cli_csv.read_text()
    assert (tmp_path / "gui_per_class.csv").read_text().startswith("class,items,precision,recall")


def test_cancel_stops_the_evaluation(qtbot, window, tmp_path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    make_model(big, 3000)  # 94 batches of 32: far more than run before Cancel is pressed
    dialog = window.model_menu.open_evaluate()
    dialog.data.setText(str(big / "items_lmdb"))
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert dialog.cancel_button.isEnabled() and not dialog.run_button.isEnabled()
    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.status.text() == "Cancelled.", timeout=10000)
    assert dialog.evaluation is None and dialog.run_button.isEnabled()
    assert dialog.progress.value() < 3000
