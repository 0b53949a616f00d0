"""Issue 31 case 6: Ctrl+Q while a run trains. The question names the run, the run waits paused
behind it (no iteration goes on), Cancel takes it up again; quitting stops it first and writes a
snapshot only when the user ticks it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from test_training_dock import TIMEOUT_MS, write_example

from app.commands import SetLayerField
from app.main_window import MainWindow
from app.quitting import CANCEL, DISCARD, QUIT, QuitAnswer
from engine.events import RunStatus


def training_window(qtbot, tmp_path):
    solver = write_example(tmp_path, {"max_iter": "1000000", "snapshot": "0", "display": "0"})
    w = MainWindow()
    qtbot.addWidget(w)
    w.show_error = lambda *args: None
    assert w.open_file(solver)
    w.show()
    qtbot.waitExposed(w)
    run = w.training.train()
    assert run is not None
    qtbot.waitUntil(lambda: run.iter > 20, timeout=TIMEOUT_MS)
    return w, run


def snapshots(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("*.caffemodel"))


@pytest.mark.real_dialogs
def test_the_question_names_the_run_which_waits_paused_and_resumes_on_cancel(qtbot, tmp_path):
    w, run = training_window(qtbot, tmp_path)
    solver = w.training.controller._worker.trainer.solver
    seen: dict = {}

    def look_then_cancel() -> None:  # runs inside the real dialog's own event loop
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, look_then_cancel)  # the dialog is not up yet
            return
        seen.setdefault("shown_at", run.iter)
        # Either the run waits paused, or it trains on behind the dialog (what must not happen).
        if run.status != RunStatus.PAUSED and run.iter < seen["shown_at"] + 200:
            QTimer.singleShot(10, look_then_cancel)
            return
        seen["status"], seen["text"], seen["iter"] = run.status, box.text(), solver.iter
        seen["check"] = box.checkBox().text() if box.checkBox() else ""
        seen["snapshot_ticked"] = box.checkBox() is not None and box.checkBox().isChecked()
        box.button(QMessageBox.StandardButton.Cancel).click()

    QTimer.singleShot(0, look_then_cancel)
    w.quit_action.trigger()  # Ctrl+Q
    assert w.isVisible()  # Cancel: still here
    assert seen["status"] == RunStatus.PAUSED  # it waited behind the question
    assert "Run 1 is training" in seen["text"] and "Quitting stops it" in seen["text"]
    assert "Snapshot Run 1" in seen["check"] and not seen["snapshot_ticked"]  # only if the user says so
    assert run.iter <= seen["iter"] + 1  # nothing went on behind the dialog (the plotted iter lags)
    qtbot.waitUntil(
        lambda: run.status == RunStatus.RUNNING and run.iter > seen["iter"] + 10, timeout=TIMEOUT_MS
    )
    w.training.shutdown()


def test_quitting_with_unsaved_changes_stops_the_run_without_a_snapshot(qtbot, tmp_path):
    w, run = training_window(qtbot, tmp_path)
    w.push(SetLayerField(w.doc.index_of("hidden1"), "inner_product_param.num_output", 8))
    asked = []

    def answer(asked_run, unsaved) -> QuitAnswer:
        qtbot.waitUntil(lambda: asked_run.status == RunStatus.PAUSED, timeout=TIMEOUT_MS)
        asked.append((asked_run, unsaved))
        return QuitAnswer(DISCARD, snapshot=False)

    w.ask_quit_while_training = answer
    w.ask_unsaved_changes = lambda *args: pytest.fail("the training question asks this too")
    assert w.close()
    assert asked == [(run, True)]
    worker = w.training.controller._worker
    assert not worker.is_alive()  # stopped before the window went
    assert snapshots(tmp_path) == []  # no snapshot_after_train on quit


def test_quitting_with_a_snapshot_ticked_writes_it_at_the_paused_iteration(qtbot, tmp_path):
    w, run = training_window(qtbot, tmp_path)
    solver = w.training.controller._worker.trainer.solver
    at = {}

    def answer(asked_run, unsaved) -> QuitAnswer:
        qtbot.waitUntil(lambda: asked_run.status == RunStatus.PAUSED, timeout=TIMEOUT_MS)
        at["iter"] = solver.iter
        return QuitAnswer(QUIT if not unsaved else DISCARD, snapshot=True)

    w.ask_quit_while_training = answer
    assert w.close()
    assert snapshots(tmp_path) == [f"mlp_iter_{at['iter']}.caffemodel"]  # one, where it waited


def test_cancel_without_unsaved_changes_keeps_the_run(qtbot, tmp_path):
    w, run = training_window(qtbot, tmp_path)
    w.ask_quit_while_training = lambda asked_run, unsaved: QuitAnswer(CANCEL)
    assert not w.close()
    at = run.iter
    qtbot.waitUntil(lambda: run.iter > at + 10, timeout=TIMEOUT_MS)
    w.training.shutdown()
