"""Issue 31 case 12: File > Export runs off the GUI thread (the dialog shows it is busy, the window stays
usable, the result is reported when done), and a train_val net is exported as its deploy net by
default (one ``data`` input, ``prob`` out), with the net as written still on offer. Also case 13's
"exported by Barista from ." (the package README) and the module docstring that named a temp file."""

from __future__ import annotations

import shutil
import threading

import pytest
from PySide6.QtCore import Qt
from windows import asked_window

from app.export_dialog import AS_WRITTEN, DEPLOY
from app.files import EXAMPLES

pytest.importorskip("torch")


@pytest.fixture
def window(qtbot, tmp_path):
    for name in ("lenet_train_test.prototxt", "lenet_solver.prototxt", "lenet.prototxt"):
        shutil.copy(EXAMPLES / "mnist" / name, tmp_path)
    w = asked_window(qtbot)
    assert w.open_file(tmp_path / "lenet_solver.prototxt")
    yield w
    w.training.shutdown()


def test_onnx_export_runs_in_a_worker_and_writes_the_deploy_net(qtbot, window, tmp_path, monkeypatch):
    onnx = pytest.importorskip("onnx")
    from engine.export import onnx_export

    threads: list[str] = []
    original = onnx_export.export_onnx

    def recording(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(onnx_export, "export_onnx", recording)
    dialog = window.export_actions.open_dialog("onnx")
    assert dialog.net_choice.currentIndex() == DEPLOY and not dialog.phase.isEnabled()
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    # The click returned before the export's result could arrive (it comes through the event loop).
    assert dialog.is_busy() and dialog.busy.isVisible() and not dialog.export_button.isEnabled()
    assert dialog.status.text() == "Exporting to lenet_train_test.onnx…"
    qtbot.waitUntil(lambda: not dialog.is_busy(), timeout=60000)
    assert threads == ["barista-export"]
    assert not dialog.busy.isVisible() and dialog.export_button.isEnabled()
    assert dialog.status.text().startswith("Deploy net (input data 1×1×28×28; output prob): ")
    assert "wrote" in window.statusBar().currentMessage().lower()
    graph = onnx.load(str(tmp_path / "lenet_train_test.onnx")).graph
    assert [i.name for i in graph.input if i.name == "label"] == []
    assert [i.name for i in graph.input][:1] == ["data"] and [o.name for o in graph.output] == ["prob"]


def test_the_net_as_written_is_still_offered(qtbot, window, tmp_path):
    onnx = pytest.importorskip("onnx")
    dialog = window.export_actions.open_dialog("onnx")
    dialog.net_choice.setCurrentIndex(AS_WRITTEN)
    assert dialog.phase.isEnabled()
    assert dialog.start_export()
    qtbot.waitUntil(lambda: not dialog.is_busy(), timeout=60000)
    assert "Not exported" not in dialog.status.text(), dialog.status.text()
    outputs = {o.name for o in onnx.load(str(tmp_path / "lenet_train_test.onnx")).graph.output}
    assert "prob" not in outputs and "accuracy" in outputs


def test_a_deploy_net_has_no_choice_to_make(qtbot, window, tmp_path):
    assert window.open_file(tmp_path / "lenet.prototxt")
    dialog = window.export_actions.open_dialog("torch")
    assert dialog.net_choice.currentIndex() == AS_WRITTEN and not dialog.net_choice.isEnabled()


def test_the_module_and_the_package_name_the_users_files(qtbot, window, tmp_path):
    dialog = window.export_actions.open_dialog("torch")
    assert dialog.start_export()
    qtbot.waitUntil(lambda: not dialog.is_busy(), timeout=60000)
    text = (tmp_path / "lenet_train_test.py").read_text()
    assert "Exported by Barista from lenet_train_test.prototxt (phase TEST)" in text
    assert "/tmp" not in text.split('"""')[1]  # the docstring names no temporary file

    package = window.export_actions.open_dialog("package")
    assert package.start_export()
    qtbot.waitUntil(lambda: not package.is_busy(), timeout=120000)
    readme = (tmp_path / "lenet_train_test_torchrun" / "README.txt").read_text()
    assert "exported by Barista from lenet_solver.prototxt." in readme.splitlines()[0]
