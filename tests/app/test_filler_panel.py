"""The Initialisation dock: a row per parameter blob, undoable filler edits, a preview equal to `fill`."""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt, QTimer

from app.fillers import panel as panel_module
from app.fillers.slots import FIELDS
from app.main_window import MainWindow
from engine.cli.fill import initial_parameters
from proto import caffe_pb2

NET = """name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 8 dim: 16 dim: 10 dim: 10 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 32 kernel_size: 3 weight_filler { type: "xavier" }
                            bias_filler { type: "constant" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "prelu" type: "PReLU" bottom: "conv" top: "conv" }
layer { name: "up" type: "Deconvolution" bottom: "conv" top: "up"
        convolution_param { num_output: 32 group: 32 kernel_size: 4 stride: 2 bias_term: false
                            weight_filler { type: "bilinear" } } }
layer { name: "up3" type: "Deconvolution" bottom: "conv" top: "up3"
        convolution_param { num_output: 32 group: 32 kernel_size: 5 stride: 3 bias_term: false
                            weight_filler { type: "bilinear" } } }
"""
CONV, PRELU, UP, UP3 = 1, 3, 4, 5


def fillers(window: MainWindow):
    return window.filler_dock.widget()


def open_window(qtbot, tmp_path, text: str = NET) -> MainWindow:
    path = tmp_path / "net.prototxt"
    path.write_text(text)
    window = MainWindow()
    qtbot.addWidget(window)
    window.ask_unsaved_changes = lambda *a: "discard"
    window.show_error = lambda *a: None
    assert window.open_file(path)
    window.show()
    window.filler_dock.raise_()
    qtbot.waitExposed(window)
    window.net_path_for_test = str(path)
    return window


def wait_preview(qtbot, window: MainWindow, filler_type: str | None = None, role: str | None = None):
    preview = fillers(window).preview

    def ready() -> bool:
        p = preview.current
        return (
            p is not None
            and (filler_type is None or p.filler.type == filler_type)
            and (role is None or p.role == role)
        )

    qtbot.waitUntil(ready, timeout=60000)
    return preview.current


def prototxt_filler(window: MainWindow, field: str) -> str:
    match = re.search(field + r"\s*\{([^}]*)\}", window.editor.text)
    return match.group(1) if match else ""


