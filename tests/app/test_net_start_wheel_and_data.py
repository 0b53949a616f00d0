"""Issue 31 case 7: "How the net starts" charts leave the mouse wheel to the panel (it scrolls)
unless a chart was clicked; zoomed out, the layer names under the axis never pile up; and a net
whose data is not on this machine runs on synthetic batches of the shapes the canvas assumes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from windows import open_window

NET = """name: "downloaded"
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  transform_param { crop_size: 16 mean_value: 104 mean_value: 117 mean_value: 123 }
  data_param { source: "examples/imagenet/ilsvrc12_train_lmdb" batch_size: 4 backend: LMDB } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 8 kernel_size: 3 weight_filler { type: "gaussian" std: 0.01 } } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool1" top: "fc"
  inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
"""


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the LMDB is absent, as after a download
    monkeypatch.setenv("BARISTA_DATA_ROOT", str(tmp_path / "no-data-here"))
    path = tmp_path / "train_val.prototxt"
    path.write_text(NET)
    w = open_window(qtbot, path)
    panel = w.net_start_dock.widget()
    with qtbot.waitSignal(panel.finished, timeout=30000):
        w.net_start_dock.raise_()
    yield w
    w.training.shutdown()


def _wheel(widget, steps: int = -3) -> None:
    at = QPointF(widget.rect().center())
    event = QWheelEvent(
        at,
        QPointF(widget.mapToGlobal(at.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def test_a_net_without_its_data_runs_on_synthetic_batches_of_the_assumed_shape(window):
    panel = window.net_start_dock.widget()
    assert all(r.error is None for r in panel.results), [r.error for r in panel.results]
    assert "cannot open" not in panel.summary.text() and "could not run" not in panel.summary.text()
    text = panel.source.text()
    assert "synthetic data" in text and "not on this machine" in text
    assert "data 4×3×16×16" in text  # the canvas's assumption: crop_size, 3 mean_values, batch_size
    assert panel.axes[0].names[:2] == ["data", "conv1"]


def test_the_wheel_scrolls_the_panel_until_a_chart_is_clicked(qtbot, window):
    panel = window.net_start_dock.widget()
    window.resizeDocks([window.net_start_dock], [260], Qt.Orientation.Vertical)
    bar = panel.scroll_area.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)  # the short dock scrolls
    bar.setValue(0)
    plot = panel.plots[0]
    before = plot.viewRange()
    viewport = panel.view.viewport()
    _wheel(viewport)
    assert bar.value() > 0  # the panel scrolled
    assert plot.viewRange() == before  # the chart did not zoom

    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(5, 5))
    assert panel.view.hasFocus()
    scrolled = bar.value()
    _wheel(viewport)
    assert plot.viewRange() != before  # a clicked chart zooms under the wheel
    assert bar.value() == scrolled


def test_zoomed_out_the_layer_names_keep_apart(window):
    panel = window.net_start_dock.widget()
    axis = panel.axes[-1]
    room = axis._metrics().horizontalAdvance(max(axis.names, key=len))
    size = 300.0
    for low, high in ((-0.2, 4.2), (-40, 40), (-400, 400)):  # as shown, then zoomed far out
        ((step, ticks),) = axis.tickValues(low, high, size)
        spacing = step * size / (high - low)  # pixels between two names drawn
        assert spacing >= room, (low, high, spacing, room)
        assert all(low <= t <= high for t in ticks)


def test_it_runs_only_when_its_tab_is_in_front(qtbot, tmp_path, monkeypatch):
    """Qt keeps a tabified dock's panel "visible", moved out of sight: a probe there (GoogLeNet
    without its data runs seconds of synthetic batches) would run for nobody."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "train_val.prototxt"
    path.write_text(NET)
    w = open_window(qtbot, path)
    panel = w.net_start_dock.widget()
    w.editor_dock.raise_()  # the Prototxt tab in front, as at every start
    panel._schedule()
    qtbot.waitUntil(lambda: not panel._timer.isActive())  # its moment to run came and went
    assert panel.results is None and not panel.jobs.busy and panel._pending
    with qtbot.waitSignal(panel.finished, timeout=30000):
        w.net_start_dock.raise_()  # its tab chosen: it runs now
    assert panel.results is not None
    w.training.shutdown()
