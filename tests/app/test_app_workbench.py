"""The window's conventions: status-bar totals, About, New and New from Example, shortcuts, a screenshot."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QKeySequence

from app.about import AboutDialog, versions
from app.examples import examples
from app.files import EXAMPLES
from app.main_window import MainWindow
from app.net_stats import net_totals
from graph_view.summary import count
from proto.textio import read_net

BROKEN_SOURCE = """name: "needs data"
layer { name: "d" type: "Data" top: "data" top: "label" data_param { source: "/no/such/lmdb" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
"""


@pytest.fixture
def window(qtbot) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: None
    w.show()
    qtbot.waitExposed(w)
    return w


def test_status_bar_totals_follow_the_net(qtbot, window, tmp_path):
    totals = window.workbench.totals
    assert window.open_file(EXAMPLES / "mlp.prototxt")
    expected = net_totals(read_net(EXAMPLES / "mlp.prototxt"))
    qtbot.waitUntil(lambda: totals.totals == expected, timeout=10_000)
    assert f"{count(expected.params)} params" in totals.text() and "FLOPs" in totals.text()
    assert f"{expected.params:,}" in totals.toolTip()

    broken = tmp_path / "broken.prototxt"
    broken.write_text(BROKEN_SOURCE)
    assert window.open_file(broken)
    qtbot.waitUntil(lambda: totals.text().startswith("shapes unavailable:"), timeout=10_000)
    assert "/no/such/lmdb" in totals.toolTip() and totals.totals is None


def test_new_and_new_from_example(qtbot, window):
    bench = window.workbench
    titles = [a.text() for a in bench.examples_menu.actions()]
    assert titles[0].startswith("LeNet") and len(titles) == len(examples()) >= 8
    resnet = next(a for a in bench.examples_menu.actions() if a.text() == "ResNet-18")
    assert "ResNet-18" in resnet.toolTip()
    resnet.trigger()
    assert window.doc.net.name.startswith("ResNet") and window.doc.net_path is None
    assert window.windowTitle() == "Barista — ResNet-18 (example)[*]" and not window.isWindowModified()

    bench.new_action.trigger()
    assert window.doc.net.name == "untitled" and len(window.doc.net.layer) == 0
    assert window.doc.solver.base_lr == pytest.approx(0.01) and window.doc.solver.type == "SGD"


def test_standard_shortcuts(window):
    bench = window.workbench

    def keys(action):
        return {s.toString() for s in action.shortcuts()}

    assert "Ctrl+N" in keys(bench.new_action)
    assert "Ctrl+F" in keys(bench.find_action)
    assert "Ctrl+H" in keys(bench.replace_action)
    assert QKeySequence(QKeySequence.StandardKey.FindNext).toString() in keys(bench.find_next_action)
    assert "Ctrl+O" in keys(window.open_action) and "Ctrl+S" in keys(window.save_action)
    shortcuts = [s.toString() for a in window.findChildren(type(bench.new_action)) for s in a.shortcuts()]
    clashes = {s for s in shortcuts if s and shortcuts.count(s) > 1}
    assert not clashes, f"the same key does two things: {clashes}"


def test_about_lists_the_versions(qtbot, window):
    names = [name for name, _ in versions()]
    assert names[:6] == ["Barista", "Python", "Qt", "PySide6", "numpy", "protobuf"] and "cupy" in names
    dialog = AboutDialog(window)
    qtbot.addWidget(dialog)
    text = dialog.table.text()
    assert "PySide6" in text and "protobuf" in text and "numpy" in text


def test_screenshot_of_the_main_window(qtbot, window, tmp_path):
    """A picture to look at (kept under pytest's tmp_path): LeNet open, conv1 inspected."""
    assert window.open_file(EXAMPLES / "mnist" / "lenet_solver.prototxt")
    window.resize(1600, 1000)
    window.selection.select(2)

    def described() -> bool:
        """The picture is the one described: the window at its new size (the platform's answer) and
        conv1's box on the canvas, selected; grab() then paints synchronously."""
        conv1 = window.graph.scene.nodes.get("conv1")  # the scene makes new boxes on a rebuild
        return window.width() == 1600 and conv1 is not None and conv1.isSelected()

    qtbot.waitUntil(described, timeout=10_000)
    image = window.grab()
    assert image.save(str(tmp_path / "main_window.png")) and image.width() >= 1400
