"""Issue 31 case 11: snapshots find their net. A snapshot beside the solver whose snapshot_prefix names it
opens with that solver's net (BVLC's layout, paths from the Caffe root); a run in the runs folder saves
its net and solver beside its snapshots, so reopening one asks nothing; when the net must be asked for,
a window with words says why before any file dialog, over the main window."""

from __future__ import annotations

import os
import shutil

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from test_app_models import TINY
from windows import asked_window

import engine
from app import cli_open, opening
from app.files import EXAMPLES
from app.main_window import open_window
from proto.textio import parse_net, parse_solver

LENET = EXAMPLES / "mnist"


def _bvlc_tree(root):
    """``examples/mnist`` under a Caffe root: the solver names its net and prefix from the root."""
    mnist = root / "examples" / "mnist"
    mnist.mkdir(parents=True)
    shutil.copy(LENET / "lenet_train_test.prototxt", mnist / "lenet_train_test.prototxt")
    (mnist / "lenet_solver.prototxt").write_text(
        'net: "examples/mnist/lenet_train_test.prototxt"\nbase_lr: 0.01\nlr_policy: "inv"\ngamma: 0.0001\n'
        'power: 0.75\nmax_iter: 10000\nsnapshot: 5000\nsnapshot_prefix: "examples/mnist/lenet"\n'
    )
    model = mnist / "lenet_iter_650.caffemodel"
    engine.Net(str(LENET / "lenet.prototxt"), engine.TEST).save(str(model))  # the same layers' blobs
    return mnist, model


def test_a_snapshot_opens_with_the_net_its_solver_names(qtbot, tmp_path):
    mnist, model = _bvlc_tree(tmp_path / "caffe")
    window = asked_window(qtbot, ask_net_for_model=None)
    assert window.open_file(model)
    assert window.ask_net_for_model.count == 0
    assert window.doc.net_path == str(mnist / "lenet_train_test.prototxt")
    assert window.doc.solver_path == str(mnist / "lenet_solver.prototxt")
    assert window.doc.solver.max_iter == 10000 and window.doc.weights_path == str(model)
    assert "named by lenet_solver.prototxt" in window.notice.full
    assert cli_open.check(str(model)) is None


def test_a_solver_naming_another_prefix_is_not_taken(qtbot, tmp_path):
    mnist, model = _bvlc_tree(tmp_path / "caffe")
    other = mnist / "other_iter_650.caffemodel"
    shutil.move(model, other)
    window = asked_window(qtbot, ask_net_for_model="")  # rebuild: the solver names "lenet", not "other"
    assert window.open_file(other)
    assert window.ask_net_for_model.count == 1 and window.doc.net_path is None


def test_a_runs_folder_snapshot_reopens_with_its_net_and_solver(qtbot):
    window = asked_window(qtbot, ask_net_for_model=None)
    window.doc.load_net(parse_net(TINY), None)  # untitled: the run writes into the runs folder
    solver = 'base_lr: 0.02\nmax_iter: 3\nlr_policy: "fixed"\nsnapshot_prefix: "tiny"\n'
    window.doc.load_solver(parse_solver(solver))
    dock = window.training
    dock.buttons["train"].click()
    run = dock.controller.current
    assert run is not None
    qtbot.waitUntil(lambda: run.status == "finished", timeout=120000)
    assert run.job.output_dir and run.snapshots
    model = run.snapshots[-1]
    assert os.path.dirname(model) == run.job.output_dir
    assert sorted(n for n in os.listdir(run.job.output_dir) if n.endswith(".prototxt")) == [
        "tiny.prototxt",
        "tiny_solver.prototxt",
    ]

    fresh = asked_window(qtbot, ask_net_for_model=None)
    assert fresh.open_file(model)
    assert fresh.ask_net_for_model.count == 0
    assert fresh.doc.net_path == os.path.join(run.job.output_dir, "tiny.prototxt")
    assert [layer.name for layer in fresh.doc.net.layer] == ["data", "fc", "loss"]
    assert fresh.doc.solver_path == os.path.join(run.job.output_dir, "tiny_solver.prototxt")
    assert abs(fresh.doc.solver.base_lr - 0.02) < 1e-8  # a float32 field: 0.02 is held to ~5e-10
    assert list(fresh.doc.weights) == ["fc"]


def _answer_box(qtbot, seen: list, button_text: str | None) -> None:
    """Once the question is up, record its words and press ``button_text`` (None: Cancel)."""

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, answer)
            return
        seen.append((box.parentWidget(), box.text(), box.informativeText()))
        for button in box.buttons():
            if (button_text is None and box.buttonRole(button) == QMessageBox.ButtonRole.RejectRole) or (
                button.text() == button_text
            ):
                button.click()
                return

    QTimer.singleShot(0, answer)


@pytest.mark.real_dialogs
def test_the_question_explains_itself_and_cancel_opens_nothing(qtbot, tmp_path):
    window = asked_window(qtbot)
    window.ask_net_for_model = lambda path: opening.ask_net_for_model(window, path)  # type: ignore[method-assign, assignment]  # the real question
    model = tmp_path / "snap_iter_500.caffemodel"
    engine.Net(str(LENET / "lenet.prototxt"), engine.TEST).save(str(model))
    before = window.doc.net_text()
    seen: list = []
    _answer_box(qtbot, seen, None)
    assert not window.open_file(model)
    (parent, question, why) = seen[0]
    assert parent is window and question == "Which net goes with snap_iter_500.caffemodel?"
    assert "snap.prototxt" in why and "snapshot_prefix" in why and "rebuild" in why
    assert window.doc.net_text() == before and window.show_error.count == 0

    _answer_box(qtbot, seen, "Rebuild from the Model")
    assert window.open_file(model)
    assert "(from snap_iter_500.caffemodel)" in window.windowTitle()


def test_main_py_on_a_lone_snapshot_asks_over_a_shown_window(qtbot, tmp_path, monkeypatch):
    model = tmp_path / "lone_iter_5.caffemodel"
    engine.Net(str(LENET / "lenet.prototxt"), engine.TEST).save(str(model))
    shown: list = []

    def ask(self, path: str) -> str:
        shown.append(self.isVisible())
        return ""  # rebuild the net from the model

    monkeypatch.setattr("app.main_window.MainWindow.ask_net_for_model", ask)
    window = open_window(["main.py", str(model)])
    qtbot.addWidget(window)
    assert shown == [True] and "(from lone_iter_5.caffemodel)" in window.windowTitle()
