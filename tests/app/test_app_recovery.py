"""Crash safety: autosave of unsaved work, removal on a clean exit, recovery after a simulated crash."""

from __future__ import annotations

import json

import pytest
from answers import Asked

from app import workbench
from app.autosave import EDITOR_FILE, MANIFEST, NET_FILE
from app.commands import SetLayerField, SetSolverField
from app.main_window import MainWindow, open_window
from app.recovery import find_crashed

NET = """name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 1 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 } }
"""


@pytest.fixture
def net_file(tmp_path):
    path = tmp_path / "tiny.prototxt"
    path.write_text(NET)
    return path


@pytest.fixture
def recovery_dir(tmp_path):
    return tmp_path / "recovery"


def make_window(qtbot, recovery_dir, net_file=None, interval=40) -> MainWindow:
    w = MainWindow(recovery_dir=recovery_dir, autosave_ms=interval)
    qtbot.addWidget(w)
    w.ask_unsaved_changes = Asked("discard")
    w.show_error = Asked(None)
    if net_file is not None:
        assert w.open_file(net_file)
    return w


def session_of(window):
    return window.workbench.autosave.folder


def test_unsaved_work_is_autosaved_and_saved_work_is_not(qtbot, recovery_dir, net_file):
    w = make_window(qtbot, recovery_dir, net_file)
    folder = session_of(w)
    # Not a sleep for a save that must not come: wait for the autosave timer to fire (twice). Its save
    # runs before this wait's own slot (connected first), so by then it has looked and written nothing.
    autosave = w.workbench.autosave
    assert autosave is not None
    for _ in range(2):
        with qtbot.waitSignal(autosave.timer.timeout, timeout=10_000):
            pass
    assert not (folder / MANIFEST).exists()  # nothing unsaved yet
    w.push(SetLayerField(1, "convolution_param.num_output", 12))
    qtbot.waitUntil(lambda: (folder / MANIFEST).exists())
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["net_path"] == str(net_file) and manifest["net_dirty"] and not manifest["solver_dirty"]
    assert "num_output: 12" in (folder / NET_FILE).read_text()
    assert w.save()
    qtbot.waitUntil(lambda: not (folder / MANIFEST).exists())
    assert w.close() and not folder.exists()  # a clean exit leaves nothing to recover


def test_recovery_after_a_simulated_crash(qtbot, recovery_dir, net_file, monkeypatch):
    crashed = make_window(qtbot, recovery_dir, net_file)
    crashed.push(SetLayerField(1, "convolution_param.num_output", 12))
    crashed.push(SetSolverField("base_lr", 0.5))
    qtbot.waitUntil(lambda: (session_of(crashed) / MANIFEST).exists())
    crashed.workbench.autosave.abandon()  # the process dies: its files stay, its lock goes

    asked = Asked(True)
    monkeypatch.setattr(workbench, "ask_recover", asked)
    restarted = open_window(["main.py"], recovery_dir=recovery_dir)
    qtbot.addWidget(restarted)
    restarted.ask_unsaved_changes = Asked("discard")
    assert len(asked.asked) == 1 and "tiny.prototxt" in asked.asked[0][1].describe()
    doc = restarted.doc
    assert doc.net_path == str(net_file) and doc.layer(1).convolution_param.num_output == 12
    assert doc.solver.base_lr == 0.5 and doc.dirty and restarted.isWindowModified()
    assert "num_output: 12" in restarted.editor.text
    restarted.undo_action.trigger()  # the recovered changes are an edit on top of the file
    restarted.undo_action.trigger()
    assert doc.layer(1).convolution_param.num_output == 4
    assert not session_of(crashed).exists() and find_crashed(recovery_dir) == []


def test_declining_discards_and_a_live_window_is_never_offered(qtbot, recovery_dir, net_file, monkeypatch):
    alive = make_window(qtbot, recovery_dir, net_file)
    alive.push(SetLayerField(1, "convolution_param.num_output", 7))
    qtbot.waitUntil(lambda: (session_of(alive) / MANIFEST).exists())
    assert find_crashed(recovery_dir) == []  # its lock is held: still running, not crashed

    alive.workbench.autosave.abandon()
    asked = Asked(False)
    monkeypatch.setattr(workbench, "ask_recover", asked)
    restarted = open_window(["main.py", str(net_file)], recovery_dir=recovery_dir)
    qtbot.addWidget(restarted)
    assert len(asked.asked) == 1
    assert restarted.doc.layer(1).convolution_param.num_output == 4 and not restarted.doc.dirty
    assert not session_of(alive).exists()


def test_text_that_did_not_parse_yet_comes_back_into_the_editor(qtbot, recovery_dir, monkeypatch):
    crashed = make_window(qtbot, recovery_dir)  # untitled
    crashed.editor.edit.setPlainText(NET + "layer { name: ")  # half-typed
    qtbot.waitUntil(lambda: (session_of(crashed) / EDITOR_FILE).exists())
    crashed.workbench.autosave.abandon()

    monkeypatch.setattr(workbench, "ask_recover", Asked(True))
    restarted = open_window(["main.py"], recovery_dir=recovery_dir)
    qtbot.addWidget(restarted)
    restarted.ask_unsaved_changes = Asked("discard")
    assert restarted.editor.text.endswith("layer { name: ")
    qtbot.waitUntil(lambda: restarted.editor.error is not None)
    assert restarted.editor.edit.error_line == NET.count("\n") + 1
