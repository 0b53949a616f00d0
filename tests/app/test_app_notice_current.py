"""The status bar's notice speaks of the net on screen: what opening a file said ("Solver: ... (it
trains this net)") goes when another net is opened, an example is made or a new net begins
(issue 31, case 10)."""

from __future__ import annotations

import shutil

from windows import open_window

from app.files import EXAMPLES


def _example_action(window, title_word: str):
    return next(a for a in window.workbench.examples_menu.actions() if title_word in a.text())


def test_the_solver_notice_follows_the_net_on_screen(qtbot, tmp_path):
    shutil.copy(EXAMPLES / "mlp.prototxt", tmp_path / "small.prototxt")
    solver = (EXAMPLES / "mlp_solver.prototxt").read_text().replace('"mlp.prototxt"', '"small.prototxt"')
    (tmp_path / "small_solver.prototxt").write_text(solver)
    window = open_window(qtbot, tmp_path / "small.prototxt")
    notice = window.notice
    assert "Solver: small_solver.prototxt (it trains this net)" in notice.full and notice.isVisible()

    _example_action(window, "LeNet").trigger()  # File > New from Example > LeNet
    qtbot.waitUntil(lambda: window.doc.net.name == "LeNet")
    assert "small_solver" not in notice.full and "small_solver" not in notice.toolTip()
    assert "the example's lenet_solver.prototxt" in notice.full  # what came with the example

    window.workbench.new_action.trigger()  # File > New
    assert window.doc.net.name == "untitled"
    assert notice.full == "" and not notice.isVisible()
    assert "small_solver" not in window.statusBar().currentMessage()
    window.training.shutdown()