def choose_filler(qtbot, window: MainWindow, row: int, name: str) -> None:
    combo = fillers(window).rows[row].type_combo
    combo.showPopup()  # open the list and click the item, as a user does
    view = combo.view()
    qtbot.waitUntil(view.isVisible)
    rect = view.visualRect(view.model().index(combo.findText(name), 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert combo.currentText() == name


def test_switch_to_msra_shows_in_the_prototxt_and_the_histogram(qtbot, tmp_path):
    window = open_window(qtbot, tmp_path)
    window.selection.select(CONV)
    panel = fillers(window)
    assert [r.radio.text() for r in panel.rows] == ["weights", "bias"]
    assert wait_preview(qtbot, window, "xavier") is not None
    assert panel.rows[0].shape.text().startswith("32 × 16 × 3 × 3")

    choose_filler(qtbot, window, 0, "msra")
    assert 'type: "msra"' in prototxt_filler(window, "weight_filler")
    preview = wait_preview(qtbot, window, "msra")
    edges, density = panel.preview.bars.xData, panel.preview.bars.yData  # what the plot draws
    centres, mass = (edges[1:] + edges[:-1]) / 2, density * np.diff(edges)
    mean = np.sum(centres * mass)
    histogram_std = math.sqrt(np.sum(mass * (centres - mean) ** 2))
    fan_in = 16 * 3 * 3
    assert histogram_std == pytest.approx(math.sqrt(2 / fan_in), rel=0.05)
    assert preview.expected["fan_in"] == fan_in and preview.expected["fan_out"] == 32 * 9
    assert "n = fan_in = <b>144</b>" in panel.preview.stats.text()

    window.undo()
    assert 'type: "xavier"' in prototxt_filler(window, "weight_filler")
    assert panel.rows[0].type_combo.currentText() == "xavier"
    assert wait_preview(qtbot, window, "xavier") is not None


def test_each_filler_shows_only_the_fields_it_reads(qtbot, tmp_path):
    window = open_window(qtbot, tmp_path)
    window.selection.select(CONV)
    row = fillers(window).rows[0]
    for name, fields in FIELDS.items():
        choose_filler(qtbot, window, 0, name)
        assert tuple(row.editors) == fields, name
        assert all(editor.isVisible() for editor in row.editors.values())
        assert f'type: "{name}"' in prototxt_filler(window, "weight_filler")

    choose_filler(qtbot, window, 0, "gaussian")
    std = row.editors["std"]
    std.setFocus()
    std.selectAll()
    qtbot.keyClicks(std, "0.01")
    qtbot.keyClick(std, Qt.Key.Key_Return)
    assert re.search(r"std:\s*0\.01\b", prototxt_filler(window, "weight_filler"))
    wait_preview(qtbot, window, "gaussian")
    qtbot.waitUntil(lambda: abs(fillers(window).preview.current.filler.std - 0.01) < 1e-6, timeout=60000)
    warning = fillers(window).preview.warnings
    assert warning.isVisible() and "smaller than √(2/fan_in) = 0.118 (fan_in 144)" in warning.text()


def test_a_filler_the_engine_refuses_is_refused_at_once_as_in_the_inspector(qtbot, tmp_path):
    """The row's edit is the inspector's validated edit: a negative std never reaches the document."""
    window = open_window(qtbot, tmp_path)
    window.selection.select(CONV)
    choose_filler(qtbot, window, 0, "gaussian")
    row, before = fillers(window).rows[0], prototxt_filler(window, "weight_filler")
    std = row.editors["std"]
    std.setFocus()
    std.selectAll()
    qtbot.keyClicks(std, "-0.5")
    qtbot.keyClick(std, Qt.Key.Key_Return)
    assert window.doc.layer(CONV).convolution_param.weight_filler.std == 1  # gaussian's default, kept
    assert prototxt_filler(window, "weight_filler") == before
    message = fillers(window).preview.message
    assert (
        message.isVisible() and "Not changed" in message.text() and "std must be positive" in message.text()
    )
    assert std.text() == "1.0"  # the row shows the document's value again
    window.undo()  # the refused edit made no undo step: undo takes back the switch to gaussian
    assert 'type: "xavier"' in prototxt_filler(window, "weight_filler")


def bilinear(k: int) -> np.ndarray:
    """The bilinear upsampling kernel, written the obvious way (FCN's upsample_filt)."""
    factor = (k + 1) // 2
    centre = factor - 1 if k % 2 == 1 else factor - 0.5
    og = np.ogrid[:k, :k]
    return (1 - abs(og[0] - centre) / factor) * (1 - abs(og[1] - centre) / factor)


@pytest.mark.parametrize("index, k", [(UP, 4), (UP3, 5)])
def test_the_bilinear_preview_equals_the_formula(qtbot, tmp_path, index, k):
    window = open_window(qtbot, tmp_path)
    window.selection.select(index)
    preview = wait_preview(qtbot, window, "bilinear")
    np.testing.assert_allclose(preview.kernel, bilinear(k), atol=1e-6)
    np.testing.assert_allclose(fillers(window).preview.kernel.array, bilinear(k), atol=1e-6)
    assert fillers(window).preview.kernel.isVisible()
    assert f"The {k}×{k} kernel" in fillers(window).preview.kernel_caption.text()


def test_the_preview_is_what_fill_writes_and_reseed_draws_again(qtbot, tmp_path):
    window = open_window(qtbot, tmp_path)
    panel = fillers(window)
    window.selection.select(CONV)
    first = wait_preview(qtbot, window, "xavier").values
    np.testing.assert_array_equal(
        first, initial_parameters(window.net_path_for_test, caffe_pb2.TRAIN, 1)["conv/0"]
    )
    assert "--seed 1" in panel.footer.text() and "conv/0" in panel.footer.text()

    qtbot.mouseClick(panel.reseed, Qt.MouseButton.LeftButton)
    assert panel.seed == 2
    qtbot.waitUntil(lambda: not np.array_equal(panel.preview.current.values, first), timeout=60000)
    again = panel.preview.current.values
    np.testing.assert_array_equal(
        again, initial_parameters(window.net_path_for_test, caffe_pb2.TRAIN, 2)["conv/0"]
    )

    panel.rows[1].radio.click()  # the bias: constant 0
    bias = wait_preview(qtbot, window, "constant", "bias")
    assert not bias.values.any() and not panel.preview.warnings.isVisible()


def test_prelu_starts_at_the_engines_default_until_set(qtbot, tmp_path):
    window = open_window(qtbot, tmp_path)
    window.selection.select(PRELU)
    (row,) = fillers(window).rows
    assert row.radio.text() == "slopes" and row.type_combo.currentText() == "constant"
    assert "not set in the prototxt" in row.hint.text()
    preview = wait_preview(qtbot, window, "constant")
    assert np.all(preview.values == np.float32(0.25)) and preview.values.shape == (32,)

    value = row.editors["value"]
    value.setFocus()
    value.selectAll()
    qtbot.keyClicks(value, "0.1")
    qtbot.keyClick(value, Qt.Key.Key_Return)
    assert window.doc.layer(PRELU).prelu_param.filler.value == pytest.approx(0.1)
    assert "not set" not in row.hint.text()


def test_the_layer_list_of_the_panel_drives_the_selection(qtbot, tmp_path):
    window = open_window(qtbot, tmp_path)
    combo = fillers(window).layer_combo
    assert [combo.itemText(i).split()[0] for i in range(combo.count())] == ["conv", "prelu", "up", "up3"]
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert window.selection.current == CONV
    qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert window.selection.current == PRELU and fillers(window).rows[0].radio.text() == "slopes"


def test_without_shapes_the_rows_still_edit_and_the_preview_says_why(qtbot, tmp_path):
    text = NET.replace(
        'type: "Input" top: "data" input_param { shape { dim: 8 dim: 16 dim: 10 dim: 10 } }',
        'type: "Data" top: "data" data_param { source: "no_such_lmdb" batch_size: 8 backend: LMDB }',
    )
    window = open_window(qtbot, tmp_path, text)
    window.selection.select(CONV)
    panel = fillers(window)
    qtbot.waitUntil(lambda: panel.initial is not None, timeout=60000)
    assert panel.rows[0].shape.text() == "shape unknown"
    assert (
        "cannot be built" in panel.preview.message.text() and "no_such_lmdb" in panel.preview.message.text()
    )
    choose_filler(qtbot, window, 0, "msra")
    assert 'type: "msra"' in prototxt_filler(window, "weight_filler")


def test_large_blobs_are_filled_off_the_gui_thread(qtbot, tmp_path, monkeypatch):
    big = """layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 4096 } } }
    layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc"
            inner_product_param { num_output: 1024 weight_filler { type: "gaussian" std: 0.01 } } }"""
    ticked = threading.Event()
    threads, turned = [], []
    real = panel_module.initialise

    def initialise(*args):
        threads.append(threading.current_thread())
        ticked.clear()
        turned.append(ticked.wait(10))  # on the GUI thread this would wait in vain: no tick while it blocks
        return real(*args)

    monkeypatch.setattr(panel_module, "initialise", initialise)
    window = open_window(qtbot, tmp_path, big)
    timer = QTimer(window, interval=10)
    timer.timeout.connect(ticked.set)
    timer.start()
    window.selection.select(1)
    preview = wait_preview(qtbot, window, "gaussian")
    timer.stop()
    assert preview.values.shape == (1024, 4096)
    assert threads and all(t is not threading.main_thread() for t in threads)
    assert all(turned)  # the event loop kept turning while the worker held the draw
