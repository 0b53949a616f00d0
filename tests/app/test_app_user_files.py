"""Issue 12 replayed through the window: nothing written behind the user's back, the solver follows
the net, Save never drops typed text, legacy files say they were upgraded. (Trained models and the
whole-session check of resources/ are in test_app_models.py and test_app_session_writes.py.)"""

from __future__ import annotations

import pytest
from answers import Asked
from gestures import drag_box
from windows import asked_window

from app import saving
from app.commands import SetLayerField
from app.files import EXAMPLES
from app.main_window import MainWindow

DEPLOY = """\
name: "GoogleNet"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 32 dim: 32 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 8 kernel_size: 3 } }
layer { name: "fc" type: "InnerProduct" bottom: "conv1" top: "fc" inner_product_param { num_output: 10 } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
"""

INPUT_ONLY = """\
name: "zeros"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 4 dim: 3 } } }
layer { name: "label" type: "Input" top: "label" input_param { shape { dim: 4 } } }
layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
"""


@pytest.fixture
def window(qtbot):
    w = asked_window(qtbot, ask_default_solver=False)
    yield w
    w.training.shutdown()


def _files_under(folder):
    return sorted((p.relative_to(folder), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


# ---- case 1: the document owns the layout; examples are untitled copies ---------------------
def test_a_drag_in_the_window_is_one_undo_step_marks_modified_and_writes_nothing(qtbot, window, tmp_path):
    net = tmp_path / "deploy.prototxt"
    net.write_text(DEPLOY)
    assert window.open_file(net)
    window.graph.sync()
    before = window.graph.scene.nodes["conv1"].pos()
    drag_box(qtbot, window, "conv1", 120, 30)
    assert (window.graph.scene.nodes["conv1"].pos() - before).manhattanLength() > 60
    assert window.isWindowModified() and window.undo_action.text() == "&Undo Move boxes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deploy.prototxt"]
    window.undo_action.trigger()
    window.graph.sync()
    assert (window.graph.scene.nodes["conv1"].pos() - before).manhattanLength() < 1
    assert not window.isWindowModified()
    window.redo_action.trigger()
    window.graph.toolbar.direction_action.trigger()  # Top-down: a second step
    assert window.undo_stack.count() == 2 and window.doc.layout.downward
    assert window.save() and not window.isWindowModified()
    sidecar = tmp_path / "deploy.prototxt.layout.json"
    assert '"direction": "down"' in sidecar.read_text() and '"conv1"' in sidecar.read_text()
    assert net.read_text() == DEPLOY


def test_an_example_opens_untitled_and_save_asks_where(qtbot, window, tmp_path):
    installed = _files_under(EXAMPLES)
    assert window.open_file(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    assert window.windowTitle() == "Barista — LeNet (example)[*]" and not window.isWindowModified()
    assert window.summary.text().strip() == "LeNet · 11 layers · solver not saved yet"  # its solver, loaded
    window.graph.toolbar.relayout.click()
    drag_box(qtbot, window, "conv1", 90, 0)
    window.push(SetLayerField(window.doc.index_of("conv1"), "convolution_param.num_output", 24))
    target = tmp_path / "mine.prototxt"
    window.ask_save_path = Asked(str(target))
    assert window.save() and window.ask_save_path.count == 1
    assert window.windowTitle() == "Barista — mine.prototxt[*]" and not window.isWindowModified()
    assert (tmp_path / "mine.prototxt.layout.json").is_file()
    solver = tmp_path / "mine_solver.prototxt"  # the example's solver goes beside it, naming it
    assert 'net: "mine.prototxt"' in solver.read_text() and window.doc.solver_path == str(solver)
    assert window.summary.text().strip() == "LeNet · 11 layers · mine_solver.prototxt"
    assert _files_under(EXAMPLES) == installed


# ---- case 2: the solver follows the net ----------------------------------------------------
def test_opening_a_deploy_net_drops_the_solver_and_train_refuses_without_a_loss(qtbot, window, tmp_path):
    assert window.open_file(EXAMPLES / "mnist" / "lenet_solver.prototxt")
    assert "lenet" not in window.summary.text() or window.doc.solver.max_iter == 10000
    net = tmp_path / "deploy.prototxt"
    net.write_text(DEPLOY)
    assert window.open_file(net)
    assert window.summary.text().strip() == "GoogleNet · 4 layers · no solver"
    assert window.doc.solver.ByteSize() == 0
    window.ask_default_solver = Asked(True)
    window.training.buttons["train"].click()
    assert window.training.controller.current is None and window.ask_default_solver.count == 0
    assert window.training.error.isVisible()
    banner = window.training.error_text.text()
    assert "no loss output" in banner and "SoftmaxWithLoss" in banner
    label = window.training.error_text  # the folded dock unfolds: the reason is not clipped to its bar
    assert window.training.expanded and window.training.maximumHeight() > 10000
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()))
    assert window.open_file(EXAMPLES / "mnist" / "lenet_solver.prototxt")
    assert not window.training.error.isVisible()  # the deploy net's refusal went with it


