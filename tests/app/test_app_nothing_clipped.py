"""Nothing clipped at 1280x800: every visible label in the window shows its whole text, or, where
it must be shortened, says it whole on hover. The walk covers what a new user opens first: LeNet,
the GoogLeNet-style example, the siamese net, the Initialisation tab and the Splits view."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QWidget,
)
from windows import open_window

from app.files import EXAMPLES
from app.main_window import MainWindow


def plain(label: QLabel) -> str:
    text = label.text()
    if label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and re.search(r"<[a-zA-Z/!][^>]*>", text)
    ):
        doc = QTextDocument()
        doc.setHtml(text)
        return doc.toPlainText()
    return text


def clipped(root: QWidget) -> list[str]:
    """Visible labels whose text does not fit them and that have no tooltip to say it whole."""
    found = []
    for label in root.findChildren(QLabel):
        text = plain(label)
        if not label.isVisible() or not text.strip() or label.toolTip() or label.pixmap().isNull() is False:
            continue
        if label.visibleRegion().isEmpty():  # scrolled away, or under a tab not shown: not on screen
            continue
        room = label.contentsRect()
        if label.wordWrap():
            short = label.heightForWidth(label.width()) > label.height() + 1
        else:
            metrics = label.fontMetrics()
            wide = max(metrics.horizontalAdvance(line) for line in text.split("\n"))
            short = wide > room.width() + 1 or metrics.height() * len(text.split("\n")) > room.height() + 2
        if short:
            found.append(f"{label.objectName() or type(label.parent()).__name__}: {text!r}")
    for button in root.findChildren(QAbstractButton):  # the toolbars' and panels' buttons too
        text = button.text().replace("&&", "\0").replace("&", "").replace("\0", "&")
        if not button.isVisible() or not text.strip() or button.visibleRegion().isEmpty():
            continue
        if button.width() + 2 < button.sizeHint().width() and not button.toolTip():
            found.append(f"{button.objectName() or type(button).__name__}: {text!r}")
    for field in (
        root.findChildren(QAbstractSpinBox) + root.findChildren(QLineEdit) + root.findChildren(QComboBox)
    ):
        if (
            not field.isVisible()
            or field.visibleRegion().isEmpty()
            or isinstance(field.parent(), QAbstractSpinBox)
        ):
            continue
        shown = field.visibleRegion().boundingRect()
        if shown.width() < field.width() - 1 and not isinstance(field.parent(), QComboBox):
            found.append(
                f"{field.objectName() or type(field).__name__}: "
                f"cut at the side ({shown.width()} of {field.width()} px)"
            )
    return found


def open_at_1280(qtbot, path) -> MainWindow:
    w = open_window(qtbot, path)
    w.graph.sync()
    qtbot.waitUntil(lambda: w.workbench.totals.text() != "measuring…", timeout=30000)
    return w


def settle(qtbot, window) -> None:
    """Until the panels' pending runs are done and shown (their timers idle, no job in flight)."""
    fillers, start = window.filler_dock.widget(), window.net_start_dock.widget()

    def idle() -> bool:
        timers = (fillers._timer, start._timer, window.graph._timer)
        jobs = (fillers.build_jobs, fillers.preview_jobs, start.jobs)
        return not any(t.isActive() for t in timers) and not any(j.busy for j in jobs)

    qtbot.waitUntil(idle, timeout=120000)  # a net-start run on the inception net, on a busy machine
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)  # the layouts follow the new texts


@pytest.mark.parametrize(
    "net", ["mnist/lenet_solver.prototxt", "inception.prototxt", "siamese.prototxt", "mlp_solver.prototxt"]
)
def test_no_label_is_clipped_without_its_full_text_on_hover(qtbot, net):
    window = open_at_1280(qtbot, EXAMPLES / net)
    settle(qtbot, window)
    assert clipped(window) == []
    layer = next(
        i for i, layer in enumerate(window.doc.net.layer) if layer.type in ("Convolution", "InnerProduct")
    )
    window.selection.select(layer)  # the inspector's forms, weight_filler among them
    settle(qtbot, window)
    assert clipped(window) == []
    window.filler_dock.raise_()  # the Initialisation tab on a layer with weights
    settle(qtbot, window)
    assert clipped(window) == []
    window.graph.set_splits(True)  # the Splits view and its read-only note
    settle(qtbot, window)
    assert clipped(window) == []
    window.training.shutdown()


GAUSSIAN = """name: "quick"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 32 dim: 32 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 32 pad: 2 kernel_size: 5
    weight_filler { type: "gaussian" std: 0.0001 } bias_filler { type: "constant" } } }
"""


def test_the_gaussian_fillers_fields_fit_the_initialisation_tab(qtbot, tmp_path):
    path = tmp_path / "quick.prototxt"  # CIFAR-10 quick's first layer: mean, std and sparse
    path.write_text(GAUSSIAN)
    window = open_at_1280(qtbot, path)
    window.selection.select(1)
    window.filler_dock.raise_()
    settle(qtbot, window)
    assert clipped(window) == []
    window.training.shutdown()


def test_the_find_bars_count_is_whole_in_the_prototxt_dock(qtbot):
    """Seen in a real window: "2 of 6 · 1 box" read "2 of 6 · 1 b" in the right column's width."""
    window = open_at_1280(qtbot, EXAMPLES / "mnist/lenet_solver.prototxt")
    settle(qtbot, window)
    window.workbench.find_action.trigger()
    bar = window.workbench.find_bar
    bar.find_field.setText("ip1")
    qtbot.waitUntil(lambda: "box" in bar.count.text())
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    assert bar.count.width() >= bar.count.fontMetrics().horizontalAdvance(bar.count.text())
    assert clipped(bar) == []
    window.training.shutdown()
