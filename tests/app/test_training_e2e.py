"""End to end: open LeNet, click Train, see the loss fall, pause, resume, stop, find the snapshots.

The example's Data layers name ``mnist_train_lmdb`` / ``mnist_test_lmdb`` relative to nowhere:
the app must find the bundled MNIST by itself (no data root is set here).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from app.files import EXAMPLES
from app.main_window import MainWindow
from engine.data import mnist, paths

TIMEOUT_MS = 240000  # real training on a shared 2-core machine: generous, the conditions are real


@pytest.fixture(scope="module")
def bundled_mnist(tmp_path_factory):
    """The bundled MNIST LMDBs: the user's prepared copy, or a fresh one for this module."""
    folder = mnist.default_folder()
    return folder if mnist.is_complete(folder) else mnist.ensure_mnist(tmp_path_factory.mktemp("mnist"))


@pytest.fixture
def lenet_solver(tmp_path, monkeypatch, bundled_mnist):
    """The LeNet example in a fresh folder, set to test every 20 iterations on 2 batches."""
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(paths, "user_data_dir", lambda: tmp_path / "no-user-data")
    monkeypatch.setattr(mnist, "default_folder", lambda: bundled_mnist)
    for path in (EXAMPLES / "mnist").glob("*.prototxt"):
        shutil.copy(path, tmp_path)
    solver = tmp_path / "lenet_solver.prototxt"
    text = solver.read_text()
    for field, value in {
        "max_iter": 100000,
        "test_interval": 20,
        "test_iter": 2,
        "display": 10,
        "snapshot": 0,
    }.items():
        text = re.sub(rf"(?m)^{field}: .*$", f"{field}: {value}", text)
    solver.write_text(text)
    return solver


def test_lenet_trains_live_pauses_resumes_stops_and_snapshots(qtbot, lenet_solver):
    window = MainWindow()
    qtbot.addWidget(window)
    window.ask_unsaved_changes = lambda *args: "discard"
    assert window.open_file(lenet_solver)
    window.show()
    qtbot.waitExposed(window)
    dock = window.training
    before = window.doc.net.SerializeToString(), window.doc.solver.SerializeToString()

    dock.buttons["train"].click()
    run = dock.controller.current
    assert run is not None and run.status in ("starting", "running")

    # The loss curve gains points and falls; a test output arrives at iteration 20.
    def drawn() -> int:
        y = dock.plots.curve(run)[1]
        return 0 if y is None else len(y)

    qtbot.waitUntil(lambda: drawn() >= 40 and "accuracy" in run.tests, timeout=TIMEOUT_MS)
    x, smoothed = dock.plots.curve(run)
    assert np.array_equal(x, np.arange(len(x)))
    assert smoothed[-1] < 0.75 * smoothed[0], (smoothed[0], smoothed[-1])
    assert "Iteration 0, Testing net (#0)" in dock.console.text()
    qtbot.waitUntil(lambda: "it/s · ETA" in dock.rate.text(), timeout=TIMEOUT_MS)
    assert 0 < dock.progress.value() <= run.iter and dock.progress.maximum() == 100000
    assert any(line.startswith("Data root: ") for _, line in run.log)  # found the bundled MNIST itself

    dock.buttons["pause"].click()
    qtbot.waitUntil(lambda: run.status == "paused", timeout=TIMEOUT_MS)
    assert dock.pause_action.text() == "Resume"
    paused_at, points = run.iter, len(run.train)

    # Nothing trains while paused, shown without sleeping for iterations that must not come: the worker
    # sends its points before Paused (one queue, in order) and then waits for Resume. A snapshot taken
    # now is written at once, in this thread, and named by the solver's own iteration: a file for
    # paused_at proves the solver has not moved on since the GUI saw its last point.
    dock.buttons["snapshot"].click()
    assert (lenet_solver.parent / f"lenet_iter_{paused_at}.caffemodel").is_file()
    assert (lenet_solver.parent / f"lenet_iter_{paused_at}.solverstate").is_file()
    assert run.status == "paused" and (run.iter, len(run.train)) == (paused_at, points)

    dock.buttons["pause"].click()  # now "Resume"
    qtbot.waitUntil(lambda: run.iter >= paused_at + 5, timeout=TIMEOUT_MS)
    assert run.status == "running"

    dock.buttons["stop"].click()
    qtbot.waitUntil(lambda: run.status == "stopped", timeout=TIMEOUT_MS)
    final = lenet_solver.parent / f"lenet_iter_{run.iter}.caffemodel"
    assert final.is_file() and str(final) in run.snapshots  # Caffe snapshots when stopped
    assert "Optimization stopped early." in dock.console.text()
    assert (window.doc.net.SerializeToString(), window.doc.solver.SerializeToString()) == before
    assert not window.doc.dirty
