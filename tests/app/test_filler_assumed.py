"""The Initialisation tab on a net whose data is not here: the shapes the canvas assumes for the data
give every parameter its shape and its draw, and the tab says the input shape is assumed. The draws
are the ones made once the data is there (the data layer's own seed draw is made in its place)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from PySide6.QtCore import Qt
from windows import open_window

from app.fillers.draws import initialise
from app.main_window import MainWindow
from proto import caffe_pb2, textio

NET = """name: "far"
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  transform_param { crop_size: 32 mean_value: 104 mean_value: 117 mean_value: 123 }
  data_param { source: "no_such_lmdb" batch_size: 8 backend: LMDB } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 16 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "ip1" type: "InnerProduct" bottom: "conv1" top: "ip1"
  inner_product_param { num_output: 10 weight_filler { type: "gaussian" std: 0.01 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" top: "loss" }
"""


@pytest.fixture
def window(qtbot, tmp_path):
    path = tmp_path / "far.prototxt"
    path.write_text(NET)
    w = open_window(qtbot, path)
    yield w
    panel = w.filler_dock.widget()
    for jobs in (panel.build_jobs, panel.preview_jobs):
        assert jobs.wait(10000)
    w.training.shutdown()


def test_the_tab_shows_shapes_and_draws_on_an_assumed_input_and_says_so(qtbot, window):
    assert window.graph.scene.graph.assumed  # the canvas assumes the data's shape
    window.filler_dock.raise_()
    window.selection.select(1)  # conv1
    panel = window.filler_dock.widget()
    stats = panel.preview.stats
    qtbot.waitUntil(lambda: stats.isVisible() and "drawn" in stats.text(), timeout=60000)
    assert [row.shape.text() for row in panel.rows] == ["16 × 3 × 5 × 5  (1,200 values)", "16"]
    note = panel.assumed_note
    assert note.isVisible() and "assumed" in note.text() and "8×3×32×32" in note.text()
    assert "not found" in note.text()
    assert not panel.preview.message.isVisible()  # a histogram, not "cannot be built"
    assert panel.preview.plot.isVisible()
    window.selection.select(2)  # ip1: its shape follows the assumed crop (16 x 28 x 28 inputs)
    qtbot.waitUntil(
        lambda: "ip1" in panel.preview.title.text() and not panel.preview.message.isVisible(), timeout=60000
    )
    assert panel.rows[0].shape.text() == f"10 × {16 * 28 * 28}  ({10 * 16 * 28 * 28:,} values)"
    assert note.isVisible()


def test_assumed_inputs_draw_what_the_real_data_would(tmp_path):
    rows = tmp_path / "rows.h5"
    with h5py.File(rows, "w") as f:
        f["data"] = np.zeros((4, 3, 10, 10), np.float32)
        f["label"] = np.zeros((4,), np.float32)
    listing = tmp_path / "list.txt"
    listing.write_text(f"{rows}\n")
    text = f"""name: "h"
layer {{ name: "data" type: "HDF5Data" top: "data" top: "label"
  hdf5_data_param {{ source: "{listing}" batch_size: 2 }} }}
layer {{ name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param {{ num_output: 4 kernel_size: 3 weight_filler {{ type: "gaussian" std: 0.1 }} }} }}
"""
    net = textio.parse_net(text)
    real = initialise(net, caffe_pb2.TRAIN, 7)
    assert real.error is None and not real.assumed
    gone = caffe_pb2.NetParameter()
    gone.CopyFrom(net)
    gone.layer[0].hdf5_data_param.source = str(tmp_path / "missing.txt")
    assert initialise(gone, caffe_pb2.TRAIN, 7).error is not None  # without an assumption: no build
    assumed = initialise(gone, caffe_pb2.TRAIN, 7, assumed={"data": [(2, 3, 10, 10), (2,)]})
    assert assumed.error is None and assumed.assumed == {"data": [(2, 3, 10, 10), (2,)]}
    assert assumed.same_as_fill
    np.testing.assert_array_equal(assumed.blobs[1][0], real.blobs[1][0])  # the same values, not alike


LEVELDB = """name: "pairs"
layer { name: "pair_data" type: "Data" top: "pair_data" top: "sim" include { phase: TRAIN }
  transform_param { scale: 0.00390625 }
  data_param { source: "pairs_train_leveldb" batch_size: 8 backend: LEVELDB } }
layer { name: "conv1" type: "Convolution" bottom: "pair_data" top: "conv1"
  convolution_param { num_output: 4 kernel_size: 5 weight_filler { type: "xavier" } } }
"""


def test_with_no_shape_to_assume_the_tab_says_what_to_type_and_follows_it(qtbot, tmp_path):
    path = tmp_path / "pairs.prototxt"  # the siamese example's LEVELDB: no field gives C, H, W
    path.write_text(LEVELDB)
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"  # the typed shape is an edit of the layout
    assert w.open_file(path)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: bool(w.graph.scene.nodes))
    w.filler_dock.raise_()
    w.selection.select(1)
    panel = w.filler_dock.widget()
    message = panel.preview.message
    qtbot.waitUntil(lambda: message.isVisible() and "cannot be built" in message.text(), timeout=60000)
    assert "Select 'pair_data' and type the shape of its data in the inspector" in message.text()
    assert panel.rows[0].shape.text() == "shape unknown" and not panel.assumed_note.isVisible()

    w.selection.select(0)  # the data layer: the inspector's Assumed input shape box
    field = w.workbench.assumed_shape.fields["pair_data"]
    qtbot.waitUntil(field.isVisible)
    field.setFocus()
    qtbot.keyClicks(field, "8,2,28,28")
    qtbot.keyClick(field, Qt.Key.Key_Return)
    w.selection.select(1)
    qtbot.waitUntil(lambda: panel.rows[0].shape.text().startswith("4 × 2 × 5 × 5"), timeout=60000)
    qtbot.waitUntil(lambda: "drawn" in panel.preview.stats.text(), timeout=60000)
    assert panel.assumed_note.isVisible() and "pair_data 8×2×28×28 + 8" in panel.assumed_note.text()
    for jobs in (panel.build_jobs, panel.preview_jobs):
        assert jobs.wait(10000)
    w.training.shutdown()
