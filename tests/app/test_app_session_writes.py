"""Issue 12: a whole session on the bundled example (edits, box moves, direction, auto layout, a short
training run) writes nothing under the installed resources/; the run's snapshots land in the
per-user runs folder, which the console and the Runs tab name."""

from __future__ import annotations

import pytest
from gestures import drag_box

from app.commands import SetLayerField, SetSolverField
from app.files import RESOURCES, runs_folder
from app.main_window import open_window
from engine.data import mnist, paths


@pytest.fixture
def bundled_mnist(tmp_path_factory, monkeypatch):
    folder = mnist.default_folder()
    if not mnist.is_complete(folder):
        folder = mnist.ensure_mnist(tmp_path_factory.mktemp("mnist"))
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(mnist, "default_folder", lambda: folder)
    return folder


def _files_under(folder):
    return sorted(
        (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
    )


def test_a_whole_session_on_the_example_writes_nothing_under_resources(qtbot, bundled_mnist):
    before = _files_under(RESOURCES)
    window = open_window(["main.py"])  # the LeNet example, as `make run` opens it
    qtbot.addWidget(window)
    window.ask_unsaved_changes = lambda *args: "discard"
    window.ask_unparsable_text = lambda *args: "discard"
    window.resize(1280, 800)
    qtbot.waitExposed(window)
    assert window.windowTitle() == "Barista — LeNet (example)[*]"

    drag_box(qtbot, window, "conv1", 100, 20)
    window.graph.toolbar.direction_action.trigger()
    window.graph.toolbar.relayout.click()
    drag_box(qtbot, window, "ip1", -80, 0)
    window.push(SetLayerField(window.doc.index_of("conv2"), "convolution_param.num_output", 32))
    window.undo()
    window.redo()
    for field, value in (("max_iter", 3), ("test_initialization", False), ("display", 1)):
        window.push(SetSolverField(field, value))
    assert window.isWindowModified()

    window.training.buttons["train"].click()
    run = window.training.controller.current
    assert run is not None
    qtbot.waitUntil(lambda: not run.active, timeout=120_000)
    assert run.status == "finished", run.error
    assert run.snapshots and all(str(runs_folder()) in path for path in run.snapshots)
    assert any(p.name == "lenet_iter_3.caffemodel" for p in runs_folder().rglob("*"))
    assert f"Snapshots go to {run.job.output_dir}" in window.training.console.text()
    window.training.runs.tree.setCurrentItem(window.training.runs.tree.topLevelItem(0))
    assert f"folder: {run.job.output_dir}" in window.training.runs.details.toPlainText()

    assert window.close()
    assert _files_under(RESOURCES) == before
