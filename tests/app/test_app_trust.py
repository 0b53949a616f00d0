"""Trust before code in the app (issue 16, case 1): opening a net never imports its Python layers'
modules; one prompt names the folder and the modules; trusting it brings the shapes, taking it back
under File > Trusted Folders… brings "not run" back; Train asks first. Every module written here
records its import in a marker file, so "not run" is checked directly.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication

from app import workbench
from app.autosave import MANIFEST
from app.commands import SetLayerField
from app.main_window import MainWindow, open_window
from app.trust_dialog import TrustedFoldersDialog

TIMEOUT_MS = 20000
EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
LAYER = """import caffe

open(MARKER, "a").write("imported\\n")


class TimesTwo(caffe.Layer):
    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        top[0].reshape(bottom[0].data.shape[0], 2 * bottom[0].data.shape[1])

    def forward(self, bottom, top):
        top[0].data[:, : bottom[0].data.shape[1]] = bottom[0].data
        top[0].data[:, bottom[0].data.shape[1] :] = bottom[0].data

    def backward(self, top, propagate_down, bottom):
        half = top[0].diff.shape[1] // 2
        bottom[0].diff[...] = top[0].diff[:, :half] + top[0].diff[:, half:]
"""
NET = """name: "pynet"
layer { name: "data" type: "DummyData" top: "x" top: "t"
  dummy_data_param { shape { dim: 8 dim: 3 } shape { dim: 8 dim: 6 }
    data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 0.5 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "h"
  inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "times" type: "Python" bottom: "h" top: "y"
  python_param { module: "MODULE" layer: "TimesTwo" } }
layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "t" top: "loss" }
"""
SOLVER = 'net: "net.prototxt"\nbase_lr: 0.01\nlr_policy: "fixed"\nmax_iter: 100000\ndisplay: 0\n'


@pytest.fixture
def settings(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings) -> MainWindow:
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.show_error = lambda *args: pytest.fail(f"error dialog: {args}")
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    return w


def downloaded(folder: Path, module: str, source: str | None = LAYER) -> tuple[Path, Path]:
    """A folder as downloaded: a net whose Python layer imports ``module``, kept beside it."""
    folder.mkdir()
    marker = folder / "ran.txt"
    if source is not None:
        (folder / f"{module}.py").write_text(source.replace("MARKER", repr(str(marker))))
    (folder / "net.prototxt").write_text(NET.replace("MODULE", module))
    (folder / "solver.prototxt").write_text(SOLVER)
    return folder / "solver.prototxt", marker


def prompt(qtbot, window: MainWindow):
    qtbot.waitUntil(lambda: window.trust.box is not None and window.trust.box.isVisible(), timeout=TIMEOUT_MS)
    return window.trust.box


def problems(window: MainWindow, key: str) -> list[str]:
    window.graph.sync()
    return [p.message for p in window.graph.scene.problems if p.key == key]


def test_open_shows_not_run_then_trust_brings_shapes_and_taking_it_back_brings_not_run(
    qtbot, window, tmp_path, settings
):
    solver, marker = downloaded(tmp_path / "download", "trust_times_two")
    folder = str(solver.parent)
    assert window.open_file(solver)
    box = prompt(qtbot, window)
    assert folder in box.text() and "trust_times_two.py" in box.informativeText()
    assert not marker.exists()  # nothing imported to draw the net
    (message,) = problems(window, "times")
    assert "Python layer: not run" in message and "trust_times_two" in message
    scene = window.graph.scene
    assert scene.nodes["times"].problems  # the badge on its box
    assert scene.graph.nodes["times"].top_shapes == [None] and scene.graph.nodes["loss"].top_shapes == [None]

    totals = window.workbench.totals
    qtbot.waitUntil(lambda: "Python layer: not run" in totals.text(), timeout=TIMEOUT_MS)  # the status bar

    qtbot.mouseClick(window.trust.trust_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: scene.graph.nodes["times"].top_shapes == [(8, 6)], timeout=TIMEOUT_MS)
    assert problems(window, "times") == [] and marker.exists()
    measured = lambda: "params" in totals.text() and "unavailable" not in totals.text()  # noqa: E731
    qtbot.waitUntil(measured, timeout=TIMEOUT_MS)
    assert settings.value("trust/folders") in ([folder], folder)  # remembered

    # File > Trusted Folders…: the folder is listed; Remove takes it back.
    window.trusted_folders_action.trigger()
    dialog = window.findChild(TrustedFoldersDialog)
    qtbot.waitUntil(dialog.isVisible, timeout=TIMEOUT_MS)
    assert [dialog.list.item(i).text() for i in range(dialog.list.count())] == [folder]
    qtbot.mouseClick(dialog.remove_button, Qt.MouseButton.LeftButton)
    assert dialog.list.count() == 0 and window.trust.folders.folders() == []
    qtbot.waitUntil(lambda: scene.graph.nodes["times"].top_shapes == [None], timeout=TIMEOUT_MS)
    (message,) = problems(window, "times")
    assert "Python layer: not run" in message
    dialog.close()
    assert window.trust.box is None  # taking it back does not ask again by itself


def test_a_trusted_folder_is_remembered_by_the_next_window(qtbot, tmp_path, settings):
    solver, marker = downloaded(tmp_path / "again", "trust_times_again")
    settings.setValue("trust/folders", [str(solver.parent)])
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    assert w.open_file(solver)
    w.graph.sync()
    assert w.graph.scene.graph.nodes["times"].top_shapes == [(8, 6)] and marker.exists()
    QApplication.processEvents()
    assert w.trust.box is None  # nothing to ask


def test_module_this_prints_nothing_on_open_nor_once_trusted(qtbot, window, tmp_path, capfd):
    solver, _marker = downloaded(tmp_path / "zen", "this", source=None)
    assert window.open_file(solver)
    box = prompt(qtbot, window)
    assert "this.py" in box.informativeText()
    (message,) = problems(window, "times")
    assert "Python layer: not run" in message
    qtbot.mouseClick(window.trust.trust_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "clashes with" in " ".join(problems(window, "times")), timeout=TIMEOUT_MS)
    (message,) = problems(window, "times")
    assert "module 'this' (python_param.module) clashes with Python's standard module 'this'" in message
    out = capfd.readouterr().out
    assert "Zen of Python" not in out and "Beautiful is better" not in out


def test_engine_py_beside_a_trusted_net_does_not_replace_ours(qtbot, window, tmp_path):
    solver, marker = downloaded(tmp_path / "ours", "engine", source="open(MARKER, 'w').write('ran')\n")
    window.trust.folders.add(str(solver.parent))
    ours = sys.modules["engine"]
    assert window.open_file(solver)
    (message,) = problems(window, "times")
    assert "module 'engine' (python_param.module) clashes with Barista's own package 'engine'" in message
    assert sys.modules["engine"] is ours and not marker.exists()
    assert window.graph.scene.graph.nodes["ip"].top_shapes == [(8, 3)]  # the rest still drawn


def test_train_asks_first_and_trains_once_trusted(qtbot, window, tmp_path):
    solver, marker = downloaded(tmp_path / "train", "trust_times_train")
    assert window.open_file(solver)
    prompt(qtbot, window)
    qtbot.mouseClick(window.trust.not_now_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.trust.box is None, timeout=TIMEOUT_MS)
    dock = window.training
    dock.buttons["train"].click()
    prompt(qtbot, window)  # Train asks again, even after "Not Now"
    assert dock.controller.current is None and not marker.exists()
    qtbot.mouseClick(window.trust.trust_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dock.controller.current is not None, timeout=TIMEOUT_MS)
    run = dock.controller.current
    qtbot.waitUntil(lambda: len(run.train) >= 5 or run.status == "failed", timeout=TIMEOUT_MS)
    dock.buttons["stop"].click()
    qtbot.waitUntil(lambda: not run.active, timeout=TIMEOUT_MS)
    assert run.error is None, run.error
    assert marker.exists()


def test_threadpoolctl_py_beside_a_plain_mlp_is_not_executed_on_train(qtbot, window, tmp_path, monkeypatch):
    folder = tmp_path / "mlp"
    folder.mkdir()
    marker = folder / "ran.txt"
    (folder / "threadpoolctl.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    shutil.copy(EXAMPLES / "mlp.prototxt", folder / "mlp.prototxt")
    (folder / "solver.prototxt").write_text(SOLVER.replace("net.prototxt", "mlp.prototxt"))
    monkeypatch.delitem(sys.modules, "threadpoolctl", raising=False)  # a training would import it afresh
    before = list(sys.path)
    assert window.open_file(folder / "solver.prototxt")
    dock = window.training
    dock.buttons["train"].click()
    run = dock.controller.current
    assert run is not None and window.trust.box is None  # no Python layer: nothing to ask
    qtbot.waitUntil(lambda: len(run.train) >= 3 or run.status == "failed", timeout=TIMEOUT_MS)
    assert str(folder) not in sys.path
    dock.buttons["stop"].click()
    qtbot.waitUntil(lambda: not run.active, timeout=TIMEOUT_MS)
    assert run.error is None, run.error
    assert not marker.exists() and sys.path == before


def test_a_dropped_net_and_a_recovered_one_run_nothing_either(qtbot, window, tmp_path, monkeypatch):
    solver, marker = downloaded(tmp_path / "dropped", "trust_times_dropped")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(solver.parent / "net.prototxt"))])
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    drop = QDropEvent(QPointF(400, 300), Qt.DropAction.CopyAction, mime, buttons, keys)
    window.dropEvent(drop)
    assert window.doc.net_path == str(solver.parent / "net.prototxt")
    prompt(qtbot, window)
    assert "Python layer: not run" in problems(window, "times")[0] and not marker.exists()

    # A crashed session's net with a Python layer comes back drawn, its code not run.
    recovery_dir = tmp_path / "recovery"
    crashed = MainWindow(recovery_dir=recovery_dir, autosave_ms=40)
    qtbot.addWidget(crashed)
    crashed.ask_unsaved_changes = lambda *args: "discard"
    assert crashed.open_file(solver.parent / "net.prototxt")
    crashed.push(SetLayerField(1, "inner_product_param.num_output", 5))
    qtbot.waitUntil(lambda: (crashed.workbench.autosave.folder / MANIFEST).exists(), timeout=TIMEOUT_MS)
    crashed.workbench.autosave.abandon()
    monkeypatch.setattr(workbench, "ask_recover", lambda *args: True)
    restarted = open_window(["main.py"], recovery_dir=recovery_dir)
    qtbot.addWidget(restarted)
    restarted.ask_unsaved_changes = lambda *args: "discard"
    assert restarted.doc.layer(1).inner_product_param.num_output == 5
    assert "Python layer: not run" in problems(restarted, "times")[0] and not marker.exists()


def test_how_the_net_starts_runs_nothing_untrusted_and_runs_again_once_trusted(qtbot, window, tmp_path):
    solver, marker = downloaded(tmp_path / "start", "trust_times_start")
    assert window.open_file(solver)
    prompt(qtbot, window)  # asked once, on open; the panel waits on the same answer
    start = window.net_start_dock.widget()
    window.net_start_dock.raise_()
    qtbot.waitUntil(lambda: "Python layer: not run" in start.summary.text(), timeout=TIMEOUT_MS)
    assert not marker.exists() and window.trust.box is not None  # still the one prompt
    qtbot.mouseClick(window.trust.trust_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: start.results is not None and all(r.error is None for r in start.results), timeout=TIMEOUT_MS
    )
    assert "not run" not in start.summary.text() and marker.exists()
