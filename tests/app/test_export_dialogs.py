"""File > Export and Train > Train on a Cluster…: the dialogs write what they say, from the menus, and
a training log (a package's, Caffe's format) opens as a run plotted in the training dock."""

from __future__ import annotations

import shutil
import sys
import types

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMenu

from app.export_dialog import AS_WRITTEN
from app.files import EXAMPLES
from app.main_window import MainWindow

pytest.importorskip("torch")


@pytest.fixture
def window(qtbot, tmp_path):
    shutil.copy(EXAMPLES / "mlp.prototxt", tmp_path)
    shutil.copy(EXAMPLES / "mlp_solver.prototxt", tmp_path)
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    errors: list[str] = []
    w.show_error = lambda title, message: errors.append(message)
    w.errors = errors
    assert w.open_file(tmp_path / "mlp_solver.prototxt")
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.training.shutdown()


def menu_action(window, menu: str, *texts: str):
    for action in window.menuBar().actions():
        if action.text().replace("&", "") == menu:
            current = action.menu()
            for text in texts:
                found = [a for a in current.actions() if a.text().replace("&", "") == text]
                assert found, [a.text() for a in current.actions()]
                current = found[0].menu() if isinstance(found[0].menu(), QMenu) else found[0]
            return current
    raise AssertionError(menu)


def test_export_pytorch_module_from_the_file_menu_writes_a_module_that_runs(qtbot, window, tmp_path):
    import torch

    menu_action(window, "File", "Export", "PyTorch Module…").trigger()
    dialog = window.export_actions.dialog
    qtbot.waitExposed(dialog)
    assert dialog.output.text() == str(tmp_path / "mlp.py")
    dialog.net_choice.setCurrentIndex(AS_WRITTEN)  # its DummyData draws the inputs (a deploy net takes them)
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "wrote" in dialog.status.text())
    assert (tmp_path / "mlp.pt").exists()
    module = types.ModuleType("mlp_export")
    exec(compile((tmp_path / "mlp.py").read_text(), str(tmp_path / "mlp.py"), "exec"), module.__dict__)
    sys.modules.pop("mlp_export", None)
    net = module.load(str(tmp_path / "mlp.pt"))
    out = net()  # the MLP's DummyData draws its own inputs
    assert set(out) == set(net.outputs) and all(torch.isfinite(v).all() for v in out.values())


def test_a_net_the_export_cannot_express_is_refused_in_the_status_line(qtbot, window, tmp_path):
    (tmp_path / "bad.prototxt").write_text(
        'layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 dim: 4 dim: 4 } } }\n'
        'layer { name: "cols" type: "Im2col" bottom: "x" top: "y" convolution_param { kernel_size: 2 } }\n'
    )
    assert window.open_file(tmp_path / "bad.prototxt")
    dialog = window.export_actions.open_dialog("torch")
    assert not dialog.export()
    assert "(Im2col)" in dialog.status.text() and "cannot be exported" in dialog.status.text()


def test_train_on_a_cluster_writes_the_package_and_shows_the_command_to_copy(qtbot, window, tmp_path):
    menu_action(window, "Train", "Train on a Cluster…").trigger()
    dialog = window.export_actions.dialog
    qtbot.waitExposed(dialog)
    assert dialog.windowTitle() == "Train on a Cluster"
    out = tmp_path / "mlp_torchrun"
    assert dialog.output.text() == str(out)
    dialog.processes.setValue(4)
    assert dialog.command.text() == f"torchrun --standalone --nproc_per_node=4 {out}/train.py"
    dialog.nodes.setValue(3)
    assert "--nnodes=3 --nproc_per_node=4 --rdzv_backend=c10d" in dialog.command.text()
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Wrote the package" in dialog.status.text())
    assert {"train.py", "model.py", "weights.pt", "solver.prototxt"} <= {p.name for p in out.iterdir()}
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == dialog.command.text()


LOG = """I1201 21:00:00.000001 12345 train.py:0] Initializing solver from parameters:
I1201 21:00:00.000002 12345 train.py:0] base_lr: 0.01
I1201 21:00:00.000003 12345 train.py:0] max_iter: 20
I1201 21:00:00.000004 12345 train.py:0] lr_policy: "fixed"
I1201 21:00:00.000005 12345 train.py:0] Solving MLP
I1201 21:00:00.100000 12345 train.py:0] Iteration 0, Testing net (#0)
I1201 21:00:00.200000 12345 train.py:0]     Test net output #0: accuracy = 0.1
I1201 21:00:01.000000 12345 train.py:0] Iteration 0 (0 iter/s, 1s/10 iters), loss = 2.3
I1201 21:00:01.000100 12345 train.py:0] Iteration 0, lr = 0.01
I1201 21:00:02.000000 12345 train.py:0] Iteration 10 (10 iter/s, 1s/10 iters), loss = 1.5
I1201 21:00:02.000100 12345 train.py:0] Iteration 10, lr = 0.01
I1201 21:00:03.000000 12345 train.py:0] Iteration 20, loss = 0.9
I1201 21:00:03.100000 12345 train.py:0] Iteration 20, Testing net (#0)
I1201 21:00:03.200000 12345 train.py:0]     Test net output #0: accuracy = 0.8
I1201 21:00:03.300000 12345 train.py:0] Optimization Done.
"""


def test_a_training_log_opens_as_a_run_in_the_dock(qtbot, window, tmp_path):
    path = tmp_path / "cluster.log"
    path.write_text(LOG)
    actions = window.export_actions
    actions.ask_log_path = lambda: str(path)
    menu_action(window, "Train", "Open Training Log…").trigger()
    runs = window.training.controller.runs
    assert len(runs) == 1 and runs[0].name == "cluster.log" and runs[0].status == "finished"
    run = runs[0]
    assert run.train.column("iter").tolist() == [0, 10, 20]
    assert run.train.column("loss").tolist() == [2.3, 1.5, 0.9]
    assert run.train.column("seconds").tolist() == pytest.approx([1.0, 2.0, 3.0], abs=1e-3)
    assert run.tests["accuracy"].column("value").tolist() == [0.1, 0.8]
    assert run.max_iter == 20 and run.job.solver.base_lr == pytest.approx(0.01)
    assert window.training.runs.shown() == [run]  # ticked, so the plots draw it
    (tmp_path / "empty.log").write_text("nothing here\n")
    assert not actions.open_log(str(tmp_path / "empty.log"))
    assert "not a training log" in window.errors[-1]


def test_export_onnx_from_the_file_menu(qtbot, window, tmp_path):
    pytest.importorskip("onnx")
    menu_action(window, "File", "Export", "ONNX…").trigger()
    dialog = window.export_actions.dialog
    assert dialog.output.text() == str(tmp_path / "mlp.onnx")
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dialog.is_busy(), timeout=60000)
    assert (tmp_path / "mlp.onnx").exists()
    assert "Not exported" not in dialog.status.text()