def test_train_without_a_solver_offers_a_default_one_saved_beside_the_net(qtbot, window, tmp_path):
    net = tmp_path / "zeros.prototxt"
    net.write_text(INPUT_ONLY)
    assert window.open_file(net) and window.doc.solver_path is None
    window.ask_default_solver = Asked(False)
    window.training.buttons["train"].click()
    assert window.training.controller.current is None and window.doc.solver.ByteSize() == 0
    window.ask_default_solver = Asked(True)
    window.training.buttons["train"].click()
    run = window.training.controller.current
    assert run is not None and window.ask_default_solver.count == 1
    assert window.workbench.solver_panel.isVisible()  # the Solver tab shows it
    assert window.doc.solver.base_lr == pytest.approx(0.01) and window.doc.solver.net == "zeros.prototxt"
    assert "Input layers" in window.training.console.text() and "zeros" in window.training.console.text()
    window.training.controller.stop()
    qtbot.waitUntil(lambda: not run.active, timeout=30000)
    assert window.isWindowModified()
    assert window.save()
    solver = tmp_path / "zeros_solver.prototxt"
    assert solver.is_file() and 'net: "zeros.prototxt"' in solver.read_text()
    other = MainWindow()
    qtbot.addWidget(other)
    assert other.open_file(net) and other.doc.solver_path == str(solver)  # it follows the net next time
    assert "zeros_solver.prototxt" in other.summary.text()


# ---- case 3: Save never drops the text -------------------------------------------------------
@pytest.fixture
def typed(qtbot, window, tmp_path):
    net = tmp_path / "deploy.prototxt"
    net.write_text(DEPLOY)
    assert window.open_file(net)
    edit = window.editor.edit
    cursor = edit.textCursor()
    cursor.setPosition(len(window.editor.text))
    edit.setTextCursor(cursor)
    qtbot.keyClicks(edit, "layer { name: 'half'")
    assert window.editor.text.endswith("layer { name: 'half'")
    qtbot.waitUntil(lambda: window.editor.error is not None)
    assert window.isWindowModified()
    return net


def test_save_with_unparsable_text_keeps_editing_saves_as_typed_or_the_last_valid_net(qtbot, window, typed):
    window.ask_unparsable_text = Asked(saving.EDIT)
    assert not window.save()
    assert typed.read_text() == DEPLOY and window.isWindowModified()
    assert window.ask_unparsable_text.count == 1 and window.editor.error is not None
    window.ask_unparsable_text = Asked(saving.TEXT)
    assert window.save()
    assert typed.read_text() == window.editor.text and "layer { name: 'half'" in typed.read_text()
    assert not window.isWindowModified()
    window.ask_unparsable_text = Asked(saving.EDIT)
    assert window.close() and window.ask_unparsable_text.count == 0  # the file holds what was typed


def test_save_the_last_valid_net_and_quit_asks_again_for_the_typed_text(qtbot, window, typed):
    # the last valid net is the one the file held when opened: the typed text stays in the editor
    window.ask_unparsable_text = Asked(saving.NET)
    assert window.save()
    assert typed.read_text() == DEPLOY and "'half'" in window.editor.text
    window.ask_unparsable_text = Asked(saving.EDIT)
    window.quit_action.trigger()
    assert window.isVisible() and window.ask_unparsable_text.count == 1  # Quit asks the same
    window.ask_unparsable_text = Asked(saving.TEXT)
    assert window.close() and "'half'" in typed.read_text()


def test_autosave_keeps_the_typed_text(qtbot, tmp_path):
    from app import recovery

    net = tmp_path / "deploy.prototxt"
    net.write_text(DEPLOY)
    w = MainWindow(recovery_dir=tmp_path / "recovery", autosave_ms=3_600_000)
    qtbot.addWidget(w)
    w.ask_unparsable_text = Asked(saving.DISCARD)
    assert w.open_file(net)
    w.editor.edit.setPlainText(w.editor.text + "layer { name: 'half'")
    qtbot.waitUntil(lambda: w.editor.error is not None)
    assert w.workbench.autosave.save_now()
    w.workbench.autosave.abandon()
    saved = (w.workbench.autosave.folder / "editor.prototxt").read_text()
    assert saved.endswith("layer { name: 'half'")
    again = MainWindow()
    qtbot.addWidget(again)
    again.ask_unparsable_text = Asked(saving.DISCARD)
    (crashed,) = recovery.find_crashed(tmp_path / "recovery")
    recovery.restore(again, crashed)  # what the next start offers back: the typed text, as typed
    assert again.editor.text.endswith("layer { name: 'half'")
    qtbot.waitUntil(lambda: again.editor.error is not None)


# ---- case 6: a legacy file says it was upgraded ---------------------------------------------
def test_a_legacy_net_opens_with_a_notice_and_modified(qtbot, window, tmp_path):
    legacy = tmp_path / "lenet_v1.prototxt"
    legacy.write_text((EXAMPLES / "legacy" / "lenet_v1.prototxt").read_text())
    solver = tmp_path / "lenet_solver_v1.prototxt"
    solver.write_text((EXAMPLES / "legacy" / "lenet_solver_v1.prototxt").read_text())
    assert window.open_file(legacy)
    assert window.notice.isVisible() and "Upgraded from a legacy Caffe format" in window.notice.full
    # two notices (upgraded; its solver found) on one line of the status bar, whole in the tooltip
    assert "lenet_solver_v1" in window.notice.toolTip() and "\n" not in window.notice.text()
    assert window.statusBar().height() < 3 * window.fontMetrics().height()
    assert window.notice.text().endswith("…") or "lenet_solver_v1" in window.notice.text()
    assert window.isWindowModified() and window.windowTitle() == "Barista — lenet_v1.prototxt[*]"
    assert window.editor.text.startswith("# LeNet written in the legacy V1 format")
    assert window.save() and not window.isWindowModified() and "layers {" not in legacy.read_text()
    assert window.open_file(legacy) and "Upgraded" not in window.notice.full  # current now
